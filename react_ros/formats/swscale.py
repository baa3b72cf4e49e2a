"""Decoded frames to rgb24 by the libswscale PyAV loaded, into arrays this process reuses.

PyAV's reformat allocates a new frame for every conversion. A frame the bag writer holds
until its chunk is on disk is freed on another thread, so glibc hands that memory back and
the next frame starts as fresh pages: ~1,000 page faults per 1920x1200 image, each zeroed by
the kernel (issue 43). Here the conversion writes into a pool of arrays, and an array is
written again only once nothing else refers to it (its pixels went into a bag, or were
published): no fresh pages after the first few frames.

Each array sits in a buffer with HEAD_ROOM bytes free before its pixels, so that a player can
put an Image's CDR head there and publish head and pixels as one buffer without joining
them (`cdr_in_place`: 6.9 MB not copied per 1920x1200 frame); the pixels start 64-byte
aligned, as swscale's vector code likes them.

Same pixels as PyAV's: the first frame of each kind (format, size, colour tags) is converted
both ways and compared byte for byte; where they differ (a colour tag swscale's frame API
reads and the plain one does not), that kind of frame keeps PyAV's path. Where no libswscale
is loaded in this process (not Linux, a PyAV built another way), every frame does.

Plain numpy and ctypes, no rclpy.
"""
from __future__ import annotations

import ctypes
import functools
import sys
import weakref
from typing import Any, Callable

import numpy as np

from react_ros.formats.mapped import mapped_library

# AVPixelFormat values (libavutil's ABI): the decoder formats converted here, and rgb24.
_SOURCE_FORMATS = {'yuv420p': 0, 'yuvj420p': 12}
_RGB24 = 2
_SWS_BILINEAR = 2  # PyAV's reformat default, which _Rgb uses at the frame's own size
_MAX_PLANES = 4
# Arrays one pool keeps: more than a player's read-ahead or a bag's write-behind holds of
# one video at 1920x1200.
POOL_MAX = 48
# Bytes free before a pool array's pixels: an Image's CDR head is ~70 bytes and its frame id.
HEAD_ROOM = 256
_ALIGN = 64

_CPtrs = ctypes.c_void_p * _MAX_PLANES
_CInts = ctypes.c_int * _MAX_PLANES


@functools.cache
def _library() -> Any:
    """libswscale through ctypes, or False where there is none to use."""
    path = mapped_library('libswscale')  # PyAV's own
    if path is None:
        return False
    try:
        lib = ctypes.CDLL(path)
        lib.sws_getContext.restype = ctypes.c_void_p
        lib.sws_getContext.argtypes = [ctypes.c_int] * 7 + [ctypes.c_void_p] * 3
        lib.sws_scale.restype = ctypes.c_int
        lib.sws_scale.argtypes = [ctypes.c_void_p, _CPtrs, _CInts, ctypes.c_int,
                                  ctypes.c_int, _CPtrs, _CInts]
        lib.sws_freeContext.restype = None
        lib.sws_freeContext.argtypes = [ctypes.c_void_p]
    except (OSError, AttributeError):
        return False
    return lib


def _refs_of_a_free_array() -> int:
    """What sys.getrefcount says of an array only a pool's list holds, read the way
    RgbPool._free_array reads it (3 on CPython 3.11: the list, the loop's name and the
    call's argument; measured, not assumed, as interpreters differ in what they count)."""
    arrays = [np.empty(0, np.uint8)]
    for array in arrays:
        return sys.getrefcount(array)
    raise AssertionError('unreachable')


_FREE_REFS = _refs_of_a_free_array()
# The pools' buffers by id: what cdr_in_place may write into (nothing else is).
_BUFFERS: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()


def _pixels(buffer: np.ndarray, height: int, width: int) -> np.ndarray:
    """The HxWx3 view of `buffer` past its head room, starting _ALIGN-aligned."""
    start = HEAD_ROOM + (-(buffer.ctypes.data + HEAD_ROOM)) % _ALIGN
    return buffer[start:start + height * width * 3].reshape(height, width, 3)


