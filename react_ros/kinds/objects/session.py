"""Mocap object sessions (`RELEASE/<session>/motions/objects.npz` and its side files).

What the format document fixes, checked at the edge and returned as plain
numpy data: every key present, one `n` and one `T` across them, the enums, the
mesh paths, `t` increasing, objects.json a JSON object. The per-frame pose
matrices (n, T, 4, 4) are never loaded whole: `scan_poses` walks them a chunk
of frames at a time and says which frames marked valid hold a rigid transform.
The vendor exports `raw/mocap/*.{csv,trc}` (millimetres, Y-up) are never read.
"""
from __future__ import annotations

import errno
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from react_ros.errors import DatasetFormatError
from react_ros.kinds.objects.npz import NpzArchive
from react_ros.formats.text_files import read_text

OBJECTS_NPZ = 'motions/objects.npz'
MARKERS_NPZ = 'motions/object_markers.npz'
OBJECTS_JSON = 'motions/objects.json'
NOT_READ = ('motions/smplx.npz', 'motions/markers.npz')  # undocumented here: listed only
STRING_KEYS = ('names', 'object_type', 'mesh', 'pose_frame', 'source')
PER_FRAME_KEYS = ('valid', 'quality', 'motion', 'held_by')
POSE_FRAMES = ('mesh', 'rigid_body')
SOURCES = ('mocap', 'vision')
QUALITY = {1: 'mocap verified', 2: 'mocap unverified', 3: 'vision tracked',
           4: 'vision rest fit', 5: 'vision bridged'}
MOTION = {0: 'unknown', 1: 'resting', 2: 'moving'}
HELD_BY = {0: 'none', 1: 'left', 2: 'right', 3: 'both'}
MM_SUSPECT_M = 50.0  # a median |position| above this is millimetres, not metres


@dataclass
class Instance:
    index: int
    name: str
    object_type: str
    mesh: str  # as stored: from the release root, '' without a mesh pose
    mesh_path: Path | None  # resolved, for pose_frame == 'mesh'
    pose_frame: str
    source: str
    t_rb_obj: np.ndarray  # 4x4, NaN where the instance has none
    calib_rms_mm: float


@dataclass
class Session:
    root: Path
    release: Path
    objects: NpzArchive
    instances: list[Instance]
    t_s: np.ndarray  # (T,)
    frame_index: np.ndarray  # (T,)
    valid: np.ndarray  # (n, T) bool, as stored
    quality: np.ndarray  # (n, T) int
    motion: np.ndarray
    held_by: np.ndarray
    doc: dict[str, Any]  # objects.json ({} when missing)
    absent: list[str]
    markers: NpzArchive | None
    marker_names: np.ndarray | None = None  # (n, k)
    unread: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.instances)

    @property
    def frames(self) -> int:
        return len(self.t_s)


def _strings(npz: NpzArchive, key: str, n: int | None) -> list[str]:
    m = npz.member(key)
    if m.dtype.kind not in 'US' or len(m.shape) != 1 or (n is not None and m.shape[0] != n):
        want = f'({n},)' if n is not None else '(n,)'
        raise DatasetFormatError(npz.path, f'key {key!r}: expected {want} strings, found '
                                 f'shape {m.shape} of {m.dtype}')
    arr = npz.load(key)
    try:
        return [v.decode('utf-8') if isinstance(v, bytes) else str(v) for v in arr.tolist()]
    except UnicodeDecodeError:
        raise DatasetFormatError(npz.path, f'key {key!r}: not UTF-8 text') from None


def _shape(npz: NpzArchive, key: str, want: tuple[int | str, ...]) -> tuple[int, ...]:
    """The shape of `key`, checked against `want` (ints fixed, strings named dimensions)."""
    shape = npz.member(key).shape
    if len(shape) != len(want) or any(isinstance(w, int) and s != w
                                      for s, w in zip(shape, want)):
        spelled = '(' + ', '.join(str(w) for w in want) + (',)' if len(want) == 1 else ')')
        raise DatasetFormatError(npz.path, f'key {key!r}: expected shape {spelled}, found '
                                 f'{shape}')
    return shape


