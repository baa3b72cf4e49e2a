"""The React release's side files, one small schema each, checked where they are read.

meta/info.json, episodes.jsonl, calibration/cameras/<view>.json,
calibration/gel_<side>.json, segments.json, splits.json and bad_frames.json
(INTERFACE.md 3, react). Every value read is checked for type, shape and
finiteness here and never coerced: "29" is not 29 and true is not 1 (JSON
booleans are Python ints). Messages name the file, the key (with the line or
episode it sits in) and what was expected. ROS-free.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from react_ros.errors import DatasetFormatError
from react_ros.kinds.react.parquet_video import (EPISODE_ID, MM_SUSPECT_M, VIDEO_KEYS,
                                                 gel_centres_world, project)
from react_ros.formats.text_files import read_text


MAX_PIXELS = 1 << 16


# -- values -----------------------------------------------------------------------------------
def _repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + '...'


def _brief(value: Any) -> str:
    """What a value is, for a message: its count where a count was wrong."""
    return f'a list of {len(value)}' if isinstance(value, list) else _repr(value)


def integer(value: Any, key: str, path: Path, where: str = '', least: int = 0,
            unit: str = '', most: int | None = None) -> int:
    """An int (not a bool, not a string of digits) in least..most."""
    what = {0: 'a non-negative integer', 1: 'a positive integer'}.get(least,
                                                                   f'an integer >= {least}')
    what += unit + ('' if most is None else f' up to {most}')
    if isinstance(value, bool) or not isinstance(value, int) or value < least \
            or (most is not None and value > most):
        raise DatasetFormatError(path, f'{where}{key!r} must be {what}, not {_brief(value)}')
    return value


def number(value: Any, key: str, path: Path, where: str = '', element: bool = False) -> float:
    """A finite int or float (not a bool, not a string); `element`: one of a key's numbers."""
    what = 'hold finite numbers' if element else 'be a finite number'
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise DatasetFormatError(path, f'{where}{key!r} must {what}, not {_brief(value)}')
    return float(value)


def numbers(value: Any, key: str, path: Path, shape: Sequence[int], where: str = '',
            what: str = '') -> np.ndarray:
    """Nested lists of finite numbers of exactly `shape` (e.g. (3, 3) for K)."""
    dims = 'x'.join(map(str, shape))

    def walk(v: Any, rest: Sequence[int], at: str) -> Any:
        if not rest:
            return number(v, key, path, where, element=True)
        if not isinstance(v, list) or len(v) != rest[0]:
            raise DatasetFormatError(path, f'{where}{key!r} must be {dims} numbers{what}, '
                                     f'not {at}{_brief(v)}')
        return [walk(x, rest[1:], f'{at}[{i}] ' if at else f'with row {i} ')
                for i, x in enumerate(v)]
    return np.asarray(walk(value, shape, ''), dtype=float)


def _object(doc: Any, path: Path, what: str, where: str = '') -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise DatasetFormatError(path, f'{where}expected a JSON object ({what}), not '
                                 f'{_brief(doc)}')
    return doc


def _require(doc: dict[str, Any], keys: Sequence[str], path: Path, where: str = '') -> None:
    missing = [k for k in keys if k not in doc]
    if missing:
        raise DatasetFormatError(path, f'{where}key(s) missing: {", ".join(map(repr, missing))}')


def read_json(path: Path, required: bool = True) -> Any:
    """A JSON file's document (None for a missing file that is not required).

    A key given twice in one object is refused: which value was meant is unknown.
    """
    if not required and not path.exists():
        return None
    return _parse(read_text(path), path)


def _parse(text: str, path: Path, where: str = '') -> Any:
    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        doc: dict[str, Any] = {}
        for k, v in pairs:
            if k in doc:
                raise DatasetFormatError(path, f'{where}key {k!r} appears twice')
            doc[k] = v
        return doc
    try:
        return json.loads(text, object_pairs_hook=unique)
    except json.JSONDecodeError as exc:
        raise DatasetFormatError(path, f'{where}not valid JSON ({exc.msg} at line {exc.lineno} '
                                 f'column {exc.colno})') from None


