"""The React adapter in-process: conventions, the up-axis conversion, and the React options.

Expectations are read from the release files (pyarrow, JSON), not from the adapter.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from react_support import EPISODE, column, edit_json, react_release
from scipy.spatial.transform import Rotation

from react_ros.registry import EpisodeOptions, open_episode
from react_ros.kinds.react.adapter import ReactOptions
from react_ros.kinds.react.parquet_video import (Y_TO_Z, convert_calibration_y_to_z,
                                             convert_poses_y_to_z, gel_centres_world, project)
from react_ros.ros.msgs import to_ns
from react_ros.kinds.react.sample import (CENTRE, DIST, camera_matrix, gel_axis_in_rigid, look_at)
from react_ros.kinds.umi.sample import read_frame_index

BASE_NS = 1_778_371_200_000_000_000  # 2026-05-10T00:00:00Z


@pytest.fixture(scope='module')
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return react_release(tmp_path_factory)


def _open(root: Path, **kw: Any):
    return open_episode(root, options=EpisodeOptions(episode=EPISODE, own=ReactOptions(**kw)))


def _msgs(episode, topic: str) -> list[tuple[int, Any]]:
    return [e for s in episode.streams if s.topic == topic for e in s.open()]


def _row_ns(root: Path) -> np.ndarray:
    return BASE_NS + np.round(column(root, 'timestamp') * 1e9).astype(np.int64)


# -- the up-axis conversion -------------------------------------------------------------
def test_mapping_is_x_minus_z_y_and_keeps_up_up() -> None:
    assert np.allclose(Y_TO_Z @ [1.0, 2.0, 3.0], [1.0, -3.0, 2.0])
    assert np.allclose(Y_TO_Z @ [0.0, 1.0, 0.0], [0.0, 0.0, 1.0])  # Y-up's up is Z-up's up
    assert np.isclose(np.linalg.det(Y_TO_Z), 1.0)
    # The other right-handed candidate, (x, y, z) -> (x, z, -y), also has det +1 and
    # turns the world upside down: no handedness check tells them apart, up does.
    other = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])
    assert np.isclose(np.linalg.det(other), 1.0)
    assert np.allclose(other @ [0.0, 1.0, 0.0], [0.0, 0.0, -1.0])
    assert not np.allclose(other, Y_TO_Z)


def test_converting_poses_and_calibration_together_keeps_projections() -> None:
    """Both directions, as the format document's own test: together 0 px, one alone hundreds."""
    rng = np.random.default_rng(0)
    k = camera_matrix(640, 480)
    t_zup = look_at(CENTRE + np.array([0.0, -0.7, 0.45]), CENTRE)
    n = 50
    quats = Rotation.random(n, random_state=1).as_quat()
    zup = np.hstack([CENTRE + rng.normal(0, 0.05, (n, 3)), quats])
    # the same scene as recorded: Y-up poses and a Y-up calibration
    yup = zup.copy()
    yup[:, :3] = zup[:, :3] @ Y_TO_Z  # inverse mapping (Y_TO_Z is orthonormal)
    yup[:, 3:7] = (Rotation.from_matrix(Y_TO_Z.T) * Rotation.from_quat(quats)).as_quat()
    world_z = np.eye(4)
    world_z[:3, :3] = Y_TO_Z
    t_yup = t_zup @ world_z
    gel = [2.0, -24.0, 6.0]

    def px(poses: np.ndarray, t: np.ndarray) -> np.ndarray:
        return project(t, k, DIST, gel_centres_world(poses, gel))

    truth = px(zup, t_zup)
    assert np.all((truth > 0) & (truth < [640, 480]))
    assert np.abs(px(yup, t_yup) - truth).max() < 1e-6  # a consistent Y-up release
    both = px(convert_poses_y_to_z(yup), convert_calibration_y_to_z(t_yup))
    assert np.abs(both - truth).max() < 1e-6
    poses_only = px(convert_poses_y_to_z(yup), t_yup)
    cal_only = px(yup, convert_calibration_y_to_z(t_yup))
    for wrong in (poses_only, cal_only):
        shift = np.linalg.norm(wrong - truth, axis=1)
        assert np.median(shift[np.isfinite(shift)]) > 100, np.median(shift)


