"""A synthetic React task release, faithful to its format document and the contract layout.

One episode, `2026-05-10/episode_000` (N with `episodes=N`, two a day), of the
motherboard task: two GelSight sensors and an object tracked in a Z-up world,
three colour views that show them (discs drawn where the calibration projects
the gel centres and the object), two tactile videos, the section 2 parquet
columns with the `twm.world_frame` declaration and its projection fingerprint,
calibration files that declare `up_axis`, gel calibration, splits, segments and
bad frames. Its date predates the 2026-06-27 tactile-latency fix, as every
motherboard episode does; `date=` moves it (a later release is pushT's).
Camera frames run at a jittered ~29.9 Hz (not 30), tactile updates at ~8.7 Hz
so only ~29 % of rows are fresh. Each tactile video frame shows, as a 4x4 grid
of blocks (samples.umi.read_frame_index reads it), the row its image was
captured on, so a stale row visibly repeats the last fresh one.
"""
from __future__ import annotations

import datetime
import json
from fractions import Fraction
from pathlib import Path
from typing import Any, TypedDict

import av
import numpy as np
from scipy.spatial.transform import Rotation

from react_ros.kinds.react.parquet_video import (POSE_COLUMNS, SIDES, STIFFNESS_N_PER_M,
                                                 TACTILE_FIX_DATE, VIDEO_KEYS, VIEWS,
                                                 WORLD_FRAME_KEY, gel_centres_world, project)
from react_ros.errors import SinkError
from react_ros.formats.x264 import x264_options
from react_ros.kinds.umi.sample import frame_index_bits
from react_ros.samples.writing import write_sample
from react_ros.output import check_stop

EPISODE = '2026-05-10/episode_000'
TASK = 'motherboard'
TASK_TEXT = 'insert the module into the motherboard slot'
# Every motherboard episode predates the tactile-latency fix (format document 5), so a
# release dated on or after TACTILE_FIX_DATE is of the document's other task.
LATER_TASK, LATER_TASK_TEXT = 'pushT', 'push the T-shaped block into its outline'
CAMERA_HZ, TACTILE_HZ = 29.9, 8.7
TRIM = 412  # row r is raw HDF5 camera frame TRIM + r
GUARD = 15
CENTRE = np.array([0.25, 0.30, 0.12])  # middle of the workspace, metres, Z-up
CAMERA_OFFSETS = {'left': (-0.55, -0.45, 0.45), 'middle': (0.0, -0.70, 0.45),
                  'right': (0.55, -0.45, 0.45)}
CALIB_SIZE = (640, 480)
DIST = [0.04, -0.08, 0.0008, -0.0005, 0.015]  # plumb_bob k1, k2, p1, p2, k3


class _GelSpec(TypedDict):
    gel_centre_mm: list[float]
    depth_offset_mm: float
    tilt: tuple[str, float]  # (euler axis, degrees) that turn local -y into the gel axis


GEL: dict[str, _GelSpec] = {
    'left': {'gel_centre_mm': [2.0, -24.0, 6.0], 'depth_offset_mm': -5.0, 'tilt': ('x', 21.2)},
    'right': {'gel_centre_mm': [-1.5, -23.0, 5.0], 'depth_offset_mm': 0.0, 'tilt': ('z', 22.4)}}
# episodes.jsonl world_frame_offset: the format document's 05-19 correction (230, 0, 175) mm,
# already in the published poses. A real 05-10 (reference) episode carries zeros; every
# sample episode carries this one so that applying it a second time is a visible mistake.
WORLD_OFFSET_M = [0.230, 0.0, 0.175]
TINT = {'left': (170, 120, 90), 'middle': (120, 150, 120), 'right': (100, 120, 170)}


def camera_matrix(width: int, height: int) -> np.ndarray:
    sx, sy = width / CALIB_SIZE[0], height / CALIB_SIZE[1]
    return np.array([[600.0 * sx, 0.0, 320.0 * sx], [0.0, 600.0 * sy, 240.0 * sy],
                     [0.0, 0.0, 1.0]])



