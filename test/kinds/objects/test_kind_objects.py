"""Mocap object sessions against the contract every kind meets (kind_contract.py), with
their bad inputs.

Bad mocap object input, whatever its shape: one line naming the file, nothing written.
The promise and how it is checked: bad_input_support.py; the contract runs the tables
(REFUSED, ACCEPTED) below. Their input is the sample's release root (one session, so no
--episode is needed; the meshes are under it).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from bad_input_support import Accepted, Refused
from kind_contract import KindContract

from react_ros import cli
from react_ros.kinds.objects.sample import SESSION, write_objects_sample

NPZ = f'{SESSION}/motions/objects.npz'
MARKERS = f'{SESSION}/motions/object_markers.npz'
JSON = f'{SESSION}/motions/objects.json'
Breaker = Callable[[Path], None]


def _load(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=True) as z:
        return {k: z[k] for k in z.files}


def _save(path: Path, data: dict[str, Any]) -> None:
    with open(path, 'wb') as f:
        np.savez(f, **data)


def _npz(edit: Callable[[dict[str, np.ndarray]], None], rel: str = NPZ) -> Breaker:
    def breaker(root: Path) -> None:
        data = _load(root / rel)
        edit(data)
        _save(root / rel, data)
    return breaker


def _drop(key: str, rel: str = NPZ) -> Breaker:
    return _npz(lambda d: d.pop(key), rel)


def _set(key: str, fn: Callable[[np.ndarray], np.ndarray], rel: str = NPZ) -> Breaker:
    return _npz(lambda d: d.__setitem__(key, fn(d[key])), rel)


def _pose(fn: Callable[[np.ndarray], None]) -> Breaker:
    def edit(t: np.ndarray) -> np.ndarray:
        t = t.copy()
        fn(t)
        return t
    return _set('T_world_obj', edit)


def _item(key: str, index: Any, value: Any, dtype: str | None = None) -> Breaker:
    def edit(a: np.ndarray) -> np.ndarray:
        a = a.astype(dtype) if dtype else a.copy()
        a[index] = value
        return a
    return _set(key, edit)


def _write(rel: str, data: bytes) -> Breaker:
    return lambda root: (root / rel).write_bytes(data)


def _scale(t: np.ndarray) -> None:
    t[0, 20, :3, :3] *= 1.5


def _transposed(t: np.ndarray) -> None:
    t[0, 20] = t[0, 20].T.copy()  # translation in the last row: column-major written row-major


def _reflection(t: np.ndarray) -> None:
    t[0, 20, :3, 2] *= -1


def _mm(t: np.ndarray) -> None:
    t[..., :3, 3] *= 1000.0


def _nan_on_valid(t: np.ndarray) -> None:
    t[0, 30] = np.nan


def _pose_on_invalid_start(d: dict[str, np.ndarray]) -> None:
    """LittleBox1's invalid first frames holding its first good pose (the document has NaN;
    the sample's LittleBox0 already keeps its last good pose through its gap)."""
    t = d['T_world_obj'].copy()
    i = list(d['names']).index('LittleBox1')
    start = np.flatnonzero(~d['valid'][i])
    t[i, start] = t[i, start[-1] + 1]
    d['T_world_obj'] = t


def _mesh_deleted(root: Path) -> None:
    (root / 'objects' / 'BigBox' / 'bigbox.ply').unlink()


def _mesh_symlink_loop(root: Path) -> None:
    mesh = root / 'objects' / 'BigBox' / 'bigbox.ply'
    mesh.unlink()
    mesh.symlink_to('bigbox.ply')  # itself


def _objects_deleted(root: Path) -> None:
    (root / NPZ).unlink()


