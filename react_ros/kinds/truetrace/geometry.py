"""TrueTrace geometry: the two extrinsic conventions, the fisheye projection, and the
conformance self-check that `info` prints. ROS-free.

Conventions (format document, section 3):
- factory `cam0->cam1` {t, q}: the child's pose in the parent frame,
  X_cam0 = R(q) X_cam1 + t, i.e. X_cam1 = R(q)^T (X_cam0 - t);
- refined stereo {R, T}: OpenCV's stereo convention, X_cam1 = R X_cam0 + T,
  so cam1's pose in cam0 is (R^T, -R^T T).
A TF transform parent -> child is the child's pose in the parent, so the factory
values go on /tf_static as they are and the refined ones inverted.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from react_ros.kinds.truetrace.files import Calibration, CameraCalibration

MAX_CHECK_FRAMES = 200  # frames with a hand projected by the self-check
TOLERANCE_PX = 0.5  # on top of each joint's stated reprojection error (2D written to 0.1 px)
PASS_FRACTION = 0.95  # of the joints within their stated error + tolerance
FAR_FACTOR = 3.0  # a negative control must read at least this many times the stated error


@dataclass(frozen=True)
class Pose:
    """A child frame's pose in its parent: X_parent = r X_child + t."""

    r: np.ndarray  # 3x3
    t: np.ndarray  # 3

    def quat_xyzw(self) -> np.ndarray:
        q: np.ndarray = Rotation.from_matrix(self.r).as_quat()
        return q if q[3] >= 0 else -q


def factory_pose(t: np.ndarray, q_xyzw: np.ndarray) -> Pose:
    """Factory {t, q} (already a child pose in the parent) as a Pose."""
    q = np.asarray(q_xyzw, dtype=float)
    return Pose(Rotation.from_quat(q / np.linalg.norm(q)).as_matrix(), np.asarray(t, float))


def refined_pose(r: np.ndarray, t: np.ndarray) -> Pose:
    """OpenCV stereo {R, T} (X1 = R X0 + T) as cam1's pose in cam0."""
    return Pose(r.T, -r.T @ t)


def pose_distance(a: Pose, b: Pose) -> tuple[float, float]:
    """(translation mm, rotation degrees) between two poses."""
    mm = float(np.linalg.norm(a.t - b.t) * 1000.0)
    deg = float(np.degrees(Rotation.from_matrix(a.r.T @ b.r).magnitude()))
    return mm, deg


@dataclass(frozen=True)
class Extrinsics:
    cam1: Pose  # published cam0_optical_frame -> cam1_optical_frame
    imu0: Pose  # published cam0_optical_frame -> imu0
    source: str  # 'refined' or 'factory'
    # Where both exist: how far apart they are (mm, degrees), and what the refined
    # values read as the factory convention would give (the classic mix-up).
    apart: tuple[float, float] | None
    other_convention: Pose | None


def extrinsics(calib: Calibration) -> Extrinsics:
    factory = factory_pose(*calib.factory['cam0->cam1'])
    imu0 = factory_pose(*calib.factory['cam0->imu0'])
    if calib.refined is None:
        # The factory {t, q} read as OpenCV's {R, T}: the mix-up the other way round.
        r = factory.r
        wrong = refined_pose(r, factory.t)
        return Extrinsics(factory, imu0, 'factory', None, wrong)
    refined = refined_pose(*calib.refined)
    wrong = Pose(calib.refined[0], calib.refined[1])  # R, T taken for a child pose
    return Extrinsics(refined, imu0, 'refined', pose_distance(refined, factory), wrong)


def project_equidistant(x: np.ndarray, k: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Kannala-Brandt / OpenCV fisheye / ROS 'equidistant': points (M, 3) -> pixels (M, 2)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid='ignore', divide='ignore'):
        a, b = x[:, 0] / x[:, 2], x[:, 1] / x[:, 2]
        r = np.hypot(a, b)
        th = np.arctan(r)
        th2 = th * th
        thd = th * (1 + d[0] * th2 + d[1] * th2**2 + d[2] * th2**3 + d[3] * th2**4)
        s = np.where(r > 1e-12, thd / r, 1.0)
    u = k[0, 0] * a * s + k[0, 2]
    v = k[1, 1] * b * s + k[1, 2]
    out = np.stack([u, v], axis=1)
    out[x[:, 2] <= 0] = np.nan
    return out


