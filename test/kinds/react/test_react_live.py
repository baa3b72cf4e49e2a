"""React over real DDS: the gel centre projected from received TF + CameraInfo lands where the
sample's own files put it, and tactile/force/values arrive on fresh rows only, one stamp per
tactile row, so a subscriber pairs them by header.stamp.

The expectation is computed here from the release files (parquet via pyarrow, the JSON
calibration), with this test's own plumb_bob projection, not from the adapter.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from react_support import EPISODE, column, edit_json, react_release
from scipy.spatial.transform import Rotation

from live_support import receive_a_play, spawn_player, stop
from react_ros.ros.msgs import to_ns

pytestmark = pytest.mark.timeout(180)


def plumb_bob(k: np.ndarray, d: list[float], p_cam: np.ndarray) -> np.ndarray:
    x, y = p_cam[0] / p_cam[2], p_cam[1] / p_cam[2]
    k1, k2, p1, p2, k3 = d
    r2 = x * x + y * y
    radial = 1 + k1 * r2 + k2 * r2 ** 2 + k3 * r2 ** 3
    xd = x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x)
    yd = y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y
    return np.array([k[0, 0] * xd + k[0, 2], k[1, 1] * yd + k[1, 2]])


def _matrix(translation, rotation) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = Rotation.from_quat([rotation.x, rotation.y, rotation.z, rotation.w]).as_matrix()
    m[:3, 3] = [translation.x, translation.y, translation.z]
    return m


def test_gel_centre_projects_within_1px_and_tactile_is_fresh_rows_only(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    root = react_release(tmp_path_factory)
    topics = {'/tf': 'tf2_msgs/msg/TFMessage',
              '/view_middle/camera_info': 'sensor_msgs/msg/CameraInfo',
              '/tactile_left/image_raw': 'sensor_msgs/msg/Image',
              '/tactile_right/image_raw': 'sensor_msgs/msg/Image',
              '/sensor_left/force': 'geometry_msgs/msg/WrenchStamped',
              '/sensor_right/force': 'geometry_msgs/msg/WrenchStamped',
              '/tactile_left/values': 'sensor_msgs/msg/JointState',
              '/tactile_right/values': 'sensor_msgs/msg/JointState'}
    received = receive_a_play('react_listener', topics, tmp_path / 'player.log',
                         lambda log: spawn_player(root, log, episode_id=EPISODE,
                                                  start_paused=True))

    # -- expectation from the files
    poses = column(root, 'sensor_left_pose')
    stamps = column(root, 'timestamp')
    cal = json.loads((root / 'calibration/cameras/middle.json').read_text())
    gel = np.array(json.loads((root / 'calibration/gel_left.json').read_text())
                   ['gel_centre_mm']) / 1000.0
    t_file = np.array(cal['T_mocap_to_cam'])
    k_file = np.array(cal['K'])
    base_ns = 1_778_371_200_000_000_000  # 2026-05-10T00:00:00Z, the documented time base

    # -- the same from what arrived over ROS
    (static,) = received['/tf_static']
    cam_tf = {t.child_frame_id: t for t in static.transforms}['view_middle_optical_frame']
    assert cam_tf.header.frame_id == 'world'
    world_to_cam = np.linalg.inv(_matrix(cam_tf.transform.translation, cam_tf.transform.rotation))
    info = received['/view_middle/camera_info'][0]
    assert info.distortion_model == 'plumb_bob'
    k_ros = np.array(info.k).reshape(3, 3)
    tfs = received['/tf']
    assert len(tfs) == len(poses)
    worst = 0.0
    for row, msg in enumerate(tfs):
        sensor = {t.child_frame_id: t for t in msg.transforms}['sensor_left']
        assert to_ns(sensor.header.stamp) == base_ns + round(stamps[row] * 1e9)
        m = _matrix(sensor.transform.translation, sensor.transform.rotation)
        got = plumb_bob(k_ros, list(info.d), (world_to_cam @ m @ np.append(gel, 1.0))[:3])
        p_world = Rotation.from_quat(poses[row, 3:7]).apply(gel) + poses[row, :3]
        want = plumb_bob(k_file, cal['dist'], (t_file @ np.append(p_world, 1.0))[:3])
        assert 0 < want[0] < cal['width'] and 0 < want[1] < cal['height']
        worst = max(worst, float(np.linalg.norm(got - want)))
    assert worst < 1.0, worst

    # -- tactile, force and values: one message per fresh row, not per row, all three with
    # that row's stamp
    for side in ('left', 'right'):
        fresh = column(root, f'tactile_{side}_is_new').astype(bool)
        assert 0 < fresh.sum() < 0.5 * len(fresh)
        want_ns = [base_ns + round(t * 1e9) for t in stamps[fresh]]
        for topic in (f'/tactile_{side}/image_raw', f'/sensor_{side}/force',
                      f'/tactile_{side}/values'):
            got_ns = [to_ns(m.header.stamp) for m in received[topic]]
            assert got_ns == want_ns, topic
    _pairs_by_exact_stamp(root, received, latency=0)


def _pairs_by_exact_stamp(root: Path, received: dict, latency: int) -> None:
    """What an ExactTime synchronizer on image + force + values would do, by hand: every
    force finds an image and values of its stamp, and those values are its own tactile
    row's (F = k * penetration with k = 2 N/mm; the row the force came from)."""
    base_ns = 1_778_371_200_000_000_000
    row_ns = [base_ns + round(t * 1e9) for t in column(root, 'timestamp')]
    for side in ('left', 'right'):
        images = {to_ns(m.header.stamp) for m in received[f'/tactile_{side}/image_raw']}
        values = {to_ns(m.header.stamp): m for m in received[f'/tactile_{side}/values']}
        forces = received[f'/sensor_{side}/force']
        assert forces and len(values) == len(received[f'/tactile_{side}/values'])
        for force in forces:
            t = to_ns(force.header.stamp)
            assert t in images and t in values, (side, t)
            v = dict(zip(values[t].name, values[t].position))
            assert v['penetration_mm'] * 2.0 == pytest.approx(-force.wrench.force.y, rel=1e-12)
            assert v['force_source_frame'] == row_ns.index(t) + latency, (side, t)


