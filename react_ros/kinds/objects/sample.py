"""A synthetic mocap object release, faithful to its format document and its pitfalls.

`OUT/objects/<Object>/` holds the scanned meshes (BigBox binary PLY, LittleBox
ascii PLY, with markers.json; Table has no mesh) and `OUT/<SESSION>/` one mocap
session at 120 Hz:
- BigBox0 (mesh, mocap): rests, is lifted by the right hand then both, carried
  and put down; quality drops to 2 (unverified) while its markers are occluded.
- LittleBox0 (mesh, mocap): an invalid stretch in the middle (valid false) that holds the
  last good pose, as capture software that keeps the last pose writes it; the document
  stores NaN there, so only this tells a reader that honours `valid` from one that keys
  on finiteness (issue 37).
- LittleBox1 (rigid_body, mocap: the tilted marker layout has no upright fit):
  invalid at the start; its mesh is not aligned, so `mesh` is empty.
- Table0 (rigid_body, no mesh at all), three markers (the fourth column padded).
- object_markers.npz with unseen markers (NaN) and a few inconsistent ones.
- raw/mocap/<Object>.{csv,trc}: the vendor exports in millimetres, Y-up (a trap:
  never read for poses); smplx.npz and markers.npz, undocumented here.
- objects.json with percentages and an `absent` rigid body (LittleBox2).
objects.npz is written uncompressed (np.savez), object_markers.npz compressed, so
both of the lazy reader's paths are exercised.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from react_ros.errors import SinkError
from react_ros.samples.writing import write_sample
from react_ros.output import check_stop

SESSION = 'S01_carry_box_001'
HZ = 120.0
SIZES = {'BigBox': (0.6, 0.4, 0.4), 'LittleBox': (0.3, 0.2, 0.2)}
TEMPLATE = np.array([[0.05, 0.04, 0.02], [-0.06, 0.03, 0.01], [0.02, -0.05, 0.03],
                     [-0.03, -0.04, -0.02]])


def _pose(pos: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    out = np.tile(np.eye(4), (len(pos), 1, 1))
    out[:, :3, :3] = Rotation.from_euler('z', np.asarray(yaw)[:, None]).as_matrix()
    out[:, :3, 3] = pos
    return out


def _hold_last_good_pose(poses: np.ndarray, valid: np.ndarray) -> None:
    """Each frame not valid after a valid one keeps that frame's pose, in place."""
    last = None
    for k in range(len(poses)):
        if valid[k]:
            last = k
        elif last is not None:
            poses[k] = poses[last]


def _smooth(t: np.ndarray, a: float, b: float) -> np.ndarray:
    """0 before a, 1 after b, a smooth step between."""
    x = np.clip((t - a) / (b - a), 0.0, 1.0)
    return x * x * (3 - 2 * x)


def _motion(pos: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """The document's rule: centre speed over 0.1 s > 0.05 m/s, dilated 0.25 s."""
    lag = int(0.1 * HZ)
    speed = np.zeros(len(pos))
    speed[lag:] = np.linalg.norm(pos[lag:] - pos[:-lag], axis=1) / 0.1
    moving = np.nan_to_num(speed) > 0.05
    half = int(0.25 * HZ)
    dilated = np.convolve(moving.astype(int), np.ones(2 * half + 1, int), 'same') > 0
    return np.where(valid, np.where(dilated, 2, 1), 0).astype(np.int8)


def _box_ply(size: tuple[float, float, float], binary: bool) -> bytes:
    """A box upright on the floor: mesh origin at the bottom centre, z up."""
    sx, sy, sz = size
    v = np.array([[x, y, z] for z in (0.0, sz) for y in (-sy / 2, sy / 2)
                  for x in (-sx / 2, sx / 2)], dtype='<f4')
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4),
             (1, 5, 7, 3)]
    tris = [t for a, b, c, d in faces for t in ((a, b, c), (a, c, d))]
    fmt = 'binary_little_endian' if binary else 'ascii'
    head = (f'ply\nformat {fmt} 1.0\ncomment react_ros sample scan\nelement vertex {len(v)}\n'
            'property float x\nproperty float y\nproperty float z\n'
            f'element face {len(tris)}\nproperty list uchar int vertex_indices\nend_header\n')
    if not binary:
        body = ''.join(f'{x:.4f} {y:.4f} {z:.4f}\n' for x, y, z in v)
        body += ''.join(f'3 {a} {b} {c}\n' for a, b, c in tris)
        return (head + body).encode()
    out = bytearray(head.encode()) + v.tobytes()
    for tri in tris:
        out += np.uint8(3).tobytes() + np.array(tri, dtype='<i4').tobytes()
    return bytes(out)


