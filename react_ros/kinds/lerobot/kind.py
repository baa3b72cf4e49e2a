"""LeRobot: what the registry reads at start-up, without importing the readers: `KIND`
(its adapter named as 'module:Class', imported when an episode is opened) and its
options."""
from __future__ import annotations

from dataclasses import dataclass

from react_ros.adapters.base import DatasetKind
from react_ros.options import KindOptions, option

@dataclass(frozen=True)
class LeRobotOptions(KindOptions):
    urdf: str | None = option(None, "the robot's URDF: on /robot_description, and /tf from "
                              '/joint_states through the state publisher', metavar='FILE')
    joint_map: str | None = option(None, 'YAML: state name -> URDF joint, or -> {joint, scale, '
                                   'offset} (default: a name less its .pos is the joint)',
                                   metavar='FILE')


KIND = DatasetKind(
    name='lerobot', title='LeRobot datasets (v2.1 and v3.0): parquet tables and mp4 videos',
    adapter='react_ros.kinds.lerobot.adapter:LeRobotAdapter', options=LeRobotOptions,
    sample='react_ros.kinds.lerobot.sample:write_lerobot_sample',
    demo_episode='1', find_episodes='react_ros.kinds.lerobot.adapter:find_episodes', order=6,
    small_sample={'duration_s': 0.5, 'width': 64, 'height': 48, 'episodes_per_data_file': 1},
    read_first=lambda p: p.suffix == '.parquet' and p.parent.parent.name == 'data')
