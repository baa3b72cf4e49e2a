"""One rule for invalid poses, for every adapter.

A pose with a NaN or infinite value, a zero quaternion, or a quaternion whose
norm is further than a tolerance from 1 is never published (INTERFACE.md 2).
What happens to the episode is the adapter's stated policy, per fault: its rows
are dropped (counted per pose source, one warning each, shown by `info`), or
the episode is refused with the file and the first bad row named.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from react_ros.errors import DatasetFormatError

NON_FINITE = 'NaN or infinite'
ZERO_QUATERNION = 'zero quaternion'
NON_UNIT = 'non-unit quaternion'
FAULTS = (NON_FINITE, ZERO_QUATERNION, NON_UNIT)


def pose_faults(poses: ArrayLike, max_norm_error: float) -> np.ndarray:
    """Per row of Nx7 [x, y, z, qx, qy, qz, qw]: '' where publishable, else its fault.

    A row has one fault, the first of FAULTS that applies (a NaN quaternion
    has no meaningful norm; a zero one is how some recorders write "lost").
    """
    p = np.asarray(poses, dtype=float).reshape(-1, 7)
    with np.errstate(invalid='ignore', over='ignore'):
        norms = np.linalg.norm(p[:, 3:7], axis=1)
        faults = np.where(np.abs(norms - 1.0) > max_norm_error, NON_UNIT, '').astype(object)
    faults[norms == 0.0] = ZERO_QUATERNION
    faults[~np.all(np.isfinite(p), axis=1)] = NON_FINITE
    return faults


@dataclass(frozen=True)
class PosePolicy:
    """What an adapter does with invalid poses: faults in `refuse` refuse the episode,
    the others drop their rows."""

    max_norm_error: float
    refuse: frozenset[str] = frozenset()


@dataclass
class PoseRule:
    """The rule applied to each pose source of one episode, and what it kept off the wire.

    `warnings` may be the adapter's own list; `counts` (source -> rows not
    published) is what Episode.invalid_poses carries.
    """

    policy: PosePolicy
    warnings: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def check(self, name: str, poses: ArrayLike, path: Path, unit: str = 'row',
              where: str = '') -> np.ndarray:
        """Mask of the publishable rows of `poses`, from the pose source `name` in `path`.

        Raises DatasetFormatError where the policy refuses a fault; `unit` names a
        row in messages ('row', 'message'), `where` says where it is not published.
        """
        p = np.asarray(poses, dtype=float).reshape(-1, 7)
        faults = pose_faults(p, self.policy.max_norm_error)
        refused = np.isin(faults, list(self.policy.refuse))
        if refused.any():
            row = int(np.argmax(refused))
            fault = faults[row]
            detail = fault if fault != NON_UNIT else \
                f'quaternion norm {np.linalg.norm(p[row, 3:7]):.4f}, not a unit quaternion'
            raise DatasetFormatError(path, f'{name} {unit} {row}: {detail} '
                                     f'({int(refused.sum())} such {unit}s)')
        bad = faults != ''
        if bad.any():
            n = int(bad.sum())
            self.counts[name] = self.counts.get(name, 0) + n
            kinds = Counter(faults[bad].tolist())
            what = ', '.join(f'{kinds[f]} {f}' for f in FAULTS if kinds[f])
            self.warnings.append(f'{path.name}: {name}: {n} pose(s) not published{where} '
                                 f'({what})')
        return ~bad


__all__ = ['FAULTS', 'NON_FINITE', 'NON_UNIT', 'PosePolicy', 'PoseRule', 'ZERO_QUATERNION',
           'pose_faults']
