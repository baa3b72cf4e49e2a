"""TrueTrace stereo egocentric episodes on disk: the episode folder, the package around it,
and the single-file HDF5 export (format document sections 1-8). ROS-free.

Everything is checked where it is read and refused with the file (and line, key or
dataset) named. Times come out as float seconds of the clip as the files give
them; the adapter turns them into ns once. Bulk arrays of the HDF5 export are read
in slices when a stream asks for them; the folder's text files are parsed once at
open (they must be validated before any output is written anyway) and held as
float32 / float64 arrays of a few MB for a 75 s episode.
"""
from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from react_ros.errors import DatasetFormatError
from react_ros.formats import text_files

CAMERAS = ('cam0', 'cam1')
HANDS = ('left', 'right')  # index 0, 1 of the HDF5 export's hand axis
JOINTS = 21
IMU_COLUMNS = ('t_s', 'frame_index', 'accel_x', 'accel_y', 'accel_z',
               'gyro_x', 'gyro_y', 'gyro_z')
EPISODE_RE = re.compile(r'^episode_(\d{6})$')
H5_SUFFIXES = ('.h5', '.hdf5')
H5_REQUIRED = ('time/t_s', 'hands/keypoints_3d_m', 'hands/keypoints_2d_px',
               'hands/reprojection_px', 'hands/present', 'imu/t_s', 'imu/frame_index',
               'imu/accel', 'imu/gyro', 'calibration')


# -- text files ---------------------------------------------------------------------------
# The byte-order mark a spreadsheet's "CSV UTF-8" (and some JSON writers) put first: CSV
# readers drop it (Python's utf-8-sig), and so does every reader here, before any column
# name or JSON value is looked at.
BOM = '\ufeff'
MAX_LINKS = 40  # as the kernel's ELOOP


def link_problem(path: Path) -> str | None:
    """Why the symlink `path` leads to no file: a loop (the chain shown) or a missing
    target; None when `path` is no symlink or leads to something."""
    try:
        if not path.is_symlink():
            return None
        chain, seen, here = [path.name], set(), path
        while here.is_symlink():
            seen.add(Path(os.path.abspath(here)))
            to = os.readlink(here)
            chain.append(to)
            here = Path(os.path.abspath(here.parent / to))
            if here in seen or len(chain) > MAX_LINKS:
                return f'is a symlink loop ({" -> ".join(chain)}): there is no file to read'
        if not os.path.lexists(here):
            return f'is a symlink to {os.readlink(path)}, which is missing'
    except OSError:
        return None  # read_text says what it is
    return None


def not_a_file(path: Path) -> str | None:
    """Why a name that is there is no readable file (a symlink loop or dangling, a
    folder, no permission); None when it is a file or nothing is there."""
    why = link_problem(path)
    if why is not None:
        return why
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f'cannot be read ({exc.strerror})'
    if stat.S_ISDIR(mode):
        return 'is a folder, not a file'
    return None if stat.S_ISREG(mode) else 'is not a regular file'


def read_text(path: Path) -> str:
    """The file's text without a byte-order mark; a symlink that leads nowhere named."""
    why = link_problem(path)
    if why is not None:
        raise DatasetFormatError(path, why)
    return text_files.read_text(path).removeprefix(BOM)


def has_bom(path: Path) -> bool:
    try:
        with path.open('rb') as f:
            return f.read(3) == BOM.encode()
    except OSError:
        return False


# -- calibration.json ---------------------------------------------------------------------
@dataclass
class CameraCalibration:
    name: str
    width: int
    height: int
    k: np.ndarray  # 3x3
    d: np.ndarray  # [k1, k2, k3, k4], Kannala-Brandt


@dataclass
class Calibration:
    path: Path
    where: str  # '' for calibration.json, '/calibration attribute json: ' in the export
    text: str
    model: str
    cameras: dict[str, CameraCalibration]
    # Factory extrinsics as stored: child pose in the parent (cam0) frame, t metres, q xyzw.
    factory: dict[str, tuple[np.ndarray, np.ndarray]]
    refined: tuple[np.ndarray, np.ndarray] | None  # (R 3x3, T 3): X1 = R X0 + T
    refined_from: str | None
    baseline_mm: float | None
    imu_rate_hz: float | None
    imu_offset_s: float


def _err(path: Path, where: str, detail: str) -> DatasetFormatError:
    return DatasetFormatError(path, where + detail)


