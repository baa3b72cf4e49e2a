"""UMI adapter: streams, stamps, frame sync and what the sample generator writes."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from conftest import UMI_SIZE, rewrite_mcap, tree_digest
from diagnostic_msgs.msg import KeyValue
from geometry_msgs.msg import PoseStamped
from rclpy.serialization import deserialize_message

from react_ros.registry import detect_kind, open_episode
from react_ros.adapters.base import Episode, EpisodeOptions
from react_ros.kinds.umi.adapter import UmiAdapter
from react_ros.errors import SinkError
from react_ros.formats import video
from react_ros.formats.mcap_bag import McapBag
from react_ros.ros.msgs import message_class, to_ns
from react_ros.kinds.umi.sample import CAMERAS, read_frame_index, write_umi_sample
from react_ros.streams import Role, Stream
from test_umi_tracking import status_valid

POSE = '/{}/perception_interface/pose/state'
POINTER = '/{}/perception_interface/camera/state'
GRIPPER = '/{}/perception_interface/gripper/state'
TRACKING = '/tracking/meta_interface/tracking_status/state'
RECORDED = {
    **{POSE.format(c): 'geometry_msgs/msg/PoseStamped' for c in CAMERAS},
    **{POINTER.format(c): 'diagnostic_msgs/msg/DiagnosticStatus' for c in CAMERAS},
    **{GRIPPER.format(s): 'sensor_msgs/msg/JointState' for s in ('left', 'right')},
    TRACKING: 'std_msgs/msg/String',
}


@pytest.fixture(scope='module')
def episode(umi_episode: Path) -> Episode:
    return open_episode(umi_episode)


def stream(ep: Episode, topic: str, role: Role = Role.DATA) -> Stream:
    (s,) = [s for s in ep.streams if s.topic == topic and s.role is role]
    return s


def pointers(root: Path, cam: str) -> list[tuple[int, dict[str, str], Any]]:
    """(log time, values, msg) of a camera's frame pointers, in log-time order."""
    bag = McapBag(root / 'data/episode.mcap')
    cls = message_class('diagnostic_msgs/msg/DiagnosticStatus')
    out = []
    for raw in bag.messages([POINTER.format(cam)]):
        msg = deserialize_message(raw.data, cls)
        out.append((raw.log_time_ns, {kv.key: kv.value for kv in msg.values}, msg))
    return out


def test_probe_and_detect(umi_episode: Path, tmp_path: Path) -> None:
    assert UmiAdapter.probe(umi_episode)
    assert detect_kind(umi_episode) == 'umi'
    (tmp_path / 'file.txt').write_text('x')
    for not_umi in (tmp_path, tmp_path / 'file.txt', tmp_path / 'missing',
                    umi_episode / 'data', umi_episode / 'data/episode.mcap'):
        assert UmiAdapter.probe(not_umi) is False


def test_sample_layout_matches_the_format_document(umi_episode: Path) -> None:
    files = set(tree_digest(umi_episode))
    expected = {'.__version__', 'data/episode.mcap', 'meta/scene/robot_description.urdf',
                'meta/scene/workcell_description.yaml', 'meta/system/mcap.yaml',
                'meta/system/video_encoder.yaml', 'meta/system/annotation.yaml',
                'meta/system/flag.yaml'}
    for cam in CAMERAS:
        expected |= {f'data/{cam}.perception_interface.camera.state.mp4',
                     f'meta/sensor/{cam}.metadata_interface.camera_info.meta.yaml'}
    assert files == expected
    bag = McapBag(umi_episode / 'data/episode.mcap')
    assert {c.topic: c.schema_name for c in bag.channels()} == RECORDED
    counts = {c.topic: c.count for c in bag.channels()}
    mcap_yaml = yaml.safe_load((umi_episode / 'meta/system/mcap.yaml').read_text())
    listed = {t['topic_metadata']['name']: t['message_count']
              for t in mcap_yaml['rosbag2_bagfile_information']['topics_with_message_count']}
    assert listed == counts
    # Declared rates: 70 Hz poses, 200 Hz grippers, ~60 Hz cameras over 2 s.
    assert 135 <= counts[POSE.format('left')] <= 145
    assert 395 <= counts[GRIPPER.format('left')] <= 405
    assert 115 <= counts[POINTER.format('left')] <= 122
    info = yaml.safe_load(
        (umi_episode / 'meta/sensor/left.metadata_interface.camera_info.meta.yaml').read_text())
    assert (info['width'], info['height']) == UMI_SIZE
    assert len(info['d']) == 5 and info['r'] == [1.0, 0, 0, 0, 1.0, 0, 0, 0, 1.0]
    k = info['k']
    assert info['p'] == [k[0], 0, k[2], 0, 0, k[4], k[5], 0, 0, 0, 1, 0]


