"""React against the contract every kind meets (kind_contract.py), with its bad inputs.

Bad React input, whatever its shape: one line naming the file, nothing written or changed.
The promise and how it is checked: bad_input_support.py; the contract runs the tables
(REFUSED, ACCEPTED) below.
"""
from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import av
import numpy as np
import pytest
from bad_input_support import Accepted, Refused
from kind_contract import KindContract
from react_support import (EPISODE, PARQUET, VIDEOS, edit_json, react_release, replace_column,
                           rewrite_parquet)

from react_ros.formats.video import decode_rgb

CAM = 'calibration/cameras/middle.json'
GEL = 'calibration/gel_left.json'
EARLY = 'tactile stream is 15 frames early'  # the warning of a pre-2026-06-27 episode
AFTER_2038 = '2038-02-01/episode_000'  # builtin_interfaces/Time.sec ends 2038-01-19


def _millimetres(root: Path) -> None:
    def edit(table):
        poses = np.asarray(table.column('sensor_left_pose').to_pylist())
        poses[:, :3] *= 1000.0
        return replace_column(table, 'sensor_left_pose', poses.tolist())
    rewrite_parquet(root, edit)


def _non_unit_quaternion(root: Path) -> None:
    def edit(table):
        poses = np.asarray(table.column('object_pose').to_pylist())
        poses[10:, 3:7] *= 1.3
        return replace_column(table, 'object_pose', poses.tolist())
    rewrite_parquet(root, edit)


def _missing_column(root: Path) -> None:
    rewrite_parquet(root, lambda t: t.drop_columns(['tactile_right_is_new']))


def _short_video(root: Path) -> None:
    path = root / VIDEOS / 'view_middle.mp4'
    frames = list(decode_rgb(path))[:-4]
    with av.open(str(path), mode='w') as out:
        stream = out.add_stream('libx264', rate=30, options={'preset': 'ultrafast'})
        stream.width, stream.height, stream.pix_fmt = frames[0].shape[1], frames[0].shape[0], \
            'yuv420p'
        stream.time_base = Fraction(1, 30)
        for i, img in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(img, format='rgb24')
            frame.pts = i
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))


def _calibration_flipped(root: Path) -> None:
    edit_json(root / 'calibration/cameras/middle.json', lambda d: d.update(up_axis='y'))


def _calibration_without_up_axis(root: Path) -> None:
    edit_json(root / 'calibration/cameras/left.json', lambda d: d.pop('up_axis'))


def _poses_declared_y_up(root: Path) -> None:
    import json

    import pyarrow.parquet as pq
    key = b'twm.world_frame'

    def edit(table):
        world = json.loads(table.schema.metadata[key])
        world['up_axis'] = 'y'
        return table.replace_schema_metadata({key: json.dumps(world)})
    del pq
    rewrite_parquet(root, edit)


def _second_episode(root: Path) -> None:
    # A release of two episodes: which one to play is then the user's choice.
    import json
    path = root / 'episodes.jsonl'
    first = json.loads(path.read_text().splitlines()[0])
    first.update(episode='2026-05-11/episode_000', episode_index=1)
    path.write_text(path.read_text() + json.dumps(first) + '\n')


def _write(rel: str, data: bytes) -> Callable[[Path], None]:
    return lambda root: (root / rel).write_bytes(data)


def _delete(rel: str) -> Callable[[Path], None]:
    return lambda root: (root / rel).unlink()


def _json_set(rel: str, key: str, value: Any) -> Callable[[Path], None]:
    return lambda root: edit_json(root / rel, lambda d: d.__setitem__(key, value))


def _episode_record(key: str, value: Any) -> Callable[[Path], None]:
    def breaker(root: Path) -> None:
        path = root / 'episodes.jsonl'
        rec = json.loads(path.read_text().splitlines()[0])
        rec[key] = value
        path.write_text(json.dumps(rec) + '\n')
    return breaker


def _column(name: str, values: Callable[[np.ndarray], Any], type_: Any = None
            ) -> Callable[[Path], None]:
    """Replace a parquet column by values(old) (as pyarrow type `type_`, else the old type)."""
    def breaker(root: Path) -> None:
        import pyarrow as pa

        def edit(table: Any) -> Any:
            old = np.asarray(table.column(name).to_pylist(), dtype=object)
            i = table.column_names.index(name)
            arr = pa.array(values(old), type_ or table.schema.field(name).type)
            return table.set_column(i, name, arr)
        rewrite_parquet(root, edit)
    return breaker


