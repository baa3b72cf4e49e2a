"""A RoboTwin sample converted to a bag and read back with mcap + mcap_ros2, against the files.

Expectations come from the HDF5 files themselves (h5py, numpy, PyAV), never from the adapter.
"""
from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from robotwin_support import EP0, EP1, EPISODE, EXTRA0, NO_EXTRA, robotwin_release
from scipy.spatial.transform import Rotation

from react_ros.registry import EpisodeOptions, open_episode
from react_ros.kinds.robotwin.adapter import RobotwinOptions
from react_ros.kinds.robotwin.hdf5 import aligned_indices

BASE_NS = 1_000_000_000  # kinds/robotwin/config.yaml: time_base_s
STEP_NS = 100_000_000  # 10 Hz, the default --fps
HEAD = 'observation/head_camera'
Msgs = dict[str, list[tuple[int, Any]]]
AGILEX = ['fl_joint1', 'fl_joint2', 'fl_joint3', 'fl_joint4', 'fl_joint5', 'fl_joint6',
          'left_gripper', 'fr_joint1', 'fr_joint2', 'fr_joint3', 'fr_joint4', 'fr_joint5',
          'fr_joint6', 'right_gripper']


def _ns(stamp: Any) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def _convert(root: Path, out: Path, *args: str) -> Msgs:
    subprocess.run([sys.executable, '-m', 'react_ros.cli', 'convert', str(root), *args,
                    '-o', str(out), '--quiet'], check=True, timeout=120)
    msgs: Msgs = {}
    (mcap_file,) = out.glob('*.mcap')
    with open(mcap_file, 'rb') as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _, channel, message, msg in reader.iter_decoded_messages(log_time_order=True):
            msgs.setdefault(channel.topic, []).append((message.log_time, msg))
    return msgs


@pytest.fixture(scope='module')
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return robotwin_release(tmp_path_factory)


@pytest.fixture(scope='module')
def bag(release: Path, tmp_path_factory: pytest.TempPathFactory) -> Msgs:
    return _convert(release, tmp_path_factory.mktemp('rt_bag') / 'bag', '--episode', EPISODE)


@pytest.fixture(scope='module')
def files(release: Path) -> dict[str, Any]:
    """Everything small the tests compare with, read straight from the HDF5 files."""
    out: dict[str, Any] = {}
    with h5py.File(release / EP0) as f:
        for key in ('intrinsic_cv', 'extrinsic_cv', 'cam2world_gl'):
            out[key] = f[f'{HEAD}/{key}'][()].astype(np.float64)
        out['t'] = f[f'{HEAD}/rgb'].shape[0]
        for s in ('left', 'right'):
            out[f'{s}_endpose'] = f[f'endpose/{s}_endpose'][()]
        out['vector'] = f['joint_action/vector'][()]
    with h5py.File(release / EXTRA0) as f:
        out['names'] = [n.decode() for n in f['entities/name'][()]]
        out['ids'] = f['entities/entity_id'][()].tolist()
        out['kinds'] = [n.decode() for n in f['entities/kind'][()]]
        out['pose'] = f['entities/pose'][()].astype(np.float64)
        out['left_k'] = f['observation/left_camera/intrinsic_cv'][()].astype(np.float64)
        out['left_ext'] = f['observation/left_camera/extrinsic_cv'][()].astype(np.float64)
        out['targets'] = json.loads(f['segmentation'].attrs['targets'])
    return out


def _frame(path: Path, key: str, i: int) -> np.ndarray:
    with h5py.File(path) as f:
        return f[key][i]


def _decode(jpeg: bytes) -> np.ndarray:
    """A standard decoder (libjpeg's, through Pillow): RoboTwin's bytes come out R/B swapped."""
    from PIL import Image
    with Image.open(io.BytesIO(bytes(jpeg).rstrip(b'\0'))) as im:
        return np.asarray(im.convert('RGB'))


