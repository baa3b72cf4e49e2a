"""React task releases: the episode parquet and the release's conventions, no rclpy.

Everything here returns numpy arrays and int-ns times. The conventions of the
format document live here once: pose layout [x, y, z, qx, qy, qz, qw] in
metres, the Y-up -> Z-up mapping, the gel stiffness, the plumb_bob projection.
The JSON side files have their schemas in react_files.py.
"""
from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.transform import Rotation

from react_ros.errors import DatasetFormatError

# dexforce.STIFFNESS_N_PER_M of the format document: penetration_mm = F / (k / 1000).
STIFFNESS_N_PER_M = 2000.0
SIDES = ('left', 'right')
VIEWS = ('left', 'middle', 'right')
VIDEO_KEYS = ('view_left', 'view_middle', 'view_right', 'tactile_left', 'tactile_right')
POSE_COLUMNS = ('sensor_left_pose', 'sensor_right_pose', 'object_pose')
WORLD_FRAME_KEY = b'twm.world_frame'
EPISODE_ID = re.compile(r'^(\d{4}-\d{2}-\d{2})/(episode_\d{3,})$')
# Y-up (OptiTrack as recorded) -> Z-up (as published): (x, y, z) -> (x, -z, y).
# The format document calls it R_x(-90 deg); as an active rotation this matrix
# is R_x(+90 deg). The mapping is what the contract fixes.
Y_TO_Z = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
# Format document 5: recordings before this date captured the tactile stream this many
# camera frames before the view at the same index (a V4L2 buffer bug, fixed on the date).
TACTILE_FIX_DATE = '2026-06-27'
TACTILE_EARLY_FRAMES = 15
FINGERPRINT_TOLERANCE_PX = 6.0  # the rig's own noise floor (format document 6)
MAX_QUAT_NORM_ERROR = 1e-3
MM_SUSPECT_M = 20.0  # no tracked point of a table-top rig is 20 m from the origin


def columns() -> list[str]:
    """The parquet columns of the format document, section 2."""
    cols = ['frame_idx', 'timestamp', 'source_h5_frame', 'episode', 'episode_index',
            'frame_index', 'task', 'task_index', *POSE_COLUMNS]
    for s in SIDES:
        cols += [f'tactile_{s}_intensity', f'tactile_{s}_area', f'tactile_{s}_mixed',
                 f'tactile_{s}_is_new']
    for s in SIDES:
        cols += [f'force_{s}_normal_n', f'force_{s}_penetration_mm', f'force_{s}_target_pose',
                 f'force_{s}_source_frame']
    return cols


# -- conventions ----------------------------------------------------------------------------
def convert_poses_y_to_z(poses: np.ndarray) -> np.ndarray:
    """Nx7 Y-up poses to Z-up: positions mapped, the world side of each rotation too.

    Rows that are not poses (NaN, infinite, zero quaternion: tracking dropouts)
    are left as they are for the pose rule to drop; scipy would raise on them.
    """
    out = np.array(poses, dtype=float, copy=True).reshape(-1, 7)
    out[:, :3] = out[:, :3] @ Y_TO_Z.T
    q = out[:, 3:7]
    with np.errstate(invalid='ignore'):
        ok = np.all(np.isfinite(out), axis=1) & (np.linalg.norm(q, axis=1) > 0)
    if ok.any():
        out[ok, 3:7] = (Rotation.from_matrix(Y_TO_Z) * Rotation.from_quat(q[ok])).as_quat()
    return out


def convert_calibration_y_to_z(t_mocap_to_cam: np.ndarray) -> np.ndarray:
    """A Y-up world->camera 4x4 made Z-up: X_cam = T' X_z with X_y = Y_TO_Z^T X_z."""
    world = np.eye(4)
    world[:3, :3] = Y_TO_Z.T
    return np.asarray(t_mocap_to_cam, dtype=float) @ world


def project(t_mocap_to_cam: np.ndarray, k: np.ndarray, dist: Sequence[float],
            points_world: np.ndarray) -> np.ndarray:
    """Nx3 world points to Nx2 pixels, plumb_bob (k1, k2, p1, p2, k3) as OpenCV."""
    pts = np.atleast_2d(points_world) @ t_mocap_to_cam[:3, :3].T + t_mocap_to_cam[:3, 3]
    x, y = pts[:, 0] / pts[:, 2], pts[:, 1] / pts[:, 2]
    k1, k2, p1, p2, k3 = (list(dist) + [0.0] * 5)[:5]
    r2 = x * x + y * y
    radial = 1 + k1 * r2 + k2 * r2 * r2 + k3 * r2 ** 3
    xd = x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x)
    yd = y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y
    return np.stack([k[0, 0] * xd + k[0, 1] * yd + k[0, 2], k[1, 1] * yd + k[1, 2]], axis=1)


