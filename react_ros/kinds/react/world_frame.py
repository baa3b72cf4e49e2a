"""Which world frame a React session's poses are in, and what is known not to be corrected.

The release's world is OptiTrack's 2026-05-10 origin. A session whose origin moved has a
correction baked into its published poses (episodes.jsonl `world_frame_offset`, metres);
it is information, never applied again. What the correction leaves unmeasured is stated
per date (format document 7, calib_epoch.WORLD_RESIDUAL) so `info` can bound the error
instead of implying zero. ROS-free.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

REFERENCE_DATE = '2026-05-10'


@dataclass(frozen=True)
class WorldResidual:
    correction_mm: tuple[float, float, float]  # translation the release applied
    unmeasured: tuple[str, ...]  # what remains, each with why it is not corrected


# Dates whose OptiTrack origin was redefined (format document 7). Others: the reference.
WORLD_RESIDUAL = {
    '2026-05-19': WorldResidual(
        (230.0, 0.0, 175.0),
        ('yaw about the table normal: not measured (a +2.4 deg board-outline estimate was '
         'withdrawn: on the reference date the method scattered -1.8 to +3.3 deg)',
         'mocap-to-depth coupling puts the session 20-26 mm from the reference frame, '
         'against an 8.7-11 mm reference-to-reference floor: recorded, not corrected',
         'tilt: none possible (ground plane set with an L-bracket on the table)')),
}


def residual_lines(date: str) -> list[str]:
    """What `info` says about the episode's world frame beyond the offset."""
    res = WORLD_RESIDUAL.get(date)
    if res is None:
        what = 'the reference' if date == REFERENCE_DATE else 'no redefinition declared'
        return [f'world frame of {date}: {what} (OptiTrack, {REFERENCE_DATE} origin); '
                'no residual declared']
    x, y, z = res.correction_mm
    return [f'world frame of {date}: origin redefined mid-collection; the release applied a '
            f'translation-only correction ({x:g}, {y:g}, {z:g}) mm; residual: '
            + '; '.join(res.unmeasured)]


def offset_applied_twice(poses: np.ndarray, offset_m: np.ndarray) -> np.ndarray:
    """The classic mistake: a pose that already carries the correction shifted by it again."""
    out = np.array(poses, dtype=float, copy=True)
    out[:, :3] += np.asarray(offset_m, dtype=float)
    return out


__all__ = ['REFERENCE_DATE', 'WORLD_RESIDUAL', 'WorldResidual', 'offset_applied_twice',
           'residual_lines']