def _image(msg: Any, dtype: Any, channels: int) -> np.ndarray:
    data = np.frombuffer(bytes(msg.data), dtype=dtype)
    return data.reshape(msg.height, msg.width, channels) if channels > 1 else \
        data.reshape(msg.height, msg.width)


def _project(points: np.ndarray, k: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, ...]:
    cam = points @ e[:, :3].T + e[:, 3]
    return (np.floor(k[0, 0] * cam[:, 0] / cam[:, 2] + k[0, 2]).astype(int),
            np.floor(k[1, 1] * cam[:, 1] / cam[:, 2] + k[1, 2]).astype(int), cam[:, 2])


def test_every_topic_is_stamped_index_over_fps_on_the_documented_base(bag: Msgs,
                                                                      files: dict) -> None:
    t = files['t']
    frames = BASE_NS + np.arange(t) * STEP_NS
    per_frame = ['/tf', '/head_camera/image_raw', '/head_camera/camera_info',
                 '/head_camera/depth/image_raw', '/head_camera/segmentation/actor/image_raw',
                 '/head_camera/segmentation/mesh/image_raw',
                 '/head_camera/segmentation/actor_id/image_raw',
                 '/head_camera/segmentation/mesh_id/image_raw', '/pointcloud', '/joint_states',
                 '/left_endpose', '/right_endpose', '/left_gripper', '/right_gripper',
                 '/left_camera/image_raw',
                 '/left_camera/camera_info', '/right_camera/image_raw',
                 '/right_camera/camera_info']
    for topic in per_frame:
        got = [(log, _ns(m.header.stamp) if hasattr(m, 'header') else
                _ns(m.transforms[0].header.stamp)) for log, m in bag[topic]]
        assert [g[1] for g in got] == frames.tolist(), topic
        assert all(log == st for log, st in got), topic  # log time = header.stamp
    assert len(bag['/tf_static']) == len(bag['/annotations']) == 1
    assert min(log for msgs in bag.values() for log, _ in msgs) == BASE_NS > 0


def test_head_image_has_the_right_colours_proved_by_the_point_cloud(bag: Msgs, release: Path,
                                                                    files: dict) -> None:
    for i in (0, 7):
        msg = bag['/head_camera/image_raw'][i][1]
        assert (msg.encoding, msg.width, msg.height) == ('rgb8', 160, 120)
        assert msg.header.frame_id == 'head_camera_optical_frame'
        image = _image(msg, np.uint8, 3)
        stored = _decode(_frame(release / EP0, f'{HEAD}/rgb', i))
        assert np.array_equal(image, stored[..., ::-1])  # the stored R and B swapped back
        cloud = _frame(release / EP0, 'pointcloud', i)
        cloud = cloud[np.any(cloud != 0, axis=1)]
        u, v, z = _project(cloud[:, :3].astype(float), files['intrinsic_cv'][i],
                           files['extrinsic_cv'][i])
        ok = (z > 0) & (u >= 0) & (v >= 0) & (u < 160) & (v < 120)
        assert ok.mean() > 0.95
        truth = cloud[ok, 3:] * 255
        published = np.abs(image[v[ok], u[ok]] - truth).mean()
        swapped = np.abs(image[v[ok], u[ok]][:, ::-1] - truth).mean()
        assert published < 12 and swapped > 3 * published, (published, swapped)


def _ros_k(stored: np.ndarray) -> np.ndarray:
    """intrinsic_cv (SAPIEN: pixel u's centre at u + 0.5) in ROS's convention (centre at u)."""
    k = np.array(stored, dtype=np.float64)
    k[..., :2, 2] -= 0.5
    return k