def gel_centres_world(poses: np.ndarray, gel_centre_mm: ArrayLike) -> np.ndarray:
    """The gel centre (sensor rigid frame, mm) in the world for each Nx7 pose (m)."""
    local = np.asarray(gel_centre_mm, dtype=float) / 1000.0
    poses = np.asarray(poses, dtype=float).reshape(-1, 7)
    out = np.full((len(poses), 3), np.nan)
    with np.errstate(invalid='ignore'):  # dropout rows stay NaN: scipy raises on them
        ok = np.all(np.isfinite(poses), axis=1) & (np.linalg.norm(poses[:, 3:7], axis=1) > 0)
    if ok.any():
        out[ok] = Rotation.from_quat(poses[ok, 3:7]).apply(local) + poses[ok, :3]
    return out


def virtual_targets(poses: np.ndarray, force_n: np.ndarray, axis_in_rigid: ArrayLike
                    ) -> np.ndarray:
    """DexForce virtual targets: each pose pushed F/k along the gel axis (format document 2).

    target_xyz = pose_xyz + (F / STIFFNESS_N_PER_M) * R(q) @ axis; the orientation is
    the pose's. Rows whose pose or force is not finite come back NaN.
    """
    poses = np.asarray(poses, dtype=float).reshape(-1, 7)
    force = np.asarray(force_n, dtype=float)
    out = np.full(poses.shape, np.nan)
    with np.errstate(invalid='ignore'):
        ok = np.all(np.isfinite(poses), axis=1) & (np.linalg.norm(poses[:, 3:7], axis=1) > 0) \
            & np.isfinite(force)
    if ok.any():
        n_hat = Rotation.from_quat(poses[ok, 3:7]).apply(np.asarray(axis_in_rigid, dtype=float))
        out[ok, :3] = poses[ok, :3] + (force[ok] / STIFFNESS_N_PER_M)[:, None] * n_hat
        out[ok, 3:7] = poses[ok, 3:7]
    return out


def date_base_ns(episode_id: str) -> int:
    """The time base: the episode's DATE at 00:00:00 UTC, in ns since the epoch.

    Raises ValueError for an id that is not DATE/episode_NNN with a real date.
    """
    m = EPISODE_ID.match(episode_id)
    if m is None:
        raise ValueError(f'not DATE/episode_NNN: {episode_id!r}')
    day = dt.datetime.strptime(m.group(1), '%Y-%m-%d').replace(tzinfo=dt.timezone.utc)
    return int(day.timestamp()) * 1_000_000_000


# -- the table ------------------------------------------------------------------------------
@dataclass
class Table:
    path: Path
    n: int
    timestamp_s: np.ndarray
    poses: dict[str, np.ndarray]  # column -> Nx7 (as stored)
    is_new: dict[str, np.ndarray]  # side -> bool N
    force_n: dict[str, np.ndarray]
    penetration_mm: dict[str, np.ndarray]
    target: dict[str, np.ndarray]  # side -> Nx7
    source_frame: dict[str, np.ndarray]
    tactile: dict[str, np.ndarray]  # 'left_intensity' ... -> N
    source_h5_frame: np.ndarray  # row -> raw HDF5 camera frame (trim + row)
    world_frame: dict[str, Any] = field(default_factory=dict)
    has_world_frame: bool = False


# Each column as the format document types it; a column of another type is refused,
# never converted ("true"/"false" strings would all read as True).
def _kinds() -> dict[str, tuple[str, Any]]:
    import pyarrow.types as pt
    return {'bool': ('bool', pt.is_boolean), 'integer': ('integer', pt.is_integer),
            'float': ('floating-point', pt.is_floating)}


def _first_null(col: Any) -> int:
    import pyarrow.compute as pc
    return int(pc.index(pc.is_null(col), True).as_py())


def _typed(table: Any, name: str, path: Path, kind: str, what: str = '') -> Any:
    """The column, combined, if it has the type `kind` and no nulls."""
    col = table.column(name).combine_chunks()
    label, is_kind = _kinds()[kind]
    if not is_kind(col.type):
        raise DatasetFormatError(path, f'column {name} is {col.type}, expected {label}{what} '
                                 '(columns are read as typed, not converted)')
    if col.null_count:
        raise DatasetFormatError(path, f'column {name} has {col.null_count} null row(s), the '
                                 f'first row {_first_null(col)}')
    return col


def _scalar(table: Any, name: str, path: Path, kind: str, what: str = '') -> np.ndarray:
    return np.asarray(_typed(table, name, path, kind, what).to_numpy(zero_copy_only=False))


