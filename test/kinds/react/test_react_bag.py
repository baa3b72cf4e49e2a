"""A React release converted to a bag and read back with mcap + mcap_ros2, against the files.

Expectations come from the release itself (pyarrow, JSON, PyAV), never from the adapter.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from react_support import EPISODE, VIDEOS, column, react_release
from scipy.spatial.transform import Rotation
from tf_support import transform_matrix, world_from

from react_ros.formats.video import decode_rgb

BASE_NS = 1_778_371_200_000_000_000  # 2026-05-10T00:00:00Z: the documented time base
SIDES = ('left', 'right')
VIEWS = ('left', 'middle', 'right')
POSES = {'sensor_left': 'sensor_left_pose', 'sensor_right': 'sensor_right_pose',
         'object': 'object_pose'}
Msgs = dict[str, list[tuple[int, int, Any]]]


def _ns(stamp: Any) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def _convert(root: Path, out: Path, *args: str) -> tuple[Msgs, dict[str, Any]]:
    import subprocess
    import sys
    subprocess.run([sys.executable, '-m', 'react_ros.cli', 'convert', str(root), '--episode',
                    EPISODE, '-o', str(out), '--quiet', *args], check=True, timeout=120)
    msgs: Msgs = {}
    qos: dict[str, Any] = {}
    (mcap_file,) = out.glob('*.mcap')
    with open(mcap_file, 'rb') as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _, channel, message, msg in reader.iter_decoded_messages(log_time_order=True):
            msgs.setdefault(channel.topic, []).append((message.log_time, message.publish_time,
                                                       msg))
            qos[channel.topic] = yaml.safe_load(channel.metadata['offered_qos_profiles'])[0]
    return msgs, qos


@pytest.fixture(scope='module')
def bag(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Msgs, dict[str, Any]]:
    root = react_release(tmp_path_factory)
    return (root, *_convert(root, tmp_path_factory.mktemp('react_bag') / 'bag'))


def test_every_contract_topic_with_its_count_and_stamps(bag: tuple[Path, Msgs, Any]) -> None:
    root, msgs, qos = bag
    row_ns = BASE_NS + np.round(column(root, 'timestamp') * 1e9).astype(np.int64)
    rows = len(row_ns)
    want = {'/tf': row_ns, '/tf_static': row_ns[:1]}
    want.update({f'/{name}/pose': row_ns for name in POSES})
    for v in VIEWS:
        want[f'/view_{v}/image_raw'] = want[f'/view_{v}/camera_info'] = row_ns
    for s in SIDES:
        fresh = column(root, f'tactile_{s}_is_new').astype(bool)
        assert fresh.sum() < 0.5 * rows
        for topic in (f'/tactile_{s}/image_raw', f'/sensor_{s}/force',
                      f'/sensor_{s}/force_target', f'/tactile_{s}/values'):
            want[topic] = row_ns[fresh]
    assert set(msgs) == set(want) | {'/annotations'}
    for topic, stamps in want.items():
        got = msgs[topic]
        assert [log for log, _, _ in got] == stamps.tolist(), topic
        assert all(log == pub for log, pub, _ in got), topic
        for log, _, m in got:
            header = m.transforms[0].header if topic.startswith('/tf') else m.header
            assert _ns(header.stamp) == log, topic
    for topic, q in qos.items():
        assert q['durability'] == (1 if topic == '/tf_static' else 2), topic  # transient local
    segments = json.loads((root / 'segments.json').read_text())[EPISODE]
    bad = json.loads((root / 'bad_frames.json').read_text())[EPISODE]
    held = json.loads((root / 'splits.json').read_text())[EPISODE]['held_out']
    notes = [json.loads(m.data) for _, _, m in msgs['/annotations']]
    assert len(notes) == len(segments) + len(bad) + 2 * len(held)
    assert {n['type'] for n in notes} == {'segment', 'bad_frame', 'held_out', 'guard'}


def test_poses_forces_and_calibration_values(bag: tuple[Path, Msgs, Any]) -> None:
    root, msgs, _ = bag
    for (_, _, tf), *row in zip(msgs['/tf'], *(column(root, c) for c in POSES.values())):
        assert {t.child_frame_id for t in tf.transforms} == set(POSES)
        for t, pose in zip(sorted(tf.transforms, key=lambda t: list(POSES).index(
                t.child_frame_id)), row):
            assert t.header.frame_id == 'world'
            tr, q = t.transform.translation, t.transform.rotation
            assert [tr.x, tr.y, tr.z, q.x, q.y, q.z, q.w] == pose.tolist()
    for name, col in POSES.items():
        got = [[m.pose.position.x, m.pose.position.y, m.pose.position.z, m.pose.orientation.x,
                m.pose.orientation.y, m.pose.orientation.z, m.pose.orientation.w]
               for _, _, m in msgs[f'/{name}/pose']]
        assert got == column(root, col).tolist()
        assert {m.header.frame_id for _, _, m in msgs[f'/{name}/pose']} == {'world'}
    for s in SIDES:
        fresh = column(root, f'tactile_{s}_is_new').astype(bool)
        force = column(root, f'force_{s}_normal_n')[fresh]
        assert [(m.wrench.force.x, m.wrench.force.y, m.wrench.force.z)
                for _, _, m in msgs[f'/sensor_{s}/force']] == [(0.0, -f, 0.0) for f in force]
        target = column(root, f'force_{s}_target_pose')[fresh]
        assert [m.pose.position.x for _, _, m in msgs[f'/sensor_{s}/force_target']] == \
            target[:, 0].tolist()
    (_, _, static), = msgs['/tf_static']
    frames = {t.child_frame_id: t for t in static.transforms}
    for v in VIEWS:
        cal = json.loads((root / f'calibration/cameras/{v}.json').read_text())
        t = frames[f'view_{v}_optical_frame']
        assert t.header.frame_id == 'world'
        assert np.allclose(transform_matrix(t) @ np.array(cal['T_mocap_to_cam']), np.eye(4), atol=1e-9)
        info = msgs[f'/view_{v}/camera_info'][0][2]
        assert info.header.frame_id == f'view_{v}_optical_frame'
        assert (info.width, info.height, info.distortion_model) == \
            (cal['width'], cal['height'], 'plumb_bob')
        assert np.allclose(np.array(info.k).reshape(3, 3), cal['K'])
        assert list(info.d) == cal['dist']


@pytest.mark.parametrize('latency', [0, 3])
def test_tactile_values_pair_with_force_and_image_by_exact_stamp(
        bag: tuple[Path, Msgs, Any], tmp_path: Path, latency: int) -> None:
    """The rule docs/react.md gives a subscriber: one header.stamp = one tactile row.

    Paired by stamp alone, the values must be those of the force's own tactile row
    (F = k * penetration, k = 2 N/mm, and the row the force came from), with and without
    --tactile-latency.
    """
    root = bag[0]
    msgs = bag[1] if latency == 0 else _convert(root, tmp_path / 'bag', '--tactile-latency',
                                                str(latency))[0]
    row_ns = BASE_NS + np.round(column(root, 'timestamp') * 1e9).astype(np.int64)
    for s in SIDES:
        values = {_ns(m.header.stamp): m for _, _, m in msgs[f'/tactile_{s}/values']}
        images = [_ns(m.header.stamp) for _, _, m in msgs[f'/tactile_{s}/image_raw']]
        forces = [(_ns(m.header.stamp), m) for _, _, m in msgs[f'/sensor_{s}/force']]
        assert sorted(values) == images and len(forces) == len(images) > 0
        for t, force in forces:
            v = dict(zip(values[t].name, values[t].position))
            assert v['penetration_mm'] * 2.0 == pytest.approx(-force.wrench.force.y,
                                                              rel=1e-12), (s, t)
            # the force's own tactile row, `latency` rows after the row whose stamp it has
            row = int(np.flatnonzero(row_ns == t)[0])
            assert v['force_source_frame'] == row + latency, (s, t)


def test_images_are_the_video_frames(bag: tuple[Path, Msgs, Any]) -> None:
    root, msgs, _ = bag
    frames = list(decode_rgb(root / VIDEOS / 'view_middle.mp4'))
    got = msgs['/view_middle/image_raw']
    assert len(got) == len(frames)
    for (_, _, img), frame in zip(got, frames):
        assert (img.encoding, img.height, img.width) == ('rgb8',) + frame.shape[:2]
        assert bytes(img.data) == frame.tobytes()
    fresh = column(root, 'tactile_right_is_new').astype(bool)
    tactile = [f for f, new in zip(decode_rgb(root / VIDEOS / 'tactile_right.mp4'), fresh) if new]
    got = msgs['/tactile_right/image_raw']
    assert [bytes(m.data) for _, _, m in got] == [f.tobytes() for f in tactile]


def _statics(msgs: Msgs) -> list[Any]:
    return [msg for _, _, msg in msgs['/tf_static']]


def _moving(msgs: Msgs) -> list[Any]:
    return [msg for _, _, msg in msgs['/tf']]


@pytest.mark.parametrize('latency,axis', [(0, 'local_y'), (15, 'local_y'), (15, 'dual_ball')])
def test_force_target_is_the_pose_on_tf_at_its_stamp_pushed_along_the_force(
        bag: tuple[Path, Msgs, Any], tmp_path: Path, latency: int, axis: str) -> None:
    """Issue 37 item 3: the target published at a stamp is the sensor pose on /tf at that
    stamp + F/k along the force published at that stamp (k = 2 N/mm), on every fresh row.

    Under --tactile-latency N the stored target of row i+N was built from the pose of row
    i+N; published at row i's stamp it sits a median of millimetres off (asserted below,
    from the files), far outside the 0.1 mm this requires.
    """
    root = bag[0]
    args = ('--tactile-latency', str(latency), '--gel-axis', axis)
    msgs = bag[1] if (latency, axis) == (0, 'local_y') else _convert(root, tmp_path / 'bag',
                                                                     *args)[0]
    row_ns = BASE_NS + np.round(column(root, 'timestamp') * 1e9).astype(np.int64)
    k_n_per_m = 2000.0  # the format document's stiffness, 2 N/mm
    for s in SIDES:
        forces = {_ns(m.header.stamp): m for _, _, m in msgs[f'/sensor_{s}/force']}
        targets = {_ns(m.header.stamp): m for _, _, m in msgs[f'/sensor_{s}/force_target']}
        assert sorted(targets) == sorted(forces) and len(targets) > 10  # every fresh row
        errors, stored_errors = [], []
        for t, target in targets.items():
            force = forces[t]
            assert force.header.frame_id == f'gel_{s}' and target.header.frame_id == 'world'
            sensor = world_from(f'sensor_{s}', t, _statics(msgs), _moving(msgs))
            gel = world_from(force.header.frame_id, t, _statics(msgs), _moving(msgs))
            assert sensor is not None and gel is not None, (s, t)
            f = force.wrench.force
            want = sensor[:3, 3] + gel[:3, :3] @ [f.x, f.y, f.z] / k_n_per_m
            p, q = target.pose.position, target.pose.orientation
            errors.append(np.linalg.norm([p.x, p.y, p.z] - want))
            turn = Rotation.from_quat([q.x, q.y, q.z, q.w]).inv() * \
                Rotation.from_matrix(sensor[:3, :3])
            assert turn.magnitude() < 1e-9, (s, t)  # the target keeps the sensor's orientation
            row = int(np.flatnonzero(row_ns == t)[0])
            stored = column(root, f'force_{s}_target_pose')[row + latency, :3]
            stored_errors.append(np.linalg.norm(stored - want))
        assert max(errors) < 1e-4, (s, max(errors))
        if latency and axis == 'local_y':
            # the negative control: the stored target of row i+N at row i's stamp
            assert np.median(stored_errors) > 1e-3, (s, np.median(stored_errors))

