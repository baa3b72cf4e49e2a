"""UMI: what the registry reads at start-up, without importing the readers: `KIND`
(its adapter named as 'module:Class', imported when an episode is opened)."""
from __future__ import annotations

from react_ros.adapters.base import DatasetKind

# UMI's 1920x1200 x 3 cameras x 60 Hz reached a real-time factor of 0.45 on a 2-core
# machine (0.70 with --image-scale 0.5, 0.86 at 1280x800); 960x600 played at 1.00 in 3 of 3
# runs with other work on the machine (`react-ros demo` with its rate table).
KIND = DatasetKind(
    name='umi', title='UMI gripper demonstrations: an MCAP and three mp4 videos',
    adapter='react_ros.kinds.umi.adapter:UmiAdapter',
    sample='react_ros.kinds.umi.sample:write_umi_sample',
    find_episodes='react_ros.kinds.umi.adapter:find_episodes', order=0,
    demo_resolution=(960, 600),
    small_sample={'duration_s': 0.3, 'width': 64, 'height': 48},
    read_first=lambda p: p.name == 'episode.mcap')