def _numeric(npz: NpzArchive, key: str) -> None:
    dtype = npz.member(key).dtype
    if dtype.kind not in 'biuf':
        raise DatasetFormatError(npz.path, f'key {key!r}: expected numbers, found {dtype}')


def _codes(npz: NpzArchive, key: str, arr: np.ndarray, allowed: dict[int, str],
           valid: np.ndarray, extra: tuple[int, ...] = ()) -> np.ndarray:
    if arr.dtype.kind == 'f' and not np.all(np.isfinite(arr) | ~valid):
        raise DatasetFormatError(npz.path, f'key {key!r}: NaN on a frame marked valid')
    codes = np.where(np.isfinite(arr), arr, 0).astype(np.int64) if arr.dtype.kind == 'f' \
        else arr.astype(np.int64)
    ok = np.isin(codes, list(allowed)) | (np.isin(codes, list(extra)) & ~valid)
    if not ok.all():
        i, k = (int(v[0]) for v in np.nonzero(~ok))
        raise DatasetFormatError(npz.path, f'key {key!r}: instance {i} frame {k} has code '
                                 f'{codes[i, k]}, not one of the format document\'s '
                                 f'({", ".join(f"{c} {m}" for c, m in allowed.items())})')
    return codes


def read_session(root: Path) -> Session:
    """Open and check everything of a session but the per-frame pose matrices."""
    release = root.parent
    npz = NpzArchive(root / OBJECTS_NPZ)
    for key in (*STRING_KEYS, 'T_world_obj', *PER_FRAME_KEYS, 'T_rb_obj', 'calib_rms_mm',
                't', 'frame_index'):
        npz.member(key)  # a missing key is named before any shape is compared
    names = _strings(npz, 'names', None)
    n = len(names)
    cols = {k: _strings(npz, k, n) for k in STRING_KEYS[1:]}
    t_shape = _shape(npz, 't', ('T',))
    frames = t_shape[0]
    _shape(npz, 'frame_index', (frames,))
    _shape(npz, 'T_world_obj', (n, frames, 4, 4))
    for key in PER_FRAME_KEYS:
        _shape(npz, key, (n, frames))
    _shape(npz, 'T_rb_obj', (n, 4, 4))
    _shape(npz, 'calib_rms_mm', (n,))
    for key in ('t', 'frame_index', 'T_world_obj', *PER_FRAME_KEYS, 'T_rb_obj', 'calib_rms_mm'):
        _numeric(npz, key)
    if n == 0 or frames == 0:
        raise DatasetFormatError(npz.path, f'holds {n} instance(s) and {frames} frame(s): '
                                 'nothing to play')
    dupes = sorted({x for x in names if names.count(x) > 1})
    if dupes:
        raise DatasetFormatError(npz.path, f'key \'names\': instance name(s) '
                                 f'{", ".join(dupes)} repeat (each names a TF frame)')
    for i, name in enumerate(names):
        if not name or name.startswith('/') or any(c.isspace() for c in name):
            raise DatasetFormatError(npz.path, f'key \'names\': instance {i} is {name!r}, '
                                     'which cannot be a TF frame id')
    t_s = np.asarray(npz.load('t'), dtype=float)
    if not np.all(np.isfinite(t_s)):
        raise DatasetFormatError(npz.path, "key 't': NaN or infinite times")
    steps = np.diff(t_s)
    if len(steps) and steps.min() <= 0:
        k = int(np.argmax(steps <= 0)) + 1
        raise DatasetFormatError(npz.path, f"key 't' does not increase at frame {k} "
                                 f'({t_s[k - 1]!r} then {t_s[k]!r} s)')
    if t_s[0] < 0:
        raise DatasetFormatError(npz.path, f"key 't' starts at {t_s[0]!r} s: expected seconds "
                                 'from the session start (>= 0)')
    frame_index = npz.load('frame_index')
    if frame_index.dtype.kind == 'f':
        raise DatasetFormatError(npz.path, "key 'frame_index': expected integers, found "
                                 f'{frame_index.dtype}')
    valid_raw = npz.load('valid')
    if valid_raw.dtype.kind != 'b' and not np.isin(valid_raw, (0, 1)).all():
        raise DatasetFormatError(npz.path, "key 'valid': expected booleans (or 0/1)")
    valid = valid_raw.astype(bool)
    quality = _codes(npz, 'quality', npz.load('quality'), QUALITY, valid, extra=(0,))
    motion = _codes(npz, 'motion', npz.load('motion'), MOTION, valid)
    held_by = _codes(npz, 'held_by', npz.load('held_by'), HELD_BY, valid)
    t_rb = np.asarray(npz.load('T_rb_obj'), dtype=float)
    rms = np.asarray(npz.load('calib_rms_mm'), dtype=float)
    instances = []
    for i, name in enumerate(names):
        pose_frame, source, mesh = cols['pose_frame'][i], cols['source'][i], cols['mesh'][i]
        if pose_frame not in POSE_FRAMES:
            raise DatasetFormatError(npz.path, f"key 'pose_frame': instance {name} is "
                                     f'{pose_frame!r}, expected mesh or rigid_body')
        if source not in SOURCES:
            raise DatasetFormatError(npz.path, f"key 'source': instance {name} is "
                                     f'{source!r}, expected mocap or vision')
        mesh_path = None
        if pose_frame == 'mesh':
            if not mesh:
                raise DatasetFormatError(npz.path, f"key 'mesh': instance {name} is posed in "
                                         'its mesh frame but names no mesh')
            mesh_path = _mesh_path(release, mesh, npz.path, name)
        instances.append(Instance(i, name, cols['object_type'][i], mesh, mesh_path,
                                  pose_frame, source, t_rb[i], float(rms[i])))
    doc = _objects_json(root / OBJECTS_JSON)
    absent = _absent(doc, root / OBJECTS_JSON)
    markers = None
    marker_names = None
    if (root / MARKERS_NPZ).exists():
        markers = NpzArchive(root / MARKERS_NPZ)
        marker_names = _marker_keys(markers, n, frames)
    unread = [rel for rel in NOT_READ if (root / rel).exists()]
    raw = root / 'raw'
    if raw.is_dir():
        unread += sorted(str(p.relative_to(root)) for p in raw.rglob('*') if p.is_file())
    return Session(root, release, npz, instances, t_s, frame_index, valid, quality, motion,
                   held_by, doc, absent, markers, marker_names, unread)