def test_tactile_values_pair_with_force_under_a_tactile_latency(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """--tactile-latency 3: image, force and values of tactile row i+3 all go out at row i's
    stamp, so pairing by stamp still joins the three of one tactile row."""
    root = react_release(tmp_path_factory)
    topics = {f'/{what}_{side}/{leaf}': kind
              for side in ('left', 'right')
              for what, leaf, kind in (('tactile', 'image_raw', 'sensor_msgs/msg/Image'),
                                       ('sensor', 'force', 'geometry_msgs/msg/WrenchStamped'),
                                       ('tactile', 'values', 'sensor_msgs/msg/JointState'))}
    received = receive_a_play('react_latency_listener', topics, tmp_path / 'player.log',
                              lambda log: spawn_player(root, log, episode_id=EPISODE,
                                                       start_paused=True, tactile_latency=3))
    stamps = column(root, 'timestamp')
    for side in ('left', 'right'):
        fresh = column(root, f'tactile_{side}_is_new').astype(bool)
        want_ns = [1_778_371_200_000_000_000 + round(t * 1e9) for t in stamps[:-3][fresh[3:]]]
        for topic in topics:
            if f'_{side}/' in topic:
                assert [to_ns(m.header.stamp) for m in received[topic]] == want_ns, topic
    _pairs_by_exact_stamp(root, received, latency=3)


def test_player_refuses_a_flipped_calibration(tmp_path: Path,
                                              tmp_path_factory: pytest.TempPathFactory) -> None:
    root = Path(shutil.copytree(react_release(tmp_path_factory), tmp_path / 'release'))
    edit_json(root / 'calibration/cameras/middle.json', lambda d: d.update(up_axis='y'))
    log = tmp_path / 'player.log'
    player = spawn_player(root, log, episode_id=EPISODE)
    try:
        player.wait(60)
    finally:
        stop(player)
    assert player.returncode == 2, log.read_text()
    assert 'middle.json' in log.read_text() and 'fingerprint' in log.read_text()
