"""LeRobot episodes as streams: which video frame a row shows, names, the robot model."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from lerobot_support import EPISODES, VIDEO_V3

from react_ros.registry import open_episode
from react_ros.adapters.base import EpisodeOptions
from react_ros.formats import video
from react_ros.kinds.lerobot.adapter import LeRobotOptions
from react_ros.kinds.lerobot.sample import (FPS, JOINTS, TASKS, read_watermark,
                                            write_lerobot_sample)
from react_ros.streams import open_at

TOP = '/top/image_raw'
BASE_NS = 1_000_000_000  # config.yaml time_base_s


@pytest.fixture(scope='module')
def v3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_lerobot_sample(tmp_path_factory.mktemp('lerobot') / 'v3', seed=2)


@pytest.fixture(scope='module')
def v21(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_lerobot_sample(tmp_path_factory.mktemp('lerobot') / 'v21', seed=2,
                                version='v2.1')


def _pixels(msg) -> np.ndarray:
    return np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.width, 3)


def _from_timestamps(root: Path) -> list[float]:
    table = pq.read_table(root / EPISODES)
    return table.column('videos/observation.images.top/from_timestamp').to_pylist()


def test_episode_k_image_i_is_the_frame_at_from_timestamp_plus_timestamp(v3: Path) -> None:
    """Every episode of the sample shares one video file; each frame carries its index in
    the file. Image i of episode k must be frame (from_timestamp(k) + timestamp(i)) * fps;
    the file's frames from its start (what a reader ignoring from_timestamp shows) are not."""
    starts = _from_timestamps(v3)
    assert starts[0] == 0 and starts[1] > 0 and starts[2] > starts[1]  # mid-file episodes
    from_start = [read_watermark(f) for f in video.decode_rgb(v3 / VIDEO_V3)]
    for k, from_s in enumerate(starts):
        episode = open_episode(v3, 'lerobot', EpisodeOptions(episode=str(k)))
        top = next(s for s in episode.streams if s.topic == TOP)
        got = [(t, read_watermark(_pixels(m))) for t, m in top.open()]
        ts = [(t - BASE_NS) / 1e9 for t, _ in got]
        want = [round((from_s + s) * FPS) for s in ts]
        assert [w for _, w in got] == want, k
        if k:
            assert [w for _, w in got] != from_start[:len(got)], k


def test_a_seek_inside_an_episode_gives_the_same_frames(v3: Path) -> None:
    episode = open_episode(v3, 'lerobot', EpisodeOptions(episode='1'))
    top = next(s for s in episode.streams if s.topic == TOP)
    whole = [(t, read_watermark(_pixels(m))) for t, m in top.open()]
    t_mid = whole[9][0]
    assert [(t, read_watermark(_pixels(m))) for t, m in open_at(top, t_mid)] == whole[9:]


def test_stamps_are_the_timestamp_column_on_one_base(v3: Path) -> None:
    table = pq.read_table(v3 / 'data/chunk-000/file-001.parquet')  # episode 2
    ts = np.asarray(table.column('timestamp').to_pylist())
    episode = open_episode(v3, 'lerobot', EpisodeOptions(episode='2'))
    for stream in episode.streams:
        if stream.topic in (TOP, '/joint_states', '/observation/environment_state'):
            stamps = [t for t, _ in stream.open()]
            assert stamps == (BASE_NS + np.round(ts * 1e9).astype(np.int64)).tolist()


def test_a_named_state_is_joint_states_an_unnamed_one_an_array(v3: Path, v21: Path) -> None:
    named = open_episode(v3, 'lerobot', EpisodeOptions(episode='0'))
    joints = next(s for s in named.streams if s.topic == '/joint_states')
    msg = next(joints.open())[1]
    assert list(msg.name) == list(JOINTS) and len(msg.position) == len(JOINTS)
    unnamed = open_episode(v21, 'lerobot', EpisodeOptions(episode='0'))
    topics = {s.topic: s for s in unnamed.streams}
    assert '/joint_states' not in topics
    state = topics['/observation/state']
    assert state.msg_type == 'std_msgs/msg/Float64MultiArray'
    msg = next(state.open())[1]
    assert msg.layout.dim[0].label == 'observation.state' and len(msg.data) == len(JOINTS)
    assert topics['/action/joint_states'].msg_type == 'sensor_msgs/msg/JointState'


