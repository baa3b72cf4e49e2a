"""Bad React input, whatever its shape: one line naming the file, nothing written or changed.

The promise and how it is checked: bad_input_support.py (the UMI table is test_bad_input.py).
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
from bad_input_support import Accepted, Refused, check_accepted, check_refused, ids
from react_support import (EPISODE, PARQUET, VIDEOS, edit_json, react_release, replace_column,
                           rewrite_parquet)

from react_ros.formats.video import decode_rgb

CAM = 'calibration/cameras/middle.json'
GEL = 'calibration/gel_left.json'
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
            ('31', '29 rows'), ID),
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
    Refused('pose column of strings', _column('object_pose', lambda o: [str(x) for x in o]),
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
    Refused('unknown excluded topic', None, '--exclude', ('/nope',),
            ('--episode', EPISODE, '--exclude', '/nope'), commands=('convert',)),
    # outputs
    Refused('output inside the release', None, '', ('inside',), ID, commands=('convert',),
            output='{input}/bags/ep0'),
]


def _camera_at_other_size(root: Path) -> None:
    def edit(d: Any) -> None:
        d['K'] = [[300.0, 0, 160.0], [0, 300.0, 120.0], [0, 0, 1]]
        d['width'], d['height'] = 320, 240
    edit_json(root / 'calibration/cameras/left.json', edit)


ACCEPTED = [
    Accepted('calibrated at another size', _camera_at_other_size, ('left.json', 'scaled'), ID),
]


@pytest.fixture(scope='module')
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return react_release(tmp_path_factory)


@pytest.mark.parametrize('case', REFUSED, ids=ids(REFUSED))
def test_bad_react_input_is_refused(case: Refused, release: Path, tmp_path: Path,
                                    capfd: pytest.CaptureFixture[str]) -> None:
    check_refused(case, release, tmp_path, capfd)


@pytest.mark.parametrize('case', ACCEPTED, ids=ids(ACCEPTED))
def test_odd_react_input_is_converted_with_a_warning(case: Accepted, release: Path,
                                                    tmp_path: Path,
                                                    capfd: pytest.CaptureFixture[str]) -> None:
    check_accepted(case, release, tmp_path, capfd)