def _mesh_path(release: Path, mesh: str, npz_path: Path, name: str) -> Path:
    rel = Path(mesh)
    if rel.is_absolute() or '..' in rel.parts:
        raise DatasetFormatError(npz_path, f"key 'mesh': instance {name}: {mesh!r} must be a "
                                 'path from the release root')
    try:
        path = (release / rel).resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
        why = 'a symlink loop' if isinstance(exc, RuntimeError) or \
            getattr(exc, 'errno', None) == errno.ELOOP else exc.strerror or str(exc)
        raise DatasetFormatError(npz_path, f"key 'mesh': instance {name}: {mesh} cannot be "
                                 f'opened ({why})') from None
    if not path.is_file():
        raise DatasetFormatError(npz_path, f"key 'mesh': instance {name}: {mesh} does not "
                                 f'exist under the release root {release}')
    return path


def _objects_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    text = read_text(path)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetFormatError(path, f'not valid JSON ({exc.msg} at line {exc.lineno} '
                                 f'column {exc.colno})') from None
    if not isinstance(doc, dict):
        raise DatasetFormatError(path, f'expected a JSON object, found {type(doc).__name__}')
    return doc


def _absent(doc: dict[str, Any], path: Path) -> list[str]:
    absent = doc.get('absent', [])
    if absent is None:
        return []
    if not isinstance(absent, list) or not all(isinstance(a, str) for a in absent):
        raise DatasetFormatError(path, "'absent' must be a list of rigid-body names")
    return list(absent)