def test_camera_info_is_each_frames_own_intrinsics(bag: Msgs, files: dict) -> None:
    ks = [np.array(m.k).reshape(3, 3) for _, m in bag['/head_camera/camera_info']]
    assert np.allclose(ks, _ros_k(files['intrinsic_cv']), atol=1e-6)
    ps = [np.array(m.p).reshape(3, 4) for _, m in bag['/head_camera/camera_info']]
    assert np.allclose([p[:, :3] for p in ps], ks) and not np.any([p[:, 3] for p in ps])
    depth = [np.array(m.k).reshape(3, 3) for _, m in bag['/head_camera/depth/camera_info']]
    assert np.array_equal(depth, ks)
    assert not np.allclose(ks[0], ks[-1])  # it moves: per frame, not the first one reused
    for _, m in bag['/head_camera/camera_info']:
        assert (m.width, m.height, m.header.frame_id) == (160, 120, 'head_camera_optical_frame')
    left = [np.array(m.k).reshape(3, 3) for _, m in bag['/left_camera/camera_info']]
    assert np.allclose(left, _ros_k(files['left_k']), atol=1e-6)


def _tf(msg: Any, child: str) -> np.ndarray:
    (tr,) = [t for t in msg.transforms if t.child_frame_id == child]
    a, q = tr.transform.translation, tr.transform.rotation
    assert tr.header.frame_id == 'world'
    m = np.eye(4)
    m[:3, :3] = Rotation.from_quat([q.x, q.y, q.z, q.w]).as_matrix()
    m[:3, 3] = [a.x, a.y, a.z]
    return m


def test_head_camera_tf_is_the_inverse_of_extrinsic_cv_and_agrees_with_gl(bag: Msgs,
                                                                         files: dict) -> None:
    flip = np.diag([1.0, -1.0, -1.0, 1.0])
    for i, (_, msg) in enumerate(bag['/tf']):
        cam_in_world = _tf(msg, 'head_camera_optical_frame')
        ext = np.vstack([files['extrinsic_cv'][i], [0, 0, 0, 1]])
        assert np.allclose(cam_in_world @ ext, np.eye(4), atol=1e-5)
        assert np.allclose(cam_in_world, files['cam2world_gl'][i] @ flip, atol=1e-5)
    assert not np.allclose(_tf(bag['/tf'][0][1], 'head_camera_optical_frame'),
                           _tf(bag['/tf'][-1][1], 'head_camera_optical_frame'))


def test_wrist_camera_tf_follows_each_frames_extrinsic(bag: Msgs, files: dict) -> None:
    # the document: the wrist calibration changes every frame, with the arm
    poses = [_tf(msg, 'left_camera_optical_frame') for _, msg in bag['/tf']]
    for i, cam_in_world in enumerate(poses):
        ext = np.vstack([files['left_ext'][i], [0, 0, 0, 1]])
        assert np.allclose(cam_in_world @ ext, np.eye(4), atol=1e-5)
    # frame 0's calibration kept for the episode would be centimetres off by the end
    assert np.linalg.norm(poses[-1][:3, 3] - poses[0][:3, 3]) > 0.01


def test_depth_is_32fc1_metres_and_meets_the_point_cloud(bag: Msgs, release: Path,
                                                         files: dict) -> None:
    for i in (0, 9):
        msg = bag['/head_camera/depth/image_raw'][i][1]
        assert msg.encoding == '32FC1' and msg.step == 160 * 4
        depth = _image(msg, np.float32, 1)
        stored_mm = _frame(release / EP0, f'{HEAD}/depth', i)
        assert np.allclose(depth, stored_mm / 1000.0, rtol=1e-6)
        cloud = _frame(release / EP0, 'pointcloud', i)
        cloud = cloud[np.any(cloud != 0, axis=1)]
        u, v, z = _project(cloud[:, :3].astype(float), files['intrinsic_cv'][i],
                           files['extrinsic_cv'][i])
        assert np.median(np.abs(depth[v, u] - z)) < 0.002  # metres: the same frame agrees


