"""React: what the registry reads at start-up, without importing the readers: `KIND`
(its adapter named as 'module:Class', imported when an episode is opened) and its
options."""
from __future__ import annotations

from dataclasses import dataclass

from react_ros.adapters.base import DatasetKind
from react_ros.options import KindOptions, at_least, option

GEL_AXES = ('local_y', 'dual_ball')


@dataclass(frozen=True)
class ReactOptions(KindOptions):
    segment: int | None = option(None, 'play only clean segment K of segments.json (from 0)',
                                 metavar='K', check=at_least(0))
    skip_bad: bool = option(False, 'drop the rows bad_frames.json flags')
    tactile_latency: int = option(0, 'pair view[i] with tactile[i+N] (15 for recordings '
                                  'before 2026-06-27)', metavar='N')
    gel_axis: str = option('local_y', "force direction: the sensor's local -y, or the "
                           'calibrated gel_axis_in_rigid (default local_y)', choices=GEL_AXES)


KIND = DatasetKind(
    name='react', title='React bimanual tactile task releases: parquet tables and mp4 videos',
    adapter='react_ros.kinds.react.adapter:ReactAdapter', options=ReactOptions,
    sample='react_ros.kinds.react.sample:write_react_sample',
    demo_episode='2026-05-10/episode_000',
    find_episodes='react_ros.kinds.react.adapter:find_episodes', order=1,
    small_sample={'duration_s': 0.5, 'width': 64, 'height': 48},
    read_first=lambda p: p.suffix == '.parquet')