def _marker_keys(npz: NpzArchive, n: int, frames: int) -> np.ndarray:
    for key in ('markers_m', 'marker_names', 'template_m', 'consistent'):
        npz.member(key)
    shape = _shape(npz, 'markers_m', (n, frames, 'k', 3))
    k = shape[2]
    _shape(npz, 'consistent', (n, frames, k))
    _shape(npz, 'template_m', (n, k, 3))
    _numeric(npz, 'markers_m')
    _numeric(npz, 'consistent')
    m = npz.member('marker_names')
    if m.dtype.kind not in 'US' or m.shape != (n, k):
        raise DatasetFormatError(npz.path, f"key 'marker_names': expected ({n}, {k}) strings, "
                                 f'found shape {m.shape} of {m.dtype}')
    return npz.load('marker_names')


def rigid_faults(t: np.ndarray, tol: float) -> np.ndarray:
    """Per 4x4 of `t` (..., 4, 4): '' for a rigid transform, else what is wrong."""
    out = np.full(t.shape[:-2], '', dtype=object)
    with np.errstate(invalid='ignore', over='ignore'):
        r = t[..., :3, :3]
        ortho = np.abs(np.einsum('...ji,...jk->...ik', r, r) - np.eye(3)).max(axis=(-1, -2))
        det = np.linalg.det(np.where(np.isfinite(r), r, 0.0))
        last = np.abs(t[..., 3, :] - [0.0, 0.0, 0.0, 1.0]).max(axis=-1)
    out[~(last <= tol)] = 'last row is not [0 0 0 1]'
    out[~(ortho <= tol)] = 'rotation is not orthonormal'
    out[(ortho <= tol) & (det < 0)] = 'rotation is a reflection (det -1)'
    out[~np.all(np.isfinite(t), axis=(-1, -2))] = 'NaN or infinite'
    return out


@dataclass
class PoseScan:
    finite: np.ndarray  # (n, T): marked valid and finite
    nan_valid: np.ndarray  # (n,): frames marked valid holding NaN/inf
    posed_invalid: np.ndarray  # (n,): frames marked not valid holding a finite matrix
    median_m: float  # median |translation| over the valid frames


def scan_poses(session: Session, chunk: int, tol: float) -> PoseScan:
    """One chunked pass over T_world_obj: refuses a valid frame that is not rigid."""
    npz = session.objects
    n, frames = session.n, session.frames
    finite = np.zeros((n, frames), dtype=bool)
    posed_invalid = np.zeros(n, dtype=np.int64)
    norms: list[np.ndarray] = []
    for a, block in npz.chunks('T_world_obj', chunk):
        block = np.asarray(block, dtype=float)
        valid = session.valid[:, a:a + block.shape[1]]
        faults = rigid_faults(block, tol)
        bad = valid & (faults != '') & (faults != 'NaN or infinite')
        if bad.any():
            i, k = (int(v[0]) for v in np.nonzero(bad))
            raise DatasetFormatError(npz.path, f"key 'T_world_obj': instance "
                                     f'{session.instances[i].name} frame {a + k} is marked '
                                     f'valid but is not a rigid transform: {faults[i, k]}'
                                     f' ({int(bad.sum())} such frames in frames {a}..'
                                     f'{a + block.shape[1] - 1})')
        # `valid` decides, not finiteness: a pose on a frame marked not valid is not usable.
        ok = valid & (faults == '')
        finite[:, a:a + block.shape[1]] = ok
        posed_invalid += (~valid & np.all(np.isfinite(block), axis=(-1, -2))).sum(axis=1)
        norms.append(np.linalg.norm(block[ok][:, :3, 3], axis=-1)[::7])
    nan_valid = (session.valid & ~finite).sum(axis=1)
    all_norms = np.concatenate(norms) if norms else np.empty(0)
    median = float(np.median(all_norms)) if len(all_norms) else 0.0
    if median > MM_SUSPECT_M:
        raise DatasetFormatError(npz.path, f"key 'T_world_obj': median |translation| = "
                                 f'{median:.1f}, which is millimetres (the vendor exports\' '
                                 'unit); poses must be metres')
    return PoseScan(finite, nan_valid, posed_invalid, median)


