"""RoboTwin 2.0 ground-truth episodes (`episode<N>.hdf5`, `episode<N>_extra.hdf5`) through h5py.

Plain numpy out, no ROS. What is small (per-frame calibration, poses, joints)
is read and checked when the file is opened; what is bulky (JPEG frames,
depth, segmentation, point clouds, raw ids) is read one frame at a time by
`Frames`. Conventions, as the format document states them:

- `observation/<camera>/rgb`: one JPEG per frame, stored with R and B swapped
  (RoboTwin gave an RGB array to cv2.imencode, which takes BGR). A standard
  decoder gives the swapped order; `decode_rgb` swaps back. Frames decode strictly
  (formats/jpeg.py): a damaged scan or a frame of another size is refused, naming it.
  RoboTwin stores the JPEGs as fixed-length byte strings padded with NULs.
- `depth`: float64 millimetres (camera z). `intrinsic_cv` 3x3 and
  `extrinsic_cv` 3x4 (world -> camera, OpenCV axes) per frame;
  `cam2world_gl` 4x4 (camera -> world, OpenGL axes: y up, z backwards).
- `pointcloud`: (T, 1024, 6) world xyz + rgb in 0..1 (correct order), padded
  with all-zero rows.
- Poses (`endpose/*_endpose`, `entities/pose`): x y z qw qx qy qz.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from react_ros.errors import DatasetFormatError
from react_ros.formats import jpeg

HEAD = 'observation/head_camera'
WRISTS = ('left_camera', 'right_camera')
SIDES = ('left', 'right')
EPISODE_NAME = re.compile(r'^episode(\d+)\.hdf5$')
ALIGNED_COUNT, ALIGNED_STEP = 33, 4
ENTITY_KINDS = ('rigid', 'static', 'link', 'render_only')
# What a file may declare before react_ros allocates for it: HDF5 stores a dataset of
# fill values in a few bytes, so a 200 kB file can declare terabytes. RoboTwin scenes
# hold tens of entities; small datasets read whole are poses and joints (kB to MB).
MAX_ENTITIES = 10_000
MAX_WHOLE_READ_BYTES = 512 << 20
# GL camera axes (x right, y up, z backwards) -> OpenCV (x right, y down, z forward).
GL_TO_CV = np.diag([1.0, -1.0, -1.0, 1.0])


def aligned_indices(t: int) -> np.ndarray:
    """The document's single rule for the 33 aligned frames (feature_indices)."""
    ids = np.arange(ALIGNED_COUNT) * ALIGNED_STEP
    if ids[-1] >= t:  # T < 129
        ids = np.linspace(0, t - 1, ALIGNED_COUNT, dtype=np.int64)
    return ids.astype(np.int64)


def episode_number(path: Path) -> int | None:
    m = EPISODE_NAME.match(path.name)
    return int(m.group(1)) if m else None


def extra_path(path: Path) -> Path:
    return path.with_name(path.name.removesuffix('.hdf5') + '_extra.hdf5')


def open_hdf5(path: Path) -> h5py.File:
    """The file, opened read-only; a missing, truncated or foreign file is refused by name."""
    if not path.is_file():
        raise DatasetFormatError(path, 'file is missing')
    try:
        return h5py.File(path, 'r')
    except (OSError, ValueError) as exc:
        why = str(exc).split('(')[0].strip().rstrip(',') or type(exc).__name__
        raise DatasetFormatError(path, f'not a readable HDF5 file (truncated or corrupt: '
                                 f'{why})') from None


def _dataset(f: h5py.File, key: str, path: Path) -> h5py.Dataset:
    obj = f.get(key)
    if obj is None:
        raise DatasetFormatError(path, f'dataset {key} is missing')
    if not isinstance(obj, h5py.Dataset):
        raise DatasetFormatError(path, f'{key} is a group, not a dataset')
    return obj