def look_at(position: np.ndarray, target: np.ndarray) -> np.ndarray:
    """T_mocap_to_cam (world -> optical frame: z forward, x right, y down) of a camera."""
    z = (target - position) / np.linalg.norm(target - position)
    x = np.cross(z, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    r_wc = np.stack([x, y, z], axis=1)
    t = np.eye(4)
    t[:3, :3] = r_wc.T
    t[:3, 3] = -r_wc.T @ position
    return t


def gel_axis_in_rigid(side: str) -> np.ndarray:
    axis, deg = GEL[side]['tilt']
    return Rotation.from_euler(str(axis), float(deg), degrees=True).apply([0.0, -1.0, 0.0])


def release_episodes(n: int, date: str | None = None) -> list[str]:
    """The ids of a sample release of n episodes: two a day from `date` (EPISODE's) on."""
    first = datetime.date.fromisoformat(date or EPISODE.split('/')[0])
    return [f'{first + datetime.timedelta(days=k // 2)}/episode_{k % 2:03d}' for k in range(n)]


def task_of(date: str) -> tuple[str, str]:
    """(task, its text) of a sample release whose last episode is on `date`."""
    return (TASK, TASK_TEXT) if date < TACTILE_FIX_DATE else (LATER_TASK, LATER_TASK_TEXT)


def write_react_sample(out_dir: Path, *, seed: int = 0, duration_s: float = 3.0,
                       width: int = 640, height: int = 480, episodes: int | None = None,
                       date: str | None = None) -> Path:
    """Write a release root at `out_dir` (under a temporary name, renamed at the end).

    By default the release holds one episode, EPISODE; `episodes=N` gives N
    (release_episodes names them), episode k written with seed + k, all sharing
    the calibration and the release's side files. `date` (YYYY-MM-DD) moves the first
    episode; a release reaching TACTILE_FIX_DATE is pushT's, as no motherboard
    episode was recorded after the fix.
    """
    if episodes is not None and episodes < 1:
        raise SinkError(f'{out_dir}: a release holds at least one episode, got {episodes}')
    try:
        ids = release_episodes(1 if episodes is None else episodes, date)
    except ValueError:
        raise SinkError(f'{out_dir}: date {date!r} is not YYYY-MM-DD') from None
    task = task_of(ids[-1].split('/')[0])  # one task per release root

    def write(tmp: Path) -> None:
        _write_release(tmp, [_Episode(tmp, seed + k, duration_s, width, height, episode, k,
                                      task) for k, episode in enumerate(ids)])
    return write_sample(out_dir, duration_s, (width, height), 0.5, (64, 48), write)


def _write_release(root: Path, episodes: list[_Episode]) -> None:
    for episode in episodes:
        episode.write()
    episodes[0].calibration()  # one rig: every episode's calibration is the same
    _side_files(root, episodes)


class _Episode:
    def __init__(self, root: Path, seed: int, duration_s: float, width: int, height: int,
                 episode: str = EPISODE, index: int = 0,
                 task: tuple[str, str] = (TASK, TASK_TEXT)):
        self.root = root
        self.episode, self.index = episode, index
        self.task, self.task_text = task
        self.rng = np.random.default_rng(seed)
        self.size = (width, height)
        self.k = camera_matrix(width, height)
        period = 1.0 / CAMERA_HZ
        n = max(8, int(duration_s * CAMERA_HZ))
        steps = period + self.rng.normal(0.0, 0.08 * period, n - 1)
        self.t = np.concatenate([[0.0], np.cumsum(np.clip(steps, 0.5 * period, None))])
        self.n = n
        self.cams = {v: look_at(CENTRE + np.array(CAMERA_OFFSETS[v]), CENTRE) for v in VIEWS}

    def write(self) -> None:
        """The episode's table and videos; the files it shares are the release's."""
        date = self.episode.split('/')[0]
        for sub in (f'data/{date}', f'videos/{self.episode}'):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        poses = self._poses()
        tactile = {s: self._tactile(s, poses[f'sensor_{s}_pose']) for s in SIDES}
        self._table(poses, tactile)
        for v in VIEWS:
            self._view_video(v, poses)
        for s in SIDES:
            self._tactile_video(s, tactile[s])

    # -- motion ---------------------------------------------------------------------------
    def _poses(self) -> dict[str, np.ndarray]:
        t = self.t
        phase = self.rng.uniform(0, 2 * np.pi, 6)
        out = {}
        # Local -y (the gel normal) points about down: R_x(+90 deg) takes local y to world z.
        base = Rotation.from_euler('x', 90, degrees=True)
        for i, side in enumerate(SIDES):
            sign = -1.0 if side == 'left' else 1.0
            pos = CENTRE + np.stack([
                sign * 0.08 + 0.03 * np.sin(0.9 * t + phase[i]),
                0.04 * np.sin(0.6 * t + phase[i + 2]),
                0.06 + 0.03 * np.sin(1.3 * t + phase[i + 4])], axis=1)
            wobble = Rotation.from_euler('xyz', np.stack([
                0.2 * np.sin(0.7 * t + phase[i]), 0.15 * np.sin(0.5 * t + phase[i + 1]),
                0.3 * np.sin(0.4 * t + phase[i + 3])], axis=1))
            out[f'sensor_{side}_pose'] = np.hstack([pos, (wobble * base).as_quat()])
        obj = CENTRE + np.stack([0.01 * np.sin(0.3 * t), 0.02 + 0.01 * np.cos(0.3 * t),
                                 np.full_like(t, -0.05)], axis=1)
        yaw = Rotation.from_euler('z', (0.2 * t + phase[5])[:, None])
        out['object_pose'] = np.hstack([obj, yaw.as_quat()])
        return out

    def _tactile(self, side: str, pose: np.ndarray) -> dict[str, np.ndarray]:
        """GelSight samples at ~8.7 Hz: which rows get a fresh frame, force on those rows."""
        period = 1.0 / TACTILE_HZ
        samples = np.cumsum(period + self.rng.normal(0, 0.05 * period, int(self.t[-1] / period)
                                                     + 2)) - self.rng.uniform(0, period)
        counts = np.searchsorted(samples, self.t, side='right')
        is_new = np.concatenate([[True], counts[1:] > counts[:-1]])
        source = np.maximum.accumulate(np.where(is_new, np.arange(self.n), 0))
        fresh_force = np.clip(3.0 + 3.5 * np.sin(1.1 * self.t + (0.0 if side == 'left' else 1.7))
                              + self.rng.normal(0, 0.2, self.n), 0.0, None)
        force = fresh_force[source]  # stale rows repeat the last estimate
        n_hat = Rotation.from_quat(pose[:, 3:7]).apply([0.0, -1.0, 0.0])
        target = pose.copy()
        target[:, :3] = pose[:, :3] + (force / STIFFNESS_N_PER_M)[:, None] * n_hat
        intensity = np.clip(force / 8.0, 0, 1)
        return {'is_new': is_new, 'source': source, 'force': force,
                'penetration': force / (STIFFNESS_N_PER_M / 1000.0), 'target': target,
                'intensity': intensity, 'area': intensity * 0.6,
                'mixed': 0.5 * intensity + 0.5 * intensity * 0.6}

    # -- files ----------------------------------------------------------------------------
    def calibration(self) -> None:
        (self.root / 'calibration' / 'cameras').mkdir(parents=True)
        w, h = self.size
        for v in VIEWS:
            doc = {'T_mocap_to_cam': self.cams[v].tolist(), 'K': self.k.tolist(), 'dist': DIST,
                   'width': w, 'height': h, 'up_axis': 'z',
                   'reprojection_rmse_mm': {'left': 4.7, 'middle': 5.3, 'right': 7.5}[v]}
            _json(self.root / 'calibration' / 'cameras' / f'{v}.json', doc)
        for s in SIDES:
            doc = {'gel_centre_mm': GEL[s]['gel_centre_mm'],
                   'gel_axis_in_rigid': gel_axis_in_rigid(s).round(6).tolist(),
                   'depth_offset_mm': GEL[s]['depth_offset_mm']}
            _json(self.root / 'calibration' / f'gel_{s}.json', doc)

    def _fingerprint(self, poses: dict[str, np.ndarray]) -> dict[str, Any]:
        rows = sorted({int(r) for r in np.linspace(0, self.n - 1, 5)})
        pts = gel_centres_world(poses['sensor_left_pose'][rows], GEL['left']['gel_centre_mm'])
        pixels = {v: project(self.cams[v], self.k, DIST, pts).round(3).tolist() for v in VIEWS}
        return {'point': 'gel_centre', 'sensor': 'left', 'rows': rows, 'pixels': pixels}

    def _table(self, poses: dict[str, np.ndarray], tac: dict[str, dict[str, np.ndarray]]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq
        n = self.n
        vec7 = pa.list_(pa.float64(), 7)
        cols: dict[str, Any] = {
            'frame_idx': pa.array(np.arange(n), pa.int64()),
            'timestamp': pa.array(self.t, pa.float64()),
            'source_h5_frame': pa.array(TRIM + np.arange(n), pa.int64()),
            'episode': pa.array([self.episode] * n, pa.string()),
            'episode_index': pa.array(np.full(n, self.index, np.int64)),
            'frame_index': pa.array(np.arange(n), pa.int64()),
            'task': pa.array([self.task_text] * n, pa.string()),
            'task_index': pa.array(np.zeros(n, np.int64)),
        }
        for c in POSE_COLUMNS:
            cols[c] = pa.array(poses[c].tolist(), vec7)
        for s in SIDES:
            for k in ('intensity', 'area', 'mixed'):
                cols[f'tactile_{s}_{k}'] = pa.array(tac[s][k], pa.float32())
            cols[f'tactile_{s}_is_new'] = pa.array(tac[s]['is_new'], pa.bool_())
        for s in SIDES:
            cols[f'force_{s}_normal_n'] = pa.array(tac[s]['force'], pa.float64())
            cols[f'force_{s}_penetration_mm'] = pa.array(tac[s]['penetration'], pa.float64())
            cols[f'force_{s}_target_pose'] = pa.array(tac[s]['target'].tolist(), vec7)
            cols[f'force_{s}_source_frame'] = pa.array(tac[s]['source'], pa.int64())
        world = {'world_frame': 'OptiTrack, 2026-05-10 reference', 'up_axis': 'z',
                 'units': 'm', 'pose_layout': 'x y z qx qy qz qw', 'quaternion_order': 'xyzw',
                 'world_frame_offset_m': WORLD_OFFSET_M,
                 # Added to a pose read straight from the raw (Y-up) HDF5.
                 'raw_h5_offset_m': [0.0125, 0.0, -0.0310], 'raw_h5_offset_up_axis': 'y',
                 'fingerprint': self._fingerprint(poses)}
        table = pa.table(cols).replace_schema_metadata({WORLD_FRAME_KEY: json.dumps(world)})
        date, name = self.episode.split('/')
        pq.write_table(table, self.root / 'data' / date / f'{name}.parquet')

    def record(self) -> dict[str, Any]:
        """Its line of episodes.jsonl."""
        return {'episode': self.episode, 'episode_index': self.index, 'length': self.n,
                'world_frame_offset': WORLD_OFFSET_M, 'task': self.task_text}

    def curation(self) -> dict[str, Any]:
        """Its entries of bad_frames.json, segments.json and splits.json, by file."""
        n = self.n
        bad = [n // 4, n // 2, 3 * n // 4]
        reasons = ['intensity_spike', 'pose_teleport', 'optitrack_dropout']
        held = [int(0.85 * n), n - 2]
        return {'bad_frames.json': [{'frame': b, 'reason': r} for b, r in zip(bad, reasons)],
                'segments.json': [[1, bad[0] - 1], [bad[0] + 1, bad[1] - 1],
                                  [bad[1] + 1, bad[2] - 1]],
                'splits.json': {'held_out': [held], 'guard_frames': GUARD,
                                'max_train_window': GUARD + 1}}

    # -- videos ---------------------------------------------------------------------------
    def _encoder(self, path: Path) -> tuple[Any, Any]:
        container = av.open(str(path), mode='w')
        stream = container.add_stream('libx264', rate=30, options=x264_options(
            {'preset': 'veryfast', 'crf': '20'}))
        stream.width, stream.height = self.size
        stream.pix_fmt = 'yuv420p'
        stream.time_base = Fraction(1, 30)
        return container, stream

    def _encode(self, path: Path, frames: Any) -> None:
        container, stream = self._encoder(path)
        with container:
            for i, img in enumerate(frames):
                check_stop()
                frame = av.VideoFrame.from_ndarray(img, format='rgb24')
                frame.pts = i
                container.mux(stream.encode(frame))
            container.mux(stream.encode(None))

    def _texture(self, tint: tuple[int, int, int], seed: int) -> np.ndarray:
        """Coarse blobs plus fine grain: flat synthetic frames decode several times faster
        than footage, which would make the playback benchmark measure the wrong thing."""
        w, h = self.size
        rng = np.random.default_rng(seed)
        coarse: np.ndarray = rng.uniform(0, 1, (h // 16 + 2, w // 16 + 2, 1))
        coarse = np.kron(coarse, np.ones((16, 16, 1)))[:h, :w]
        fine = rng.uniform(0, 1, (h, w, 1))
        shade = (0.55 + 0.45 * np.arange(h) / h)[:, None, None]
        return ((0.35 + 0.45 * coarse + 0.2 * fine) * shade * np.array(tint)).astype(np.uint8)

    def _noise(self) -> list[np.ndarray]:
        w, h = self.size
        return [self.rng.integers(0, 6, (h, w, 3), dtype=np.uint8) for _ in range(4)]

    def _view_video(self, view: str, poses: dict[str, np.ndarray]) -> None:
        w, h = self.size
        yy, xx = np.mgrid[0:h, 0:w]
        base = self._texture(TINT[view], VIEWS.index(view))
        noise = self._noise()
        points = {
            (230, 40, 40): gel_centres_world(poses['sensor_left_pose'],
                                             GEL['left']['gel_centre_mm']),
            (40, 80, 230): gel_centres_world(poses['sensor_right_pose'],
                                             GEL['right']['gel_centre_mm']),
            (40, 200, 60): poses['object_pose'][:, :3]}
        pix = {col: project(self.cams[view], self.k, DIST, pts) for col, pts in points.items()}
        radius = max(3, w // 40)

        def frames() -> Any:
            for i in range(self.n):
                img = base + noise[i % 4]
                for col, uv in pix.items():
                    u, v = uv[i]
                    img[(xx - u) ** 2 + (yy - v) ** 2 <= radius ** 2] = col
                yield img
        self._encode(self.root / 'videos' / self.episode / f'view_{view}.mp4', frames())

    def _tactile_video(self, side: str, tac: dict[str, np.ndarray]) -> None:
        w, h = self.size
        yy, xx = np.mgrid[0:h, 0:w]
        base = self._texture((150, 140, 160) if side == 'left' else (140, 160, 150),
                             10 + SIDES.index(side))
        noise = self._noise()

        def frames() -> Any:
            for i in range(self.n):
                src = int(tac['source'][i])  # a stale row repeats the last fresh frame
                img = base + noise[src % 4]
                r = 0.1 + 0.2 * tac['intensity'][src]
                blob = ((xx - w / 2) / w) ** 2 + ((yy - 0.75 * h) / h) ** 2 <= r * r / 4
                img[blob] //= 3
                # The row index as 4x4 cells, kept textured but dark (<= 63) or bright (>= 180).
                for b, bit in enumerate(frame_index_bits(src)):
                    rr, cc = divmod(b, 4)
                    cell = img[rr * h // 8:(rr + 1) * h // 8, cc * w // 4:(cc + 1) * w // 4]
                    np.right_shift(cell, 2, out=cell)
                    if bit:
                        cell += 180
                yield img
        self._encode(self.root / 'videos' / self.episode / f'tactile_{side}.mp4', frames())


def _side_files(root: Path, episodes: list[_Episode]) -> None:
    """meta/info.json, episodes.jsonl and the curation files, over every episode."""
    (root / 'meta').mkdir()
    _json(root / 'meta' / 'info.json',
          {'fps': 30, 'video_keys': list(VIDEO_KEYS), 'task': episodes[0].task,
           'codebase_version': 'react-1.2', 'total_episodes': len(episodes)})
    (root / 'episodes.jsonl').write_text(''.join(json.dumps(e.record()) + '\n'
                                                 for e in episodes))
    curation = [(e.episode, e.curation()) for e in episodes]
    for name in ('bad_frames.json', 'segments.json', 'splits.json'):
        _json(root / name, {episode: files[name] for episode, files in curation})


def _json(path: Path, doc: Any) -> None:
    path.write_text(json.dumps(doc, indent=1) + '\n')


__all__ = ['EPISODE', 'WORLD_OFFSET_M', 'camera_matrix', 'gel_axis_in_rigid', 'look_at',
           'release_episodes', 'task_of', 'write_react_sample']