def _num(v: Any, what: str, path: Path, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _err(path, where, f'{what} must be a number, not {v!r}')
    if not math.isfinite(v):
        raise _err(path, where, f'{what} must be finite, not {v}')
    return float(v)


def _vector(v: Any, n: int, what: str, path: Path, where: str) -> np.ndarray:
    if not isinstance(v, list) or len(v) != n:
        raise _err(path, where, f'{what} must be a list of {n} numbers, not {v!r}')
    return np.array([_num(x, what, path, where) for x in v])


def parse_calibration(text: str, path: Path, where: str = '') -> Calibration:
    text = text.removeprefix(BOM)  # the export's attribute holds the file as it was
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _err(path, where, f'not valid JSON ({exc})') from None
    if not isinstance(doc, dict):
        raise _err(path, where, 'expected a JSON object')
    model = doc.get('model')
    if model != 'kannala_brandt':
        raise _err(path, where, f"'model' is {model!r}; the format document's cameras are "
                   "'kannala_brandt' (4 fisheye coefficients)")
    cams = doc.get('cameras')
    if not isinstance(cams, dict):
        raise _err(path, where, "'cameras' is missing or not an object")
    cameras = {}
    for name in CAMERAS:
        c = cams.get(name)
        if not isinstance(c, dict):
            raise _err(path, where, f"'cameras' has no camera {name!r}")
        size = []
        for key in ('width', 'height'):
            v = c.get(key)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise _err(path, where, f'cameras.{name}.{key} must be a positive integer, '
                           f'not {v!r}')
            size.append(v)
        k = _vector(c.get('K'), 9, f'cameras.{name}.K', path, where).reshape(3, 3)
        if k[0, 0] <= 0 or k[1, 1] <= 0 or k[2, 2] != 1.0 or k[1, 0] or k[2, 0] or k[2, 1]:
            raise _err(path, where, f'cameras.{name}.K is not a camera matrix '
                       '[fx, 0, cx, 0, fy, cy, 0, 0, 1] with positive focal lengths')
        d = _vector(c.get('D'), 4, f'cameras.{name}.D', path, where)
        cameras[name] = CameraCalibration(name, size[0], size[1], k, d)
    ext = doc.get('extrinsics')
    if not isinstance(ext, dict):
        raise _err(path, where, "'extrinsics' is missing or not an object")
    factory = {}
    for key in ('cam0->cam1', 'cam0->imu0'):
        e = ext.get(key)
        if not isinstance(e, dict):
            raise _err(path, where, f"'extrinsics' has no {key!r}")
        factory[key] = (_vector(e.get('t'), 3, f'extrinsics.{key}.t', path, where),
                        _vector(e.get('q'), 4, f'extrinsics.{key}.q', path, where))
    refined = None
    if doc.get('refined_stereo_extrinsics') is not None:
        refined = parse_refined(doc['refined_stereo_extrinsics'], path,
                                where + 'refined_stereo_extrinsics: ')
    imu = doc.get('imu')
    if not isinstance(imu, dict) or 'time_offset_to_cam0_s' not in imu:
        raise _err(path, where, "'imu.time_offset_to_cam0_s' is missing")
    offset = _num(imu['time_offset_to_cam0_s'], 'imu.time_offset_to_cam0_s', path, where)
    if abs(offset) > 1.0:
        raise _err(path, where, f'imu.time_offset_to_cam0_s is {offset} s; an offset of '
                   'more than a second is no clock offset (milliseconds written as seconds?)')
    rate = imu.get('rate_hz')
    baseline = doc.get('baseline_mm')
    return Calibration(
        path=path, where=where, text=text, model=model, cameras=cameras, factory=factory,
        refined=refined, refined_from='calibration.json' if refined is not None else None,
        baseline_mm=None if baseline is None else _num(baseline, 'baseline_mm', path, where),
        imu_rate_hz=None if rate is None else _num(rate, 'imu.rate_hz', path, where),
        imu_offset_s=offset)


def parse_refined(doc: Any, path: Path, where: str) -> tuple[np.ndarray, np.ndarray]:
    """{"R": 3x3, "T": 3} in the OpenCV stereo convention, R checked to be a rotation."""
    if not isinstance(doc, dict):
        raise _err(path, where, 'expected an object with R and T')
    rows = doc.get('R')
    if not isinstance(rows, list) or len(rows) != 3:
        raise _err(path, where, f'R must be 3 rows of 3 numbers, not {rows!r}')
    r = np.stack([_vector(row, 3, 'R', path, where) for row in rows])
    t = _vector(doc.get('T'), 3, 'T', path, where)
    err = float(np.abs(r @ r.T - np.eye(3)).max())
    if err > 1e-4 or np.linalg.det(r) < 0:
        raise _err(path, where, f'R is not a rotation matrix (|R Rt - I| = {err:.3g}, '
                   f'det {np.linalg.det(r):.4f})')
    return r, t


def read_calibration(path: Path) -> Calibration:
    return parse_calibration(read_text(path), path)


# -- imu.csv ------------------------------------------------------------------------------
@dataclass
class ImuSamples:
    """IMU rows: t_s (clip seconds, IMU clock) and frame_index (source numbering) in full;
    accel/gyro through `chunk`."""

    path: Path
    t_s: np.ndarray
    frame_index: np.ndarray
    _accel: np.ndarray | None = None
    _gyro: np.ndarray | None = None
    _h5: Path | None = None

    @property
    def n(self) -> int:
        return len(self.t_s)

    def chunk(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        if self._h5 is None:
            assert self._accel is not None and self._gyro is not None
            return self._accel[start:stop], self._gyro[start:stop]
        import h5py
        with h5py.File(self._h5, 'r') as f:
            return (np.asarray(f['imu/accel'][start:stop], dtype=np.float64),
                    np.asarray(f['imu/gyro'][start:stop], dtype=np.float64))


def read_imu_csv(path: Path) -> ImuSamples:
    text = read_text(path)
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if header is None:
        raise DatasetFormatError(path, 'file is empty (no header line)')
    header = [h.strip() for h in header]
    missing = [c for c in IMU_COLUMNS if c not in header]
    if missing:
        raise DatasetFormatError(path, f'column {missing[0]!r} is missing (the header '
                                 f'must name {", ".join(IMU_COLUMNS)})')
    cols = [header.index(c) for c in IMU_COLUMNS]
    rows: list[list[float]] = []
    for line, values in enumerate(reader, start=2):
        if not values:
            continue
        if len(values) != len(header):
            raise DatasetFormatError(path, f'line {line}: {len(values)} values, the header '
                                     f'names {len(header)} columns')
        row = []
        for name, c in zip(IMU_COLUMNS, cols):
            try:
                v = float(values[c])
            except ValueError:
                raise DatasetFormatError(path, f'line {line}: {name} {values[c]!r} is not a '
                                         'number') from None
            if not math.isfinite(v):
                raise DatasetFormatError(path, f'line {line}: {name} is {values[c]!r}, '
                                         'not a finite number')
            row.append(v)
        if not float(row[1]).is_integer():
            raise DatasetFormatError(path, f'line {line}: frame_index {values[cols[1]]!r} '
                                     'is not a frame number')
        rows.append(row)
    if not rows:
        raise DatasetFormatError(path, 'holds no samples')
    a = np.array(rows, dtype=np.float64)
    check_increasing(a[:, 0], path, 't_s', first_line=2)
    return ImuSamples(path, a[:, 0].copy(), a[:, 1].astype(np.int64), a[:, 2:5].copy(),
                      a[:, 5:8].copy())


def check_increasing(t: np.ndarray, path: Path, what: str, first_line: int | None = None,
                     where: str = '') -> None:
    gaps = np.diff(t)
    if len(gaps) and gaps.min() <= 0:
        i = int(np.argmax(gaps <= 0)) + 1
        at = f'line {i + first_line}' if first_line is not None else f'row {i}'
        raise _err(path, where, f'{at}: {what} {t[i]!r} does not come after {t[i - 1]!r} '
                   '(times must increase)')


# -- hands_3d.jsonl -----------------------------------------------------------------------
@dataclass
class HandFrames:
    """Per cam0 frame: its clip time and, per hand (left, right), presence and keypoints."""

    path: Path
    t_s: np.ndarray  # [N] float64
    present: np.ndarray  # [N, 2] bool
    clip_frame: np.ndarray | None = None  # [N] (the folder's lines)
    source_frame: np.ndarray | None = None
    kp3d: np.ndarray | None = None  # [N, 2, 21, 3] float32, NaN where absent
    kp2d: np.ndarray | None = None  # [N, 2, 21, 2] float32
    reproj: np.ndarray | None = None  # [N, 2, 21] float32
    triangulated: np.ndarray | None = None  # [N, 2, 21, 3] float32 (folder only)
    confidence: np.ndarray | None = None  # [N, 2] (folder only), NaN where absent
    # A second hand under a label already taken in its frame (folder only, by row).
    extra: list['ExtraHand'] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    _h5: Path | None = None

    @property
    def n(self) -> int:
        return len(self.t_s)

    def chunk(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(keypoints_3d [.., 2, 21, 3], keypoints_2d [.., 2, 21, 2], reprojection [.., 2, 21])."""
        if self._h5 is None:
            assert self.kp3d is not None and self.kp2d is not None and self.reproj is not None
            return self.kp3d[start:stop], self.kp2d[start:stop], self.reproj[start:stop]
        import h5py
        with h5py.File(self._h5, 'r') as f:
            return (np.asarray(f['hands/keypoints_3d_m'][start:stop], dtype=np.float32),
                    np.asarray(f['hands/keypoints_2d_px'][start:stop], dtype=np.float32),
                    np.asarray(f['hands/reprojection_px'][start:stop], dtype=np.float32))

    def rows(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The same as chunk() for a sorted set of frames (a sample for checks)."""
        if self._h5 is None:
            assert self.kp3d is not None and self.kp2d is not None and self.reproj is not None
            return self.kp3d[idx], self.kp2d[idx], self.reproj[idx]
        import h5py
        with h5py.File(self._h5, 'r') as f:
            return (np.asarray(f['hands/keypoints_3d_m'][idx], dtype=np.float32),
                    np.asarray(f['hands/keypoints_2d_px'][idx], dtype=np.float32),
                    np.asarray(f['hands/reprojection_px'][idx], dtype=np.float32))


@dataclass(frozen=True)
class ExtraHand:
    """The less confident of two hands one frame lists under the same label."""

    row: int
    side: int  # its label, 0 left, 1 right
    confidence: float
    kp3d: np.ndarray  # [21, 3]
    kp2d: np.ndarray  # [21, 2]
    reproj: np.ndarray  # [21]
    triangulated: np.ndarray | None  # [21, 3]


def _points(v: Any, dims: int, what: str, path: Path, line: int) -> np.ndarray:
    shape = f'{JOINTS} x {dims}' if dims else str(JOINTS)
    if not isinstance(v, list) or len(v) != JOINTS:
        n = len(v) if isinstance(v, list) else type(v).__name__
        raise DatasetFormatError(path, f'line {line}: {what} holds {n} keypoints, '
                                 f'expected {shape}')
    try:
        a = np.array(v, dtype=np.float64)
    except (TypeError, ValueError):
        raise DatasetFormatError(path, f'line {line}: {what} must be {shape} numbers') from None
    if a.shape != ((JOINTS, dims) if dims else (JOINTS,)):
        raise DatasetFormatError(path, f'line {line}: {what} must be {shape} numbers, '
                                 f'not of shape {"x".join(map(str, a.shape))}')
    # numpy has taken "0.12" and true for numbers: only JSON numbers are (React's parquet
    # refuses such strings too). type(), not isinstance: a bool is an int.
    cells = (((j, k), x) for j, p in enumerate(v) for k, x in enumerate(p)) if dims \
        else (((j,), x) for j, x in enumerate(v))
    for at, x in cells:
        if type(x) not in (int, float):
            index = ''.join(f'[{i}]' for i in at)
            raise DatasetFormatError(path, f'line {line}: {what}{index} must be a number, '
                                     f'not {x!r}')
    return a


def read_hands_jsonl(path: Path) -> HandFrames:
    text = read_text(path)
    lines = [(i, s) for i, s in enumerate(text.splitlines(), start=1) if s.strip()]
    n = len(lines)
    if not n:
        raise DatasetFormatError(path, 'holds no frames')
    nan = np.float32('nan')
    out = HandFrames(path, np.zeros(n), np.zeros((n, 2), dtype=bool),
                     np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64),
                     np.full((n, 2, JOINTS, 3), nan, dtype=np.float32),
                     np.full((n, 2, JOINTS, 2), nan, dtype=np.float32),
                     np.full((n, 2, JOINTS), nan, dtype=np.float32),
                     np.full((n, 2, JOINTS, 3), nan, dtype=np.float32),
                     np.full((n, 2), np.nan))
    assert out.kp3d is not None and out.kp2d is not None and out.reproj is not None
    assert out.triangulated is not None and out.clip_frame is not None
    assert out.source_frame is not None and out.confidence is not None
    duplicates: set[int] = set()
    for row, (line, s) in enumerate(lines):
        try:
            doc = json.loads(s)
        except json.JSONDecodeError as exc:
            raise DatasetFormatError(path, f'line {line}: not valid JSON ({exc.msg})') from None
        if not isinstance(doc, dict):
            raise DatasetFormatError(path, f'line {line}: expected a JSON object')
        for key in ('clip_frame', 'source_frame'):
            v = doc.get(key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise DatasetFormatError(path, f'line {line}: {key} must be a frame number, '
                                         f'not {v!r}')
        out.clip_frame[row], out.source_frame[row] = doc['clip_frame'], doc['source_frame']
        if doc['clip_frame'] != row:
            raise DatasetFormatError(path, f'line {line}: clip_frame {doc["clip_frame"]} but '
                                     f'this is frame {row} of the clip (one line per cam0 '
                                     'frame, in order)')
        out.t_s[row] = _num(doc.get('t_s'), 't_s', path, f'line {line}: ')
        hands = doc.get('hands')
        if not isinstance(hands, list):
            raise DatasetFormatError(path, f'line {line}: hands must be a list, not {hands!r}')
        conf = [-1.0, -1.0]
        for h in hands:
            if not isinstance(h, dict) or h.get('hand') not in ('Left', 'Right'):
                label = h.get('hand') if isinstance(h, dict) else h
                raise DatasetFormatError(path, f'line {line}: hand {label!r} is neither '
                                         "'Left' nor 'Right'")
            side = 0 if h['hand'] == 'Left' else 1
            c = h.get('confidence', 0.0)
            if type(c) not in (int, float):
                raise DatasetFormatError(path, f'line {line}: confidence must be a number, '
                                         f'not {c!r}')
            c = float(c)
            k3 = _points(h.get('keypoints_3d_cam0_m'), 3, 'keypoints_3d_cam0_m', path, line)
            k2 = _points(h.get('keypoints_2d_cam0_px'), 2, 'keypoints_2d_cam0_px', path, line)
            rp = _points(h.get('reprojection_error_px'), 0, 'reprojection_error_px', path, line)
            tri = h.get('keypoints_3d_triangulated_m')
            tri = _points(tri, 3, 'keypoints_3d_triangulated_m', path, line) \
                if tri is not None else None
            hand = ExtraHand(row, side, c, k3, k2, rp, tri)
            if out.present[row, side]:
                # One label twice: the 2D model swapped one (format document, section 5).
                # The more confident one takes the label's slot; the other is kept beside.
                duplicates.add(row)
                if c <= conf[side]:
                    out.extra.append(hand)
                    continue
                out.extra.append(ExtraHand(row, side, conf[side], out.kp3d[row, side].copy(),
                                           out.kp2d[row, side].copy(),
                                           out.reproj[row, side].copy(),
                                           out.triangulated[row, side].copy()))
            out.present[row, side] = True
            conf[side] = c
            out.confidence[row, side] = c
            out.kp3d[row, side], out.kp2d[row, side], out.reproj[row, side] = k3, k2, rp
            out.triangulated[row, side] = tri if tri is not None else nan
    if duplicates:
        out.warnings.append(f'{path.name}: {len(duplicates)} frame(s) list one hand label '
                            'twice (swapped labels); both hands are published, the less '
                            'confident as <label>_hand_2 on /hands/markers, and the frame is '
                            'flagged on /annotations')
    check_increasing(out.t_s, path, 't_s', first_line=1)
    return out


# -- segments -----------------------------------------------------------------------------
def check_segments(segments: Any, path: Path, where: str = '') -> list[dict[str, Any]]:
    if not isinstance(segments, list):
        raise _err(path, where, 'segments must be a list of objects')
    out = []
    for i, seg in enumerate(segments):
        if not isinstance(seg, dict):
            raise _err(path, where, f'segment {i} is not an object')
        for key in ('start_frame', 'end_frame'):
            v = seg.get(key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise _err(path, where, f'segment {i}: {key} must be a frame number, '
                           f'not {v!r}')
        if seg['end_frame'] < seg['start_frame']:
            raise _err(path, where, f'segment {i}: end_frame {seg["end_frame"]} comes before '
                       f'start_frame {seg["start_frame"]}')
        out.append(seg)
    return out


def read_segments_jsonl(path: Path) -> list[dict[str, Any]]:
    segments = []
    for line, s in enumerate(read_text(path).splitlines(), start=1):
        if not s.strip():
            continue
        try:
            segments.append(json.loads(s))
        except json.JSONDecodeError as exc:
            raise DatasetFormatError(path, f'line {line}: not valid JSON ({exc.msg})') from None
    return check_segments(segments, path)


# -- qc/metrics.json and MANIFEST.sha256 --------------------------------------------------
def read_verdicts(path: Path) -> list[str]:
    """qc/metrics.json's verdicts list as lines 'gate: pass|FAIL (detail)'."""
    try:
        doc = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DatasetFormatError(path, f'not valid JSON ({exc.msg})') from None
    verdicts = doc.get('verdicts') if isinstance(doc, dict) else None
    if not isinstance(verdicts, list):
        raise DatasetFormatError(path, "'verdicts' is missing or not a list")
    out = []
    for v in verdicts:
        if not isinstance(v, dict):
            raise DatasetFormatError(path, f'verdict {v!r} is not an object')
        gate = v.get('gate', v.get('name', '?'))
        ok = v.get('pass', v.get('passed'))
        word = 'pass' if ok is True else 'FAIL' if ok is False else f'{ok!r}'
        detail = v.get('detail')
        out.append(f'{gate}: {word}' + (f' ({detail})' if detail else ''))
    return out


def verify_manifest(root: Path) -> list[str]:
    """Check every file MANIFEST.sha256 lists (shasum -a 256 -c). Returns warnings
    (files present but not listed); refuses the first missing or mismatching file."""
    manifest = root / 'MANIFEST.sha256'
    listed: set[str] = set()
    for line_no, line in enumerate(read_text(manifest).splitlines(), start=1):
        if not line.strip():
            continue
        m = re.match(r'^([0-9a-fA-F]{64}) [ *](.+)$', line)
        if not m:
            raise DatasetFormatError(manifest, f'line {line_no}: not "<sha256>  <path>"')
        digest, rel = m.group(1).lower(), m.group(2).strip()
        rel_path = Path(rel)
        if rel_path.is_absolute() or '..' in rel_path.parts:
            raise DatasetFormatError(manifest, f'line {line_no}: {rel!r} is not inside '
                                     'the package')
        target = root / rel_path
        listed.add(rel_path.as_posix())
        if not target.is_file():
            why = not_a_file(target)
            raise DatasetFormatError(target, f'listed in MANIFEST.sha256 but {why or "missing"}')
        h = hashlib.sha256()
        with target.open('rb') as f:
            for block in iter(lambda: f.read(1 << 20), b''):
                h.update(block)
        if h.hexdigest() != digest:
            raise DatasetFormatError(target, 'does not match its sha256 in MANIFEST.sha256 '
                                     '(changed or damaged in delivery)')
    unlisted = sorted(p.relative_to(root).as_posix() for p in root.rglob('*')
                      if p.is_file() and p != manifest
                      and p.relative_to(root).as_posix() not in listed)
    if unlisted:
        return [(f'MANIFEST.sha256: {len(unlisted)} file(s) not listed, not verified '
                 f'(first: {unlisted[0]})')]
    return []


# -- the HDF5 export ----------------------------------------------------------------------
@dataclass
class H5Export:
    path: Path
    calibration: Calibration
    videos: dict[str, Path]  # the mp4 each /video/camN names (it may be absent)
    jpeg_frames: dict[str, int]  # camera -> frames embedded under /frames/camN, where present
    hands: HandFrames
    imu: ImuSamples
    segments: list[dict[str, Any]]
    meta: dict[str, Any]
    per_frame_action: list[str] | None = None  # [N], where the export has it


def _attr_text(v: Any) -> str:
    if isinstance(v, bytes):
        return v.decode('utf-8')
    if isinstance(v, np.ndarray) and v.shape == ():
        return _attr_text(v[()])
    return str(v)


def read_h5_export(path: Path) -> H5Export:
    import h5py
    try:
        f = h5py.File(path, 'r')
    except (OSError, ValueError) as exc:
        why = str(exc).split('(', 1)[-1].rstrip(')') if '(' in str(exc) else str(exc)
        raise DatasetFormatError(path, f'not a readable HDF5 file ({why})') from None
    with f:
        try:
            return _read_h5(f, path)
        except (OSError, KeyError, RuntimeError) as exc:
            raise DatasetFormatError(path, f'HDF5 export is damaged ({exc})') from None


# HDF5 stores a dataset of fill values in a few bytes, so an export can declare more
# frames or samples than exist; what is declared is checked before it is allocated.
MAX_IMU_HZ = 10_000


def _check_frame_count(f: Any, path: Path, n: int) -> None:
    """/time/t_s's N against the frames there are: cam0's video, or its embedded JPEGs."""
    from react_ros.formats import video
    node = f.get('video/cam0')
    mp4 = (path.parent / _attr_text(node.attrs['file'])).resolve() \
        if node is not None and 'file' in node.attrs else None
    if mp4 is not None and mp4.is_file():
        frames, source = video.probe(mp4).frame_count, str(mp4)
    elif 'frames/cam0' in f:
        frames, source = int(f['frames/cam0'].shape[0]), '/frames/cam0'
    else:
        return  # no frames to count here: the missing video is refused where it is opened
    if n != frames:
        raise DatasetFormatError(path, f'/time/t_s declares {n} frames but {source} holds '
                                 f'{frames}')


def _read_h5(f: Any, path: Path) -> H5Export:
    for name in H5_REQUIRED:
        if name not in f:
            raise DatasetFormatError(path, f'dataset /{name} is missing')
    for name in H5_REQUIRED:
        # numpy would turn b'0.12' into 0.12 where the arrays are read: numbers only.
        if name == 'calibration':
            continue
        dtype = getattr(f[name], 'dtype', None)
        if dtype is None:
            raise DatasetFormatError(path, f'/{name} is a group, not a dataset')
        if dtype.kind not in ('biu' if name == 'hands/present' else 'fiu'):
            raise DatasetFormatError(path, f'/{name} holds {dtype} values, not numbers')
    if 'json' not in f['calibration'].attrs:
        raise DatasetFormatError(path, "/calibration has no attribute 'json'")
    calib = parse_calibration(_attr_text(f['calibration'].attrs['json']), path,
                              '/calibration attribute json: ')
    declared = f['time/t_s'].shape
    if len(declared) != 1 or not declared[0]:
        raise DatasetFormatError(path, '/time/t_s must be a non-empty 1-D array')
    _check_frame_count(f, path, int(declared[0]))
    t_s = np.asarray(f['time/t_s'][()], dtype=np.float64)
    n = len(t_s)
    if not np.all(np.isfinite(t_s)):
        raise DatasetFormatError(path, '/time/t_s holds NaN or infinite times')
    shapes = {'hands/keypoints_3d_m': (n, 2, JOINTS, 3), 'hands/keypoints_2d_px': (n, 2, JOINTS, 2),
              'hands/reprojection_px': (n, 2, JOINTS), 'hands/present': (n, 2)}
    for name, shape in shapes.items():
        if f[name].shape != shape:
            raise DatasetFormatError(path, f'/{name} has shape {f[name].shape}, expected '
                                     f'{shape} (N = {n} frames of /time/t_s)')
    check_increasing(t_s, path, '/time/t_s')
    present = np.asarray(f['hands/present'][()], dtype=bool)
    declared = f['imu/t_s'].shape
    if len(declared) != 1 or not declared[0]:
        raise DatasetFormatError(path, '/imu/t_s must be a non-empty 1-D array')
    most = int((t_s[-1] - t_s[0] + 10.0) * MAX_IMU_HZ)
    if declared[0] > most:
        raise DatasetFormatError(path, f'/imu/t_s declares {declared[0]} samples for a clip of '
                                 f'{t_s[-1] - t_s[0]:.3g} s: more than {MAX_IMU_HZ} Hz could '
                                 'record')
    imu_t = np.asarray(f['imu/t_s'][()], dtype=np.float64)
    m = len(imu_t)
    for name, shape in {'imu/frame_index': (m,), 'imu/accel': (m, 3), 'imu/gyro': (m, 3)}.items():
        if f[name].shape != shape:
            raise DatasetFormatError(path, f'/{name} has shape {f[name].shape}, expected '
                                     f'{shape} (M = {m} samples of /imu/t_s)')
    if not np.all(np.isfinite(imu_t)):
        raise DatasetFormatError(path, '/imu/t_s holds NaN or infinite times')
    check_increasing(imu_t, path, '/imu/t_s')
    for name in ('imu/accel', 'imu/gyro'):  # chunked reads of the check, not kept
        for start in range(0, m, 1 << 16):
            if not np.all(np.isfinite(f[name][start:start + (1 << 16)])):
                raise DatasetFormatError(path, f'/{name} holds NaN or infinite values')
    videos, jpeg = {}, {}
    for cam in CAMERAS:
        if f'frames/{cam}' in f:
            jpeg[cam] = int(f[f'frames/{cam}'].shape[0])
        node = f.get(f'video/{cam}')
        if node is None or 'file' not in node.attrs:
            if cam in jpeg:
                videos[cam] = path.parent / f'{cam}.mp4'  # none named: the embedded frames
                continue
            raise DatasetFormatError(path, f"/video/{cam} with its attribute 'file' is missing")
        videos[cam] = (path.parent / _attr_text(node.attrs['file'])).resolve()
    segments: list[dict[str, Any]] = []
    if 'annotations/segments' in f:
        try:
            segments = json.loads(_attr_text(f['annotations/segments'][()]).removeprefix(BOM))
        except json.JSONDecodeError as exc:
            raise DatasetFormatError(path, f'/annotations/segments is not JSON ({exc.msg})'
                                     ) from None
        segments = check_segments(segments, path, '/annotations/segments: ')
    meta = {k: _attr_text(v) if isinstance(v, (bytes, str)) else v.item()
            if isinstance(v, np.generic) else v for k, v in f['meta'].attrs.items()} \
        if 'meta' in f else {}
    per_frame_action = None
    if 'annotations/per_frame_action' in f:
        ds = f['annotations/per_frame_action']
        if ds.shape != (n,):
            raise DatasetFormatError(path, f'/annotations/per_frame_action has shape '
                                     f'{ds.shape}, expected ({n},) (N = {n} frames of /time/t_s)')
        per_frame_action = [_attr_text(v) for v in ds[()]]
    hands = HandFrames(path, t_s, present, _h5=path)
    imu = ImuSamples(path, imu_t, np.asarray(f['imu/frame_index'][()], dtype=np.int64), _h5=path)
    return H5Export(path, calib, videos, jpeg, hands, imu, segments, meta, per_frame_action)


def jpeg_frame_sizes(path: Path, cam: str) -> Iterator[tuple[int, int]]:
    """(width, height) of every JPEG of the export's /frames/<cam>, from headers only."""
    import h5py

    from react_ros.formats import jpeg
    with h5py.File(path, 'r') as f:
        ds = f[f'frames/{cam}']
        for i in range(ds.shape[0]):
            yield jpeg.jpeg_size(np.asarray(ds[i], dtype=np.uint8).tobytes(), path,
                                 f'/frames/{cam}[{i}]')


def decode_jpeg_frames(path: Path, cam: str,
                       expected: tuple[int, int] | None = None) -> Iterator[np.ndarray]:
    """HxWx3 uint8 RGB frames of the export's /frames/<cam> (one JPEG per frame), lazily,
    at their own size (adapters/still_frames.py scales them for --image-scale).

    Strictly (formats/jpeg.py): a frame that does not decode cleanly, or whose size is
    not `expected` (width, height; the camera's), is refused naming it.
    """
    import h5py

    from react_ros.formats import jpeg
    with h5py.File(path, 'r') as f:
        ds = f[f'frames/{cam}']
        for i in range(ds.shape[0]):
            data = np.asarray(ds[i], dtype=np.uint8).tobytes()
            yield jpeg.decode(data, path, f'/frames/{cam}[{i}]', expected=expected)


def chunks(n: int, size: int = 256) -> Iterator[tuple[int, int]]:
    for start in range(0, n, size):
        yield start, min(n, start + size)


__all__ = [
    'BOM',
    'CAMERAS',
    'EPISODE_RE',
    'H5_SUFFIXES',
    'HANDS',
    'IMU_COLUMNS',
    'JOINTS',
    'Calibration',
    'CameraCalibration',
    'ExtraHand',
    'H5Export',
    'HandFrames',
    'ImuSamples',
    'check_segments',
    'chunks',
    'decode_jpeg_frames',
    'has_bom',
    'jpeg_frame_sizes',
    'link_problem',
    'not_a_file',
    'parse_calibration',
    'parse_refined',
    'read_calibration',
    'read_h5_export',
    'read_hands_jsonl',
    'read_imu_csv',
    'read_segments_jsonl',
    'read_text',
    'read_verdicts',
    'verify_manifest',
]
