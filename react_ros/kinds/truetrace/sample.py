"""A synthetic TrueTrace delivery, faithful to its format document and its pitfalls.

A package root with one episode, `episodes/episode_000000/`, and the HDF5 export of
the same episode at `export/episode_000000.h5` (its mp4 named relative to the .h5's
folder). What it holds on purpose:
- a fisheye (Kannala-Brandt) stereo pair; both videos show a dot at every kept
  keypoint, projected with the equidistant model (cam1 through the refined extrinsics)
  and drawn to a fraction of a pixel, so rectification can be measured on them;
- factory extrinsics (child pose in the parent) and refined stereo extrinsics
  (OpenCV X1 = R X0 + T) that differ slightly (under a mm and a few tenths of a degree);
- t_s rounded to 4 decimals as delivered files are (the video's PTS is the clock);
- a clip cut from a longer recording: clip_frame 0 is source_frame SOURCE_OFFSET, and
  imu.csv's frame_index uses the source numbering;
- an IMU at ~476.87 Hz with time_offset_to_cam0_s = IMU_OFFSET_S;
- frames with no kept hand, frames with one hand, a stretch with swapped labels;
- registered keypoints (keypoints_3d_cam0_m) that differ from the triangulated ones by
  a few mm, and 2D keypoints off the registered projection by the stated error;
- MANIFEST.sha256 over every file, qc/metrics.json with its verdicts.
"""
from __future__ import annotations

import hashlib
import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
from scipy.spatial.transform import Rotation

from react_ros.errors import SinkError
from react_ros.formats.x264 import x264_options
from react_ros.kinds.truetrace.geometry import project_equidistant
from react_ros.samples.writing import write_sample
from react_ros.output import check_stop

EPISODE = 'episode_000000'
FPS = 30
SOURCE_OFFSET = 300
T_S_DECIMALS = 4  # hands_3d.jsonl and /time/t_s, as real files round them
IMU_HZ = 476.87
IMU_OFFSET_S = -0.000775
BASELINE_M = 0.06218
JOINT_NAMES = ['wrist', 'thumb_cmc', 'thumb_mcp', 'thumb_ip', 'thumb_tip',
               'index_mcp', 'index_pip', 'index_dip', 'index_tip',
               'middle_mcp', 'middle_pip', 'middle_dip', 'middle_tip',
               'ring_mcp', 'ring_pip', 'ring_dip', 'ring_tip',
               'little_mcp', 'little_pip', 'little_dip', 'little_tip']
EXPORT = f'export/{EPISODE}.h5'


def _template(side: str) -> np.ndarray:
    """21 joints of a right (or mirrored left) hand in its own frame, metres."""
    pts = [[0.0, 0.0, 0.0]]
    bases = [(-0.025, -0.02), (-0.012, -0.075), (0.0, -0.08), (0.012, -0.075), (0.024, -0.065)]
    lengths = [0.022, 0.025, 0.026, 0.024, 0.02]
    for (bx, by), seg in zip(bases, lengths):
        for j in range(4):
            pts.append([bx * (1 + 0.15 * j), by - seg * j, 0.004 * j])
    a = np.array(pts)
    if side == 'left':
        a[:, 0] *= -1
    return a


def write_truetrace_sample(out_dir: Path, *, seed: int = 0, duration_s: float = 3.0,
                           width: int = 320, height: int = 180,
                           episodes: int | None = None) -> Path:
    """Write a package root at `out_dir` (under a temporary name, renamed at the end).

    `episodes=N`: a package of N episodes, episode_00000k written with seed + k,
    each with its segments and its HDF5 export; qc/, preview/ and the manifest
    are the package's.
    """
    if episodes is not None and episodes < 1:
        raise SinkError(f'{out_dir}: a release holds at least one episode, got {episodes}')

    def write(tmp: Path) -> None:
        _write_package(tmp, [_Package(tmp, seed + k, duration_s, width, height, k)
                             for k in range(1 if episodes is None else episodes)])
    return write_sample(out_dir, duration_s, (width, height), 0.5, (64, 36), write)