def _read(ds: h5py.Dataset, key: str, path: Path, sel: Any = ()) -> np.ndarray:
    try:
        return np.asarray(ds[sel])
    except (OSError, ValueError, KeyError) as exc:
        raise DatasetFormatError(path, f'dataset {key} cannot be read ({exc})') from None


def _numeric(f: h5py.File, key: str, path: Path, shape: tuple[int | None, ...],
             t: int | None, finite: bool = True) -> np.ndarray:
    """A small numeric dataset, read whole and checked: (T, *shape) with T = t when given.

    `finite=False` leaves NaN to the caller (poses: the invalid-pose rule).
    """
    ds = _dataset(f, key, path)
    if ds.dtype.kind not in 'fiub':
        raise DatasetFormatError(path, f'dataset {key} is {ds.dtype}, not numbers')
    want = (t, *shape)
    if len(ds.shape) != len(want) or any(w is not None and w != s
                                         for w, s in zip(want, ds.shape)):
        spell = 'x'.join('T' if w is None else str(w) for w in want)
        raise DatasetFormatError(path, f'dataset {key} has shape {ds.shape}, expected '
                                 f'({spell}) with T = {t}' if t is not None else
                                 f'dataset {key} has shape {ds.shape}, expected ({spell})')
    declared = int(np.prod(ds.shape, dtype=np.float64)) * 8  # read as float64
    if declared > MAX_WHOLE_READ_BYTES:
        raise DatasetFormatError(path, f'dataset {key} declares shape {ds.shape} '
                                 f'({declared / 1e9:.3g} GB as numbers); more than an episode '
                                 'can hold')
    value = _read(ds, key, path).astype(np.float64)
    if finite and not np.all(np.isfinite(value)):
        row = int(np.argwhere(~np.isfinite(value.reshape(len(value), -1)))[0][0])
        raise DatasetFormatError(path, f'dataset {key} has NaN or infinite values (frame {row})')
    return value


def _frames_of(f: h5py.File, key: str, path: Path, t: int, tail: tuple[int, ...],
               kinds: str) -> h5py.Dataset:
    """A bulk per-frame dataset, checked for shape and type without reading it."""
    ds = _dataset(f, key, path)
    if ds.shape != (t, *tail):
        raise DatasetFormatError(path, f'dataset {key} has shape {ds.shape}, expected '
                                 f'{(t, *tail)}: it disagrees with the {t} frames of '
                                 f'{HEAD}/rgb')
    if ds.dtype.kind not in kinds:
        raise DatasetFormatError(path, f'dataset {key} is {ds.dtype}, not the documented type')
    return ds


@dataclass
class Calibration:
    """One camera's calibration, per frame."""

    intrinsic: np.ndarray  # (T, 3, 3)
    extrinsic: np.ndarray  # (T, 3, 4) world -> camera (OpenCV)
    cam2world_gl: np.ndarray  # (T, 4, 4)
    size: tuple[int, int] = (0, 0)  # (width, height) of its images, from frame 0

    def camera_in_world(self) -> np.ndarray:
        """(T, 4, 4) camera (optical, OpenCV) -> world: the inverse of extrinsic_cv."""
        t = len(self.extrinsic)
        r = self.extrinsic[:, :, :3]
        out = np.tile(np.eye(4), (t, 1, 1))
        out[:, :3, :3] = np.transpose(r, (0, 2, 1))
        out[:, :3, 3] = -np.einsum('tji,tj->ti', r, self.extrinsic[:, :, 3])
        return out

    def gl_disagreement(self, flip: bool = True) -> float:
        """max |cam2world_gl (to OpenCV axes when `flip`) - inverse(extrinsic_cv)|."""
        gl = self.cam2world_gl @ GL_TO_CV if flip else self.cam2world_gl
        return float(np.max(np.abs(gl - self.camera_in_world())))