def test_a_y_up_calibration_is_converted_into_the_same_camera_frames(root: Path,
                                                                     tmp_path: Path) -> None:
    """A calibration truly in Y-up (values and label) is converted: identical /tf_static."""
    ref = _msgs(_open(root), '/tf_static')[0][1]
    copy = Path(shutil.copytree(root, tmp_path / 'release'))
    world_z = np.eye(4)
    world_z[:3, :3] = Y_TO_Z

    def to_yup(doc: dict[str, Any]) -> None:
        doc['T_mocap_to_cam'] = (np.array(doc['T_mocap_to_cam']) @ world_z).tolist()
        del doc['up_axis']  # no key: the pre-conversion Y-up it was
    for cam in ('left', 'middle', 'right'):
        edit_json(copy / f'calibration/cameras/{cam}.json', to_yup)
    episode = _open(copy)
    assert any('converted' in w for w in episode.warnings), episode.warnings
    got = _msgs(episode, '/tf_static')[0][1]
    for a, b in zip(ref.transforms, got.transforms):
        assert a.child_frame_id == b.child_frame_id
        ta, tb = a.transform, b.transform
        assert np.allclose([ta.translation.x, ta.translation.y, ta.translation.z],
                           [tb.translation.x, tb.translation.y, tb.translation.z], atol=1e-9)
        ra = Rotation.from_quat([ta.rotation.x, ta.rotation.y, ta.rotation.z, ta.rotation.w])
        rb = Rotation.from_quat([tb.rotation.x, tb.rotation.y, tb.rotation.z, tb.rotation.w])
        assert (ra.inv() * rb).magnitude() < 1e-9


# -- time, counts, values ---------------------------------------------------------------------
def test_stamps_come_from_the_timestamp_column(root: Path) -> None:
    episode = _open(root)
    row_ns = _row_ns(root)
    dt = np.diff(column(root, 'timestamp'))
    assert dt.min() < 1 / 30.5 and dt.max() > 1 / 29.5  # not a uniform 30 Hz
    for topic in ('/tf', '/object/pose', '/view_left/image_raw', '/view_right/camera_info'):
        assert [t for t, _ in _msgs(episode, topic)] == row_ns.tolist(), topic
    assert episode.start_ns == row_ns[0] > 0 and episode.end_ns == row_ns[-1]
    assert 'conformance: PASS' in episode.report


def test_force_is_the_magnitude_along_local_minus_y_on_fresh_rows(root: Path) -> None:
    episode = _open(root)
    for side in ('left', 'right'):
        fresh = column(root, f'tactile_{side}_is_new').astype(bool)
        force = column(root, f'force_{side}_normal_n')
        got = _msgs(episode, f'/sensor_{side}/force')
        assert len(got) == fresh.sum() < len(fresh)
        assert [t for t, _ in got] == _row_ns(root)[fresh].tolist()
        for (_, msg), f in zip(got, force[fresh]):
            assert msg.header.frame_id == f'gel_{side}'  # the force acts at the gel centre
            w = msg.wrench
            assert (w.force.x, w.force.y, w.force.z) == (0.0, -f, 0.0)
            assert (w.torque.x, w.torque.y, w.torque.z) == (0.0, 0.0, 0.0)
        targets = _msgs(episode, f'/sensor_{side}/force_target')
        want = column(root, f'force_{side}_target_pose')[fresh]
        assert len(targets) == len(want)
        for (_, msg), p in zip(targets, want):
            assert msg.header.frame_id == 'world'
            assert msg.pose.position.z == p[2] and msg.pose.orientation.w == p[6]


def test_force_acts_along_the_gel_normal_not_world_down(root: Path) -> None:
    """The wrench is in the sensor's (gel's) own frame; read as world vertical it would point
    a median several degrees off (7.7 deg on motherboard in the document)."""
    episode = _open(root)
    fresh = column(root, 'tactile_left_is_new').astype(bool)
    pose = column(root, 'sensor_left_pose')[fresh]
    got = _msgs(episode, '/sensor_left/force')
    local = np.array([[m.wrench.force.x, m.wrench.force.y, m.wrench.force.z] for _, m in got])
    world = Rotation.from_quat(pose[:, 3:7]).apply(local)
    down = np.tile([0.0, 0.0, -1.0], (len(world), 1))
    pressed = np.linalg.norm(local, axis=1) > 0.1
    assert np.median(_angles_deg(world[pressed], down[pressed])) > 5