def test_segmentations_as_stored_and_raw_ids_as_16uc1(bag: Msgs, release: Path) -> None:
    i = 5
    for what in ('actor', 'mesh'):
        msg = bag[f'/head_camera/segmentation/{what}/image_raw'][i][1]
        assert msg.encoding == 'rgb8'
        assert np.array_equal(_image(msg, np.uint8, 3),
                              _frame(release / EP0, f'{HEAD}/{what}_segmentation', i))
        raw = bag[f'/head_camera/segmentation/{what}_id/image_raw'][i][1]
        assert raw.encoding == '16UC1'
        assert np.array_equal(_image(raw, np.uint16, 1),
                              _frame(release / EXTRA0, f'{HEAD}/{what}_id', i))


def test_point_cloud_in_world_xyz_rgb_without_padding(bag: Msgs, release: Path) -> None:
    for i in (0, 3, 11):
        msg = bag['/pointcloud'][i][1]
        stored = _frame(release / EP0, 'pointcloud', i)
        real = stored[~np.all(stored == 0, axis=1)]
        assert len(real) < len(stored) or i == 0  # the sample pads every frame but the first
        assert msg.header.frame_id == 'world' and msg.height == 1 and msg.width == len(real)
        assert [(f.name, f.offset, f.datatype, f.count) for f in msg.fields] == [
            ('x', 0, 7, 1), ('y', 4, 7, 1), ('z', 8, 7, 1), ('rgb', 12, 7, 1)]
        rec = np.frombuffer(bytes(msg.data), dtype=[('x', '<f4'), ('y', '<f4'), ('z', '<f4'),
                                                     ('rgb', '<u4')])
        assert np.array_equal(np.stack([rec['x'], rec['y'], rec['z']], 1), real[:, :3])
        rgb = np.stack([(rec['rgb'] >> 16) & 255, (rec['rgb'] >> 8) & 255, rec['rgb'] & 255], 1)
        assert np.array_equal(rgb, np.round(real[:, 3:] * 255).astype(int))
        # the cloud's colours are in R G B order already: swapping them would change them
        assert not np.array_equal(rgb, np.round(real[:, 5:2:-1] * 255).astype(int))
        assert not np.any(np.all(np.stack([rec['x'], rec['y'], rec['z']], 1) == 0, axis=1))


def test_entities_on_tf_with_unique_names_and_wxyz_read_right(bag: Msgs, files: dict) -> None:
    names, ids, kinds, pose = files['names'], files['ids'], files['kinds'], files['pose']
    assert names.count('001_bottle') == 2
    expected = {j: (f'{n}_{e}' if names.count(n) > 1 else n) for j, (n, e) in
                enumerate(zip(names, ids))}
    assert {'001_bottle_2', '001_bottle_3', '020_hammer', 'fl_link6'} <= set(expected.values())
    static = [j for j, k in enumerate(kinds) if k == 'static']
    assert static and [t.child_frame_id for t in bag['/tf_static'][0][1].transforms] == \
        [expected[j] for j in static]
    for i in (0, 6, 19):
        msg = bag['/tf'][i][1]
        for j, child in expected.items():
            if j in static:
                assert child not in [t.child_frame_id for t in msg.transforms]
                continue
            m = _tf(msg, child)
            x, y, z, qw, qx, qy, qz = pose[i, j]
            assert np.allclose(m[:3, 3], [x, y, z], atol=1e-6)
            assert np.allclose(m[:3, :3], Rotation.from_quat([qx, qy, qz, qw]).as_matrix(),
                               atol=1e-5)
            if j == names.index('020_hammer'):  # the stored order read as x y z w: not this
                assert not np.allclose(m[:3, :3], Rotation.from_quat(
                    [qw, qx, qy, qz]).as_matrix(), atol=1e-2)


def test_endposes_are_pose_stamped_in_world_with_wxyz_reordered(bag: Msgs, files: dict) -> None:
    for side in ('left', 'right'):
        stored = files[f'{side}_endpose']
        for i, (_, msg) in enumerate(bag[f'/{side}_endpose']):
            p, q = msg.pose.position, msg.pose.orientation
            assert msg.header.frame_id == 'world'
            assert np.allclose([p.x, p.y, p.z, q.w, q.x, q.y, q.z], stored[i])