def write_objects_sample(out_dir: Path, *, seed: int = 0, duration_s: float = 3.0,
                         width: int = 640, height: int = 480, extra_instances: int = 0,
                         episodes: int | None = None) -> Path:
    """Write a release root (one session) at `out_dir` and return it.

    `width`/`height` are accepted for the common sample signature (there is no
    video). `extra_instances` adds rigid-body copies, for benchmarks.
    `episodes=N`: N sessions (session_names), session k written with seed + k
    and k more rigid-body copies than the first, so that the takes differ in
    their object lists as a release's do; the meshes are shared.
    """
    if episodes is not None and episodes < 1:
        raise SinkError(f'{out_dir}: a release holds at least one episode, got {episodes}')
    names = session_names(1 if episodes is None else episodes)

    def write(tmp: Path) -> None:
        _meshes(tmp / 'objects')
        for k, name in enumerate(names):
            check_stop()
            _Release(tmp, seed + k, duration_s, extra_instances + k).write(name)
    return write_sample(out_dir, duration_s, (width, height), 1.0, (2, 2), write)


def session_names(n: int) -> list[str]:
    """The sessions of a sample release of n: SESSION and the takes after it."""
    stem = SESSION.rsplit('_', 1)[0]
    return [f'{stem}_{k + 1:03d}' for k in range(n)]


def _meshes(objects: Path) -> None:
    for name, size in SIZES.items():
        folder = objects / name
        folder.mkdir(parents=True)
        (folder / f'{name.lower()}.ply').write_bytes(_box_ply(size, name == 'BigBox'))
        (folder / 'markers.json').write_text(json.dumps(
            {'markers_mesh_m': (TEMPLATE + [0, 0, size[2] / 2]).round(4).tolist(),
             'fitted': 'at rest, upright on the floor'}, indent=1))
    (objects / 'Table').mkdir()  # no scan of the table


