"""TrueTrace: what the registry reads at start-up, without importing the readers: `KIND`
(its adapter named as 'module:Class', imported when an episode is opened) and its
options."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from react_ros.adapters.base import DatasetKind
from react_ros.options import KindOptions, option

@dataclass(frozen=True)
class TrueTraceOptions(KindOptions):
    # convert-all's --verify (sources fingerprinted by content) checks the MANIFEST too
    FROM_RUN: ClassVar[frozenset[str]] = frozenset({'verify'})

    verify: bool = option(False, 'check MANIFEST.sha256 first and refuse a delivery whose '
                          'files do not match it')


KIND = DatasetKind(
    name='truetrace', title='TrueTrace stereo egocentric episodes: fisheye stereo mp4s, IMU, '
    '3D hands (package, episode folder or HDF5 export)',
    adapter='react_ros.kinds.truetrace.adapter:TrueTraceAdapter', options=TrueTraceOptions,
    sample='react_ros.kinds.truetrace.sample:write_truetrace_sample',
    find_episodes='react_ros.kinds.truetrace.adapter:find_episodes', order=3,
    small_sample={'duration_s': 0.5, 'width': 64, 'height': 36},
    read_first=lambda p: p.name == 'hands_3d.jsonl')