def cdr_in_place(head: bytes | bytearray, pixels: np.ndarray) -> memoryview | None:
    """`head` followed by `pixels` as one buffer, the pixels not copied: where `pixels` are
    a pool's array, `head` is written into the room before them. None otherwise (a scaled
    frame, PyAV's array, a head longer than the room): the caller joins them."""
    buffer = pixels.base
    if buffer is None or _BUFFERS.get(id(buffer)) is not buffer:
        return None
    start = pixels.ctypes.data - buffer.ctypes.data - len(head)
    if start < 0 or not pixels.flags.c_contiguous:
        return None
    buffer[start:start + len(head)] = np.frombuffer(head, np.uint8)
    return buffer.data[start:start + len(head) + pixels.nbytes]


class RgbPool:
    """Converts one video's frames at their own size to HxWx3 rgb24 arrays from a pool.

    `convert(frame)` is PyAV's conversion (the fallback and the yardstick); call the pool
    with a decoded av.VideoFrame. One pool per decoder (not shared between threads).
    """

    def __init__(self, convert: Callable[[Any], np.ndarray]) -> None:
        self._convert = convert
        self._lib = _library()
        self._ctx: int | None = None
        self._ctx_key: tuple | None = None
        self._same: dict[tuple, bool] = {}  # frame kind -> our pixels equal PyAV's
        self._buffers: list[np.ndarray] = []

    def __call__(self, frame: Any) -> np.ndarray:
        fmt = frame.format.name
        if not self._lib or fmt not in _SOURCE_FORMATS:
            return self._convert(frame)
        key = (fmt, frame.width, frame.height, int(frame.colorspace), int(frame.color_range),
               int(frame.color_trc), int(frame.color_primaries))
        same = self._same.get(key)
        if same is False:
            return self._convert(frame)
        out = self._scale(frame, key)
        if same is None:
            self._same[key] = same = bool(np.array_equal(out, self._convert(frame)))
            if not same:
                return self._convert(frame)
        return out

    def _scale(self, frame: Any, key: tuple) -> np.ndarray:
        width, height = frame.width, frame.height
        if self._ctx_key != key[:3]:
            self.close()
            ctx = self._lib.sws_getContext(width, height, _SOURCE_FORMATS[key[0]], width,
                                           height, _RGB24, _SWS_BILINEAR, None, None, None)
            if not ctx:
                raise MemoryError('libswscale could not make a context')
            self._ctx, self._ctx_key = ctx, key[:3]
        out = self._free_array(height, width)
        planes = frame.planes
        src = _CPtrs(*(p.buffer_ptr for p in planes))
        strides = _CInts(*(p.line_size for p in planes))
        dst = _CPtrs(out.ctypes.data)
        dst_strides = _CInts(width * 3)
        # ctypes lets the GIL go for the call, as PyAV's reformat does
        rows = self._lib.sws_scale(self._ctx, src, strides, 0, height, dst, dst_strides)
        if rows != height:
            raise ValueError(f'libswscale converted {rows} of {height} rows')
        return out

    def _free_array(self, height: int, width: int) -> np.ndarray:
        """An array of the pool nobody else refers to, else a new one (kept in the pool
        while it has room: a consumer that keeps every frame gets fresh ones). The pool
        keeps buffers; every view of one (the array, a slice, cdr_in_place's memoryview)
        refers to its buffer, so a buffer with no other reference is free."""
        size = HEAD_ROOM + _ALIGN + height * width * 3
        for buffer in self._buffers:  # (a list iterator holds no reference to its items)
            if sys.getrefcount(buffer) == _FREE_REFS and buffer.nbytes == size:
                return _pixels(buffer, height, width)
        buffer = np.empty(size, np.uint8)
        _BUFFERS[id(buffer)] = buffer
        if len(self._buffers) < POOL_MAX:
            self._buffers.append(buffer)
        return _pixels(buffer, height, width)

    def close(self) -> None:
        if self._ctx:
            self._lib.sws_freeContext(self._ctx)
        self._ctx, self._ctx_key = None, None

    def __del__(self) -> None:
        self.close()


__all__ = ['HEAD_ROOM', 'POOL_MAX', 'RgbPool', 'cdr_in_place']