def _write_package(root: Path, episodes: list[_Package]) -> None:
    for episode in episodes:
        episode.write_episode()
    episodes[0].write_shared()
    _manifest(root)  # last: it lists every file


class _Package:
    """One episode of a package, and (the first) the files the package shares."""

    def __init__(self, root: Path, seed: int, duration_s: float, width: int, height: int,
                 index: int = 0):
        self.root = root
        self.index = index
        self.episode = f'episode_{index:06d}'
        self.rng = np.random.default_rng(seed)
        self.w, self.h = width, height
        self.n = max(12, int(round(duration_s * FPS)))
        # t_s as delivered files write it: rounded to 4 decimals ("t_s": 0.0333 for frame 1),
        # up to 33 us off the frame's presentation time in cam0.mp4 (the clock).
        self.t_s = np.array([round(i / FPS, T_S_DECIMALS) for i in range(self.n)])
        s = width / 1920.0
        self.k = {'cam0': np.array([[620.0 * s, 0, 962.5 * s], [0, 620.0 * s, 538.0 * s],
                                    [0, 0, 1]]),
                  'cam1': np.array([[618.0 * s, 0, 957.0 * s], [0, 618.5 * s, 541.5 * s],
                                    [0, 0, 1]])}
        self.d = {'cam0': [-0.0125, 0.0182, -0.0113, 0.0026],
                  'cam1': [-0.0131, 0.0176, -0.0108, 0.0024]}
        # Factory: cam1's pose in cam0 (right of the left camera).
        self.q01 = Rotation.from_euler('xyz', [0.12, -0.35, 0.05], degrees=True)
        self.t01 = np.array([BASELINE_M, 0.00021, -0.00034])
        # Refined: the same pose, drifted, written the OpenCV way (X1 = R X0 + T).
        drift = Rotation.from_euler('xyz', [0.05, 0.18, -0.04], degrees=True)
        r_pose = (self.q01 * drift).as_matrix()
        t_pose = self.t01 + np.array([0.0004, -0.0003, 0.0005])
        self.r_ref = r_pose.T
        self.t_ref = -r_pose.T @ t_pose
        self.q0i = Rotation.from_euler('xyz', [-90.0, 0.0, 90.0], degrees=True)
        self.t0i = np.array([0.0112, -0.0048, 0.0021])

    def write_episode(self) -> None:
        ep = self.root / 'episodes' / self.episode
        for sub in (ep, self.root / 'annotations', self.root / 'export'):
            sub.mkdir(parents=True, exist_ok=True)
        calib = self._calibration()
        (ep / 'calibration.json').write_text(calib)
        hands = self._hands()
        lines = self._hands_lines(hands)
        (ep / 'hands_3d.jsonl').write_text(''.join(lines))
        imu_text, imu = self._imu()
        (ep / 'imu.csv').write_text(imu_text)
        (ep / 'stereo_hand3d_meta.json').write_text(json.dumps({
            'method': 'stereo triangulation + rigid 21-point shape registration',
            'frames': self.n, 'frames_with_hands': int(hands['present'].any(axis=1).sum()),
            'median_shape_fit_residual_mm': float(np.nanmedian(hands['residual']))}, indent=2))
        segments = self._segments()
        (self.root / 'annotations' / f'{self.episode}_segments.jsonl').write_text(
            ''.join(json.dumps(s) + '\n' for s in segments))
        for cam in ('cam0', 'cam1'):
            self._video(ep / f'{cam}.mp4', cam, hands)
        self._export(self.root / 'export' / f'{self.episode}.h5', calib, hands, imu, segments)

    def write_shared(self) -> None:
        for sub in (self.root / 'qc' / 'rect', self.root / 'preview'):
            sub.mkdir(parents=True)
        (self.root / 'annotations' / 'SCHEMA.json').write_text(json.dumps({
            'segment_id': 'string', 'start_s': 'seconds on the clip', 'end_s': 'seconds',
            'start_frame': 'cam0 clip frame, inclusive', 'end_frame': 'inclusive',
            'task': 'string', 'action': 'string', 'objects': 'string', 'hands': 'string',
            'description': 'string', 'review_status': 'draft | reviewed',
            'boundary_tolerance_s': 'seconds'}, indent=2))
        self._preview(self.root / 'preview' / 'depth_preview.mp4')
        self._qc()
        (self.root / 'README.md').write_text('# TrueTrace sample delivery (synthetic)\n')
        (self.root / 'LICENSE.txt').write_text('Synthetic data, free to use.\n')

    # -- content --------------------------------------------------------------------------
    def _calibration(self) -> str:
        cams = {c: {'width': self.w, 'height': self.h, 'K': self.k[c].reshape(-1).tolist(),
                    'D': self.d[c]} for c in ('cam0', 'cam1')}
        doc = {
            'model': 'kannala_brandt', 'cameras': cams,
            'extrinsics': {
                'cam0->cam1': {'t': self.t01.tolist(), 'q': self.q01.as_quat().tolist()},
                'cam0->imu0': {'t': self.t0i.tolist(), 'q': self.q0i.as_quat().tolist()}},
            'extrinsics_convention': 'child pose expressed in parent frame: '
                                     'X_cam1 = R^T (X_cam0 - t)',
            'baseline_mm': round(float(np.linalg.norm(self.t01)) * 1000, 2),
            'imu': {'rate_hz': IMU_HZ, 'time_offset_to_cam0_s': IMU_OFFSET_S},
            'refined_stereo_extrinsics': {'R': self.r_ref.tolist(), 'T': self.t_ref.tolist()}}
        return json.dumps(doc, indent=2)

    def _hands(self) -> dict[str, Any]:
        n, rng = self.n, self.rng
        present = np.ones((n, 2), dtype=bool)
        present[n // 6:n // 6 + 4] = False  # no hand kept
        present[n // 3:n // 3 + 8, 1] = False  # left only
        present[n // 2:n // 2 + 5, 0] = False  # right only
        swapped = np.zeros(n, dtype=bool)
        swapped[2 * n // 3:2 * n // 3 + 3] = True  # labels swapped by the 2D model
        reg = np.full((n, 2, 21, 3), np.nan)
        t = self.t_s
        for h, side in enumerate(('left', 'right')):
            sign = -1.0 if side == 'left' else 1.0
            # Egocentric: hands low and to the sides, ~30 deg off the axis, where the
            # fisheye model and a pinhole one disagree by many pixels.
            centre = np.stack([sign * 0.15 + 0.02 * np.sin(1.3 * t + h),
                               0.11 + 0.015 * np.sin(0.9 * t + 2 * h),
                               0.26 + 0.03 * np.sin(0.7 * t + h)], axis=1)
            rot = Rotation.from_euler('xyz', np.stack([
                -0.6 + 0.2 * np.sin(0.8 * t), 0.3 * np.sin(0.5 * t + h),
                sign * 0.4 + 0.2 * np.sin(0.6 * t)], axis=1))
            tmpl = _template(side)
            for i in range(n):
                reg[i, h] = rot[i].apply(tmpl) + centre[i]
        reg = np.round(reg, 5)
        tri = np.round(reg + rng.normal(0, 0.003, reg.shape), 5)
        residual = np.round(np.linalg.norm(tri - reg, axis=-1) * 1000, 2)
        err = np.round(rng.uniform(0.1, 0.9, (n, 2, 21)), 2)
        kp2d = np.full((n, 2, 21, 2), np.nan)
        for h in range(2):
            proj = project_equidistant(reg[:, h].reshape(-1, 3), self.k['cam0'],
                                       np.array(self.d['cam0'])).reshape(n, 21, 2)
            ang = rng.uniform(0, 2 * np.pi, (n, 21))
            kp2d[:, h] = proj + err[:, h, :, None] * np.stack([np.cos(ang), np.sin(ang)], -1)
        kp2d = np.round(kp2d, 1)
        conf = np.round(rng.uniform(0.85, 0.99, (n, 2)), 3)
        for arr in (reg, tri, kp2d):
            arr[~present] = np.nan
        return {'present': present, 'swapped': swapped, 'reg': reg, 'tri': tri,
                'residual': np.where(present[..., None], residual, np.nan), 'err': err,
                'kp2d': kp2d, 'conf': conf}

    def _labelled(self, hands: dict[str, Any], i: int) -> list[tuple[str, int]]:
        """(label, index of the true hand) of frame i's kept hands, as the 2D model says."""
        out = []
        for h, side in enumerate(('Left', 'Right')):
            if hands['present'][i, h]:
                label = side if not hands['swapped'][i] else ('Right' if h == 0 else 'Left')
                out.append((label, h))
        return out

    def _hands_lines(self, hands: dict[str, Any]) -> list[str]:
        lines = []
        for i in range(self.n):
            kept = []
            for label, h in self._labelled(hands, i):
                kept.append({'hand': label, 'confidence': float(hands['conf'][i, h]),
                             'keypoints_2d_cam0_px': hands['kp2d'][i, h].tolist(),
                             'keypoints_3d_cam0_m': hands['reg'][i, h].tolist(),
                             'keypoints_3d_triangulated_m': hands['tri'][i, h].tolist(),
                             'reprojection_error_px': hands['err'][i, h].tolist(),
                             'shape_fit_residual_mm': hands['residual'][i, h].tolist()})
            lines.append(json.dumps({'clip_frame': i, 'source_frame': i + SOURCE_OFFSET,
                                     't_s': float(self.t_s[i]), 'hands': kept}) + '\n')
        return lines

    def _imu(self) -> tuple[str, dict[str, np.ndarray]]:
        rng = self.rng
        span = self.t_s[-1] + 1.0 / FPS
        m = int(span * IMU_HZ)
        t = 0.000791 + np.arange(m) / IMU_HZ + rng.normal(0, 2e-5, m)
        t = t[t < span - 0.001]
        frame = SOURCE_OFFSET + np.clip(np.floor((t + IMU_OFFSET_S) * FPS), 0, None).astype(int)
        tilt = Rotation.from_euler('xyz', np.stack([0.2 * np.sin(0.5 * t), 0.1 * np.sin(0.3 * t),
                                                    np.zeros_like(t)], axis=1))
        up_cam0 = np.array([0.0, -9.80665, 0.0])  # specific force at rest: up (cam0 y is down)
        accel = self.q0i.inv().apply(tilt.apply(up_cam0)) + rng.normal(0, 0.02, (len(t), 3))
        # The rate that turns gravity as accel shows it, in rad/s on the IMU's axes: the
        # body frame's world-to-imu rotation C(t), C' C^T = [w]x, and a gyro reads -w.
        def world_to_imu(x: np.ndarray) -> Rotation:
            return self.q0i.inv() * Rotation.from_euler('xyz', np.stack([
                0.2 * np.sin(0.5 * x), 0.1 * np.sin(0.3 * x), np.zeros_like(x)], axis=1))
        h = 1e-4
        w = (world_to_imu(t + h) * world_to_imu(t - h).inv()).as_rotvec() / (2 * h)
        gyro = -w + rng.normal(0, 0.002, (len(t), 3))
        rows = ['t_s,frame_index,accel_x,accel_y,accel_z,gyro_x,gyro_y,gyro_z']
        for i in range(len(t)):
            rows.append(f'{t[i]:.6f},{frame[i]},' + ','.join(f'{v:.6f}' for v in accel[i])
                        + ',' + ','.join(f'{v:.6f}' for v in gyro[i]))
        text = '\n'.join(rows) + '\n'
        parsed = np.array([[float(v) for v in r.split(',')] for r in rows[1:]])
        return text, {'t_s': parsed[:, 0], 'frame_index': parsed[:, 1].astype(np.int64),
                      'accel': parsed[:, 2:5], 'gyro': parsed[:, 5:8]}

    def _segments(self) -> list[dict[str, Any]]:
        half = self.n // 2
        out = []
        for k, (a, b, action) in enumerate([(0, half - 1, 'attach_clips_to_card'),
                                            (half, self.n - 1, 'straighten_card')]):
            out.append({'episode_index': self.index, 'segment_id': f'seg_{k:03d}',
                        'start_s': round(a / FPS, 3), 'end_s': round((b + 1) / FPS, 3),
                        'start_frame': a, 'end_frame': b, 'task': 'hair_clip_carding',
                        'action': action, 'objects': 'metal hair clips; display card',
                        'hands': 'both', 'description': 'Left hand holds the display card; '
                        'right hand picks a clip', 'review_status': 'draft',
                        'boundary_tolerance_s': 3})
        return out

    def _video(self, path: Path, cam: str, hands: dict[str, Any]) -> None:
        k, d = self.k[cam], np.array(self.d[cam])
        pts = hands['reg'].reshape(self.n, 42, 3)
        if cam == 'cam1':
            pts = pts @ self.r_ref.T + self.t_ref  # X1 = R X0 + T
        yy, xx = np.mgrid[0:self.h, 0:self.w]
        base = np.stack([(xx * 200 // self.w), (yy * 200 // self.h),
                         np.full_like(xx, 60 if cam == 'cam0' else 110)], -1).astype(np.uint8)
        with av.open(str(path), mode='w') as out:
            stream = out.add_stream('libx264', rate=FPS, options=x264_options(
                {'preset': 'ultrafast', 'crf': '18', 'bf': '0'}))
            stream.width, stream.height, stream.pix_fmt = self.w, self.h, 'yuv420p'
            stream.time_base = Fraction(1, FPS)
            for i in range(self.n):
                check_stop()
                img = base.copy()
                img[..., 2] = (img[..., 2].astype(int) + 3 * i) % 256
                uv = project_equidistant(pts[i], k, d)
                for u, v in uv[np.all(np.isfinite(uv), axis=1)]:
                    _dot(img, float(u), float(v))
                frame = av.VideoFrame.from_ndarray(img, format='rgb24')
                frame.pts = i
                out.mux(stream.encode(frame))
            out.mux(stream.encode(None))

    def _preview(self, path: Path) -> None:
        with av.open(str(path), mode='w') as out:
            stream = out.add_stream('libx264', rate=FPS,
                                    options=x264_options({'preset': 'ultrafast'}))
            stream.width, stream.height, stream.pix_fmt = 64, 36, 'yuv420p'
            for i in range(4):
                img = np.full((36, 64, 3), 40 * i, dtype=np.uint8)
                out.mux(stream.encode(av.VideoFrame.from_ndarray(img, format='rgb24')))
            out.mux(stream.encode(None))

    def _qc(self) -> None:
        qc = self.root / 'qc'
        rng = self.rng
        metrics = {
            'sync_diff_ms': np.round(rng.normal(0, 0.15, self.n), 3).tolist(),
            'frame_interval_ms': {c: np.round(1000 / FPS + rng.normal(0, 0.05, self.n - 1), 3)
                                  .tolist() for c in ('cam0', 'cam1')},
            'imu_interval_ms_median': round(1000 / IMU_HZ, 4),
            'epipolar_disparity_px': np.round(rng.uniform(0.6, 1.4, 8), 3).tolist(),
            'verdicts': [
                {'gate': 'stereo_sync', 'pass': True, 'detail': 'max |dt| < 1 ms'},
                {'gate': 'frame_intervals', 'pass': True},
                {'gate': 'imu_intervals', 'pass': True},
                {'gate': 'epipolar', 'pass': False,
                 'detail': 'drift flagged; refined stereo extrinsics delivered'}]}
        (qc / 'metrics.json').write_text(json.dumps(metrics))
        (qc / 'refined_extrinsics.json').write_text(json.dumps(
            {'R': self.r_ref.tolist(), 'T': self.t_ref.tolist()}, indent=2))
        (qc / 'index.html').write_text('<!doctype html><title>QC</title><p>synthetic</p>\n')
        (qc / 'rect' / 'README.txt').write_text('rectified sample pairs (none in the sample)\n')

    def _export(self, path: Path, calib: str, hands: dict[str, Any],
                imu: dict[str, np.ndarray], segments: list[dict[str, Any]]) -> None:
        import h5py
        n = self.n
        kp3 = np.full((n, 2, 21, 3), np.nan, dtype=np.float32)
        kp2 = np.full((n, 2, 21, 2), np.nan, dtype=np.float32)
        rep = np.full((n, 2, 21), np.nan, dtype=np.float32)
        present = np.zeros((n, 2), dtype=bool)
        for i in range(n):
            for label, h in self._labelled(hands, i):
                s = 0 if label == 'Left' else 1  # as labelled, like the jsonl
                present[i, s] = True
                kp3[i, s], kp2[i, s] = hands['reg'][i, h], hands['kp2d'][i, h]
                rep[i, s] = hands['err'][i, h]
        with h5py.File(path, 'w') as f:
            meta = f.create_group('meta')
            meta.attrs['fps'] = float(FPS)
            meta.attrs['coordinate_frame'] = 'cam0 (OpenCV: x right, y down, z forward), metres'
            meta.attrs['keypoint_order'] = json.dumps(JOINT_NAMES)
            for cam in ('cam0', 'cam1'):
                g = f.create_group(f'video/{cam}')
                g.attrs['file'] = f'../episodes/{self.episode}/{cam}.mp4'
            f['time/t_s'] = self.t_s
            f['hands/keypoints_3d_m'] = kp3
            f['hands/keypoints_2d_px'] = kp2
            f['hands/reprojection_px'] = rep
            f['hands/present'] = present
            for key in ('t_s', 'frame_index', 'accel', 'gyro'):
                f[f'imu/{key}'] = imu[key]
            f.create_group('calibration').attrs['json'] = calib
            f['annotations/segments'] = json.dumps(segments)
            actions = [next(s['action'] for s in segments
                            if s['start_frame'] <= i <= s['end_frame']) for i in range(n)]
            f['annotations/per_frame_action'] = np.array(actions, dtype=h5py.string_dtype())


DOT_RADIUS_PX = 1.5  # covers the nearest pixel whole, wherever the point falls in it
_SUB = (np.arange(8) + 0.5) / 8 - 0.5  # 8x8 sub-samples per pixel


def _dot(img: np.ndarray, u: float, v: float) -> None:
    """A white disc centred on (u, v) to a fraction of a pixel (pixel (x, y) spans
    x +- 0.5, as OpenCV and image_geometry place pixel centres), blended by coverage: a
    dot's brightness centroid is the projected point, which a stereo test can measure
    through rectification; a dot snapped to whole pixels is up to half a pixel off."""
    h, w = img.shape[:2]
    x0, y0 = int(np.floor(u - DOT_RADIUS_PX)), int(np.floor(v - DOT_RADIUS_PX))
    xs = np.arange(max(0, x0), min(w, x0 + 5))
    ys = np.arange(max(0, y0), min(h, y0 + 5))
    if not len(xs) or not len(ys):
        return
    dx = xs[None, :, None, None] + _SUB[None, None, None, :] - u
    dy = ys[:, None, None, None] + _SUB[None, None, :, None] - v
    cover = ((dx * dx + dy * dy) <= DOT_RADIUS_PX ** 2).mean(axis=(2, 3))[..., None]
    patch = img[ys[0]:ys[-1] + 1, xs[0]:xs[-1] + 1]
    patch[...] = np.round(patch * (1 - cover) + 255 * cover).astype(np.uint8)


def _manifest(root: Path) -> None:
    lines = []
    for p in sorted(root.rglob('*')):
        if p.is_file() and p.name != 'MANIFEST.sha256':
            digest = hashlib.sha256(p.read_bytes()).hexdigest()
            lines.append(f'{digest}  {p.relative_to(root).as_posix()}\n')
    (root / 'MANIFEST.sha256').write_text(''.join(lines))


__all__ = ['EPISODE', 'EXPORT', 'FPS', 'IMU_HZ', 'IMU_OFFSET_S', 'SOURCE_OFFSET',
           'T_S_DECIMALS', 'write_truetrace_sample']