def _timestamps(edit: Callable[[np.ndarray], None]) -> Callable[[Path], None]:
    def values(old: np.ndarray) -> list[float]:
        ts = old.astype(float)
        edit(ts)
        return ts.tolist()
    return _column('timestamp', values)


def _move_episode(new_id: str) -> Callable[[Path], None]:
    """The same episode under another date: records, parquet and videos renamed."""
    def breaker(root: Path) -> None:
        old_date, name = EPISODE.split('/')
        new_date, _ = new_id.split('/')
        (root / 'data' / new_date).mkdir(parents=True)
        (root / 'data' / old_date / f'{name}.parquet').rename(
            root / 'data' / new_date / f'{name}.parquet')
        (root / 'videos' / new_date).mkdir(parents=True)
        (root / 'videos' / old_date / name).rename(root / 'videos' / new_date / name)
        for rel in ('episodes.jsonl', 'segments.json', 'bad_frames.json', 'splits.json'):
            path = root / rel
            if path.exists():
                path.write_text(path.read_text().replace(EPISODE, new_id))
    return breaker


def _second_episode(root: Path) -> None:
    # A release of two episodes: which one to play is then the user's choice.
    path = root / 'episodes.jsonl'
    first = json.loads(path.read_text().splitlines()[0])
    first.update(episode='2026-05-11/episode_000', episode_index=1)
    path.write_text(path.read_text() + json.dumps(first) + '\n')


def _world_frame(key: str, value: Any) -> Callable[[Path], None]:
    """Set one key of the parquet's twm.world_frame declaration."""
    def breaker(root: Path) -> None:
        def edit(table: Any) -> Any:
            world = json.loads(table.schema.metadata[b'twm.world_frame'])
            world[key] = value
            return table.replace_schema_metadata({b'twm.world_frame': json.dumps(world)})
        rewrite_parquet(root, edit)
    return breaker


def _split(**entry: Any) -> Callable[[Path], None]:
    return _write('splits.json', json.dumps({EPISODE: entry}).encode())


def _listed_twice(root: Path) -> None:
    path = root / 'episodes.jsonl'
    path.write_text(path.read_text() * 2)


def _force_null(root: Path) -> None:
    _column('force_left_normal_n', lambda o: [None if i == 5 else x for i, x in enumerate(o)]
            )(root)


def _camera_k(k: list[list[float]]) -> Callable[[Path], None]:
    return _json_set(CAM, 'K', k)


def _camera_at_other_size(root: Path) -> None:
    def edit(d: Any) -> None:
        d['K'] = [[300.0, 0, 160.0], [0, 300.0, 120.0], [0, 0, 1]]
        d['width'], d['height'] = 320, 240
    edit_json(root / 'calibration/cameras/left.json', edit)


def _camera_at_other_aspect(root: Path) -> None:
    # 16:9 against the videos' 4:3: the video could be a crop, no scaling of K is right
    def edit(d: Any) -> None:
        d['K'] = [[300.0, 0, 160.0], [0, 300.0, 90.0], [0, 0, 1]]
        d['width'], d['height'] = 320, 180
    edit_json(root / 'calibration/cameras/left.json', edit)