# -- meta/info.json ---------------------------------------------------------------------------
def read_info(root: Path, warnings: list[str]) -> dict[str, Any]:
    """meta/info.json: fps, video_keys, task are checked where present (none is needed to
    play: rates come from `timestamp`, the videos from the layout)."""
    path = root / 'meta' / 'info.json'
    doc = _object(read_json(path), path, 'the release description')
    if 'fps' in doc and (number(doc['fps'], 'fps', path) <= 0):
        raise DatasetFormatError(path, f"'fps' must be positive, not {doc['fps']}")
    keys = doc.get('video_keys', list(VIDEO_KEYS))
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise DatasetFormatError(path, f"'video_keys' must be a list of names, not "
                                 f'{_brief(keys)}')
    if set(keys) != set(VIDEO_KEYS):
        warnings.append(f'{path.name}: video_keys {keys} differ from the five videos read '
                        f'({", ".join(VIDEO_KEYS)})')
    if 'task' in doc and not isinstance(doc['task'], str):
        raise DatasetFormatError(path, f"'task' must be a string, not {_brief(doc['task'])}")
    return doc


# -- episodes.jsonl ---------------------------------------------------------------------------
@dataclass(frozen=True)
class EpisodeRecord:
    id: str
    line: int
    length: int | None
    world_frame_offset: np.ndarray | None  # information only, never applied (INTERFACE.md)