def test_joint_states_carry_the_agilex_names_and_the_vector(bag: Msgs, files: dict) -> None:
    for i, (_, msg) in enumerate(bag['/joint_states']):
        assert list(msg.name) == AGILEX
        assert np.allclose(msg.position, files['vector'][i])


def test_annotations_carry_task_targets_and_the_replay_flag(bag: Msgs, files: dict) -> None:
    doc = json.loads(bag['/annotations'][0][1].data)
    assert (doc['task'], doc['embodiment'], doc['episode']) == ('beat_block_hammer', 'agilex', 0)
    assert doc['targets'] == files['targets']
    assert doc['task_objects'] == {'hammer': 5, 'bottle1': 2, 'bottle2': 3}
    assert doc['replay_success_check_failed'] is False  # the report lists Franka episodes only
    assert {e['frame'] for e in doc['entities']} >= {'001_bottle_2', '001_bottle_3'}


def test_an_episode_without_extra_has_no_entity_topics(release: Path,
                                                       tmp_path: Path) -> None:
    msgs = _convert(release, tmp_path / 'bag', '--episode', NO_EXTRA)
    with h5py.File(release / EP1) as f:
        t = f[f'{HEAD}/rgb'].shape[0]
    assert len(msgs['/head_camera/image_raw']) == len(msgs['/pointcloud']) == t
    assert '/tf_static' not in msgs and '/left_camera/image_raw' not in msgs
    assert '/head_camera/segmentation/actor_id/image_raw' not in msgs
    assert {tr.child_frame_id for tr in msgs['/tf'][0][1].transforms} == \
        {'head_camera_optical_frame'}
    doc = json.loads(msgs['/annotations'][0][1].data)
    assert doc['extra'] is False and 'targets' not in doc


def test_aligned_frames_follow_the_single_rule() -> None:
    assert aligned_indices(132).tolist() == list(range(0, 129, 4))
    assert aligned_indices(129).tolist() == list(range(0, 129, 4))
    assert aligned_indices(128).tolist() == np.linspace(0, 127, 33, dtype=np.int64).tolist()
    assert aligned_indices(70).tolist() == np.linspace(0, 69, 33, dtype=np.int64).tolist()
    assert aligned_indices(128)[-1] == 127 and len(set(aligned_indices(70).tolist())) == 33
    # the old scripts' rule (linspace whenever T <= 132) picks other frames for T in 130..132
    for t in (130, 131, 132):
        assert aligned_indices(t).tolist() != np.linspace(0, t - 1, 33, dtype=np.int64).tolist()


@pytest.mark.parametrize('t', [132, 129, 128, 70])
def test_aligned_frames_are_the_only_frames_played(t: int, tmp_path: Path) -> None:
    from react_ros.kinds.robotwin.sample import write_episode
    data = tmp_path / 'agilex' / 'task' / 'gt_export' / 'data'
    data.mkdir(parents=True)
    path = write_episode(data, 0, t, seed=1, size=(32, 24), extra=False)
    episode = open_episode(path, 'robotwin', EpisodeOptions(
        own=RobotwinOptions(aligned_frames=True, fps=20.0)))
    want = aligned_indices(t)
    expected = 1_000_000_000 + want * 50_000_000
    for stream in episode.streams:
        if stream.topic in ('/head_camera/camera_info', '/joint_states', '/tf'):
            assert [ts for ts, _ in stream.open()] == expected.tolist(), stream.topic