def _camera(f: h5py.File, group: str, path: Path, t: int) -> Calibration:
    k = _numeric(f, f'{group}/intrinsic_cv', path, (3, 3), t)
    e = _numeric(f, f'{group}/extrinsic_cv', path, (3, 4), t)
    gl = _numeric(f, f'{group}/cam2world_gl', path, (4, 4), t)
    bad = np.flatnonzero((k[:, 0, 0] <= 0) | (k[:, 1, 1] <= 0) | (k[:, 2, 2] != 1))
    if len(bad):
        raise DatasetFormatError(path, f'{group}/intrinsic_cv frame {int(bad[0])} is no camera '
                                 'matrix (focal lengths must be positive, K[2,2] = 1)')
    rot = e[:, :, :3]
    err = np.abs(np.einsum('tij,tkj->tik', rot, rot) - np.eye(3)).max(axis=(1, 2))
    bad = np.flatnonzero(err > 1e-4)
    if len(bad):
        raise DatasetFormatError(path, f'{group}/extrinsic_cv frame {int(bad[0])}: its 3x3 part '
                                 f'is not a rotation (R R^T off identity by {err[bad[0]]:.2g})')
    return Calibration(k, e, gl)


def _jpegs(f: h5py.File, key: str, path: Path) -> h5py.Dataset:
    ds = _dataset(f, key, path)
    if ds.ndim != 1:
        raise DatasetFormatError(path, f'dataset {key} has shape {ds.shape}, expected (T,) '
                                 'JPEG byte strings')
    if not (ds.dtype.kind == 'S' or h5py.check_vlen_dtype(ds.dtype) in (bytes, np.uint8)
            or ds.dtype.kind == 'O'):
        raise DatasetFormatError(path, f'dataset {key} is {ds.dtype}, not JPEG byte strings')
    return ds


def jpeg_bytes(value: Any) -> bytes:
    """One stored frame as bytes, without RoboTwin's NUL padding."""
    if isinstance(value, np.ndarray):
        value = value.tobytes()
    return bytes(value).rstrip(b'\0')


def check_jpeg(data: bytes, path: Path, what: str) -> None:
    jpeg.check_markers(data, path, what)


class JpegDecoder:
    """Decodes one camera's frames, one after another (formats/jpeg.py: strictly)."""

    def __call__(self, data: bytes, path: Path, what: str,
                 size: tuple[int, int] | None = None) -> np.ndarray:
        """HxWx3 uint8 in the order the JPEG itself holds (for RoboTwin: B, G, R of the scene).

        `size` (width, height) resizes while converting (AREA, as the video decoder does).
        """
        return jpeg.decode(data, path, what, size=size)


def decode_jpeg(data: bytes, path: Path, what: str,
                size: tuple[int, int] | None = None) -> np.ndarray:
    """One JPEG as it decodes (see JpegDecoder); for a single frame."""
    return JpegDecoder()(data, path, what, size)