ID = ('--episode', EPISODE)
MM = ('millimetres',)
REFUSED = [
    Refused('millimetres', _millimetres, PARQUET, ('sensor_left_pose', 'millimetres'), ID),
    Refused('non-unit quaternion', _non_unit_quaternion, PARQUET, ('object_pose', 'unit'), ID),
    Refused('missing column', _missing_column, PARQUET, ('tactile_right_is_new', 'missing'), ID),
    Refused('short video', _short_video, f'{VIDEOS}/view_middle.mp4', ('shorter', 'rows'), ID),
    Refused('missing video', _delete(f'{VIDEOS}/view_left.mp4'), f'{VIDEOS}/view_left.mp4',
            ('missing',), ID),
    Refused('unknown episode', None, 'episodes.jsonl', ('2026-05-10/episode_042',),
            ('--episode', '2026-05-10/episode_042')),
    Refused('episode id without a date', None, 'episodes.jsonl', ('episode_000',),
            ('--episode', 'episode_000')),
    Refused('no episode chosen of two', _second_episode, '', ('2 episode(s)', '--episode')),
    Refused('calibration up axis flipped', _calibration_flipped, CAM,
            ("up_axis 'y'", 'px', 'fingerprint'), ID),
    Refused('calibration without up axis', _calibration_without_up_axis,
            'calibration/cameras/left.json', ('no up_axis', 'px'), ID),
    Refused('poses Y-up, calibration Z-up', _poses_declared_y_up,
            'calibration/cameras/left.json', ('Y-up', 'mix'), ID),
    # side files: JSON / JSONL that is not JSON, not UTF-8, or holds the wrong types
    Refused('episodes.jsonl not utf-8', _write('episodes.jsonl', b'{"episode": "\xff"}\n'),
            'episodes.jsonl', ('UTF-8',), ID),
    Refused('episodes.jsonl line not json', _write('episodes.jsonl', b'{"episode": \n'),
            'episodes.jsonl', ('line 1', 'JSON'), ID),
    Refused('episode length a string', _episode_record('length', '29'), 'episodes.jsonl',
            ("'length'", 'integer', "'29'"), ID),
    Refused('episode length wrong', _episode_record('length', 31), 'episodes.jsonl',
            ('31', '59 rows'), ID),
    Refused('world offset of 2', _episode_record('world_frame_offset', [0.0, 1.0]),
            'episodes.jsonl', ("'world_frame_offset'", '3'), ID),
    Refused('info.json missing', _delete('meta/info.json'), '', ('not',), ID),
    Refused('info.json not json', _write('meta/info.json', b'{"fps": 30,'), 'meta/info.json',
            ('JSON',), ID),
    Refused('camera not utf-8', _write(CAM, b'{"K": "\xfe"}'), CAM, ('UTF-8',), ID),
    Refused('camera not json', _write(CAM, b'K = 5'), CAM, ('JSON',), ID),
    Refused('camera K 8 numbers', _json_set(CAM, 'K', [1.0] * 8), CAM, ('K', '3x3'), ID),
    Refused('camera K strings', _json_set(CAM, 'K', [['a'] * 3] * 3), CAM, ('K',), ID),
    Refused('camera K NaN', _json_set(CAM, 'K', [[math.nan, 0, 80], [0, 150, 60], [0, 0, 1]]),
            CAM, ('K', 'finite'), ID),
    Refused('camera K focal 0', _json_set(CAM, 'K', [[0, 0, 80], [0, 150, 60], [0, 0, 1]]),
            CAM, ('K', 'focal'), ID),
    Refused('camera width 0', _json_set(CAM, 'width', 0), CAM, ("'width'", 'positive'), ID),
    Refused('camera width a string', _json_set(CAM, 'width', 'wide'), CAM, ("'width'",), ID),
    Refused('camera dist 4 numbers', _json_set(CAM, 'dist', [0.0] * 4), CAM, ('dist', '5'), ID),
    Refused('gel axis zero', _json_set(GEL, 'gel_axis_in_rigid', [0.0, 0.0, 0.0]), GEL,
            ('gel_axis_in_rigid', 'zero'), ('--episode', EPISODE, '--gel-axis', 'dual_ball')),
    Refused('gel centre 2 numbers', _json_set(GEL, 'gel_centre_mm', [1.0, 2.0]), GEL,
            ('gel_centre_mm', '3'), ID),
    Refused('segments not intervals', _write('segments.json', json.dumps(
        {EPISODE: [[1, 'six']]}).encode()), 'segments.json', ('interval',),
        ('--episode', EPISODE, '--segment', '0')),
    Refused('segment past the end', _write('segments.json', json.dumps(
        {EPISODE: [[1, 400]]}).encode()), 'segments.json', ('400',),
        ('--episode', EPISODE, '--segment', '0')),
    Refused('bad frame past the end', _write('bad_frames.json', json.dumps(
        {EPISODE: [{'frame': 999, 'reason': 'spike'}]}).encode()), 'bad_frames.json',
        ('999',), ID),
    # the parquet: typed columns checked for their type, not coerced
    Refused('parquet of text', _write(PARQUET, b'PAR1 not really'), PARQUET, ('parquet',), ID),
    Refused('pose column of strings', _column('object_pose', lambda o: [str(x) for x in o],
                                              __import__('pyarrow').string()),
            PARQUET, ('object_pose',), ID),
    Refused('is_new as strings', _column('tactile_left_is_new',
                                         lambda o: ['true' if x else 'false' for x in o],
                                         __import__('pyarrow').string()),
            PARQUET, ('tactile_left_is_new', 'bool'), ID),
    Refused('timestamp NaN', _timestamps(lambda ts: ts.__setitem__(3, math.nan)), PARQUET,
            ('timestamp',), ID),
    Refused('timestamps decreasing', _timestamps(lambda ts: ts.__setitem__(5, ts[3])),
            PARQUET, ('timestamp',), ID),
    Refused('timestamps duplicated', _timestamps(lambda ts: ts.__setitem__(5, ts[4])),
            PARQUET, ('timestamp',), ID),
    Refused('timestamp 1e19', _timestamps(lambda ts: ts.__setitem__(-1, 1e19)), PARQUET,
            ('timestamp',), ID),
    Refused('episode after 2038', _move_episode(AFTER_2038), 'episodes.jsonl', ('2038',),
            ('--episode', AFTER_2038)),
    # added with the React side-file schemas (react_ros/kinds/react/files.py)
    Refused('gel json not utf-8', _write(GEL, b'{"gel_centre_mm": "\xff"}'), GEL, ('UTF-8',),
            ID),
    Refused('gel depth offset a string', _json_set(GEL, 'depth_offset_mm', '-5'), GEL,
            ("'depth_offset_mm'", "'-5'"), ID),
    Refused('info fps a string', _json_set('meta/info.json', 'fps', '30'), 'meta/info.json',
            ("'fps'", "'30'"), ID),
    Refused('episode index a string', _episode_record('episode_index', '0'), 'episodes.jsonl',
            ("'episode_index'", 'integer'), ID),
    Refused('episode listed twice', _listed_twice, 'episodes.jsonl', ('line 2', 'twice'), ID),
    Refused('episode before 1970', _move_episode('1969-12-31/episode_000'), 'episodes.jsonl',
            ('1970',), ('--episode', '1969-12-31/episode_000')),
    Refused('camera K last row not 0 0 1', _camera_k([[150, 0, 80], [0, 150, 60], [0, 0, 2]]),
            CAM, ('K', '[0, 0, 1]'), ID),
    Refused('camera K of another image size',
            _camera_k([[600, 0, 320], [0, 600, 240], [0, 0, 1]]), CAM,
            ('principal point', '160x120'), ID),
    Refused('splits guard a boolean', _split(held_out=[[40, 50]], guard_frames=True),
            'splits.json', ("'guard_frames'", 'True'), ID),
    Refused('splits guard shorter than the window',
            _split(held_out=[[40, 50]], guard_frames=15, max_train_window=32), 'splits.json',
            ("'guard_frames' 15", "'max_train_window' 32"), ID),
    Refused('bad frame a boolean', _write('bad_frames.json', json.dumps(
        {EPISODE: [{'frame': True, 'reason': 'spike'}]}).encode()), 'bad_frames.json',
        ("'frame'", 'True'), ID),
    Refused('timestamps as integer ns', _column(
        'timestamp', lambda o: [int(round(x * 1e9)) for x in o], __import__('pyarrow').int64()),
        PARQUET, ('timestamp', 'int64'), ID),
    Refused('null in a force column', _force_null, PARQUET,
            ('force_left_normal_n', 'null', 'row 5'), ID),
    Refused('world frame declares wxyz', _world_frame('quaternion_order', 'wxyz'), PARQUET,
            ('quaternion_order', 'wxyz'), ID),
    Refused('calibrated at another aspect ratio', _camera_at_other_aspect,
            'calibration/cameras/left.json', ('aspect',), ID),
    Refused('tactile latency beyond the table', None, '--tactile-latency', ('1000', '59 rows'),
            ('--episode', EPISODE, '--tactile-latency', '1000')),
    # options
    Refused('image scale 1e6', None, '--image-scale', ('1e+06',),
            ('--episode', EPISODE, '--image-scale', '1e6')),
    Refused('segment of none', None, 'segments.json', ('--segment 7',),
            ('--episode', EPISODE, '--segment', '7')),
    Refused('segment negative', None, '--segment', ('>= 0',),
            ('--episode', EPISODE, '--segment', '-1')),
    Refused('gel axis unknown', None, '--gel-axis', ('sideways',),
            ('--episode', EPISODE, '--gel-axis', 'sideways')),
    Refused('tactile latency a word', None, '--tactile-latency', ('soon',),
            ('--episode', EPISODE, '--tactile-latency', 'soon')),
    # Found after the episode opened: its warnings come first, among them the sample's
    # (faithful) tactile latency: a 2026-05-10 episode played without --tactile-latency 15.
    Refused('unknown excluded topic', None, '--exclude', ('/nope',),
            ('--episode', EPISODE, '--exclude', '/nope'), commands=('convert',),
            warned=(EARLY,)),
    # outputs
    Refused('output inside the release', None, '', ('inside',), ID, commands=('convert',),
            output='{input}/bags/ep0', warned=(EARLY,)),
]