class _Release:
    """One session of the release."""

    def __init__(self, root: Path, seed: int, duration_s: float, extra: int) -> None:
        self.root = root
        self.rng = np.random.default_rng(seed)
        self.frames = int(round(duration_s * HZ))
        self.frame_index = np.arange(self.frames, dtype=np.int64) + 240  # body grid index
        self.t = np.arange(self.frames) / HZ
        self.extra = extra

    def write(self, name: str) -> None:
        session = self.root / name
        (session / 'motions').mkdir(parents=True)
        inst = self._instances()
        self._objects_npz(session, inst)
        self._markers_npz(session, inst)
        self._objects_json(session, name, inst)
        self._vendor(session, inst)
        np.savez(session / 'motions' / 'smplx.npz', t=self.t, frame_index=self.frame_index,
                 betas=np.zeros(10))
        np.savez(session / 'motions' / 'markers.npz', t=self.t,
                 frame_index=self.frame_index)

    def _instances(self) -> list[dict]:
        t, d, n = self.t, self.t[-1], self.frames
        ones = np.ones(n, bool)
        out: list[dict[str, Any]] = []
        # BigBox0: carried.
        lift = _smooth(t, 0.3 * d, 0.45 * d) - _smooth(t, 0.7 * d, 0.85 * d)
        travel = _smooth(t, 0.3 * d, 0.85 * d)
        pos = np.stack([0.5 + 0.6 * travel, 0.2 + 0.0 * t, 0.3 * lift], axis=1)
        held = np.where((t >= 0.25 * d) & (t < 0.35 * d), 2,
                        np.where((t >= 0.35 * d) & (t < 0.9 * d), 3, 0))
        quality = np.where((t >= 0.5 * d) & (t < 0.6 * d), 2, 1)
        out.append(dict(name='BigBox0', type='BigBox', mesh='objects/BigBox/bigbox.ply',
                        frame='mesh', T=_pose(pos, 0.3 + 0.4 * travel), valid=ones,
                        quality=quality, held_by=held, markers=4, rms=1.3))
        # LittleBox0: invalid stretch in the middle.
        valid = ~((t >= 0.4 * d) & (t < 0.6 * d))
        pos = np.stack([1.2 + 0.0 * t, -0.3 + 0.05 * _smooth(t, 0.6 * d, 0.8 * d),
                        0.75 + 0.0 * t], axis=1)
        out.append(dict(name='LittleBox0', type='LittleBox', mesh='objects/LittleBox/'
                        'littlebox.ply', frame='mesh', T=_pose(pos, -0.2 + 0 * t),
                        valid=valid, quality=np.where(valid, 1, 0), held_by=0 * held,
                        markers=4, rms=2.1))
        # LittleBox1: rigid-body frame only; invalid at the start.
        valid = t >= 0.2 * d
        pos = np.stack([0.9 + 0.0 * t, 0.6 + 0.0 * t, 0.1 + 0.0 * t], axis=1)
        out.append(dict(name='LittleBox1', type='LittleBox', mesh='', frame='rigid_body',
                        T=_pose(pos, 1.1 + 0 * t), valid=valid,
                        quality=np.where(valid, 2, 0), held_by=0 * held, markers=4,
                        rms=np.nan))
        # Table0: no mesh at all.
        pos = np.stack([1.2 + 0.0 * t, -0.3 + 0.0 * t, 0.37 + 0.0 * t], axis=1)
        out.append(dict(name='Table0', type='Table', mesh='', frame='rigid_body',
                        T=_pose(pos, 0 * t), valid=ones, quality=np.full(n, 1),
                        held_by=0 * held, markers=3, rms=np.nan))
        for j in range(self.extra):
            pos = np.stack([2.0 + 0.3 * (j % 5) + 0.02 * np.sin(t + j),
                            -1.0 + 0.3 * (j // 5) + 0 * t, 0.1 + 0 * t], axis=1)
            out.append(dict(name=f'Crate{j}', type='Crate', mesh='', frame='rigid_body',
                            T=_pose(pos, 0.1 * j + 0.3 * t), valid=ones,
                            quality=np.full(n, 1), held_by=0 * held, markers=4, rms=np.nan))
        for e in out:
            # "NaN where not valid" (the key table), except LittleBox0's gap, which keeps
            # its last good pose: with NaN everywhere a reader ignoring `valid` reads the
            # same, and no test could tell (issue 37 item 4).
            e['T'][~e['valid']] = np.nan
            e['motion'] = _motion(e['T'][:, :3, 3], e['valid'])
            # only T_world_obj holds it: the markers were unseen there all the same
            e['T_stored'] = e['T'].copy()
            if e['name'] == 'LittleBox0':
                _hold_last_good_pose(e['T_stored'], e['valid'])
            e['quality'] = np.where(e['valid'], e['quality'], 0).astype(np.int8)
            e['held_by'] = np.where(e['valid'], e['held_by'], 0).astype(np.int8)
            if e['frame'] == 'mesh':
                rb = np.eye(4)
                rb[:3, :3] = Rotation.from_euler('xz', [0.1, 0.5]).as_matrix()
                rb[:3, 3] = [0.02, -0.01, SIZES[e['type']][2] / 2]
                e['T_rb_obj'] = rb
            else:
                e['T_rb_obj'] = np.full((4, 4), np.nan)
        return out

    def _objects_npz(self, session: Path, inst: list[dict]) -> None:
        np.savez(session / 'motions' / 'objects.npz',
                 names=np.array([e['name'] for e in inst]),
                 object_type=np.array([e['type'] for e in inst]),
                 mesh=np.array([e['mesh'] for e in inst]),
                 pose_frame=np.array([e['frame'] for e in inst]),
                 source=np.array(['mocap'] * len(inst)),
                 T_world_obj=np.stack([e['T_stored'] for e in inst]),
                 valid=np.stack([e['valid'] for e in inst]),
                 quality=np.stack([e['quality'] for e in inst]),
                 motion=np.stack([e['motion'] for e in inst]),
                 held_by=np.stack([e['held_by'] for e in inst]),
                 T_rb_obj=np.stack([e['T_rb_obj'] for e in inst]),
                 calib_rms_mm=np.array([e['rms'] for e in inst]),
                 t=self.t, frame_index=self.frame_index)

    def _markers_npz(self, session: Path, inst: list[dict]) -> None:
        k = 4
        n, frames = len(inst), self.frames
        markers = np.full((n, frames, k, 3), np.nan)
        consistent = np.zeros((n, frames, k), bool)
        template = np.full((n, k, 3), np.nan)
        names = np.full((n, k), '', dtype='<U16')
        for i, e in enumerate(inst):
            m = e['markers']
            template[i, :m] = TEMPLATE[:m]
            names[i, :m] = [f'{e["name"]}_{j + 1}' for j in range(m)]
            t_world_rb = e['T'] @ np.linalg.inv(e['T_rb_obj']) if e['frame'] == 'mesh' \
                else e['T']
            pts = np.einsum('fij,kj->fki', t_world_rb[:, :3, :3], TEMPLATE[:m]) \
                + t_world_rb[:, None, :3, 3]
            pts += self.rng.normal(0, 0.0005, pts.shape)
            unseen = self.rng.random((frames, m)) < 0.08
            if i == 0:  # the occlusion that drops BigBox0 to quality 2
                occluded = e['quality'] == 2
                unseen[occluded, 1:] = True
            pts[unseen] = np.nan
            markers[i, :, :m] = pts
            agree = self.rng.random((frames, m)) > 0.03
            consistent[i, :, :m] = agree & ~unseen & e['valid'][:, None]
        np.savez_compressed(session / 'motions' / 'object_markers.npz', markers_m=markers,
                            marker_names=names, template_m=template, consistent=consistent)

    def _objects_json(self, session: Path, name: str, inst: list[dict]) -> None:
        doc = {'session': name, 'fps': HZ,
               'object_list': {'decided_by': 'object markers'},
               'instances': {e['name']: {
                   'source': 'mocap', 'object_type': e['type'], 'pose_frame': e['frame'],
                   'calibration': ({'rms_mm': e['rms'], 'markers': 'markers.json'}
                                   if e['frame'] == 'mesh' else None),
                   'valid_pct': round(100 * float(np.mean(e['valid'])), 2),
                   'verified_pct': round(100 * float(np.mean(e['quality'][e['valid']] == 1)), 2),
                   'moving_pct': round(100 * float(np.mean(e['motion'] == 2)), 2)}
                   for e in inst},
               'absent': ['LittleBox2']}
        (session / 'motions' / 'objects.json').write_text(json.dumps(doc, indent=1))

    def _vendor(self, session: Path, inst: list[dict]) -> None:
        """The Nokov exports: millimetres, Y-up. A trap: react_ros never reads them."""
        raw = session / 'raw' / 'mocap'
        raw.mkdir(parents=True)
        for e in inst[:2]:
            p = e['T'][:, :3, 3] * 1000.0
            yup = np.stack([p[:, 0], p[:, 2], -p[:, 1]], axis=1)
            rows = [f'{f},{t:.6f},{x:.2f},{y:.2f},{z:.2f}' for f, t, (x, y, z)
                    in zip(self.frame_index, self.t, np.nan_to_num(yup))]
            (raw / f'{e["type"]}.csv').write_text('Frame,Time,X(mm),Y(mm),Z(mm)\n'
                                                  + '\n'.join(rows) + '\n')
            (raw / f'{e["type"]}.trc').write_text(
                'PathFileType\t4\t(X/Y/Z)\t' + e['type'] + '.trc\nDataRate\t120\tUnits\tmm\n'
                + '\n'.join(r.replace(',', '\t') for r in rows) + '\n')