def test_gel_axis_dual_ball_uses_the_calibrated_axis(root: Path) -> None:
    episode = _open(root, gel_axis='dual_ball')
    for side in ('left', 'right'):
        axis = np.array(json.loads((root / f'calibration/gel_{side}.json').read_text())
                        ['gel_axis_in_rigid'])
        axis /= np.linalg.norm(axis)
        assert np.degrees(np.arccos(-axis[1])) > 20  # about 21-22 degrees from -y
        assert np.allclose(axis, gel_axis_in_rigid(side), atol=1e-5)
        fresh = column(root, f'tactile_{side}_is_new').astype(bool)
        force = column(root, f'force_{side}_normal_n')[fresh]
        got = _msgs(episode, f'/sensor_{side}/force')
        assert len(got) == len(force)
        for (_, msg), f in zip(got, force):
            w = msg.wrench.force
            assert np.allclose([w.x, w.y, w.z], f * axis, atol=1e-12)


def test_annotations_carry_segments_held_out_guard_and_bad_frames(root: Path) -> None:
    episode = _open(root)
    notes = [(t, json.loads(m.data)) for t, m in _msgs(episode, '/annotations')]
    kinds = [n['type'] for _, n in notes]
    segments = json.loads((root / 'segments.json').read_text())[EPISODE]
    bad = json.loads((root / 'bad_frames.json').read_text())[EPISODE]
    split = json.loads((root / 'splits.json').read_text())[EPISODE]
    assert kinds.count('segment') == len(segments)
    assert kinds.count('bad_frame') == len(bad)
    assert kinds.count('held_out') == len(split['held_out']) == kinds.count('guard')
    row_ns = _row_ns(root)
    for t, n in notes:
        first = n.get('first_row', n.get('row'))
        assert t == row_ns[first]
        if n['type'] == 'guard':
            assert n['last_row'] == n['held_out'][0] - 1
            assert n['first_row'] == n['held_out'][0] - split['guard_frames']
    assert [t for t, _ in notes] == sorted(t for t, _ in notes)


def _world_direction(pose: np.ndarray, axis: np.ndarray) -> np.ndarray:
    return Rotation.from_quat(pose[:, 3:7]).apply(axis)


def _angles_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    cos = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return np.degrees(np.arccos(np.clip(cos, -1, 1)))


@pytest.mark.parametrize('gel_axis', ['local_y', 'dual_ball'])
def test_force_target_lies_along_the_published_force(root: Path, gel_axis: str) -> None:
    """Both axes: target - pose is F/k along the force's own axis; the other axis is
    detectably different (21.2 deg left, 22.4 deg right), so a target left as stored
    (built with -y) under dual_ball would fail here."""
    episode = _open(root, gel_axis=gel_axis)
    for side in ('left', 'right'):
        fresh = column(root, f'tactile_{side}_is_new').astype(bool)
        force = column(root, f'force_{side}_normal_n')[fresh]
        pose = column(root, f'sensor_{side}_pose')[fresh]
        cal = np.array(json.loads((root / f'calibration/gel_{side}.json').read_text())
                       ['gel_axis_in_rigid'])
        axes = {'local_y': np.array([0.0, -1.0, 0.0]), 'dual_ball': cal / np.linalg.norm(cal)}
        other = axes['dual_ball' if gel_axis == 'local_y' else 'local_y']
        wrench = np.array([[m.wrench.force.x, m.wrench.force.y, m.wrench.force.z]
                           for _, m in _msgs(episode, f'/sensor_{side}/force')])
        assert np.allclose(wrench, force[:, None] * axes[gel_axis], atol=1e-12)
        targets = _msgs(episode, f'/sensor_{side}/force_target')
        assert len(targets) == len(force)
        xyz = np.array([[m.pose.position.x, m.pose.position.y, m.pose.position.z]
                        for _, m in targets])
        push = xyz - pose[:, :3]
        assert np.allclose(np.linalg.norm(push, axis=1), force / 2000.0, atol=1e-9)  # k = 2 N/mm
        pressed = force > 0.1
        # the force, rotated into the world, and the target's push share one direction
        along = _angles_deg(push[pressed], _world_direction(pose[pressed], axes[gel_axis]))
        assert along.max() < 1e-3, along.max()
        against = _angles_deg(push[pressed], _world_direction(pose[pressed], other))
        assert against.min() > 20, against.min()
        if gel_axis == 'local_y':
            assert np.array_equal(xyz, column(root, f'force_{side}_target_pose')[fresh][:, :3])