def _pose_column(table: Any, name: str, path: Path) -> np.ndarray:
    import pyarrow as pa
    col = table.column(name).combine_chunks()
    t = col.type
    if not ((pa.types.is_list(t) or pa.types.is_fixed_size_list(t) or pa.types.is_large_list(t))
            and pa.types.is_floating(t.value_type)):
        raise DatasetFormatError(path, f'column {name} is {t}, expected lists of 7 '
                                 'floating-point numbers [x, y, z, qx, qy, qz, qw]')
    if col.null_count:
        raise DatasetFormatError(path, f'column {name} has {col.null_count} null row(s), the '
                                 f'first row {_first_null(col)}')
    lengths = np.asarray(pa.compute.list_value_length(col).to_numpy(zero_copy_only=False))
    if len(lengths) and not np.all(lengths == 7):
        row = int(np.argmax(lengths != 7))
        raise DatasetFormatError(path, f'column {name} row {row} holds {lengths[row]} values, '
                                 'expected 7 [x, y, z, qx, qy, qz, qw]')
    values = col.flatten()
    if values.null_count:
        row = _first_null(values) // 7
        raise DatasetFormatError(path, f'column {name} row {row} holds a null value')
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=float).reshape(-1, 7)


# What twm.world_frame may declare, and the only value react_ros reads poses in.
DECLARED = {'units': 'm', 'quaternion_order': 'xyzw'}


def _world_frame(meta: dict[bytes, bytes], path: Path) -> dict[str, Any]:
    """The twm.world_frame declaration: poses' up axis, units and quaternion order checked."""
    try:
        world = json.loads(meta[WORLD_FRAME_KEY])
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise DatasetFormatError(path, 'twm.world_frame metadata is not JSON') from None
    if not isinstance(world, dict):
        raise DatasetFormatError(path, 'twm.world_frame metadata is not a JSON object')
    if world.get('up_axis', 'z') not in ('y', 'z'):
        raise DatasetFormatError(path, f"twm.world_frame 'up_axis' must be \"y\" or \"z\", "
                                 f'not {world["up_axis"]!r}')
    for key, want in DECLARED.items():
        if key in world and world[key] != want:
            raise DatasetFormatError(path, f'twm.world_frame declares {key!r} '
                                     f'{world[key]!r}; react_ros reads poses only as {want!r}')
    return world


def read_table(path: Path) -> Table:
    """Read one episode parquet, every column read checked for its type and shape.

    Values (NaN, units, quaternion norms, time order) are checked by the caller.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq
    if not path.is_file():
        raise DatasetFormatError(path, 'file is missing')
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        # the path is said once, in front
        why = str(exc).replace(f"Could not open Parquet input source '{path}': ", '')
        raise DatasetFormatError(path, f'not a readable parquet file ({why})') from None
    missing = [c for c in columns() if c not in table.column_names]
    if missing:
        raise DatasetFormatError(path, f'missing column(s) of the format document section 2: '
                                 f'{", ".join(missing)}')
    meta = table.schema.metadata or {}
    world = _world_frame(meta, path) if WORLD_FRAME_KEY in meta else {}
    return Table(
        path=path, n=table.num_rows,
        timestamp_s=_scalar(table, 'timestamp', path, 'float', ' seconds from the episode '
                            'start').astype(float),
        poses={c: _pose_column(table, c, path) for c in POSE_COLUMNS},
        is_new={s: _scalar(table, f'tactile_{s}_is_new', path, 'bool') for s in SIDES},
        force_n={s: _scalar(table, f'force_{s}_normal_n', path, 'float').astype(float)
                 for s in SIDES},
        penetration_mm={s: _scalar(table, f'force_{s}_penetration_mm', path,
                                   'float').astype(float) for s in SIDES},
        target={s: _pose_column(table, f'force_{s}_target_pose', path) for s in SIDES},
        source_frame={s: _scalar(table, f'force_{s}_source_frame', path,
                                 'integer').astype(np.int64) for s in SIDES},
        tactile={f'{s}_{k}': _scalar(table, f'tactile_{s}_{k}', path, 'float').astype(float)
                 for s in SIDES for k in ('intensity', 'area', 'mixed')},
        source_h5_frame=_scalar(table, 'source_h5_frame', path, 'integer').astype(np.int64),
        world_frame=world, has_world_frame=WORLD_FRAME_KEY in meta)


def fingerprint_problem(fingerprint: Any, n: int) -> str | None:
    """Why a stored projection fingerprint cannot be used (None: it can).

    Its pixels are in the videos' pixels: a calibration of another size is
    scaled to the video before it is compared.
    """
    if not isinstance(fingerprint, dict):
        return f'is {type(fingerprint).__name__}, not an object'
    if fingerprint.get('sensor') not in SIDES:
        return f"'sensor' must be \"left\" or \"right\", not {fingerprint.get('sensor')!r}"
    rows = fingerprint.get('rows')
    if not (isinstance(rows, list) and rows and all(
            isinstance(r, int) and not isinstance(r, bool) and 0 <= r < n for r in rows)):
        return f"'rows' must be a list of rows in 0..{n - 1}"
    pixels = fingerprint.get('pixels')
    if not isinstance(pixels, dict) or not set(pixels) & set(VIEWS):
        return f"'pixels' must map {', '.join(VIEWS)} to [u, v] per row"
    for view, uv in pixels.items():
        try:
            ok = np.asarray(uv, dtype=float).shape == (len(rows), 2)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            return f"'pixels' {view!r} must hold one [u, v] per row ({len(rows)})"
    return None