def read_episode_lines(root: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, record) of every episode; each needs a unique DATE/episode_NNN id.

    Only the ids are checked here, so one bad record does not hide the others;
    `episode_record` checks the rest of the record that is played.
    """
    path = root / 'episodes.jsonl'
    out: list[tuple[int, dict[str, Any]]] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        rec = _parse(line, path, f'line {n}: ')
        if not isinstance(rec, dict) or 'episode' not in rec:
            raise DatasetFormatError(path, f'line {n} has no "episode" id')
        ep = rec['episode']
        if not isinstance(ep, str) or not EPISODE_ID.match(ep):
            raise DatasetFormatError(path, f"line {n}: 'episode' must be DATE/episode_NNN, "
                                     f'not {_brief(ep)}')
        if ep in seen:
            raise DatasetFormatError(path, f'line {n}: episode {ep} is listed twice (also '
                                     f'line {seen[ep]})')
        seen[ep] = n
        out.append((n, rec))
    return out


def episode_record(path: Path, line: int, rec: dict[str, Any]) -> EpisodeRecord:
    where = f'line {line}: '
    if 'episode_index' in rec:
        integer(rec['episode_index'], 'episode_index', path, where)
    length = None if rec.get('length') is None else \
        integer(rec['length'], 'length', path, where, least=1, unit=' (rows)')
    offset = None
    if rec.get('world_frame_offset') is not None:
        offset = numbers(rec['world_frame_offset'], 'world_frame_offset', path, (3,), where,
                         ' [x, y, z] in metres')
    if 'task' in rec and not isinstance(rec['task'], str):
        raise DatasetFormatError(path, f"{where}'task' must be a string, not "
                                 f'{_brief(rec["task"])}')
    return EpisodeRecord(rec['episode'], line, length, offset)


# -- calibration ------------------------------------------------------------------------------
@dataclass
class Camera:
    name: str
    path: Path
    t_mocap_to_cam: np.ndarray  # 4x4, metres, X_cam = T X_world, in the poses' up axis
    k: np.ndarray
    dist: list[float]
    width: int
    height: int
    up_axis: str  # as declared ('y' when the key is missing)
    declared: bool = True  # False: no up_axis key
    converted: bool = False  # world side mapped Y-up -> Z-up on reading


def read_camera(path: Path, name: str) -> Camera:
    doc = _object(read_json(path), path, 'a camera calibration')
    _require(doc, ('T_mocap_to_cam', 'K', 'dist', 'width', 'height'), path)
    t = numbers(doc['T_mocap_to_cam'], 'T_mocap_to_cam', path, (4, 4))
    if not np.allclose(t[3], [0, 0, 0, 1]):
        raise DatasetFormatError(path, "'T_mocap_to_cam' last row must be [0, 0, 0, 1]")
    r = t[:3, :3]
    if not np.allclose(r @ r.T, np.eye(3), atol=1e-6) or np.linalg.det(r) < 0:
        raise DatasetFormatError(path, "'T_mocap_to_cam' rotation is not orthonormal with "
                                 'det +1')
    if np.abs(t[:3, 3]).max() > MM_SUSPECT_M:
        raise DatasetFormatError(path, f"'T_mocap_to_cam' translation "
                                 f'{t[:3, 3].round(1).tolist()} looks like millimetres; the '
                                 'release uses metres')
    # CameraInfo holds sizes in uint32; no camera of this rig is wider than 2**16.
    width = integer(doc['width'], 'width', path, least=1, unit=' (pixels)', most=MAX_PIXELS)
    height = integer(doc['height'], 'height', path, least=1, unit=' (pixels)', most=MAX_PIXELS)
    k = numbers(doc['K'], 'K', path, (3, 3), what=' [[fx, s, cx], [0, fy, cy], [0, 0, 1]]')
    if k[0, 0] <= 0 or k[1, 1] <= 0:
        raise DatasetFormatError(path, f"'K' focal lengths must be positive, not "
                                 f'fx={k[0, 0]:g}, fy={k[1, 1]:g}')
    if k[1, 0] != 0 or k[2].tolist() != [0, 0, 1]:
        raise DatasetFormatError(path, f"'K' must be [[fx, s, cx], [0, fy, cy], [0, 0, 1]], "
                                 f'not {k.tolist()}')
    if not (0 <= k[0, 2] <= width and 0 <= k[1, 2] <= height):
        # K of another image size than the one the file declares: it would project off.
        raise DatasetFormatError(path, f"'K' principal point ({k[0, 2]:g}, {k[1, 2]:g}) is "
                                 f"outside the {width}x{height} image of 'width'/'height'")
    dist = numbers(doc['dist'], 'dist', path, (5,), what=' (plumb_bob k1, k2, p1, p2, k3)')
    up = doc.get('up_axis', 'y')  # no key: the pre-conversion Y-up it was
    if up not in ('y', 'z'):
        raise DatasetFormatError(path, f"'up_axis' must be \"y\" or \"z\", not {_brief(up)}")
    return Camera(name, path, t, k, dist.tolist(), width, height, up, 'up_axis' in doc)


@dataclass
class Gel:
    path: Path
    centre_mm: np.ndarray
    axis_in_rigid: np.ndarray  # unit
    depth_offset_mm: float


def read_gel(path: Path) -> Gel:
    doc = _object(read_json(path), path, 'a gel calibration')
    _require(doc, ('gel_centre_mm', 'gel_axis_in_rigid'), path)
    centre = numbers(doc['gel_centre_mm'], 'gel_centre_mm', path, (3,), what=' (mm)')
    axis = numbers(doc['gel_axis_in_rigid'], 'gel_axis_in_rigid', path, (3,))
    norm = float(np.linalg.norm(axis))
    if norm < 1e-9:
        raise DatasetFormatError(path, "'gel_axis_in_rigid' is zero; it must be a direction")
    depth = number(doc.get('depth_offset_mm', 0.0), 'depth_offset_mm', path)
    return Gel(path, centre, axis / norm, depth)


# -- curation: segments, splits, bad frames -----------------------------------------------------
def _entry(root: Path, name: str, episode: str) -> tuple[Path, Any]:
    """(path, this episode's entry); entry None where the file or the episode's key is absent."""
    path = root / name
    doc = read_json(path, required=False)
    if doc is None:
        return path, None
    return path, _object(doc, path, 'keyed by episode id').get(episode)


def interval(value: Any, n: int, path: Path, where: str) -> tuple[int, int]:
    """[first_row, last_row] of integer rows, inclusive, inside the n rows."""
    if not (isinstance(value, list) and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        raise DatasetFormatError(path, f'{where}interval {_repr(value)} is not '
                                 '[first_row, last_row] of integers')
    a, b = value
    if not 0 <= a <= b < n:
        raise DatasetFormatError(path, f'{where}interval [{a}, {b}] is outside rows 0..{n - 1}'
                                 if a <= b else f'{where}interval [{a}, {b}] ends before it '
                                 'starts')
    return a, b


def _intervals(value: Any, n: int, path: Path, where: str) -> list[tuple[int, int]]:
    if not isinstance(value, list):
        raise DatasetFormatError(path, f'{where}expected a list of [first_row, last_row] '
                                 f'intervals, not {_brief(value)}')
    return [interval(v, n, path, where) for v in value]


def read_segments(root: Path, episode: str, n: int) -> list[tuple[int, int]] | None:
    """segments.json's clean intervals of the episode; None: no segments.json."""
    path, entry = _entry(root, 'segments.json', episode)
    if entry is None:
        return None if not path.exists() else []
    return _intervals(entry, n, path, f'{episode}: ')


@dataclass(frozen=True)
class Split:
    held_out: list[tuple[int, int]]
    guard_frames: int


def read_split(root: Path, episode: str, n: int, warnings: list[str]) -> Split | None:
    """splits.json's held-out intervals and guard of the episode; None: no entry."""
    path, entry = _entry(root, 'splits.json', episode)
    if entry is None:
        if path.exists():
            # The format document's silent failure: a missing entry puts it all in train.
            warnings.append(f'{path.name} has no entry for {episode}: no held-out intervals '
                            'published')
        return None
    where = f'{episode}: '
    entry = _object(entry, path, '{"held_out": [[a, b], ...], "guard_frames": G}', where)
    held = _intervals(entry.get('held_out', []), n, path, where)
    if 'guard_frames' not in entry and held:
        warnings.append(f'{path.name}: {episode} has no guard_frames: no guard intervals '
                        'published')
    guard = integer(entry.get('guard_frames', 0), 'guard_frames', path, where)
    if 'max_train_window' in entry:
        window = integer(entry['max_train_window'], 'max_train_window', path, where, least=1)
        # The format document: guard_frames = max_train_window - 1. A shorter guard lets
        # training windows see held-out rows (refused); a longer one only wastes rows.
        if guard < window - 1:
            raise DatasetFormatError(path, f"{where}'guard_frames' {guard} is shorter than "
                                     f"'max_train_window' {window} - 1: training windows "
                                     'would see held-out rows')
        if guard > window - 1:
            warnings.append(f'{path.name}: {episode}: guard_frames {guard} is longer than '
                            f'max_train_window {window} - 1')
    return Split(held, guard)


def read_bad_frames(root: Path, episode: str, n: int) -> list[tuple[int, str]] | None:
    """bad_frames.json's (row, reason) of the episode; None: no bad_frames.json."""
    path, entry = _entry(root, 'bad_frames.json', episode)
    if entry is None:
        return None if not path.exists() else []
    if not isinstance(entry, list):
        raise DatasetFormatError(path, f'{episode}: expected a list of {{"frame": row, '
                                 f'"reason": ...}}, not {_brief(entry)}')
    out = []
    for i, e in enumerate(entry):
        where = f'{episode}: entry {i}: '
        e = _object(e, path, '{"frame": row, "reason": ...}', where)
        _require(e, ('frame',), path, where)
        row = integer(e['frame'], 'frame', path, where, unit=' (a row)')
        if row >= n:
            raise DatasetFormatError(path, f"{where}'frame' {row} is outside rows 0..{n - 1}")
        reason = e.get('reason', '')
        if not isinstance(reason, str):
            raise DatasetFormatError(path, f"{where}'reason' must be a string, not "
                                     f'{_brief(reason)}')
        out.append((row, reason))
    return out


def fingerprint_error_px(table_poses: np.ndarray, gel: Gel, cam: Camera,
                         fingerprint: dict[str, Any]) -> float | None:
    """Worst distance (px) of the stored fingerprint from our own projection; None: none stored."""
    rows = fingerprint.get('rows')
    pixels = (fingerprint.get('pixels') or {}).get(cam.name)
    if not isinstance(rows, list) or not isinstance(pixels, list) or len(rows) != len(pixels):
        return None
    try:
        idx = np.asarray(rows, dtype=int)
        stored = np.asarray(pixels, dtype=float).reshape(-1, 2)
        if len(idx) == 0 or idx.min() < 0 or idx.max() >= len(table_poses):
            return None
    except (TypeError, ValueError):
        return None
    ours = project(cam.t_mocap_to_cam, cam.k, cam.dist,
                   gel_centres_world(table_poses[idx], gel.centre_mm))
    err = np.linalg.norm(ours - stored, axis=1)
    err = err[np.isfinite(err)]  # a row with a tracking dropout proves nothing
    return float(err.max()) if len(err) else None


__all__ = ['Camera', 'fingerprint_error_px', 'EpisodeRecord', 'Gel', 'Split', 'episode_record', 'integer', 'interval',
           'number', 'numbers', 'read_bad_frames', 'read_camera', 'read_episode_lines',
           'read_gel', 'read_info', 'read_json', 'read_segments', 'read_split']