def swap_rb(image: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(image[..., ::-1])


def decode_rgb(data: bytes, path: Path, what: str,
               size: tuple[int, int] | None = None) -> np.ndarray:
    """A RoboTwin frame in its true colours: decoded, then R and B swapped back."""
    return swap_rb(decode_jpeg(data, path, what, size))


@dataclass
class EpisodeFile:
    """The small part of `episode<N>.hdf5`, checked; bulk data stays on disk."""

    path: Path
    t: int
    width: int
    height: int
    head: Calibration
    endpose: dict[str, np.ndarray]  # side -> (T, 7) x y z qw qx qy qz
    gripper: dict[str, np.ndarray]  # side -> (T,)
    joints: np.ndarray  # (T, J) joint_action/vector
    arm: dict[str, np.ndarray]  # side -> (T, n) joint_action/<side>_arm
    joint_gripper: dict[str, np.ndarray]  # side -> (T,)


def read_episode(path: Path) -> EpisodeFile:
    with open_hdf5(path) as f:
        rgb = _jpegs(f, f'{HEAD}/rgb', path)
        t = int(rgb.shape[0])
        if t == 0:
            raise DatasetFormatError(path, f'{HEAD}/rgb holds no frame')
        depth = _dataset(f, f'{HEAD}/depth', path)
        if depth.ndim != 3 or depth.shape[0] != t:
            raise DatasetFormatError(path, f'dataset {HEAD}/depth has shape {depth.shape}, '
                                     f'expected ({t}, H, W): one depth image per frame of '
                                     f'{HEAD}/rgb')
        height, width = int(depth.shape[1]), int(depth.shape[2])
        if depth.dtype.kind != 'f':
            raise DatasetFormatError(path, f'dataset {HEAD}/depth is {depth.dtype}, not float '
                                     'millimetres')
        for key in ('actor_segmentation', 'mesh_segmentation'):
            _frames_of(f, f'{HEAD}/{key}', path, t, (height, width, 3), 'u')
        cloud = _frames_of(f, 'pointcloud', path, t, (cloud_points(f, path), 6), 'f')
        del cloud
        head = _camera(f, HEAD, path, t)
        endpose = {s: _numeric(f, f'endpose/{s}_endpose', path, (7,), t, finite=False)
                   for s in SIDES}
        gripper = {s: _numeric(f, f'endpose/{s}_gripper', path, (), t) for s in SIDES}
        joints = _numeric(f, 'joint_action/vector', path, (None,), t)
        arm = {s: _numeric(f, f'joint_action/{s}_arm', path, (None,), t) for s in SIDES}
        jg = {s: _numeric(f, f'joint_action/{s}_gripper', path, (), t) for s in SIDES}
        n_parts = sum(a.shape[1] + 1 for a in arm.values())
        if n_parts != joints.shape[1]:
            raise DatasetFormatError(path, f'joint_action/vector has {joints.shape[1]} columns '
                                     f'but left_arm, left_gripper, right_arm, right_gripper '
                                     f'make {n_parts}')
        head.size = _check_frames(rgb, f'{HEAD}/rgb', path)
        if head.size != (width, height):
            raise DatasetFormatError(path, f'{HEAD}/rgb frames are {head.size[0]}x'
                                     f'{head.size[1]} but {HEAD}/depth is {width}x{height}')
    return EpisodeFile(path, t, width, height, head, endpose, gripper, joints, arm, jg)


def cloud_points(f: h5py.File, path: Path) -> int:
    ds = _dataset(f, 'pointcloud', path)
    if ds.ndim != 3 or ds.shape[2] != 6:
        raise DatasetFormatError(path, f'dataset pointcloud has shape {ds.shape}, expected '
                                 '(T, N, 6): xyz and rgb per point')
    return int(ds.shape[1])


def _check_frames(ds: h5py.Dataset, key: str, path: Path) -> tuple[int, int]:
    """Every stored frame is a JPEG of frame 0's size (headers only: cheap); frame 0 decodes.

    Returns frame 0's (width, height): the camera's CameraInfo size, which every
    frame must have (a frame of another size is refused here, before any output).
    """
    first = decode_jpeg(jpeg_bytes(_read(ds, key, path, 0)), path, f'{key} frame 0')
    size = int(first.shape[1]), int(first.shape[0])
    for i in range(1, ds.shape[0]):
        jpeg.check_size(jpeg_bytes(_read(ds, key, path, i)), path, f'{key} frame {i}', size,
                        f'frame 0 (the camera\'s CameraInfo)')
    return size


@dataclass
class ExtraFile:
    """`episode<N>_extra.hdf5`: entities and their poses, raw ids, wrist cameras, targets."""

    path: Path
    t: int
    entity_id: np.ndarray  # (N,)
    name: list[str]
    articulation: list[str]
    kind: list[str]
    is_robot: np.ndarray  # (N,) bool
    pose: np.ndarray  # (T, N, 7) x y z qw qx qy qz
    wrist: dict[str, Calibration]
    attrs: dict[str, Any] = field(default_factory=dict)  # segmentation attributes, parsed
    # segmentation/mesh_id -> segmentation/mesh_entity_id: which entity each mesh id is of
    mesh_entity: dict[int, int] | None = None


def _strings(f: h5py.File, key: str, path: Path, n: int | None) -> list[str]:
    ds = _dataset(f, key, path)
    if ds.ndim != 1 or (n is not None and ds.shape[0] != n):
        raise DatasetFormatError(path, f'dataset {key} has shape {ds.shape}, expected ({n},)')
    out = []
    for i, v in enumerate(_read(ds, key, path).tolist()):
        if isinstance(v, bytes):
            try:
                v = v.decode('utf-8')
            except UnicodeDecodeError:
                raise DatasetFormatError(path, f'{key}[{i}] is not UTF-8 text') from None
        if not isinstance(v, str):
            raise DatasetFormatError(path, f'dataset {key} holds {type(v).__name__}, not text')
        out.append(v)
    return out


def read_extra(path: Path, t: int, size: tuple[int, int]) -> ExtraFile:
    """The _extra file of an episode with `t` frames of `size` (width, height)."""
    width, height = size
    with open_hdf5(path) as f:
        ids = _dataset(f, 'entities/entity_id', path)
        if ids.ndim != 1 or ids.dtype.kind not in 'ui':
            raise DatasetFormatError(path, f'dataset entities/entity_id has shape {ids.shape} '
                                     f'and type {ids.dtype}, expected (N,) integers')
        if ids.shape[0] > MAX_ENTITIES:
            raise DatasetFormatError(path, f'dataset entities/entity_id declares '
                                     f'{ids.shape[0]} entities; more than a scene holds '
                                     f'(react_ros reads at most {MAX_ENTITIES})')
        entity_id = _read(ids, 'entities/entity_id', path).astype(np.int64)
        n = len(entity_id)
        pose_ds = _dataset(f, 'entities/pose', path)
        if pose_ds.ndim == 3 and pose_ds.shape[0] != t:
            raise DatasetFormatError(path, f'dataset entities/pose has {pose_ds.shape[0]} '
                                     f'frames but the episode has {t}: the _extra file is not '
                                     'of this episode')
        pose = _numeric(f, 'entities/pose', path, (n, 7), t, finite=False)
        name = _strings(f, 'entities/name', path, n)
        articulation = _strings(f, 'entities/articulation', path, n)
        kind = _strings(f, 'entities/kind', path, n)
        for i, k in enumerate(kind):
            if k not in ENTITY_KINDS:
                raise DatasetFormatError(path, f'entities/kind[{i}] is {k!r}, none of '
                                         f'{", ".join(ENTITY_KINDS)}')
        robot = _dataset(f, 'entities/is_robot', path)
        if robot.shape != (n,):
            raise DatasetFormatError(path, f'dataset entities/is_robot has shape {robot.shape}, '
                                     f'expected ({n},)')
        is_robot = _read(robot, 'entities/is_robot', path).astype(bool)
        if len(set(entity_id.tolist())) != n:
            raise DatasetFormatError(path, 'entities/entity_id repeats an id')
        for key in ('actor_id', 'mesh_id'):
            ds = _dataset(f, f'{HEAD}/{key}', path)
            if ds.shape != (t, height, width):
                raise DatasetFormatError(path, f'dataset {HEAD}/{key} has shape {ds.shape}, '
                                         f'expected {(t, height, width)}')
            if ds.dtype.kind not in 'ui':
                raise DatasetFormatError(path, f'dataset {HEAD}/{key} is {ds.dtype}, not '
                                         'integer ids')
        wrist = {}
        for cam in WRISTS:
            group = f'observation/{cam}'
            if group in f:
                rgb = _jpegs(f, f'{group}/rgb', path)
                if rgb.shape[0] != t:
                    raise DatasetFormatError(path, f'dataset {group}/rgb has {rgb.shape[0]} '
                                             f'frames, the episode {t}')
                wrist[cam] = _camera(f, group, path, t)
                wrist[cam].size = _check_frames(rgb, f'{group}/rgb', path)
        attrs = _attributes(f, path)
        mesh_entity = _mesh_table(f, path, set(entity_id.tolist()))
    return ExtraFile(path, t, entity_id, name, articulation, kind, is_robot, pose, wrist, attrs,
                     mesh_entity)


def _mesh_table(f: h5py.File, path: Path, entities: set[int]) -> dict[int, int] | None:
    """segmentation/mesh_id -> mesh_entity_id, checked: one entity per mesh id, a known one."""
    if 'segmentation/mesh_id' not in f and 'segmentation/mesh_entity_id' not in f:
        return None
    cols = []
    for key in ('segmentation/mesh_id', 'segmentation/mesh_entity_id'):
        ds = _dataset(f, key, path)
        if ds.ndim != 1 or ds.dtype.kind not in 'ui' or ds.shape[0] > MAX_ENTITIES * 100:
            raise DatasetFormatError(path, f'dataset {key} has shape {ds.shape} and type '
                                     f'{ds.dtype}, expected (M,) integers')
        cols.append(_read(ds, key, path).astype(np.int64).tolist())
    mesh, owner = cols
    if len(mesh) != len(owner):
        raise DatasetFormatError(path, f'segmentation/mesh_id has {len(mesh)} ids but '
                                 f'segmentation/mesh_entity_id {len(owner)}')
    if len(set(mesh)) != len(mesh):
        raise DatasetFormatError(path, 'segmentation/mesh_id repeats an id')
    unknown = sorted(set(owner) - entities)
    if unknown:
        raise DatasetFormatError(path, f'segmentation/mesh_entity_id names entity '
                                 f'{unknown[0]}, which entities/entity_id does not hold')
    return dict(zip(mesh, owner))


def _attributes(f: h5py.File, path: Path) -> dict[str, Any]:
    group = f.get('segmentation')
    out: dict[str, Any] = {}
    if group is None:
        return out
    for key in ('targets', 'actor_table', 'scene_info', 'task_objects', 'task_attrs'):
        if key not in group.attrs:
            continue
        raw = group.attrs[key]
        if isinstance(raw, bytes):
            raw = raw.decode('utf-8', errors='replace')
        try:
            out[key] = json.loads(str(raw))
        except json.JSONDecodeError as exc:
            raise DatasetFormatError(path, f'segmentation attribute {key} is not JSON '
                                     f'({exc.msg} at character {exc.pos})') from None
    return out


class Frames:
    """One frame at a time from an episode file (and its _extra), for one stream's reader."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = open_hdf5(path)
        self.datasets: dict[str, h5py.Dataset] = {}  # a lookup by name costs ~1 ms
        self.decoder = JpegDecoder()

    def __enter__(self) -> Frames:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()

    def get(self, key: str, i: int) -> np.ndarray:
        ds = self.datasets.get(key)
        if ds is None:
            ds = self.datasets[key] = self.file[key]
        return _read(ds, key, self.path, i)

    def jpeg(self, key: str, i: int) -> bytes:
        return jpeg_bytes(self.get(key, i))

    def rgb(self, camera: str, i: int, size: tuple[int, int] | None = None) -> np.ndarray:
        key = f'observation/{camera}/rgb'
        return swap_rb(self.decoder(self.jpeg(key, i), self.path, f'{key} frame {i}', size))


def cloud_valid(cloud: np.ndarray) -> np.ndarray:
    """Mask of real points: a row at exactly (0, 0, 0) with zero colour is padding."""
    return np.any(cloud != 0.0, axis=1)


def project(points: np.ndarray, k: np.ndarray, extrinsic: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """World points -> pixel columns, rows (rounded) and camera z (same unit as the points)."""
    cam = points @ extrinsic[:, :3].T + extrinsic[:, 3]
    z = cam[:, 2]
    with np.errstate(divide='ignore', invalid='ignore'):
        u = k[0, 0] * cam[:, 0] / z + k[0, 2]
        v = k[1, 1] * cam[:, 1] / z + k[1, 2]
    return u, v, z


def _inside(u: np.ndarray, v: np.ndarray, z: np.ndarray, shape: tuple[int, ...]
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    col, row = np.floor(u).astype(np.int64, copy=False), np.floor(v).astype(np.int64, copy=False)
    ok = (z > 0) & (col >= 0) & (row >= 0) & (col < shape[1]) & (row < shape[0])
    return ok, row, col


def colour_error(cloud: np.ndarray, image: np.ndarray, k: np.ndarray,
                 extrinsic: np.ndarray) -> float:
    """Mean |image colour - point colour| (/255) of the cloud's points projected into `image`."""
    pts = cloud[cloud_valid(cloud)]
    u, v, z = project(pts[:, :3].astype(np.float64), k, extrinsic)
    ok, row, col = _inside(u, v, z, image.shape)
    if not ok.any():
        return float('nan')
    seen = image[row[ok], col[ok]].astype(np.float64)
    return float(np.mean(np.abs(seen - pts[ok, 3:6] * 255.0)))


def depth_error_mm(cloud: np.ndarray, depth_m: np.ndarray, k: np.ndarray,
                   extrinsic: np.ndarray) -> float:
    """Median |camera z of each projected point - depth at its pixel|, in millimetres."""
    pts = cloud[cloud_valid(cloud)]
    u, v, z = project(pts[:, :3].astype(np.float64), k, extrinsic)
    ok, row, col = _inside(u, v, z, depth_m.shape)
    if not ok.any():
        return float('nan')
    return float(np.median(np.abs(depth_m[row[ok], col[ok]] - z[ok])) * 1000.0)


def read_replay_failed(path: Path) -> list[tuple[str | None, str, int]]:
    """reports/replay_success_check_failed.json as (embodiment or None, task, episode) items.

    Accepted items: {"embodiment": "franka", "task": "place_shoe", "episode": 3}
    (episode also "episode3"), or a string "franka/place_shoe/episode3"; the
    items as a list, or under the key "episodes".
    """
    try:
        doc = json.loads(path.read_text(encoding='utf-8'))
    except UnicodeDecodeError:
        raise DatasetFormatError(path, 'not UTF-8 text') from None
    except json.JSONDecodeError as exc:
        raise DatasetFormatError(path, f'not valid JSON ({exc.msg} at line {exc.lineno})'
                                 ) from None
    items = doc.get('episodes') if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise DatasetFormatError(path, 'expected a list of episodes (or {"episodes": [...]})')
    out = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            parts = [p for p in item.replace('\\', '/').split('/') if p not in ('gt_export',
                                                                              'data')]
            m = re.match(r'^episode(\d+)(\.hdf5)?$', parts[-1]) if len(parts) >= 2 else None
            if m is None:
                raise DatasetFormatError(path, f'item {i} {item!r} is not '
                                         '[embodiment/]task/episode<N>')
            emb = parts[-3] if len(parts) >= 3 else None
            out.append((emb, parts[-2], int(m.group(1))))
        elif isinstance(item, dict) and 'task' in item and 'episode' in item:
            ep = item['episode']
            if isinstance(ep, str) and re.match(r'^episode\d+$', ep):
                ep = int(ep[len('episode'):])
            if isinstance(ep, bool) or not isinstance(ep, int):
                raise DatasetFormatError(path, f'item {i}: episode {ep!r} is not a number')
            out.append((item.get('embodiment'), str(item['task']), ep))
        else:
            raise DatasetFormatError(path, f'item {i} names no task and episode')
    return out


__all__ = ['ALIGNED_COUNT', 'Calibration', 'EpisodeFile', 'ExtraFile', 'Frames', 'HEAD',
           'JpegDecoder',
           'SIDES', 'WRISTS', 'aligned_indices', 'cloud_valid', 'colour_error', 'decode_jpeg',
           'decode_rgb', 'depth_error_mm', 'episode_number', 'extra_path',
           'jpeg_bytes', 'open_hdf5', 'project', 'read_episode', 'read_extra',
           'read_replay_failed', 'swap_rb']
