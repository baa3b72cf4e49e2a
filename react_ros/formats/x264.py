"""libx264 options that give the same bits for the same frames on every run.

On this project's machine (an AMD EPYC with AVX-512), PyAV's libx264 (core 165) now and
then encoded the same frames to different bits when encoders ran in threads of one
process, as the converter re-encodes several cameras at once: 3 to 10 in 2,000 encodes
of the React sample's small clips, and no encode differed with AVX-512 left out (7,200
encodes). So `--images h264` bags changed from run to run now and then
(test_bags_unchanged). x264 is told to use every instruction set the CPU has but
AVX-512, read from x264's own detection in the very libx264 PyAV loaded. For the samples'
videos the bits are those x264 gave with AVX-512 most of the time (the bag digests stayed);
they are not for every video, as x264's AVX-512 and AVX2 code do not always agree to the
bit. Elsewhere (no AVX-512, not x86-64, no libx264 found) the options are left as they are.

Plain ctypes and PyAV, no rclpy.
"""
from __future__ import annotations

import ctypes
import functools
import platform
from typing import Mapping

from react_ros.formats.mapped import mapped_library

# X264_CPU_AVX512 in x264.h (an x86 flag; other architectures use the bit otherwise)
AVX512 = 1 << 16
_X86_64 = frozenset({'x86_64', 'amd64'})


@functools.cache
def detected_cpu_flags() -> int | None:
    """What x264_cpu_detect() says in PyAV's libx264 (X264_CPU_* flags), or None where
    that cannot be asked or the flags do not mean x86's."""
    if platform.machine().lower() not in _X86_64:
        return None
    import av  # its libavcodec loads libx264
    if 'libx264' not in av.codecs_available:
        return None
    path = mapped_library('libx264')
    if path is None:
        return None
    try:
        detect = ctypes.CDLL(path).x264_cpu_detect
    except (OSError, AttributeError):
        return None
    detect.restype = ctypes.c_uint32
    detect.argtypes = []
    return int(detect())


def x264_options(options: Mapping[str, str]) -> dict[str, str]:
    """`options` (PyAV codec options for libx264) with AVX-512 left out where the CPU has
    it, added to any `x264-params` already there."""
    out = dict(options)
    flags = detected_cpu_flags()
    if flags is None or not flags & AVX512:
        return out
    asm = f'asm={flags & ~AVX512}'
    params = out.get('x264-params')
    out['x264-params'] = f'{params}:{asm}' if params else asm
    return out


__all__ = ['AVX512', 'detected_cpu_flags', 'x264_options']