def test_streams_topics_types_and_counts(episode: Episode, umi_episode: Path) -> None:
    data = {s.topic: s.msg_type for s in episode.streams if s.role is Role.DATA}
    expected = dict(RECORDED)
    expected.update({'/tf': 'tf2_msgs/msg/TFMessage',
                     '/joint_states': 'sensor_msgs/msg/JointState',
                     '/annotations': 'std_msgs/msg/String',
                     '/tracking/input/joy': 'sensor_msgs/msg/Joy'})
    for body in ('head', 'left_grip', 'left_aim', 'right_grip', 'right_aim'):
        expected[f'/tracking/{body}/twist'] = 'geometry_msgs/msg/TwistStamped'
    for cam in CAMERAS:
        expected[f'/{cam}/image_raw'] = 'sensor_msgs/msg/Image'
        expected[f'/{cam}/camera_info'] = 'sensor_msgs/msg/CameraInfo'
    assert data == expected
    robot = {s.topic for s in episode.streams if s.role is Role.ROBOT_STATE}
    assert {'/robot_description', '/tf_static'} <= robot
    assert episode.urdf == (umi_episode / 'meta/scene/robot_description.urdf').read_text()
    counts = {c.topic: c.count for c in McapBag(umi_episode / 'data/episode.mcap').channels()}
    for s in episode.streams:
        if s.role is Role.DATA and not s.heavy:
            got = list(s.open())
            assert len(got) == s.count, s.topic
            assert [t for t, _ in got] == sorted(t for t, _ in got), s.topic
            if s.topic in counts:  # less the poses the tracking status calls invalid
                assert s.count == counts[s.topic] - episode.invalid_poses.get(s.topic, 0)
    for cam in CAMERAS:
        s = stream(episode, f'/{cam}/image_raw')
        assert s.heavy and s.count == counts[POINTER.format(cam)]
        assert s.approx_bytes >= UMI_SIZE[0] * UMI_SIZE[1] * 3
    assert episode.start_ns < episode.end_ns
    assert 1.9e9 < episode.duration_ns < 2.1e9
    # Absolute time is kept (2024), not rebased.
    assert 1_704_067_200_000_000_000 < episode.start_ns < 1_735_689_600_000_000_000


def test_recorded_topics_are_republished_unchanged(episode: Episode, umi_episode: Path) -> None:
    bag = McapBag(umi_episode / 'data/episode.mcap')
    for topic in RECORDED:
        cls = message_class(RECORDED[topic])
        recorded = []
        cam = topic.split('/')[1]
        tracked = status_valid(umi_episode, cam) if topic == POSE.format(cam) else None
        for k, raw in enumerate(bag.messages([topic])):
            if tracked is not None and not tracked[k]:
                continue  # the tracking status says this pose is not valid
            msg = deserialize_message(raw.data, cls)
            t = to_ns(msg.header.stamp) if hasattr(msg, 'header') else raw.log_time_ns
            recorded.append((t, raw.data))
        # Stamp order (stable): a recorder may log messages out of stamp order.
        recorded.sort(key=lambda e: e[0])
        # Unchanged to the byte: the recorded CDR is what goes out.
        assert list(stream(episode, topic).open()) == recorded, topic