def test_the_sample_is_av1_as_lerobot_writes_it(v3: Path) -> None:
    info = json.loads((v3 / 'meta/info.json').read_text())
    assert info['features']['observation.images.top']['info']['video.codec'] == 'av1'
    assert info['fps'] == FPS != 30
    assert video.probe(v3 / VIDEO_V3).codec in ('libdav1d', 'av1', 'libaom-av1')


URDF = """<robot name="arm"><link name="base"/>{links}{joints}</robot>"""


def _urdf(tmp: Path) -> Path:
    names = [j[:-4] for j in JOINTS]
    links = ''.join(f'<link name="l{i}"/>' for i in range(len(names)))
    joints = ''.join(
        f'<joint name="{n}" type="revolute"><parent link="{"base" if i == 0 else f"l{i - 1}"}"/>'
        f'<child link="l{i}"/><origin xyz="0 0 0.1" rpy="0 0 0"/><axis xyz="0 0 1"/>'
        f'<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>'
        for i, n in enumerate(names))
    path = tmp / 'arm.urdf'
    path.write_text(URDF.format(links=links, joints=joints))
    return path


def test_a_urdf_puts_the_robot_on_tf_through_the_joint_map(v3: Path, tmp_path: Path) -> None:
    urdf = _urdf(tmp_path)
    jmap = tmp_path / 'map.yaml'
    jmap.write_text('shoulder_pan.pos: {joint: shoulder_pan, scale: 0.017453292519943295}\n')
    options = EpisodeOptions(episode='0', own=LeRobotOptions(urdf=str(urdf),
                                                             joint_map=str(jmap)))
    episode = open_episode(v3, 'lerobot', options)
    assert episode.urdf == urdf.read_text() and not episode.warnings
    topics = {s.topic: s for s in episode.streams}
    assert next(topics['/robot_description'].open())[1].data == urdf.read_text()
    state = next(topics['/joint_states'].open())[1]
    tf = next(topics['/tf'].open())[1]
    pan = next(x for x in tf.transforms if x.child_frame_id == 'l0')
    yaw = 2 * math.atan2(pan.transform.rotation.z, pan.transform.rotation.w)
    assert yaw == pytest.approx(math.radians(state.position[0]), abs=1e-9)  # degrees -> rad


def test_without_a_urdf_one_line_says_what_is_missing(v3: Path) -> None:
    episode = open_episode(v3, 'lerobot', EpisodeOptions(episode='0'))
    assert episode.urdf is None
    assert [w for w in episode.warnings if 'no robot model' in w and '--urdf FILE' in w]


def test_writing_the_av1_sample_leaves_the_callers_scheduling_alone(tmp_path: Path) -> None:
    """SVT-AV1 opened by root makes its thread SCHED_FIFO 99; the sample writer keeps that
    in a thread of its own, so neither the caller nor a process it starts afterwards runs
    real-time (two busy children of a real-time test run starved a whole machine)."""
    import os
    import subprocess
    import sys
    before = (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority)
    write_lerobot_sample(tmp_path / 'ds', episodes=1, duration_s=0.5)
    assert (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority) == before
    child = subprocess.run([sys.executable, '-c', 'import os; print(os.sched_getscheduler(0))'],
                           capture_output=True, text=True, check=True)
    assert int(child.stdout) == before[0]


def test_the_tasks_table_is_one_pandas_reads_and_each_task_is_announced(v3: Path) -> None:
    """meta/tasks.parquet as LeRobot writes it: a DataFrame indexed by the task text.

    pandas rebuilds the index from the file's pandas metadata, and only finds it when that
    metadata describes every column (the sample's first file had an empty list: pandas
    raised KeyError 'task', so LeRobot itself could not have loaded the sample). The text
    of each task is what /annotations says, by its task_index.
    """
    table = pq.read_table(v3 / 'meta' / 'tasks.parquet')
    meta = json.loads(table.schema.metadata[b'pandas'])
    described = {c['field_name'] for c in meta['columns']}
    assert described == set(table.column_names)
    assert set(meta['index_columns']) <= described
    assert table.column('task').to_pylist() == list(TASKS)
    for k in range(3):
        episode = open_episode(v3, 'lerobot', EpisodeOptions(episode=str(k)))
        notes = next(s for s in episode.streams if s.topic == '/annotations')
        said = [json.loads(m.data) for _, m in notes.open()]
        assert said and all(a['task'] == TASKS[a['task_index']] for a in said), said
