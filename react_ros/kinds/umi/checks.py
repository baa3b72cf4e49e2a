"""The UMI conformance report: each convention checked, and what its classic mistake reads.

Each line says what the episode holds under the reading react_ros uses and, on a
"would read" line, what the same data gives under the mistake the format
document warns about. ROS-free.
"""
from __future__ import annotations

import math

import numpy as np

TICKS = 16384  # the gripper encoder's 14 bits: 0..16383
CAMERA_HZ = 60.0


class Report:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.failures: list[str] = []

    def line(self, good: bool, text: str, would: str = '') -> None:
        self.lines.append(f'{"ok  " if good else "FAIL"} {text}'
                          + (f'\n       would read: {would}' if would else ''))
        if not good:
            self.failures.append(text)

    def skipped(self, text: str) -> None:
        self.lines.append(f'--   {text}')


def tracking_lines(rep: Report, topic: str, body: str, total: int, valid: int, lost: int,
                   why: dict[str, int], offsets: tuple[float, float]) -> None:
    """`valid` of `total` poses published, `lost` of them kept off by the status alone;
    `why` counts the status's reasons."""
    dist, angle = offsets
    reasons = '; '.join(f'{r}: {n}' for r, n in sorted(why.items()))
    rep.line(True, f'tracking status decides validity: {topic} {valid} of {total} poses '
             f'published ({body}.position_valid and orientation_valid)'
             + (f', not: {reasons}' if reasons else ''),
             f'the pose message alone (no status): {lost} more poses on /tf, the body jumping '
             f'up to {dist:.3f} m / {angle:.0f} deg from its last valid pose' if lost else
             'the pose message alone: the same (no tracking loss in this episode)')


def gripper_lines(rep: Report, joint: str, topic: str, positions: np.ndarray,
                  limits: tuple[float, float] | None) -> None:
    """Radians within the URDF joint's limits; a ticks reading named for what it is."""
    if len(positions) == 0:
        rep.skipped(f'{topic}: no gripper values')
        return
    lo, hi = float(np.min(positions)), float(np.max(positions))
    ticks_lo, ticks_hi = (round(v * TICKS / (2 * math.pi)) for v in (lo, hi))
    looks_like_ticks = hi > 2 * math.pi and bool(np.all(positions == np.round(positions))) \
        and lo >= 0 and hi < TICKS
    if limits is None:
        rep.skipped(f'{topic}: {lo:.4g}..{hi:.4g}; URDF joint {joint} has no limits to check')
        return
    good = limits[0] - 1e-6 <= lo and hi <= limits[1] + 1e-6
    text = (f'{topic} in radians: {lo:.4g}..{hi:.4g} rad, within {joint} limits '
            f'[{limits[0]:g}, {limits[1]:g}]' if good else
            f'{topic}: {lo:.6g}..{hi:.6g} outside {joint} limits [{limits[0]:g}, {limits[1]:g}] '
            'rad' + (' (integers within 0..16383: raw encoder ticks, not radians)'
                     if looks_like_ticks else ''))
    would = (f'as 14-bit ticks (0..16383) the same angles are {ticks_lo}..{ticks_hi}, '
             f'taken for radians {ticks_hi / limits[1]:.0f}x the joint limit' if good else
             f'as ticks: {lo * 2 * math.pi / TICKS:.4g}..{hi * 2 * math.pi / TICKS:.4g} rad'
             if looks_like_ticks else '')
    rep.line(good, text, would)


def video_lines(rep: Report, topic: str, header_ns: np.ndarray, video_us: np.ndarray | None
                ) -> None:
    """video.stamp is µs since the first frame (not a frame index); the videos are VFR."""
    n = len(header_ns)
    if n < 2:
        rep.skipped(f'{topic}: fewer than 2 frame pointers')
        return
    offset_us = (header_ns - header_ns[0]) // 1000
    fixed_rate = np.arange(n) * 1e9 / CAMERA_HZ
    drift_ms = float(np.max(np.abs((header_ns - header_ns[0]) - fixed_rate))) / 1e6
    if video_us is None:
        rep.skipped(f'{topic}: no video.stamp values')
    else:
        off = np.abs(video_us - offset_us)
        rep.line(bool(off.max() <= 1), f'{topic}: video.stamp = header.stamp - first frame\'s, '
                 f'in µs, on {int(np.sum(off <= 1))} of {n} pointers',
                 f'video.stamp as a frame index: pointer 1 is frame {int(video_us[1])}, '
                 f'pointer {n - 1} frame {int(video_us[-1])} of a {n}-frame video')
    rep.line(True, f'{topic}: frame n = pointer n in log-time order, stamped with its '
             'header.stamp (variable frame rate)',
             f'frame n at n / {CAMERA_HZ:g} Hz: up to {drift_ms:.1f} ms off the capture time')


def camera_lines(rep: Report, name: str, k: list[float], p: list[float]) -> None:
    """P is derived from the camera's own K, row-major: fx, cx = k[0], k[2]; fy, cy = k[4],
    k[5]."""
    want = (k[0], k[2], k[4], k[5])
    got = (p[0], p[2], p[5], p[6])
    good = all(abs(a - b) <= 1e-6 * max(1.0, abs(a)) for a, b in zip(want, got))
    rep.line(good, f'{name}: P (fx {got[0]:.2f}, cx {got[1]:.2f}, fy {got[2]:.2f}, '
             f'cy {got[3]:.2f}) ' + ('is' if good else 'is not') + ' its own K, row-major',
             f'K column-major: cx {k[6]:g}, cy {k[7]:g} (the image corner)')


def mask_lines(rep: Report, topic: str, buttons: np.ndarray, touches: np.ndarray) -> None:
    for name, masks in (('buttons', buttons), ('touches', touches)):
        bits = max((bin(int(m)).count('1') for m in masks), default=0)
        most = int(max(masks, default=0))
        rep.line(True, f'{topic}: input {name} read as a bitmask: at most {bits} '
                 f'set at once, one Joy button each',
                 f'{name} as a count: up to {most} pressed' if most != bits else
                 f'{name} as a count: the same here (no two bits set at once)')


__all__ = ['Report', 'TICKS', 'camera_lines', 'gripper_lines', 'mask_lines', 'tracking_lines',
           'video_lines']
