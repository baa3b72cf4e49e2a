"""The objects adapter: every stream of a converted bag checked against the session files.

Expectations are read from the files (numpy, json), never from the adapter. The bag is
written by `react-ros convert` and read back with rosbags.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from react_ros import cli
from react_ros.registry import EpisodeOptions, open_episode
from react_ros.kinds.objects.adapter import ObjectsOptions
from react_ros.kinds.objects.npz import NpzArchive
from react_ros.ros.msgs import to_ns
from react_ros.kinds.objects.sample import SESSION, SIZES, write_objects_sample

BASE_NS = 1_000_000_000  # time_base_s of react_ros/kinds/objects/config.yaml
NPZ = f'{SESSION}/motions/objects.npz'
MARKERS = f'{SESSION}/motions/object_markers.npz'


@pytest.fixture(scope='module')
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_objects_sample(tmp_path_factory.mktemp('objects') / 'release')


def files(root: Path) -> dict[str, Any]:
    with np.load(root / NPZ) as z:
        out = {k: z[k] for k in z.files}
    with np.load(root / MARKERS) as z:
        out.update({k: z[k] for k in z.files})
    out['t_ns'] = BASE_NS + np.round(out['t'] * 1e9).astype(np.int64)
    out['names'] = [str(n) for n in out['names']]
    return out


def rewrite_npz(path: Path, **changes: Any) -> None:
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    data.update(changes)
    with open(path, 'wb') as f:
        np.savez(f, **data)


def convert(root: Path, out: Path, *args: str) -> dict[str, list[tuple[int, Any]]]:
    """topic -> [(log time, message)] of the bag `react-ros convert` writes."""
    from rosbags.highlevel import AnyReader
    assert cli.main(['convert', str(root), '-o', str(out), '-q', *args]) == 0
    topics: dict[str, list[tuple[int, Any]]] = {}
    with AnyReader([out]) as reader:
        for conn, t, raw in reader.messages():
            topics.setdefault(conn.topic, []).append((t, reader.deserialize(raw, conn.msgtype)))
    return topics


@pytest.fixture(scope='module')
def bag(release: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list]:
    return convert(release, tmp_path_factory.mktemp('objects_bag') / 'bag')


def stream_msgs(episode: Any, topic: str) -> list[tuple[int, Any]]:
    """(t_ns, message) of a topic, CDR bytes deserialised with rclpy."""
    from rclpy.serialization import deserialize_message

    from react_ros.ros.msgs import message_class
    out = []
    for s in episode.streams:
        if s.topic == topic:
            cls = message_class(s.msg_type)
            out += [(t, deserialize_message(m, cls) if isinstance(m, bytes) else m)
                    for t, m in s.open()]
    return out


def _stamp(msg: Any) -> int:
    return int(msg.sec) * 1_000_000_000 + int(msg.nanosec)


def _frame(f: dict[str, Any], t_ns: int) -> int:
    k = int(np.searchsorted(f['t_ns'], t_ns))
    assert f['t_ns'][k] == t_ns, t_ns
    return k


# -- /tf ---------------------------------------------------------------------------------
def test_tf_at_frame_k_is_t_world_obj_on_valid_frames_and_absent_on_invalid(
        release: Path, bag: dict[str, list]) -> None:
    f = files(release)
    usable = f['valid'] & np.all(np.isfinite(f['T_world_obj']), axis=(-1, -2))
    seen = np.zeros_like(usable)
    for log_t, msg in bag['/tf']:
        k = _frame(f, log_t)
        for tr in msg.transforms:
            assert _stamp(tr.header.stamp) == log_t  # log time = header.stamp
            assert tr.header.frame_id == 'world'
            i = f['names'].index(tr.child_frame_id)
            want = f['T_world_obj'][i, k]
            p, q = tr.transform.translation, tr.transform.rotation
            assert np.allclose([p.x, p.y, p.z], want[:3, 3], atol=1e-12)
            quat = np.array([q.x, q.y, q.z, q.w])
            assert abs(np.linalg.norm(quat) - 1) < 1e-9
            assert np.allclose(Rotation.from_quat(quat).as_matrix(), want[:3, :3], atol=1e-9)
            seen[i, k] = True
    assert (seen == usable).all()
    # the pitfalls of the sample are there: an invalid stretch and an invalid start
    assert not usable[f['names'].index('LittleBox0')].all()
    assert not usable[f['names'].index('LittleBox1'), 0]
    assert f['t_ns'][0] == BASE_NS  # t starts at 0: the documented base keeps it nonzero


def test_tf_static_gives_each_mocap_mesh_instance_its_rigid_body_frame(
        release: Path, bag: dict[str, list]) -> None:
    f = files(release)
    [(_, msg)] = bag['/tf_static']
    got = {tr.child_frame_id: tr for tr in msg.transforms}
    want = [n for i, n in enumerate(f['names']) if f['pose_frame'][i] == 'mesh'
            and f['source'][i] == 'mocap']
    assert sorted(got) == sorted(f'{n}_rigid_body' for n in want)
    for name in want:
        i = f['names'].index(name)
        tr = got[f'{name}_rigid_body']
        assert tr.header.frame_id == name
        q, p = tr.transform.rotation, tr.transform.translation
        m = np.eye(4)
        m[:3, :3] = Rotation.from_quat([q.x, q.y, q.z, q.w]).as_matrix()
        m[:3, 3] = [p.x, p.y, p.z]
        # world -> obj -> rb composes to T_world_rb = T_world_obj @ inv(T_rb_obj)
        assert np.allclose(m, np.linalg.inv(f['T_rb_obj'][i]), atol=1e-9)


def test_every_frame_has_one_parent(bag: dict[str, list]) -> None:
    """Departure from the issue's `<instance>_rigid_body -> <instance>`: that would give
    <instance> two parents (world on /tf), which tf2 cannot hold."""
    parents: dict[str, set[str]] = {}
    for topic in ('/tf', '/tf_static'):
        for _, msg in bag[topic]:
            for tr in msg.transforms:
                parents.setdefault(tr.child_frame_id, set()).add(tr.header.frame_id)
    assert all(len(p) == 1 for p in parents.values()), parents


# -- /objects/markers --------------------------------------------------------------------
def test_markers_delete_and_add_at_the_validity_edges(release: Path,
                                                      bag: dict[str, list]) -> None:
    f = files(release)
    usable = f['valid'] & np.all(np.isfinite(f['T_world_obj']), axis=(-1, -2))
    edges = {0} | set(np.flatnonzero(np.any(usable[:, 1:] != usable[:, :-1], axis=0)) + 1)
    frames = []
    for log_t, msg in bag['/objects/markers']:
        k = _frame(f, log_t)
        frames.append(k)
        by_id = {m.id: m for m in msg.markers}
        assert sorted(by_id) == list(range(len(f['names'])))
        for i, name in enumerate(f['names']):
            m = by_id[i]
            assert m.header.frame_id == name and _stamp(m.header.stamp) == log_t
            assert m.action == (0 if usable[i, k] else 2)  # ADD / DELETE
    assert edges <= set(frames)
    assert len(edges) == 4  # the first frame; LittleBox1 in; LittleBox0 out and back


def test_mesh_instances_carry_their_triangles_and_the_others_are_boxes(
        release: Path, bag: dict[str, list]) -> None:
    """The sample's meshes are boxes upright on the floor (origin at the bottom centre):
    the triangles must span exactly that box and cover its surface area, with no file
    named. The geometry is checked against the box sizes, not against the PLY reader."""
    f = files(release)
    _, msg = bag['/objects/markers'][-1]
    by_id = {m.id: m for m in msg.markers if m.action == 0}
    for i, name in enumerate(f['names']):
        m = by_id[i]
        assert m.frame_locked and m.mesh_resource == '' and m.text == name
        if f['pose_frame'][i] == 'mesh':
            assert m.type == 11  # TRIANGLE_LIST
            sx, sy, sz = SIZES[str(f['object_type'][i])]
            pts = np.array([[p.x, p.y, p.z] for p in m.points])
            assert len(pts) == 36  # 6 faces, 2 triangles each
            assert np.allclose(pts.min(axis=0), [-sx / 2, -sy / 2, 0], atol=1e-6)
            assert np.allclose(pts.max(axis=0), [sx / 2, sy / 2, sz], atol=1e-6)
            a, b, c = pts[0::3], pts[1::3], pts[2::3]
            area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1).sum()
            assert np.isclose(area, 2 * (sx * sy + sy * sz + sz * sx), rtol=1e-5)
            assert (m.scale.x, m.scale.y, m.scale.z) == (1.0, 1.0, 1.0)
        else:
            assert m.type == 1 and not m.points  # CUBE
    box = by_id[f['names'].index('LittleBox1')]  # rigid_body copy: its object's mesh bounds
    assert np.allclose([box.scale.x, box.scale.y, box.scale.z], SIZES['LittleBox'], atol=1e-6)
    table = by_id[f['names'].index('Table0')]  # no mesh at all: the documented default
    assert (table.scale.x, table.scale.y, table.scale.z) == (0.3, 0.3, 0.3)


def test_marker_refresh_zero_publishes_only_the_first_frame_and_edges(release: Path) -> None:
    ep = open_episode(release, options=EpisodeOptions(own=ObjectsOptions(marker_refresh=0)))
    f = files(release)
    usable = f['valid'] & np.all(np.isfinite(f['T_world_obj']), axis=(-1, -2))
    edges = [0] + list(np.flatnonzero(np.any(usable[:, 1:] != usable[:, :-1], axis=0)) + 1)
    [stream] = [s for s in ep.streams if s.topic == '/objects/markers']
    assert [_frame(f, t) for t, _ in stream.open()] == edges


# -- /objects/status ---------------------------------------------------------------------
def test_status_exactly_at_the_changes_with_the_files_values(release: Path,
                                                             bag: dict[str, list]) -> None:
    f = files(release)
    usable = f['valid'] & np.all(np.isfinite(f['T_world_obj']), axis=(-1, -2))
    state = np.stack([usable, f['quality'], f['motion'], f['held_by']])
    changes = [0] + list(np.flatnonzero(np.any(state[:, :, 1:] != state[:, :, :-1],
                                               axis=(0, 1))) + 1)
    got = []
    for log_t, msg in bag['/objects/status']:
        k = _frame(f, log_t)
        got.append(k)
        assert [s.name for s in msg.status] == f['names']
        for i, s in enumerate(msg.status):
            values = {kv.key: kv.value for kv in s.values}
            assert values == {'valid': 'true' if usable[i, k] else 'false',
                              'quality': str(f['quality'][i, k]),
                              'motion': str(f['motion'][i, k]),
                              'held_by': str(f['held_by'][i, k]),
                              # what the instance is, from the file's own columns
                              'pose_frame': str(f['pose_frame'][i]),
                              'source': str(f['source'][i]),
                              'calib_rms_mm': repr(float(f['calib_rms_mm'][i])),
                              'mesh': str(f['mesh'][i])}
            assert s.level == (3 if not usable[i, k] else 0)  # STALE / OK (no quality 5)
    assert got == changes
    big = f['names'].index('BigBox0')  # the carried box changes all three
    for key in ('quality', 'motion', 'held_by'):
        assert len(set(f[key][big].tolist())) > 1, key
    assert len(got) < f['valid'].shape[1] / 10  # not 120 times a second


def test_quality_5_is_a_warning(release: Path, tmp_path: Path) -> None:
    root = tmp_path / 'release'
    shutil.copytree(release, root)
    f = files(root)
    quality = f['quality'].copy()
    quality[0, 100:120] = 5
    source = f['source'].astype('<U8')
    source[0] = 'vision'
    rewrite_npz(root / NPZ, quality=quality, source=source)
    ep = open_episode(root)
    [stream] = [s for s in ep.streams if s.topic == '/objects/status']
    levels = {}
    for t, msg in stream.open():
        levels[_frame(f, t)] = msg.status[0]
    assert levels[100].level == b'\x01' and 'guess' in levels[100].message
    assert levels[120].level == b'\x00'


# -- /objects/raw_markers ----------------------------------------------------------------
def test_raw_markers_are_the_seen_points_coloured_by_consistency(
        release: Path, bag: dict[str, list]) -> None:
    f = files(release)
    pts, agree = f['markers_m'], f['consistent']
    seen = np.all(np.isfinite(pts), axis=-1)
    assert (~seen).any()  # the sample has unseen markers
    for log_t, msg in bag['/objects/raw_markers']:
        k = _frame(f, log_t)
        for m in msg.markers:
            assert m.header.frame_id == 'world'
            i = m.id
            if m.action == 2:
                assert not seen[i, k].any() and seen[i, k - 1].any()
                continue
            want = pts[i, k][seen[i, k]]
            got = np.array([[p.x, p.y, p.z] for p in m.points])
            assert np.allclose(got, want, atol=1e-12)
            green = np.array([c.g > 0.5 and c.r < 0.5 for c in m.colors])
            assert (green == agree[i, k][seen[i, k]]).all()
    frames = {_frame(f, t) for t, _ in bag['/objects/raw_markers']}
    assert frames == set(np.flatnonzero(seen.any(axis=(0, 2))))


# -- validity computed, not trusted ------------------------------------------------------
def test_a_valid_frame_holding_nan_is_dropped_counted_and_reported(release: Path,
                                                                   tmp_path: Path) -> None:
    root = tmp_path / 'release'
    shutil.copytree(release, root)
    f = files(root)
    poses = f['T_world_obj'].copy()
    poses[0, 10, 0, 3] = np.nan  # BigBox0 is valid on every frame
    rewrite_npz(root / NPZ, T_world_obj=poses)
    ep = open_episode(root)
    assert ep.invalid_poses == {'T_world_obj[BigBox0]': 1}
    assert any('BigBox0' in w and '1 pose(s) not published' in w for w in ep.warnings)
    tf = dict(stream_msgs(ep, '/tf'))
    assert 'BigBox0' not in [tr.child_frame_id for tr in tf[int(f['t_ns'][10])].transforms]
    assert 'BigBox0' in [tr.child_frame_id for tr in tf[int(f['t_ns'][11])].transforms]
    status = dict(stream_msgs(ep, '/objects/status'))
    big = status[int(f['t_ns'][10])].status[0]
    assert {kv.key: kv.value for kv in big.values}['valid'] == 'false'
    assert 'NaN' in big.message


def test_valid_decides_where_a_finite_pose_is_kept_on_invalid_frames(release: Path,
                                                                     tmp_path: Path) -> None:
    """Issue 37 item 4: `valid` is honoured, not finiteness.

    The sample's LittleBox0 keeps its last good pose through its invalid stretch (capture
    software that holds the last pose writes so; the document has NaN there, and with NaN
    everywhere ignoring `valid` would read the same). Here LittleBox1's invalid start also
    gets a pose, 0.3 m from anywhere it was. Those frames stay off /tf, the markers are
    removed there, the status says valid=false, and one warning per instance says so.
    Reading finiteness alone publishes them (watched: this test then fails).
    """
    f = files(release)
    poses, valid = f['T_world_obj'], f['valid']
    little0, little1 = f['names'].index('LittleBox0'), f['names'].index('LittleBox1')
    gap = np.flatnonzero(~valid[little0])
    start = np.flatnonzero(~valid[little1])
    assert len(gap) and gap[0] > 0 and len(start) and start[0] == 0  # the sample's pitfalls
    assert (poses[little0, gap] == poses[little0, gap[0] - 1]).all()  # held, finite
    assert not np.isfinite(poses[little1, start]).any()  # NaN where not valid, as documented
    said = [w for w in open_episode(release).warnings if 'marked not valid' in w]
    assert len(said) == 1 and 'T_world_obj[LittleBox0]' in said[0]  # the sample as it is
    root = tmp_path / 'release'
    shutil.copytree(release, root)
    poses = poses.copy()
    poses[little1, start] = poses[little1, start[-1] + 1]
    poses[little1, start, :3, 3] += [0.3, 0.0, 0.0]  # somewhere it was not
    rewrite_npz(root / NPZ, T_world_obj=poses)
    ep = open_episode(root)
    for name, n in (('LittleBox0', len(gap)), ('LittleBox1', len(start))):
        said = [w for w in ep.warnings if f'T_world_obj[{name}]' in w]
        assert len(said) == 1 and f'{n} frame(s) marked not valid hold a finite pose' in said[0]
    assert ep.invalid_poses == {}  # nothing marked valid was lost
    on_tf = np.zeros_like(valid)
    for t, msg in stream_msgs(ep, '/tf'):
        for tr in msg.transforms:
            on_tf[f['names'].index(tr.child_frame_id), _frame(f, t)] = True
    assert (on_tf == valid).all()
    for t, msg in stream_msgs(ep, '/objects/markers'):
        k = _frame(f, t)
        for m in msg.markers:
            assert m.action == (0 if valid[m.id, k] else 2), (m.id, k)  # ADD / DELETE
    status = dict(stream_msgs(ep, '/objects/status'))
    for i, k in ((little0, gap[0]), (little1, 0)):
        s = status[int(f['t_ns'][k])].status[i]
        assert {kv.key: kv.value for kv in s.values}['valid'] == 'false' and s.level == b'\x03'


# -- the self-check of the frame conventions ----------------------------------------------
def test_marker_check_agrees_on_the_sample_and_catches_t_rb_obj_the_other_way(
        release: Path, tmp_path: Path) -> None:
    ep = open_episode(release)
    checks = [line for line in ep.report if 'marker check: BigBox0' in line]
    assert checks and ' lands 0.' in checks[0], checks  # under 1 mm (0.5 mm noise)
    assert not [w for w in ep.warnings if 'disagree' in w]
    # negative control: T_rb_obj stored the other way round must be caught
    root = tmp_path / 'release'
    shutil.copytree(release, root)
    f = files(root)
    t_rb = f['T_rb_obj'].copy()
    t_rb[0] = np.linalg.inv(t_rb[0])
    rewrite_npz(root / NPZ, T_rb_obj=t_rb)
    warned = [w for w in open_episode(root).warnings if 'disagree' in w]
    assert len(warned) == 1 and 'BigBox0' in warned[0]


# -- info, the layout --------------------------------------------------------------------
def test_info_lists_instances_absent_and_the_files_not_read(release: Path) -> None:
    ep = open_episode(release)
    text = '\n'.join(ep.report)
    doc = json.loads((release / SESSION / 'motions' / 'objects.json').read_text())
    assert doc['absent'] == ['LittleBox2'] and 'absent (objects.json, not in the npz): ' \
        'LittleBox2' in text
    for rel in ('motions/smplx.npz', 'motions/markers.npz', 'raw/mocap/BigBox.csv'):
        assert rel in text
    assert 'never used for poses' in text
    assert 'LittleBox1: LittleBox, source mocap, pose_frame rigid_body (TF LittleBox1 is ' \
        'its Nokov rigid-body frame)' in text
    assert 'valid 80.0 %' in text and 'calib_rms_mm 1.30' in text


def test_a_session_folder_and_its_release_root_give_the_same_episode(release: Path,
                                                                     tmp_path: Path) -> None:
    a, b = open_episode(release), open_episode(release / SESSION)
    assert a.path == b.path and [s.topic for s in a.streams] == [s.topic for s in b.streams]
    root = tmp_path / 'release'
    shutil.copytree(release, root)
    shutil.copytree(root / SESSION, root / 'S02_other')
    with pytest.raises(Exception, match='choose one with --episode'):
        open_episode(root)
    assert open_episode(root, options=EpisodeOptions(episode='S02_other')).path == \
        root / 'S02_other'


def test_the_lazy_reader_reads_stored_and_compressed_members_as_numpy(release: Path) -> None:
    for rel, key, stored in ((NPZ, 'T_world_obj', True), (MARKERS, 'markers_m', False)):
        npz = NpzArchive(release / rel)
        assert npz.member(key).stored is stored
        with np.load(release / rel) as z:
            whole = z[key]
        parts = [block for _, block in npz.chunks(key, 50)]
        assert all(p.shape[1] <= 50 for p in parts)
        assert np.array_equal(np.concatenate(parts, axis=1), whole, equal_nan=True)
        npz.close()


def test_stamps_are_the_time_base_plus_t(release: Path) -> None:
    ep = open_episode(release)
    f = files(release)
    assert ep.start_ns == BASE_NS and ep.end_ns == int(f['t_ns'][-1])
    tf = [t for s in ep.streams if s.topic == '/tf' for t, _ in s.open()]
    assert tf == f['t_ns'].tolist()
    assert to_ns(stream_msgs(ep, '/tf')[0][1].transforms[0].header.stamp) == BASE_NS


# -- the CDR written directly is what rclpy would write -----------------------------------
@pytest.mark.parametrize('names', [['a'], ['BigBox0', 'LittleBox12', 'T'], ['xyz', 'abcd']])
def test_direct_cdr_equals_rclpy_serialisation(names: list[str]) -> None:
    from geometry_msgs.msg import Point
    from std_msgs.msg import ColorRGBA
    from visualization_msgs.msg import Marker, MarkerArray

    from react_ros.ros.cdr import CdrWriter, SphereLists, delete_marker_cdr, tf_message_cdr
    from react_ros.ros.msgs import stamp
    from react_ros.ros.tf import tf_message, transform_stamped
    from react_ros.rosbag2.writer import cdr_payload
    rng = np.random.default_rng(len(names))
    t = 1_234_567_891_011
    tr, q = rng.normal(size=(len(names), 3)), Rotation.random(len(names), rng=1).as_quat()
    want = tf_message(transform_stamped('world', n, t, tr[i], q[i]) for i, n in enumerate(names))
    assert tf_message_cdr(t, 'world', names, tr, q) == bytes(cdr_payload(want))
    # a MarkerArray of sphere lists (0..3 points) and deletes, frame ids of every length
    spheres = SphereLists(names[0], 'raw_markers', range(len(names) + 1), 0.015)
    w, array = CdrWriter(), MarkerArray()
    w.u32(2 * len(names))
    for i, name in enumerate(names):
        pts, cols = rng.normal(size=(i, 3)), rng.random((i, 4)).astype('<f4')
        spheres.write(w, t, i, pts, cols)
        delete_marker_cdr(w, t, name, 'raw_markers', i + 7)
        m = Marker(ns='raw_markers', id=i, type=Marker.SPHERE_LIST, action=Marker.ADD)
        m.header.stamp, m.header.frame_id = stamp(t), names[0]
        m.scale.x = m.scale.y = m.scale.z = 0.015
        m.color = ColorRGBA(r=1.0, g=1.0, b=1.0, a=1.0)
        m.points = [Point(x=float(x), y=float(y), z=float(z)) for x, y, z in pts]
        m.colors = [ColorRGBA(r=float(c[0]), g=float(c[1]), b=float(c[2]), a=float(c[3]))
                    for c in cols]
        d = Marker(ns='raw_markers', id=i + 7, action=Marker.DELETE)
        d.header.stamp, d.header.frame_id = stamp(t), name
        array.markers += [m, d]
    assert w.bytes() == bytes(cdr_payload(array))


@pytest.mark.parametrize('save', [np.savez, np.savez_compressed])
@pytest.mark.parametrize('shape', [(2, 5, 1), (3, 240, 4), (1, 1, 3)])
def test_the_lazy_reader_on_small_and_odd_members(tmp_path: Path, save: Any,
                                                  shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(0)
    arrays = {'b': rng.random(shape) > 0.5, 'f': rng.normal(size=shape + (3,))}
    save(tmp_path / 'x.npz', **arrays)
    npz = NpzArchive(tmp_path / 'x.npz')
    for key, whole in arrays.items():
        for chunk in (1, 7, 600):
            got = np.concatenate([b for _, b in npz.chunks(key, chunk)], axis=1)
            assert got.dtype == whole.dtype and np.array_equal(got, whole), (key, chunk)
    npz.close()