def test_gel_centre_is_on_tf_static_and_the_force_acts_there(root: Path) -> None:
    episode = _open(root)
    (_, static), = _msgs(episode, '/tf_static')
    frames = {t.child_frame_id: t for t in static.transforms}
    for side in ('left', 'right'):
        centre_m = np.array(json.loads((root / f'calibration/gel_{side}.json').read_text())
                            ['gel_centre_mm']) / 1000.0
        t = frames[f'gel_{side}']
        assert t.header.frame_id == f'sensor_{side}'
        tr, q = t.transform.translation, t.transform.rotation
        assert np.allclose([tr.x, tr.y, tr.z], centre_m, atol=1e-12)
        assert (q.x, q.y, q.z, q.w) == (0.0, 0.0, 0.0, 1.0)
        # The sensor origin is no stand-in: the force there would carry a torque r x F
        # of ~24 mm lever that the gel-frame wrench (torque 0) does not.
        assert np.linalg.norm(centre_m) > 0.02
        msgs = _msgs(episode, f'/sensor_{side}/force')
        assert {m.header.frame_id for _, m in msgs} == {f'gel_{side}'}
        f = np.array([[m.wrench.force.x, m.wrench.force.y, m.wrench.force.z] for _, m in msgs])
        torque_at_sensor = np.cross(centre_m, f)
        assert np.linalg.norm(torque_at_sensor, axis=1).max() > 0.02


def test_world_frame_offset_is_information_not_applied_again(root: Path) -> None:
    """The sample's offset is not zero; /tf carries the table's poses as they are, and the
    same poses shifted by the offset again land far outside the rig's 6 px."""
    from react_ros.kinds.react.files import read_camera, read_gel
    from react_ros.kinds.react.files import fingerprint_error_px
    from react_support import read_parquet
    (record,) = [json.loads(x) for x in (root / 'episodes.jsonl').read_text().splitlines()]
    offset = np.array(record['world_frame_offset'])
    assert np.linalg.norm(offset) > 0.1
    poses = column(root, 'sensor_left_pose')
    tf = [{t.child_frame_id: t.transform.translation for t in m.transforms}['sensor_left']
          for _, m in _msgs(_open(root), '/tf')]
    assert np.array_equal([[v.x, v.y, v.z] for v in tf], poses[:, :3])
    # raw_h5_offset_m belongs to poses read from the raw Y-up HDF5: not to these either
    world = json.loads(read_parquet(root).schema.metadata[b'twm.world_frame'])
    assert world['raw_h5_offset_up_axis'] == 'y' and np.linalg.norm(world['raw_h5_offset_m']) > 0.03
    fp = json.loads(read_parquet(root).schema.metadata[b'twm.world_frame'])['fingerprint']
    gel = read_gel(root / 'calibration/gel_left.json')
    twice = poses.copy()
    twice[:, :3] += offset
    for view in ('left', 'middle', 'right'):
        cam = read_camera(root / f'calibration/cameras/{view}.json', view)
        assert fingerprint_error_px(poses, gel, cam, fp) < 0.01
        assert fingerprint_error_px(twice, gel, cam, fp) > 6  # the tolerance, at 160x120


