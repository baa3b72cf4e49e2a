"""The React conformance report: each convention checked, and what its classic mistake reads.

A check that only ever says "ok" says nothing, so every line also prints what
the same episode would have read under the mistake it guards against (format
document, 6b): quaternions read as wxyz, positions taken for millimetres, the
poses' up axis converted without the calibration's, force averaged over every
row, frames converted to seconds at an assumed 30 Hz. ROS-free.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from react_ros.kinds.react.parquet_video import (FINGERPRINT_TOLERANCE_PX, MAX_QUAT_NORM_ERROR,
                                             MM_SUSPECT_M, POSE_COLUMNS, SIDES,
                                             STIFFNESS_N_PER_M, Table, convert_poses_y_to_z,
                                             fingerprint_problem,
                                             gel_centres_world, project, virtual_targets)
from react_ros.kinds.react.files import Camera, Gel, fingerprint_error_px
from react_ros.kinds.react.world_frame import offset_applied_twice, residual_lines

ASSUMED_HZ = 30.0
# A subset that starts this many rows in (one second at 30 Hz): what counting the fingerprint's
# rows from a --segment's first row instead of the table's would read.
SUBSET_ROWS = 30
MAX_ROWS = 200  # rows projected per check: plenty for a median, cheap for long episodes
LOCAL_MINUS_Y = np.array([0.0, -1.0, 0.0])  # the stored targets' gel axis (format document 2)
TARGET_TOLERANCE_M = 1e-4  # a stored target further than 0.1 mm from pose + F/k (-y): not -y


def _median_shift_px(ref: np.ndarray, cams: dict[str, Camera], gel: Gel,
                     wrong: np.ndarray) -> float:
    """Worst camera's median pixel distance between gel centres of `ref` and `wrong` poses."""
    worst = 0.0
    for cam in cams.values():
        a = project(cam.t_mocap_to_cam, cam.k, cam.dist, gel_centres_world(ref, gel.centre_mm))
        with np.errstate(all='ignore'):
            b = project(cam.t_mocap_to_cam, cam.k, cam.dist,
                        gel_centres_world(wrong, gel.centre_mm))
        d = np.linalg.norm(a - b, axis=1)
        d = d[np.isfinite(d)]
        if len(d):
            worst = max(worst, float(np.median(d)))
    return worst