def _truncated(root: Path) -> None:
    data = (root / NPZ).read_bytes()
    (root / NPZ).write_bytes(data[:len(data) // 2])


def _rigid_body_with_mesh(d: dict[str, np.ndarray]) -> None:
    mesh = d['mesh'].astype('<U40')
    mesh[2] = 'objects/LittleBox/littlebox.ply'
    d['mesh'] = mesh


def _inverted_t_rb(d: dict[str, np.ndarray]) -> None:
    t = d['T_rb_obj'].copy()
    t[0] = np.linalg.inv(t[0])
    d['T_rb_obj'] = t


def _absent_present(root: Path) -> None:
    text = (root / JSON).read_text().replace('"LittleBox2"', '"LittleBox0"')
    (root / JSON).write_text(text)


REFUSED = [
    # what the issue lists
    Refused('npz missing a key', _drop('quality'), NPZ, ("'quality'", 'missing')),
    Refused('npz missing t', _drop('t'), NPZ, ("'t'", 'missing')),
    Refused('n disagrees', _set('valid', lambda a: a[:-1]), NPZ, ("'valid'", '(4, 360)')),
    Refused('T disagrees', _set('quality', lambda a: a[:, :-1]), NPZ,
            ("'quality'", '(4, 360)', '(4, 359)')),
    Refused('T disagrees in frame_index', _set('frame_index', lambda a: a[:-5]), NPZ,
            ("'frame_index'", '(360,)')),
    Refused('T_world_obj not 4x4', _set('T_world_obj', lambda a: a[:, :, :3, :]), NPZ,
            ("'T_world_obj'", '(4, 360, 4, 4)', '(4, 360, 3, 4)')),
    Refused('mesh path does not exist', _item('mesh', 0, 'objects/BigBox/nope.ply', '<U40'),
            NPZ, ('BigBox0', 'objects/BigBox/nope.ply', 'does not exist')),
    Refused('mesh file deleted', _mesh_deleted, NPZ, ('objects/BigBox/bigbox.ply',
                                                      'does not exist')),
    Refused('mesh file not a PLY', _write('objects/BigBox/bigbox.ply', b'solid box\n'),
            'objects/BigBox/bigbox.ply', ('not a PLY',)),
    Refused('mesh file a symlink loop', _mesh_symlink_loop, NPZ, ('objects/BigBox/bigbox.ply',
                                                                  'symlink loop')),
    Refused('t repeats', _item('t', 50, 49 / 120.0), NPZ, ("'t' does not increase",
                                                          'frame 50')),
    Refused('t goes back', _item('t', 100, 0.5), NPZ, ("'t' does not increase",)),
    Refused('objects.json not JSON', _write(JSON, b'{"absent": [LittleBox2]}'), JSON,
            ('not valid JSON', 'line 1')),
    Refused('objects.json not an object', _write(JSON, b'[1, 2]'), JSON, ('JSON object',)),
    Refused('objects.json not UTF-8', _write(JSON, b'{"absent": ["\xff"]}'), JSON,
            ('not UTF-8',)),
    # validity computed, not trusted: a finite non-rigid matrix on a valid frame
    Refused('rotation not orthonormal', _pose(_scale), NPZ,
            ('BigBox0 frame 20', 'not orthonormal')),
    Refused('last row not 0 0 0 1', _pose(_transposed), NPZ,
            ('BigBox0 frame 20', 'last row')),
    Refused('rotation a reflection', _pose(_reflection), NPZ, ('reflection',)),
    # the format document's traps
    Refused('poses in millimetres', _pose(_mm), NPZ, ('millimetres',)),
    Refused('pickled names', _set('names', lambda a: a.astype(object)), NPZ,
            ("'names'", 'unpickles')),
    Refused('unknown pose_frame', _item('pose_frame', 1, 'marker', '<U12'), NPZ,
            ("'pose_frame'", 'LittleBox0', 'marker')),
    Refused('unknown source', _item('source', 1, 'imu', '<U8'), NPZ, ("'source'", 'imu')),
    Refused('quality outside 1..5 on a valid frame', _item('quality', (0, 5), 7), NPZ,
            ("'quality'", 'code 7')),
    Refused('held_by code unknown', _item('held_by', (0, 5), 4), NPZ, ("'held_by'",
                                                                      'code 4')),
    Refused('duplicate instance names', _item('names', 1, 'BigBox0'), NPZ, ('repeat',)),
    Refused('mocap mesh instance without T_rb_obj', _item('T_rb_obj', 0, np.nan), NPZ,
            ("'T_rb_obj'", 'BigBox0')),
    Refused('mesh instance without a mesh', _item('mesh', 1, ''), NPZ,
            ('LittleBox0', 'names no mesh')),
    Refused('mesh path escapes the release', _item('mesh', 0, '../bigbox.ply', '<U40'), NPZ,
            ('path from the release root',)),
    Refused('object markers n disagrees', _set('markers_m', lambda a: a[:-1], MARKERS),
            MARKERS, ("'markers_m'",)),
    Refused('object markers in millimetres', _set('markers_m', lambda a: a * 1000, MARKERS),
            MARKERS, ('millimetres',)),
    Refused('npz truncated', _truncated, NPZ, ('not a readable .npz',)),
    Refused('t after 2038', _set('t', lambda a: a + 2.2e9), NPZ, ('2038',)),
    Refused('t far beyond int64 nanoseconds', _set('t', lambda a: a + 1e11), NPZ, ('2038',)),
    Refused('t NaN', _item('t', 3, np.nan), NPZ, ("'t'", 'NaN')),
    Refused('no objects.npz', _objects_deleted, '', ('not an episode',)),
    Refused('no such session', None, '', ('no session', 'S99'), args=('--episode', 'S99')),
    Refused('marker refresh negative', None, '--marker-refresh', ('>= 0',),
            args=('--marker-refresh', '-1')),
]

ACCEPTED = [
    Accepted('NaN on a frame marked valid', _pose(_nan_on_valid),
             ('T_world_obj[BigBox0]', '1 pose(s) not published', 'NaN')),
    Accepted('finite pose on frames marked not valid', _npz(_pose_on_invalid_start),
             ('T_world_obj[LittleBox1]', 'marked not valid hold a finite pose',
              'not published')),
    Accepted('absent instance has poses', _absent_present, ('LittleBox0', 'absent')),
    Accepted('rigid_body instance naming a mesh', _npz(_rigid_body_with_mesh),
             ('LittleBox1', 'not aligned', 'box')),
    Accepted('no object markers', lambda root: (root / MARKERS).unlink(),
             ('no motions/object_markers.npz', '/objects/raw_markers')),
    Accepted('T_rb_obj stored the other way round', _npz(_inverted_t_rb),
             ('BigBox0', 'template_m', 'disagree')),
    Accepted('unreadable mesh of a box', _write('objects/Table/table.ply', b'not a mesh'),
             ('table.ply', 'not a PLY', 'default box')),
]


class TestObjectsKind(KindContract):
    kind = 'objects'
    # 360 frames at 120 Hz; markers: the first frame, 4 validity edges, refreshes at 1 s, 2 s.
    counts = {'/tf': 360, '/tf_static': 1, '/objects/markers': 6, '/objects/raw_markers': 360,
              '/annotations': 1}
    REFUSED = REFUSED
    ACCEPTED = ACCEPTED

    @pytest.fixture(scope='class')
    @classmethod
    def source(cls, tmp_path_factory: pytest.TempPathFactory) -> Path:
        return write_objects_sample(tmp_path_factory.mktemp('objects') / 'release') / SESSION

    @pytest.fixture(scope='class')
    @classmethod
    def bad_input_source(cls, source: Path) -> Path:
        return source.parent  # the release root

    def test_the_vendor_exports_are_never_read(self, bad_input_source: Path, tmp_path: Path,
                                               capfd: pytest.CaptureFixture[str]) -> None:
        """raw/mocap/*.csv,trc (millimetres, Y-up): garbage there changes no message."""
        import shutil

        from rosbags.highlevel import AnyReader
        clean, root = tmp_path / 'a' / 'release', tmp_path / 'b' / 'release'
        # paths of one length: the mesh URLs differ by a letter
        shutil.copytree(bad_input_source, clean)
        shutil.copytree(bad_input_source, root)
        for path in (root / SESSION / 'raw' / 'mocap').iterdir():
            path.write_bytes(b'\xff\x00 not,a,csv\n')
        digests = []
        for i, src in enumerate((clean, root)):
            assert cli.main(['convert', str(src), '-o', str(tmp_path / f'bag{i}'), '-q']) == 0
            with AnyReader([tmp_path / f'bag{i}']) as reader:
                digests.append([(c.topic, t, bytes(raw).replace(str(src).encode(), b'ROOT'))
                                for c, t, raw in reader.messages()])
        assert digests[0] == digests[1]
        capfd.readouterr()