@pytest.mark.parametrize('latency', [0, 3])
def test_tactile_values_are_the_fresh_rows_with_their_provenance(root: Path,
                                                                 latency: int) -> None:
    from react_ros.kinds.react.adapter import VALUE_LABELS
    episode = _open(root, tactile_latency=latency)
    n = len(column(root, 'timestamp'))
    h5 = column(root, 'source_h5_frame')
    row_ns = _row_ns(root)
    for side in ('left', 'right'):
        fresh = column(root, f'tactile_{side}_is_new').astype(bool)
        rows = np.flatnonzero(fresh[latency:])  # row i carries tactile row i + latency
        got = _msgs(episode, f'/tactile_{side}/values')
        assert [t for t, _ in got] == row_ns[rows].tolist() and len(rows) < n
        want = np.stack([column(root, f'tactile_{side}_intensity'),
                         column(root, f'tactile_{side}_area'),
                         column(root, f'tactile_{side}_mixed'),
                         column(root, f'force_{side}_penetration_mm'),
                         column(root, f'force_{side}_source_frame'), h5], axis=1)
        data = np.array([m.position for _, m in got])
        assert {tuple(m.name) for _, m in got} == {VALUE_LABELS}
        assert all(not m.velocity and not m.effort for _, m in got)
        assert {m.header.frame_id for _, m in got} == {f'sensor_{side}'}
        assert np.array_equal(data, want[rows + latency])
        # stamped like the image and force of the same tactile row: one exact stamp pairs them
        assert [to_ns(m.header.stamp) for _, m in got] == [t for t, _ in got]
        assert [t for t, _ in _msgs(episode, f'/tactile_{side}/image_raw')] == \
            row_ns[rows].tolist()
        assert [to_ns(m.header.stamp) for _, m in _msgs(episode, f'/sensor_{side}/force')] == \
            row_ns[rows].tolist()
        # provenance: each value is its own tactile row's, never a stale repeat's
        assert np.array_equal(data[:, 4], rows + latency)
        assert np.array_equal(data[:, 5] - data[:, 4], np.full(len(rows), h5[0]))
        # every row, stale repeats included, would weight the repeats: not what is sent
        assert len(got) < len(want) - latency


# -- the React options ----------------------------------------------------------------------
def test_segment_plays_one_clean_segment(root: Path) -> None:
    segments = json.loads((root / 'segments.json').read_text())[EPISODE]
    a, b = segments[1]
    episode = _open(root, segment=1)
    row_ns = _row_ns(root)
    assert [t for t, _ in _msgs(episode, '/view_middle/image_raw')] == row_ns[a:b + 1].tolist()
    assert [t for t, _ in _msgs(episode, '/tf')] == row_ns[a:b + 1].tolist()
    fresh = column(root, 'tactile_left_is_new').astype(bool)
    assert len(_msgs(episode, '/sensor_left/force')) == fresh[a:b + 1].sum()
    assert (episode.start_ns, episode.end_ns) == (row_ns[a], row_ns[b])


def test_segment_out_of_range_is_refused(root: Path) -> None:
    from react_ros.errors import DatasetFormatError
    with pytest.raises(DatasetFormatError, match='segments.json.*--segment 9'):
        _open(root, segment=9)


def test_skip_bad_drops_flagged_rows(root: Path) -> None:
    bad = [e['frame'] for e in json.loads((root / 'bad_frames.json').read_text())[EPISODE]]
    row_ns = _row_ns(root)
    keep = np.setdiff1d(np.arange(len(row_ns)), bad)
    episode = _open(root, skip_bad=True)
    for topic in ('/tf', '/view_left/image_raw', '/view_left/camera_info', '/sensor_left/pose'):
        assert [t for t, _ in _msgs(episode, topic)] == row_ns[keep].tolist(), topic
    assert len(_msgs(_open(root), '/tf')) == len(row_ns)


def test_tactile_latency_pairs_view_i_with_tactile_i_plus_n(root: Path) -> None:
    n_lat = 4
    fresh = column(root, 'tactile_left_is_new').astype(bool)
    row_ns = _row_ns(root)
    rows = np.flatnonzero(fresh[n_lat:])  # row i publishes tactile[i + N] where that is fresh
    episode = _open(root, tactile_latency=n_lat)
    images = _msgs(episode, '/tactile_left/image_raw')
    assert [t for t, _ in images] == row_ns[rows].tolist()
    for (_, msg), i in zip(images, rows):
        frame = np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.width, 3)
        assert read_frame_index(frame) == i + n_lat
    force = column(root, 'force_left_normal_n')
    got = _msgs(episode, '/sensor_left/force')
    assert [m.wrench.force.y for _, m in got] == (-force[rows + n_lat]).tolist()
    plain = _msgs(_open(root), '/tactile_left/image_raw')
    assert [read_frame_index(np.frombuffer(bytes(m.data), np.uint8).reshape(
        m.height, m.width, 3)) for _, m in plain] == np.flatnonzero(fresh).tolist()
    assert to_ns(plain[0][1].header.stamp) == row_ns[0]