def _angle_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise angle between Nx3 directions (NaN where either is zero or NaN)."""
    with np.errstate(invalid='ignore', divide='ignore'):
        cos = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


def gel_lines(table: Table, poses: dict[str, np.ndarray], targets: dict[str, np.ndarray],
              gels: dict[str, Gel]) -> list[tuple[bool, str, str]]:
    """(ok, text, would read) of the force direction, its virtual target and the gel calibration.

    The stored force_*_target_pose was built along local -y; recomputing it from the
    pose and force along -y must give it back. Along dual_ball it moves: that move, and
    the angle the stored target would make with a dual_ball force, is what mixing the two
    reads.
    """
    worst, moved, apart = 0.0, [], []
    for s in SIDES:
        pose, f = poses[f'sensor_{s}_pose'], table.force_n[s]
        fresh = table.is_new[s] & np.isfinite(f) & np.all(np.isfinite(targets[s]), axis=1)
        if not fresh.any():
            continue
        minus_y = virtual_targets(pose[fresh], f[fresh], LOCAL_MINUS_Y)
        dual = virtual_targets(pose[fresh], f[fresh], gels[s].axis_in_rigid)
        dev = np.linalg.norm(targets[s][fresh, :3] - minus_y[:, :3], axis=1)
        if np.isfinite(dev).any():
            worst = max(worst, float(np.nanmax(dev)))
        shift_mm = 1000 * np.linalg.norm(dual[:, :3] - minus_y[:, :3], axis=1)
        pressed = f[fresh] > 0
        if pressed.any():
            moved.append(f'{s} median {np.nanmedian(shift_mm[pressed]):.2f} mm (max '
                         f'{np.nanmax(shift_mm[pressed]):.2f} mm)')
            ang = _angle_deg(targets[s][fresh, :3][pressed] - pose[fresh, :3][pressed],
                             dual[pressed, :3] - pose[fresh, :3][pressed])
            apart.append(f'{s} {np.nanmedian(ang):.1f} deg')
    out = [(worst <= TARGET_TOLERANCE_M,
            f'force_*_target_pose = pose + F/k along local -y to {1000 * worst:.2g} mm (k = '
            f'{STIFFNESS_N_PER_M / 1000:g} N/mm); --gel-axis dual_ball recomputes it along '
            'gel_axis_in_rigid',
            'the stored target with a dual_ball force: ' + ', '.join(apart)
            + ' between force and target; recomputed, the target moves ' + ', '.join(moved))]
    axes = ', '.join(f'{s} {_angle_deg(gels[s].axis_in_rigid[None], LOCAL_MINUS_Y[None])[0]:.1f}'
                     ' deg' for s in SIDES)
    depth = ', '.join(f'{s} {gels[s].depth_offset_mm:g}' for s in SIDES)
    backed = [s for s in SIDES if gels[s].depth_offset_mm == 0.0]
    note = (f'; {", ".join(backed)}: ball centre never backed off by a ball radius to the gel '
            'surface (a known defect, format document 2)') if backed else ''
    far = ', '.join(f'{s} {np.linalg.norm(gels[s].centre_mm):.1f} mm' for s in SIDES)
    out.append((True, f'gel calibration: gel_axis_in_rigid from local -y: {axes}; '
                f'depth_offset_mm {depth}{note}',
                f'force applied at the sensor origin instead of gel_<side>: off the gel centre '
                f'by {far} (torque wrong by F x that lever)'))
    return out


def world_offset_line(ref: np.ndarray, cams: dict[str, Camera], gel: Gel,
                      offset_m: np.ndarray | None) -> tuple[bool, str, str]:
    if offset_m is None:
        return True, 'world_frame_offset: none in episodes.jsonl', ''
    twice = offset_applied_twice(ref, offset_m)
    return (True, f'world_frame_offset {np.round(offset_m, 4).tolist()} m (episodes.jsonl) is '
            'already in the published poses: not applied again',
            f'offset applied twice {_median_shift_px(ref, cams, gel, twice):.0f} px')


def _subset_error_px(poses: dict[str, np.ndarray], gels: dict[str, Gel],
                     cams: dict[str, Camera], fp: dict[str, Any]) -> float:
    """The fingerprint's worst error when its rows are counted in a subset of the table that
    starts SUBSET_ROWS rows in (a --segment, rows dropped by a filter): the fingerprint's row
    numbers are the whole table's."""
    sensor = poses[f'sensor_{fp["sensor"]}_pose']
    shifted = np.roll(sensor, -min(SUBSET_ROWS, max(1, len(sensor) // 2)), axis=0)  # short: half
    errs = [fingerprint_error_px(shifted, gels[fp['sensor']], c, fp) for c in cams.values()]
    known = [e for e in errs if e is not None]
    return max(known) if known else float('nan')


def conformance_report(table: Table, poses: dict[str, np.ndarray], cams: dict[str, Camera],
                       gels: dict[str, Gel], poses_up: str, declared: bool,
                       targets: dict[str, np.ndarray] | None = None,
                       offset_m: np.ndarray | None = None, date: str = '') -> list[str]:
    lines: list[str] = []
    ok = True

    def line(good: bool, text: str, would: str = '') -> None:
        nonlocal ok
        ok = ok and good
        lines.append(f'{"ok  " if good else "FAIL"} {text}' + (f'\n       would read: {would}'
                                                               if would else ''))

    sensor = poses['sensor_left_pose']
    finite = np.all(np.isfinite(sensor), axis=1)
    rows = np.flatnonzero(finite)
    rows = rows[np.linspace(0, len(rows) - 1, min(MAX_ROWS, len(rows))).astype(int)] \
        if len(rows) else rows
    ref = sensor[rows]
    gel = gels['left']

    all_poses = np.concatenate([poses[c] for c in POSE_COLUMNS])
    good = all_poses[np.all(np.isfinite(all_poses), axis=1)]
    dev = float(np.abs(np.linalg.norm(good[:, 3:7], axis=1) - 1).max()) if len(good) else 0.0
    wxyz = ref.copy()
    wxyz[:, 3:7] = ref[:, [4, 5, 6, 3]]  # the stored x, y, z, w taken for w, x, y, z
    wxyz[:, 3:7] /= np.linalg.norm(wxyz[:, 3:7], axis=1, keepdims=True)
    line(dev <= MAX_QUAT_NORM_ERROR,
         f'quaternion norm deviates by at most {dev:.3g} from 1 (xyzw, scalar last)',
         f'quaternion as wxyz {_median_shift_px(ref, cams, gel, wxyz):.0f} px')

    med = float(np.median(np.linalg.norm(good[:, :3], axis=1))) if len(good) else 0.0
    mm = ref.copy()
    mm[:, :3] = ref[:, :3] / 1000.0  # metres taken for millimetres and divided again
    line(med <= MM_SUSPECT_M, f'median |position| = {med:.3f}; expected metres, not millimetres',
         f'millimetres {_median_shift_px(ref, cams, gel, mm):.0f} px')

    cam_axes = ', '.join(f'{c.name} {c.up_axis}' + ('' if c.declared else ' (no key)')
                         + (' converted' if c.converted else '') for c in cams.values())
    other = convert_poses_y_to_z(ref)
    line(True, f'up axis: poses {poses_up} (' + ('twm.world_frame' if declared else
                                                 'no twm.world_frame: release default')
         + f'), published z; cameras {cam_axes}',
         f'other up-axis (poses converted, calibration not) '
         f'{_median_shift_px(ref, cams, gel, other):.0f} px')

    fp = table.world_frame.get('fingerprint')
    if fp is not None and fingerprint_problem(fp, table.n) is None:
        errs = [fingerprint_error_px(poses[f'sensor_{fp["sensor"]}_pose'], gels[fp['sensor']],
                                     c, fp) for c in cams.values()]
        known = [e for e in errs if e is not None]
        if known:
            line(max(known) <= FINGERPRINT_TOLERANCE_PX,
                 f'worst-camera fingerprint error {max(known):.2f} px '
                 f'(tolerance {FINGERPRINT_TOLERANCE_PX:g})',
                 f'a row subset {_subset_error_px(poses, gels, cams, fp):.1f} px')
    else:
        lines.append('--   no usable projection fingerprint stored in twm.world_frame')

    parts, would = [], []
    for s in SIDES:
        new = table.is_new[s]
        f = table.force_n[s]
        parts.append(f'{s} {100 * new.mean():.1f} % ({int(new.sum())}/{table.n} rows)')
        fresh = f[new & np.isfinite(f)]
        every = f[np.isfinite(f)]
        if len(fresh):
            would.append(f'{s} {every.mean():.2f} N vs {fresh.mean():.2f} N over fresh rows')
    line(True, 'fresh tactile (tactile_*_is_new): ' + ', '.join(parts)
         + '; force and tactile published on those rows only',
         'force averaged over every row: ' + '; '.join(would))

    # is_new and force_*_source_frame say the same thing twice: a fresh row is its
    # own source, a stale row repeats an earlier one. A flag column coerced from
    # text ("false" read as True) makes every row fresh, and this line fails.
    disagree, stale = 0, 0
    for s in SIDES:
        own = table.source_frame[s] == np.arange(table.n)
        disagree += int((table.is_new[s] != own).sum())
        stale += int((~own).sum())
    line(disagree == 0, 'tactile_*_is_new agrees with force_*_source_frame (a fresh row is its '
         f'own source) {"on every row" if not disagree else f"except on {disagree} rows"}',
         f'is_new taken as true everywhere: {stale} stale rows published as fresh')

    k = STIFFNESS_N_PER_M / 1000.0
    dev_mm, stale_k, unfresh = 0.0, 0.0, 0
    for s in SIDES:
        f, pen = table.force_n[s], table.penetration_mm[s]
        both = np.isfinite(f) & np.isfinite(pen)
        if both.any():
            dev_mm = max(dev_mm, float(np.abs(pen[both] - f[both] / k).max()))
            stale_k = max(stale_k, float(np.abs(pen[both] - f[both] / 1.0).max()))
        src = table.source_frame[s]
        inside = (src >= 0) & (src <= np.arange(table.n))
        unfresh += int((~inside).sum()) + int((~table.is_new[s][src[inside]]).sum())
    line(dev_mm <= 1e-6, f'penetration_mm = force / {k:g} N/mm (stiffness defined once) to '
         f'{dev_mm:.2g} mm; force_*_source_frame names a fresh, earlier tactile row '
         f'{"everywhere" if not unfresh else f"except on {unfresh} rows"}',
         f'a hard-coded k = 1 N/mm, off by up to {stale_k:.2f} mm')

    ts = table.timestamp_s
    if table.n > 1:
        hz = 1.0 / np.diff(ts)
        span = ts[-1] - ts[0]
        assumed = (table.n - 1) / ASSUMED_HZ
        line(True, f'frame rate {hz.min():.1f}-{hz.max():.1f} Hz (median {np.median(hz):.2f} Hz) '
             'from timestamp',
             f'assuming {ASSUMED_HZ:g} Hz, the last row at {assumed:.3f} s instead of '
             f'{span:.3f} s ({1000 * (assumed - span):+.0f} ms)')
    for gel_line in gel_lines(table, poses, targets or table.target, gels):
        line(*gel_line)
    line(*world_offset_line(ref, cams, gel, offset_m))
    if date:
        lines.extend(f'--   {text}' for text in residual_lines(date))
    return [f'conformance: {"PASS" if ok else "FAIL"}', *lines]