def _release_y_up_with_a_dropout(root: Path) -> None:
    """The whole release as recorded, Y-up (poses and cameras), one sensor_left row NaN."""
    from scipy.spatial.transform import Rotation

    from react_ros.kinds.react.parquet_video import Y_TO_Z
    world_z = np.eye(4)
    world_z[:3, :3] = Y_TO_Z
    for cam in ('left', 'middle', 'right'):
        edit_json(root / f'calibration/cameras/{cam}.json', lambda d: d.update(
            T_mocap_to_cam=(np.array(d['T_mocap_to_cam']) @ world_z).tolist(), up_axis='y'))

    def edit(table: Any) -> Any:
        for name in ('sensor_left_pose', 'sensor_right_pose', 'object_pose',
                     'force_left_target_pose', 'force_right_target_pose'):
            p = np.asarray(table.column(name).to_pylist())
            p[:, :3] = p[:, :3] @ Y_TO_Z
            p[:, 3:7] = (Rotation.from_matrix(Y_TO_Z.T) * Rotation.from_quat(p[:, 3:7])).as_quat()
            if name == 'sensor_left_pose':
                p[7, 3:7] = math.nan  # a tracking dropout
            table = replace_column(table, name, p.tolist())
        world = json.loads(table.schema.metadata[b'twm.world_frame'])
        world['up_axis'] = 'y'
        return table.replace_schema_metadata({b'twm.world_frame': json.dumps(world)})
    rewrite_parquet(root, edit)


