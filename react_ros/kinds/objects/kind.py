"""Objects: what the registry reads at start-up, without importing the readers: `KIND`
(its adapter named as 'module:Class', imported when an episode is opened) and its
options."""
from __future__ import annotations

from dataclasses import dataclass

from react_ros.adapters.base import DatasetKind
from react_ros.options import KindOptions, at_least, option

@dataclass(frozen=True)
class ObjectsOptions(KindOptions):
    raw_markers: bool = option(True, 'publish object_markers.npz points on '
                               '/objects/raw_markers')
    marker_refresh: float = option(1.0, 'also republish /objects/markers every S seconds of '
                                   'data, for a viewer that joins late (0: only at the first '
                                   'frame and validity changes; default 1)', metavar='S',
                                   check=at_least(0))


KIND = DatasetKind(
    name='objects', title='mocap object poses: a session of objects.npz at 120 Hz with meshes',
    adapter='react_ros.kinds.objects.adapter:ObjectsAdapter', options=ObjectsOptions,
    sample='react_ros.kinds.objects.sample:write_objects_sample',
    demo_episode=None,
    find_episodes='react_ros.kinds.objects.adapter:find_episodes', order=2,
    small_sample={'duration_s': 1.0},
    read_first=lambda p: p.name == 'objects.npz')