def test_a_franka_episode_gets_the_franka_joint_layout(tmp_path: Path) -> None:
    from react_ros.kinds.robotwin.sample import write_episode
    data = tmp_path / 'franka' / 'adjust_bottle' / 'gt_export' / 'data'
    data.mkdir(parents=True)
    path = write_episode(data, 3, 6, seed=2, size=(32, 24), extra=False, embodiment='franka')
    with h5py.File(path) as f:
        vector = f['joint_action/vector'][()]
    assert vector.shape == (6, 16)
    episode = open_episode(data.parents[1], 'robotwin')  # the task folder, one episode
    (stream,) = [s for s in episode.streams if s.topic == '/joint_states']
    msgs = [m for _, m in stream.open()]
    assert msgs[0].name[:2] == ['left_panda_joint1', 'left_panda_joint2']
    assert msgs[0].name[7] == 'left_gripper' and len(msgs[0].name) == 16
    assert np.allclose(msgs[2].position, vector[2])


def test_the_replay_flag_is_read_from_the_release_report(release: Path,
                                                         tmp_path: Path) -> None:
    root = Path(shutil.copytree(release, tmp_path / 'release'))
    report = root / 'reports' / 'replay_success_check_failed.json'
    report.write_text(json.dumps([{'embodiment': 'agilex', 'task': 'beat_block_hammer',
                                   'episode': 0}]))

    def flag() -> Any:
        episode = open_episode(root, 'robotwin', EpisodeOptions(episode=EPISODE))
        (stream,) = [s for s in episode.streams if s.topic == '/annotations']
        return json.loads(next(iter(stream.open()))[1].data)['replay_success_check_failed']
    assert flag() is True
    report.write_text(json.dumps(['agilex/beat_block_hammer/episode1']))
    assert flag() is False
    report.unlink()
    assert flag() is None  # a release without the report: unknown, not "passed"


def test_fps_sets_the_stamps(release: Path) -> None:
    episode = open_episode(release, 'robotwin', EpisodeOptions(
        episode=EPISODE, own=RobotwinOptions(fps=25.0)))
    (stream,) = [s for s in episode.streams if s.topic == '/joint_states']
    stamps = [t for t, _ in stream.open()]
    assert stamps[:3] == [1_000_000_000, 1_040_000_000, 1_080_000_000]


def test_image_scale_scales_colour_images_and_their_k_only(release: Path, files: dict) -> None:
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import Image

    episode = open_episode(release, 'robotwin', EpisodeOptions(episode=EPISODE,
                                                               image_scale=0.5))
    streams = {s.topic: s for s in episode.streams}

    def first(topic: str) -> Any:
        msg = next(iter(streams[topic].open()))[1]
        return deserialize_message(msg, Image) if isinstance(msg, bytes) else msg
    for cam in ('head_camera', 'left_camera'):
        image = first(f'/{cam}/image_raw')
        info = first(f'/{cam}/camera_info')
        assert (image.width, image.height) == (info.width, info.height) == (80, 60)
    k = np.array(first('/head_camera/camera_info').k).reshape(3, 3)
    # the stored plane (image edge at 0) scales with the pixels; then the half-pixel shift
    assert np.allclose(k, _ros_k(np.diag([0.5, 0.5, 1.0]) @ files['intrinsic_cv'][0]),
                       atol=1e-6)
    depth, depth_info = first('/head_camera/depth/image_raw'), \
        first('/head_camera/depth/camera_info')
    assert (depth.width, depth_info.width) == (160, 160)  # distances are not interpolated
    assert first('/head_camera/segmentation/actor/image_raw').width == 160


def test_the_episode_file_and_every_folder_above_it_are_claimed(release: Path) -> None:
    from react_ros.registry import detect_kind
    from react_ros.kinds.robotwin.adapter import episodes_below
    data = release / EP0
    for path in (data, *list(data.parents)[:5]):
        assert detect_kind(path) == 'robotwin', path
    assert list(episodes_below(release)) == [EPISODE, NO_EXTRA]
    assert list(episodes_below(data.parents[2])) == ['episode0', 'episode1']
    assert list(episodes_below(data.parent)) == ['episode0', 'episode1']
    one = open_episode(data, 'robotwin')  # the contract's unit: the episode file itself
    by_id = open_episode(data.parents[2], 'robotwin', EpisodeOptions(episode='episode0'))
    assert one.path == by_id.path == data