@pytest.mark.parametrize('cam', CAMERAS)
def test_frame_n_is_pointer_n_with_its_header_stamp(episode: Episode, umi_episode: Path,
                                                    cam: str) -> None:
    ptrs = pointers(umi_episode, cam)
    images = list(stream(episode, f'/{cam}/image_raw').open())
    infos = list(stream(episode, f'/{cam}/camera_info').open())
    assert len(images) == len(ptrs) == len(infos) > 100
    for n, ((t, img), (_, values, ptr), (ti, info)) in enumerate(zip(images, ptrs, infos)):
        assert ptr.name == f'{cam}.perception_interface.camera.state.mp4'
        assert t == int(values['header.stamp']) == to_ns(img.header.stamp) == ti
        assert to_ns(info.header.stamp) == t
        assert img.header.frame_id == info.header.frame_id == f'{cam}_color_optical_frame'
        assert (img.encoding, img.width, img.height) == ('rgb8', *UMI_SIZE)
        assert img.step == img.width * 3 and len(img.data) == img.step * img.height
        pixels = np.frombuffer(img.data, np.uint8).reshape(img.height, img.width, 3)
        assert read_frame_index(pixels) == n


def test_videos_are_variable_frame_rate(episode: Episode, umi_episode: Path) -> None:
    for cam in CAMERAS:
        stamps = np.array([int(v['header.stamp']) for _, v, _ in pointers(umi_episode, cam)])
        gaps = np.diff(stamps)
        assert abs(np.median(gaps) - 1e9 / 60) < 1e6
        assert gaps.std() > 2e5  # not uniform
        # frame_index / 60 drifts against the true stamps (by over 1 ms here).
        drift = np.abs((stamps - stamps[0]) - np.arange(len(stamps)) * 1e9 / 60)
        assert drift.max() > 1e6
        # The container's PTS are the pointers' video.stamp (µs since the first frame).
        pts = video.frame_pts_ns(umi_episode / f'data/{cam}.perception_interface.camera.state.mp4')
        video_stamps = [int(v['video.stamp']) * 1000 for _, v, _ in pointers(umi_episode, cam)]
        assert pts == video_stamps
        assert len(set(np.diff(pts))) > 10
        assert video_stamps == [(s - stamps[0]) // 1000 * 1000 for s in stamps]


def test_frame_drop_is_flagged_on_annotations(episode: Episode, umi_episode: Path) -> None:
    flags = yaml.safe_load((umi_episode / 'meta/system/flag.yaml').read_text())['flags']
    assert len(flags) == 1 and flags[0]['reason'] == 'frame drop'
    flag_ns = flags[0]['time']
    widened = []
    for cam in CAMERAS:
        stamps = np.array([int(v['header.stamp']) for _, v, _ in pointers(umi_episode, cam)])
        gaps = np.diff(stamps)
        for i in np.flatnonzero(gaps > 1.5e9 / 60):
            widened.append((cam, int(stamps[i]), int(stamps[i + 1])))
    assert len(widened) == 1
    _, before, after = widened[0]
    assert before < flag_ns < after
    notes = [(t, json.loads(m.data)) for t, m in stream(episode, '/annotations').open()]
    flagged = [(t, n) for t, n in notes if n['type'] == 'flag']
    assert flagged == [(flag_ns, {'type': 'flag', 'reason': 'frame drop', 'time_ns': flag_ns,
                                  'source': 'flag.yaml'})]
    labels = [n['label'] for _, n in notes if n['type'] == 'label']
    assert labels == ['pick up the cup and place it on the plate']


def test_tf_from_poses(episode: Episode, umi_episode: Path) -> None:
    bag = McapBag(umi_episode / 'data/episode.mcap')
    cls = message_class('geometry_msgs/msg/PoseStamped')
    children = {'center': 'quest_hmd', 'left': 'quest_left_aim', 'right': 'quest_right_aim'}
    expected = sorted(
        (to_ns(p.header.stamp), children[cam], p.header.frame_id, p.pose.position.x,
         p.pose.orientation.w)
        for cam in CAMERAS
        for raw, tracked in zip(bag.messages([POSE.format(cam)]), status_valid(umi_episode, cam))
        for p in [deserialize_message(raw.data, cls)] if tracked)
    got = []
    for t, msg in stream(episode, '/tf').open():
        (tr,) = msg.transforms
        assert to_ns(tr.header.stamp) == t
        q = tr.transform.rotation
        assert math.isclose(q.x ** 2 + q.y ** 2 + q.z ** 2 + q.w ** 2, 1.0, rel_tol=1e-6)
        got.append((t, tr.child_frame_id, tr.header.frame_id, tr.transform.translation.x, q.w))
    assert sorted(got) == expected
    assert {g[2] for g in got} == {'quest_origin'}
    assert episode.warnings == []


def test_joint_states_use_urdf_names(episode: Episode) -> None:
    names = {tuple(m.name) for _, m in stream(episode, '/joint_states').open()}
    assert names == {('left_left_finger',), ('right_left_finger',)}
    # The joint names reach the robot state: each gripper moves both its fingers.
    children = set()
    for _, msg in stream(episode, '/tf', Role.ROBOT_STATE).open():
        children |= {t.child_frame_id for t in msg.transforms}
    assert children == {'left_left_finger', 'left_right_finger', 'right_left_finger',
                        'right_right_finger'}


def test_image_scale_scales_pixels_and_calibration(umi_episode: Path, episode: Episode) -> None:
    half = open_episode(umi_episode, options=EpisodeOptions(image_scale=0.5))
    t, img = next(iter(stream(half, '/left/image_raw').open()))
    assert (img.width, img.height) == (UMI_SIZE[0] // 2, UMI_SIZE[1] // 2)
    pixels = np.frombuffer(img.data, np.uint8).reshape(img.height, img.width, 3)
    assert read_frame_index(pixels) == 0
    _, info_half = next(iter(stream(half, '/left/camera_info').open()))
    _, info_full = next(iter(stream(episode, '/left/camera_info').open()))
    assert (info_half.width, info_half.height) == (img.width, img.height)
    for i in (0, 2, 4, 5):
        assert info_half.k[i] == pytest.approx(info_full.k[i] / 2)
    for i in (0, 2, 5, 6):
        assert info_half.p[i] == pytest.approx(info_full.p[i] / 2)
    assert list(info_half.d) == list(info_full.d)


def test_nan_and_non_unit_poses_are_not_published(umi_copy: Path, episode: Episode) -> None:
    seen = {'n': 0}

    def spoil(topic: str, msg: Any) -> Any:
        if topic == POSE.format('left'):
            seen['n'] += 1
            if seen['n'] == 5:
                msg.pose.orientation.x = math.nan
            elif seen['n'] == 9:
                msg.pose.orientation.w = 3.0
        return msg
    rewrite_mcap(umi_copy / 'data/episode.mcap', spoil)
    ep = open_episode(umi_copy)
    tf = list(stream(ep, '/tf').open())
    poses = list(stream(ep, POSE.format('left')).open())
    left = [m.transforms[0] for _, m in tf if m.transforms[0].child_frame_id == 'quest_left_aim']
    # (poses 5 and 9 are tracked: the tracking status drops none of them)
    assert status_valid(umi_copy, 'left')[4] and status_valid(umi_copy, 'left')[8]
    recorded = len(list(stream(episode, POSE.format('left')).open()))
    # never published: not on /tf, and not as the recorded message either
    assert len(poses) == stream(ep, POSE.format('left')).count == recorded - 2
    assert len(left) == len(poses)
    assert len(tf) == stream(ep, '/tf').count == stream(episode, '/tf').count - 2
    assert all(math.isfinite(deserialize_message(raw, PoseStamped).pose.orientation.x)
               for _, raw in poses)
    left_before = episode.invalid_poses[POSE.format('left')]
    assert ep.invalid_poses == {**episode.invalid_poses, POSE.format('left'): left_before + 2}
    assert all(math.isfinite(t.transform.rotation.x) for t in left)
    assert len(ep.warnings) == 1 and POSE.format('left') in ep.warnings[0]
    assert ' 2 pose' in ep.warnings[0]


def test_out_of_order_stamps_are_yielded_in_order(umi_copy: Path) -> None:
    """A late-stamped recording stays a valid (sorted) stream, nothing lost."""
    seen = {'n': 0}

    def swap(topic: str, msg: Any) -> Any:
        if topic == GRIPPER.format('left'):
            seen['n'] += 1
            if seen['n'] == 10:
                msg.header.stamp.nanosec = (msg.header.stamp.nanosec + 30_000_000) % 10**9
        return msg
    rewrite_mcap(umi_copy / 'data/episode.mcap', swap)
    ep = open_episode(umi_copy)
    got = [t for t, _ in stream(ep, GRIPPER.format('left')).open()]
    assert got == sorted(got) and len(got) == stream(ep, GRIPPER.format('left')).count


def test_sample_is_deterministic_and_refuses_to_overwrite(tmp_path: Path) -> None:
    a = write_umi_sample(tmp_path / 'a', seed=3, duration_s=0.5, width=64, height=48)
    b = write_umi_sample(tmp_path / 'b', seed=3, duration_s=0.5, width=64, height=48)
    assert tree_digest(a) == tree_digest(b)
    c = write_umi_sample(tmp_path / 'c', seed=4, duration_s=0.5, width=64, height=48)
    assert tree_digest(c)['data/episode.mcap'] != tree_digest(a)['data/episode.mcap']
    before = tree_digest(a)
    with pytest.raises(SinkError):
        write_umi_sample(a, seed=5, duration_s=0.5, width=64, height=48)
    assert tree_digest(a) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ['a', 'b', 'c']


def test_pointer_that_disagrees_with_its_video_is_a_warning(umi_copy: Path) -> None:
    def rename(topic: str, msg: Any) -> Any:
        if topic == POINTER.format('center'):
            msg.name = 'other.mp4'
            msg.values = [KeyValue(key=kv.key, value='999' if kv.key == 'width' else kv.value)
                          for kv in msg.values]
        return msg
    rewrite_mcap(umi_copy / 'data/episode.mcap', rename)
    warnings = open_episode(umi_copy).warnings
    assert len(warnings) == 2
    assert "name 'other.mp4'" in warnings[0]
    assert f'999x{UMI_SIZE[1]}' in warnings[1]


def test_cli_sample_then_info(tmp_path: Path) -> None:
    import subprocess
    import sys
    ep = tmp_path / 'episode0001'
    run = [sys.executable, '-m', 'react_ros.cli']
    made = subprocess.run([*run, 'sample', 'umi', str(ep), '--seed', '2', '--duration', '0.5',
                           '--resolution', '64x48'], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    info = subprocess.run([*run, 'info', str(ep)], capture_output=True, text=True, timeout=120)
    assert info.returncode == 0, info.stderr
    assert 'umi' in info.stdout and '/left/image_raw' in info.stdout
    meta = yaml.safe_load((ep / 'meta/sensor/left.metadata_interface.camera_info.meta.yaml')
                          .read_text())
    assert (meta['width'], meta['height']) == (64, 48)
    assert meta['k'][0] == pytest.approx(915.0 * 64 / 1920)