def project_plumb_bob(x: np.ndarray, k: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Brown-Conrady (ROS 'plumb_bob', D = k1, k2, p1, p2, k3)."""
    x = np.asarray(x, dtype=np.float64)
    k1, k2, p1, p2, k3 = (list(d) + [0.0] * 5)[:5]
    with np.errstate(invalid='ignore', divide='ignore'):
        a, b = x[:, 0] / x[:, 2], x[:, 1] / x[:, 2]
        r2 = a * a + b * b
        radial = 1 + k1 * r2 + k2 * r2**2 + k3 * r2**3
        ad = a * radial + 2 * p1 * a * b + p2 * (r2 + 2 * a * a)
        bd = b * radial + p1 * (r2 + 2 * b * b) + 2 * p2 * a * b
    out = np.stack([k[0, 0] * ad + k[0, 2], k[1, 1] * bd + k[1, 2]], axis=1)
    out[x[:, 2] <= 0] = np.nan
    return out


@dataclass(frozen=True)
class Reprojection:
    joints: int
    median_px: float
    within: float  # fraction within the stated error + TOLERANCE_PX
    stated_median_px: float
    plumb_bob_median_px: float
    pinhole_median_px: float

    @property
    def ok(self) -> bool:
        return self.joints > 0 and self.within >= PASS_FRACTION

    @property
    def far_px(self) -> float:
        """How far a wrong model must land for this check to tell it from the right one."""
        return FAR_FACTOR * max(self.stated_median_px, TOLERANCE_PX)

    @property
    def controls_far(self) -> bool:
        return self.plumb_bob_median_px > self.far_px and self.pinhole_median_px > self.far_px


def reprojection(cam: CameraCalibration, kp3d: np.ndarray, kp2d: np.ndarray,
                 stated: np.ndarray) -> Reprojection:
    """keypoints_3d_cam0_m through cam0's equidistant model against keypoints_2d_cam0_px,
    and the same through plumb_bob with the same four numbers and through no distortion."""
    x = kp3d.reshape(-1, 3).astype(np.float64)
    uv = kp2d.reshape(-1, 2).astype(np.float64)
    err = stated.reshape(-1).astype(np.float64)
    keep = np.all(np.isfinite(x), axis=1) & np.all(np.isfinite(uv), axis=1) & np.isfinite(err)
    x, uv, err = x[keep], uv[keep], err[keep]
    if not len(x):
        return Reprojection(0, float('nan'), 0.0, float('nan'), float('nan'), float('nan'))

    def dist(p: np.ndarray) -> np.ndarray:
        d = np.linalg.norm(p - uv, axis=1)
        return np.where(np.isfinite(d), d, np.inf)
    good = dist(project_equidistant(x, cam.k, cam.d))
    plumb = dist(project_plumb_bob(x, cam.k, np.array([*cam.d, 0.0])))
    pin = dist(project_plumb_bob(x, cam.k, np.zeros(5)))
    return Reprojection(len(x), float(np.median(good)),
                        float(np.mean(good <= err + TOLERANCE_PX)), float(np.median(err)),
                        float(np.median(plumb)), float(np.median(pin)))


def imu_frame_join(frame_t_s: np.ndarray, imu_t_s: np.ndarray, frame_index: np.ndarray,
                   offset_s: float, source_offset: int) -> tuple[float, float]:
    """Fraction of IMU rows whose frame_index (source numbering) names, within one frame,
    the clip frame their t_s + offset falls in; and the same reading frame_index as clip
    numbering (the mix-up)."""
    clip = np.searchsorted(frame_t_s, imu_t_s + offset_s, side='right') - 1
    as_source = np.abs(frame_index - source_offset - clip) <= 1
    as_clip = np.abs(frame_index - clip) <= 1
    return float(as_source.mean()), float(as_clip.mean())


@dataclass(frozen=True)
class GyroCheck:
    """How well the gyro, read as rad/s, explains how gravity turns in the accel."""

    scale: float  # fitted factor on the gyro: 1 for rad/s, ~0.017 for deg/s
    correlation: float  # of predicted and seen turns of gravity (axes: -1..1)
    windows: int

    @property
    def ok(self) -> bool:
        return 0.5 <= self.scale <= 2.0 and self.correlation >= 0.5


GYRO_WINDOW_S = 0.1
GYRO_SMOOTH = 8  # samples averaged against the accelerometer's noise
GYRO_MIN_TURN = 0.02  # m/s^2 RMS per window: less is too still to tell


def gyro_against_accel(t: np.ndarray, accel: np.ndarray, gyro: np.ndarray) -> GyroCheck | None:
    """A fixed world vector (gravity: accel at rest is 'up') turns in the body frame as
    dv/dt = -w x v, w the gyro in rad/s on the same axes. Over windows of GYRO_WINDOW_S:
    how gravity turned in the smoothed accel, against what the gyro predicts; None when
    the IMU turns too little to tell."""
    if len(t) < 4 * GYRO_SMOOTH:
        return None
    kernel = np.ones(GYRO_SMOOTH) / GYRO_SMOOTH
    g = np.stack([np.convolve(accel[:, j], kernel, mode='same') for j in range(3)], axis=1)
    w = np.stack([np.convolve(gyro[:, j], kernel, mode='same') for j in range(3)], axis=1)
    step = np.diff(t)
    rate = -np.cross(w[:-1], g[:-1]) * step[:, None]  # predicted change per sample
    edges = np.searchsorted(t, np.arange(t[GYRO_SMOOTH], t[-GYRO_SMOOTH], GYRO_WINDOW_S))
    seen, said = [], []
    for a, b in zip(edges[:-1], edges[1:]):
        if b - a < 2:
            continue
        seen.append(g[b] - g[a])
        said.append(rate[a:b].sum(axis=0))
    if not seen:
        return None
    m, p = np.array(seen), np.array(said)
    if np.sqrt(np.mean(np.sum(m * m, axis=1))) < GYRO_MIN_TURN:
        return None
    pp, mm, pm = float(np.sum(p * p)), float(np.sum(m * m)), float(np.sum(p * m))
    if pp == 0.0:
        return GyroCheck(float('inf'), 0.0, len(m))
    return GyroCheck(pm / pp, pm / np.sqrt(pp * mm), len(m))


# A stereo pair looks one way: cam1 turned further than this from cam0 is a rotation
# read wrongly (a w, x, y, z quaternion taken for x, y, z, w turns it about 180 degrees).
STEREO_MAX_DEG = 20.0


def conformance_lines(calib: Calibration, ext: Extrinsics, rep: Reprojection | None,
                      accel_norm: float | None,
                      imu_join: tuple[int, float, float] | None = None,
                      failures: list[tuple[str, str]] | None = None,
                      gyro: GyroCheck | None = None) -> list[str]:
    """The lines `info` prints: each check, and what its classic mistake reads.

    `failures` gets (file, check) for each failed check, the file one of 'calibration',
    'hands', 'imu': what convert and play warn about.
    """
    lines: list[str] = []
    ok = True

    def line(good: bool, text: str, would: str = '', source: str = 'calibration') -> None:
        nonlocal ok
        ok = ok and good
        lines.append(f'{"ok  " if good else "FAIL"} {text}'
                     + (f'\n       would read: {would}' if would else ''))
        if not good and failures is not None:
            failures.append((source, text + (f' (would read: {would})' if would else '')))

    if rep is None or rep.joints == 0:
        lines.append('--   no kept hand to project: reprojection not checked')
    elif rep.ok and not rep.controls_far:
        # Small images (a low focal length) put every model within a pixel or two of the
        # 2D keypoints: the data agree, but a wrong model would too, so this is no verdict.
        lines.append(f'--   keypoints_3d_cam0_m through /cam0/camera_info (equidistant) land '
                     f'on keypoints_2d_cam0_px (median {rep.median_px:.2f} px, '
                     f'{100 * rep.within:.1f} % of {rep.joints} joints within their stated '
                     f'error + {TOLERANCE_PX:g} px), but this cannot tell the model: a wrong '
                     f'one lands as close at this focal length (not checked)'
                     f'\n       would read: the same D as plumb_bob median '
                     f'{rep.plumb_bob_median_px:.1f} px; no distortion median '
                     f'{rep.pinhole_median_px:.1f} px (a check needs both above '
                     f'{rep.far_px:.2f} px)')
    else:
        line(rep.ok and rep.controls_far,
             f'keypoints_3d_cam0_m through /cam0/camera_info (equidistant) land on '
             f'keypoints_2d_cam0_px: median {rep.median_px:.2f} px, {100 * rep.within:.1f} % '
             f'of {rep.joints} joints within their stated reprojection error '
             f'(median {rep.stated_median_px:.2f} px) + {TOLERANCE_PX:g} px',
             f'the same D as plumb_bob median {rep.plumb_bob_median_px:.1f} px; '
             f'no distortion median {rep.pinhole_median_px:.1f} px', 'hands')
    x = float(ext.cam1.t[0]) * 1000.0
    base = float(np.linalg.norm(ext.cam1.t)) * 1000.0
    baseline = calib.baseline_mm
    right = x > 0 and (baseline is None or abs(base - baseline) <= 2.0)
    what = ('refined stereo extrinsics (X1 = R X0 + T)' if ext.source == 'refined'
            else 'factory extrinsics (child pose in cam0)')
    apart = '' if ext.apart is None else \
        f'; factory differs by {ext.apart[0]:.2f} mm, {ext.apart[1]:.3f} deg'
    would = ''
    if ext.other_convention is not None:
        wx = float(ext.other_convention.t[0]) * 1000.0
        would = (f'the other convention puts cam1 at x = {wx:+.1f} mm, '
                 f'{"left" if wx < 0 else "right"} of cam0')
        if ext.apart is not None:
            d = pose_distance(ext.other_convention, factory_pose(*calib.factory['cam0->cam1']))
            would += f', {d[0]:.1f} mm / {d[1]:.2f} deg from the factory pose'
    line(right and (ext.apart is None or (ext.apart[0] <= 5.0 and ext.apart[1] <= 1.0)),
         f'cam1 from {what} sits at x = {x:+.1f} mm of cam0 (baseline {base:.2f} mm'
         + (f', baseline_mm {baseline:g}' if baseline is not None else '')
         + f'), right of the left camera{apart}', would)
    turn = float(np.degrees(Rotation.from_matrix(ext.cam1.r).magnitude()))
    would = ''
    if ext.source == 'factory':
        q = np.asarray(calib.factory['cam0->cam1'][1], dtype=float)
        as_wxyz = float(np.degrees(Rotation.from_quat(np.roll(q, -1) / np.linalg.norm(q))
                                   .magnitude()))
        would = f'the quaternion as w, x, y, z turns cam1 {as_wxyz:.1f} deg'
    line(turn <= STEREO_MAX_DEG, f'cam1 looks the way cam0 does: turned {turn:.1f} deg from '
         f'it (a stereo pair: at most {STEREO_MAX_DEG:g} deg; quaternions are x, y, z, w)',
         would)
    if imu_join is not None:
        offset, good, wrong = imu_join
        line(good >= 0.99, f'imu.csv frame_index is source numbering: {100 * good:.1f} % of '
             f'rows name the clip frame of their cam0-clock time + {offset} (within a frame)',
             f'frame_index as clip numbering: {100 * wrong:.1f} % of rows', 'imu')
    if accel_norm is not None:
        line(6.0 <= accel_norm <= 14.0,
             f'median |accel| {accel_norm:.2f} m/s^2: gravity included, in m/s^2 as '
             'documented (in g it would be about 1)',
             f'the same numbers as g: {accel_norm:.2f} g, {accel_norm:.1f} times gravity',
             'imu')
    if gyro is None:
        lines.append('--   gyro units: the IMU turns too little against gravity to tell rad/s '
                     'from deg/s (not checked)')
    else:
        line(gyro.ok, f'gyro in rad/s on the accel axes (the two across gravity): it '
             f'explains how gravity turns in the accel with a factor {gyro.scale:.2f} (correlation {gyro.correlation:.2f}, '
             f'{gyro.windows} windows of {GYRO_WINDOW_S:g} s; 1 is exact)',
             f'the same numbers as deg/s: a factor {gyro.scale * 180 / np.pi:.1f}', 'imu')
    return [f'conformance: {"PASS" if ok else "FAIL"}', *lines]


__all__ = ['Extrinsics', 'GyroCheck', 'Pose', 'Reprojection', 'conformance_lines', 'extrinsics',
           'factory_pose', 'gyro_against_accel', 'imu_frame_join', 'pose_distance', 'project_equidistant', 'project_plumb_bob',
           'refined_pose', 'reprojection']