def test_y_up_poses_and_calibration_are_converted_together(root: Path, tmp_path: Path) -> None:
    """A whole release in the recorded Y-up (poses and cameras) plays as the Z-up one."""
    from react_support import rewrite_parquet

    ref = _open(root)
    copy = Path(shutil.copytree(root, tmp_path / 'release'))
    world_z = np.eye(4)
    world_z[:3, :3] = Y_TO_Z
    for cam in ('left', 'middle', 'right'):
        edit_json(copy / f'calibration/cameras/{cam}.json', lambda d: d.update(
            T_mocap_to_cam=(np.array(d['T_mocap_to_cam']) @ world_z).tolist(), up_axis='y'))
    to_y = Rotation.from_matrix(Y_TO_Z.T)

    def edit(table: Any) -> Any:
        import pyarrow as pa
        for name in ('sensor_left_pose', 'sensor_right_pose', 'object_pose',
                     'force_left_target_pose', 'force_right_target_pose'):
            p = np.asarray(table.column(name).to_pylist())
            p[:, :3] = p[:, :3] @ Y_TO_Z
            p[:, 3:7] = (to_y * Rotation.from_quat(p[:, 3:7])).as_quat()
            i = table.column_names.index(name)
            table = table.set_column(i, name, pa.array(p.tolist(), table.schema.field(name).type))
        world = json.loads(table.schema.metadata[b'twm.world_frame'])
        world['up_axis'] = 'y'
        return table.replace_schema_metadata({b'twm.world_frame': json.dumps(world)})
    rewrite_parquet(copy, edit)
    got = _open(copy)
    assert any('converted together' in w for w in got.warnings), got.warnings
    for topic in ('/tf', '/tf_static'):
        for (ta, a), (tb, b) in zip(_msgs(ref, topic), _msgs(got, topic)):
            assert ta == tb
            for x, y in zip(a.transforms, b.transforms):
                assert x.child_frame_id == y.child_frame_id
                u, v = x.transform, y.transform
                assert np.allclose([u.translation.x, u.translation.y, u.translation.z],
                                   [v.translation.x, v.translation.y, v.translation.z],
                                   atol=1e-9)
                ru = Rotation.from_quat([u.rotation.x, u.rotation.y, u.rotation.z, u.rotation.w])
                rv = Rotation.from_quat([v.rotation.x, v.rotation.y, v.rotation.z, v.rotation.w])
                assert (ru.inv() * rv).magnitude() < 1e-9
    a = [m.pose.position.z for _, m in _msgs(ref, '/sensor_left/force_target')]
    b = [m.pose.position.z for _, m in _msgs(got, '/sensor_left/force_target')]
    assert np.allclose(a, b, atol=1e-9)


def test_sample_release_has_the_contract_layout(root: Path) -> None:
    from react_support import read_parquet

    from react_ros.kinds.react.parquet_video import columns
    info = json.loads((root / 'meta/info.json').read_text())
    assert info['fps'] == 30 and info['task'] == 'motherboard'
    assert info['video_keys'] == ['view_left', 'view_middle', 'view_right', 'tactile_left',
                                  'tactile_right']
    (record,) = [json.loads(line) for line in (root / 'episodes.jsonl').read_text().splitlines()]
    assert record['episode'] == EPISODE and len(record['world_frame_offset']) == 3
    table = read_parquet(root)
    assert record['length'] == table.num_rows
    assert set(columns()) <= set(table.column_names)
    world = json.loads(table.schema.metadata[b'twm.world_frame'])
    assert (world['up_axis'], world['raw_h5_offset_up_axis']) == ('z', 'y')
    for key in info['video_keys']:
        assert (root / f'videos/{EPISODE}/{key}.mp4').is_file()
    for cam in ('left', 'middle', 'right'):
        cal = json.loads((root / f'calibration/cameras/{cam}.json').read_text())
        assert cal['up_axis'] == 'z' and len(cal['dist']) == 5
        assert np.allclose(cal['K'], camera_matrix(cal['width'], cal['height']))
    angles = []
    for side in ('left', 'right'):
        gel = json.loads((root / f'calibration/gel_{side}.json').read_text())
        axis = np.array(gel['gel_axis_in_rigid'])
        angles.append(round(float(np.degrees(np.arccos(-axis[1] / np.linalg.norm(axis)))), 1))
        fresh = column(root, f'tactile_{side}_is_new').astype(bool)
        assert 0.2 < fresh.mean() < 0.4  # ~29 %: the GelSight ran slower than the cameras
    assert angles == [21.2, 22.4]
    hz = 1 / np.diff(column(root, 'timestamp'))
    assert abs(np.median(hz) - 29.9) < 1.0 and hz.max() - hz.min() > 1.0