def _nan_force_on_a_fresh_row(root: Path) -> None:
    def values(old: np.ndarray) -> list[float]:
        fresh = np.flatnonzero(_fresh(root, 'left'))
        f = old.astype(float)
        f[fresh[2]] = math.nan
        return f.tolist()
    _column('force_left_normal_n', values)(root)


def _fresh(root: Path, side: str) -> np.ndarray:
    import pyarrow.parquet as pq
    return np.asarray(pq.read_table(root / PARQUET).column(f'tactile_{side}_is_new'))


def _counts(bag: Path) -> dict[str, int]:
    from rosbags.highlevel import AnyReader
    with AnyReader([bag]) as reader:
        out: dict[str, int] = {}
        for conn, _, _ in reader.messages():
            out[conn.topic] = out.get(conn.topic, 0) + 1
    return out


def _one_pose_fewer(bag: Path) -> None:
    n = _counts(bag)
    assert n['/sensor_left/pose'] == n['/sensor_right/pose'] - 1, n


def _one_force_fewer(bag: Path) -> None:
    n = _counts(bag)
    assert n['/sensor_left/force'] == n['/sensor_left/force_target'] - 1, n


def _no_right_touch(bag: Path) -> None:
    n = _counts(bag)
    assert '/sensor_right/force' not in n and n['/sensor_left/force'] > 0, n


ACCEPTED = [
    Accepted('calibrated at another size', _camera_at_other_size, ('left.json', 'scaled'), ID),
    # A Y-up table is converted row by row; a dropout row is dropped as it is when Z-up.
    Accepted('Y-up release with a NaN pose row', _release_y_up_with_a_dropout,
             ('sensor_left_pose', '1 pose(s) not published', 'NaN'), ID, _one_pose_fewer,
             lines=2),  # two odd things: the Y-up conversion is said too
    Accepted('NaN force on a fresh row', _nan_force_on_a_fresh_row,
             ('force_left_normal_n', 'NaN', '1 fresh row'), ID, _one_force_fewer),
    Accepted('tactile never fresh', _column('tactile_right_is_new', lambda o: [False] * len(o)),
             ('tactile_right_is_new', 'every row'), ID, _no_right_touch,
             lines=2),  # and is_new then disagrees with force_right_source_frame: the check says so
    # info's conformance check fails (is_new against force_left_source_frame): convert says so.
    Accepted('tactile always fresh against its source frames',
             _column('tactile_left_is_new', lambda o: [True] * len(o)),
             ('.parquet', 'conformance check failed', 'tactile_*_is_new agrees'), ID),
    Accepted('fingerprint unusable', _world_frame('fingerprint', {'sensor': 'middle'}),
             ('fingerprint', 'not used'), ID),
    Accepted('splits without this episode', _write('splits.json', b'{}'),
             ('splits.json', 'no entry', EPISODE), ID),
]


class TestReactKind(KindContract):
    kind = 'react'
    episode_id = EPISODE
    counts = {'/view_middle/image_raw': 59, '/view_middle/camera_info': 59, '/tf_static': 1,
              '/tactile_left/values': 18, '/tactile_right/values': 18,
              '/sensor_left/force': 18, '/sensor_right/force_target': 18}
    REFUSED = REFUSED
    ACCEPTED = ACCEPTED

    @pytest.fixture(scope='class')
    @classmethod
    def source(cls, tmp_path_factory: pytest.TempPathFactory) -> Path:
        return react_release(tmp_path_factory)
