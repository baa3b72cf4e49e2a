"""The installed KindContract on LeRobot samples, v3.0 and v2.1, and their bad inputs."""
from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from lerobot_support import (DATA_V3, EPISODES, VIDEO_V3, edit_info, edit_parquet,
                             replace_bytes)

from react_ros.kinds.lerobot.sample import write_lerobot_sample
from react_ros.kit import KindContract, Refused

V21_VIDEO = Path('videos/chunk-000/observation.images.top/episode_000002.mp4')
ROWS_1 = 32  # episode 1 of the default sample: 2 s at 15 fps + 2 frames
TOPICS_V3 = ('/top/image_raw', '/wrist/image_raw',
             '/joint_states', '/action/joint_states', '/observation/environment_state',
             '/next/done')


def _late(values: list, episodes: list) -> None:
    row = [i for i, e in enumerate(episodes) if e == 1][3]
    values[row] += 0.02  # between two frames: 0.2 + 0.02 s, frames at 0.2 and 0.2667 s


def _past_end(values: list, episodes: list) -> None:
    values[episodes.index(1)] = 99.0


def _both_past_end(root: Path) -> None:
    key = 'videos/observation.images.top/'
    edit_parquet(EPISODES, key + 'from_timestamp', _past_end)(root)
    edit_parquet(EPISODES, key + 'to_timestamp',
                 lambda v, e: v.__setitem__(e.index(1), 100.0))(root)


def _velocity(doc: dict) -> None:
    doc['features']['observation.velocity'] = {'dtype': 'float32', 'shape': [6], 'names': None}


class TestLeRobotV3(KindContract):
    kind = 'lerobot'
    episode_id = '1'  # starts mid-file in the shared video
    counts: ClassVar[dict[str, int]] = {**{t: ROWS_1 for t in TOPICS_V3}, '/annotations': 1}
    live_kwargs: ClassVar[dict] = {}
    REFUSED: ClassVar[list[Refused]] = [
        Refused('to_timestamp past the video end',
                edit_parquet(EPISODES, 'videos/observation.images.top/to_timestamp',
                             _past_end), str(EPISODES), ('to_timestamp 99 s', 'past the end'),
                args=('--episode', '1')),
        Refused('from_timestamp past the video end', _both_past_end, str(EPISODES),
                ('from_timestamp 99 s', 'past the end'), args=('--episode', '1')),
        Refused('timestamp off the video frame times', edit_parquet(DATA_V3, 'timestamp', _late),
                str(DATA_V3), ('episode 1 row 3', 'no frame', 'within 0.0001 s'),
                args=('--episode', '1')),
        Refused('a feature missing from the parquet', edit_info(_velocity), str(DATA_V3),
                ("'observation.velocity'", 'not a column'), args=('--episode', '1')),
        Refused('a codec this FFmpeg cannot decode', replace_bytes(VIDEO_V3, b'av01', b'xv01'),
                str(VIDEO_V3), ("sample entry 'xv01'", 'no decoder'), args=('--episode', '1')),
        Refused('unknown codebase_version',
                edit_info(lambda d: d.update(codebase_version='v4.0')), 'meta/info.json',
                ("codebase_version 'v4.0'",), args=('--episode', '1')),
        Refused('no episode chosen', None, '', ('3 episodes', '--episode')),
        Refused('an episode it does not hold', None, '', ("no episode '7'",),
                args=('--episode', '7')),
        Refused('length disagrees with the table',
                edit_parquet(EPISODES, 'length', lambda v, e: v.__setitem__(1, 5)),
                str(DATA_V3), ('holds 32 rows of episode 1', 'length is 5'),
                args=('--episode', '1')),
        Refused('a missing URDF', None, '--urdf', ('nowhere.urdf',),
                args=('--episode', '1', '--urdf', 'nowhere.urdf')),
    ]

    @pytest.fixture(scope='class')
    @classmethod
    def source(cls, tmp_path_factory: pytest.TempPathFactory) -> Path:
        return write_lerobot_sample(tmp_path_factory.mktemp('lerobot') / 'v3', seed=4)


class TestLeRobotV21(KindContract):
    kind = 'lerobot'
    episode_id = '2'
    counts: ClassVar[dict[str, int]] = {'/observation/state': 34, '/action/joint_states': 34,
                                        '/top/image_raw': 34}
    REFUSED: ClassVar[list[Refused]] = [
        Refused('unknown codebase_version',
                edit_info(lambda d: d.update(codebase_version='v2.0')), 'meta/info.json',
                ("codebase_version 'v2.0'",), args=('--episode', '2')),
        Refused('its video missing',
                lambda r: (r / V21_VIDEO).unlink(), str(V21_VIDEO), ('video file is missing',),
                args=('--episode', '2')),
    ]
    no_release = 'TestLeRobotV3 runs convert-all on the kind; a v2.1 release reads the same way'

    @pytest.fixture(scope='class')
    @classmethod
    def source(cls, tmp_path_factory: pytest.TempPathFactory) -> Path:
        return write_lerobot_sample(tmp_path_factory.mktemp('lerobot') / 'v21', seed=4,
                                    version='v2.1')