def scan_markers(session: Session, chunk: int) -> np.ndarray:
    """(n, T) frames with at least one seen marker; refuses millimetres."""
    npz = session.markers
    if npz is None:
        raise ValueError('the session has no object_markers.npz')
    seen = np.zeros((session.n, session.frames), dtype=bool)
    norms = []
    for a, block in npz.chunks('markers_m', chunk):
        finite = np.all(np.isfinite(block), axis=-1)
        seen[:, a:a + block.shape[1]] = finite.any(axis=-1)
        norms.append(np.linalg.norm(block[finite], axis=-1)[::7])
    all_norms = np.concatenate(norms) if norms else np.empty(0)
    if len(all_norms) and float(np.median(all_norms)) > MM_SUSPECT_M:
        raise DatasetFormatError(npz.path, f"key 'markers_m': median |position| = "
                                 f'{float(np.median(all_norms)):.1f}, which is millimetres; '
                                 'markers must be metres in the world frame')
    return seen


@dataclass(frozen=True)
class MarkerResidual:
    """Median distance (mm) of template_m from the consistent markers_m, per reading."""
    right: float  # the format document's reading
    rb_other_way: float | None  # T_world_obj @ T_rb_obj (mesh instances only)
    pose_inverted: float  # inv(T_world_obj) taken as pose_frame -> world


def marker_residual_mm(inst: Instance, template: np.ndarray, poses: np.ndarray,
                       pts: np.ndarray, agree: np.ndarray) -> MarkerResidual | None:
    """How far template_m lands from the consistent markers_m of one instance, in mm.

    `poses` (f, 4, 4), `pts` (f, k, 3), `agree` (f, k) are the instance's arrays on
    the frames compared, `template` (k, 3) its template_m. The format document's
    reading: T_world_rb = T_world_obj @ inv(T_rb_obj) for mesh instances
    (T_world_obj itself for rigid_body ones). Against it, the two classic
    mistakes: T_rb_obj taken the other way round (T_world_obj @ T_rb_obj), and
    T_world_obj taken as world -> object (inverted). Median over the consistent
    markers; None where there is nothing to compare.
    """
    poses = np.asarray(poses, dtype=float)
    inverted = np.linalg.inv(poses)
    readings = [poses, inverted]
    if inst.pose_frame == 'mesh':
        if not np.all(np.isfinite(inst.t_rb_obj)):
            return None
        rb_in_obj = np.linalg.inv(inst.t_rb_obj)
        readings = [poses @ rb_in_obj, inverted @ rb_in_obj, poses @ inst.t_rb_obj]
    out: list[float] = []
    for t_world_rb in readings:
        guess = np.einsum('fij,kj->fki', t_world_rb[:, :3, :3], template) \
            + t_world_rb[:, None, :3, 3]
        with np.errstate(invalid='ignore'):
            use = (agree != 0) & np.all(np.isfinite(pts), axis=-1) \
                & np.all(np.isfinite(guess), axis=-1)
        if not use.any():
            return None
        out.append(float(np.median(np.linalg.norm(guess[use] - pts[use], axis=-1))) * 1000)
    return MarkerResidual(out[0], out[2] if len(out) > 2 else None, out[1])


def frames_of(npz: NpzArchive, key: str, frames: np.ndarray, chunk: int) -> np.ndarray:
    """array[:, frames] of an (n, T, ...) key (frames sorted), in one chunked pass."""
    frames = np.asarray(frames)
    out = []
    for a, block in npz.chunks(key, chunk):
        sel = frames[(frames >= a) & (frames < a + block.shape[1])]
        if len(sel):
            out.append(block[:, sel - a])
    return np.concatenate(out, axis=1)


__all__ = ['HELD_BY', 'Instance', 'MARKERS_NPZ', 'MOTION', 'NOT_READ', 'OBJECTS_JSON',
           'MarkerResidual', 'OBJECTS_NPZ', 'PoseScan', 'QUALITY', 'Session', 'frames_of',
           'marker_residual_mm', 'read_session', 'rigid_faults',
           'scan_markers', 'scan_poses']
