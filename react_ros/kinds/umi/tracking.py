"""The UMI tracking status: a JSON document on a String, read into arrays once.

The status, not the pose message, says whether a pose is real: through a tracking
loss the pose topics keep logging whatever the headset reports (finite unit
quaternions, so no norm check catches them). Each pose is joined to the status
logged nearest to it (both topics are logged by the same recorder at the
tracker's rate) and is publishable only where its body's position_valid and
orientation_valid are both true and the status is not stale.

The flags' bit values are OpenXR's (location_flags 15 = orientation valid 1,
position valid 2, orientation tracked 4, position tracked 8; velocity_flags 3 =
linear 1, angular 2): the sample writes them so, velocities are published only
where both velocity bits are set.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np

from react_ros.errors import DatasetFormatError

BODIES = ('head', 'left_grip', 'left_aim', 'right_grip', 'right_aim')
TRIGGERS = ('left_index_trigger', 'left_grip_trigger', 'right_index_trigger',
            'right_grip_trigger')
JOYSTICKS = ('left_joystick', 'right_joystick')
# sensor_msgs/Joy axes: the four triggers, then each joystick's x and y
JOY_AXES = (*TRIGGERS, 'left_joystick.x', 'left_joystick.y', 'right_joystick.x',
            'right_joystick.y')
MASK_BITS = 32  # Joy.buttons: bit i of `buttons` at i, bit i of `touches` at MASK_BITS + i
VELOCITY_VALID = 1 | 2  # OpenXR linear | angular velocity valid


@dataclass
class TrackingStatus:
    """Every status of an episode, in log-time order, as arrays."""

    log_ns: np.ndarray  # int64 (n,)
    valid: dict[str, np.ndarray]  # body -> bool (n,): position and orientation valid, not stale
    lost: dict[str, list[str]]  # body -> per status: what was not valid ('' where valid)
    axes: np.ndarray  # float32 (n, 8), JOY_AXES
    buttons: np.ndarray  # int64 (n,) bitmask
    touches: np.ndarray  # int64 (n,) bitmask
    twist: dict[str, np.ndarray]  # body -> float64 (n, 6): linear x y z, angular x y z
    twist_ok: dict[str, np.ndarray]  # body -> bool (n,): both velocity bits set


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)


def _vector(v: Any, n: int) -> TypeGuard[list[Any]]:
    return isinstance(v, list) and len(v) == n and all(_number(x) for x in v)


def read_status(texts: list[str], log_ns: list[int], path: Path, topic: str
                ) -> TrackingStatus:
    """Parse every status payload; a payload that is not the documented JSON is refused."""
    n = len(texts)
    valid = {b: np.zeros(n, bool) for b in BODIES}
    lost: dict[str, list[str]] = {b: [] for b in BODIES}
    axes = np.zeros((n, len(JOY_AXES)), np.float32)
    masks = np.zeros((n, 2), np.int64)
    twist = {b: np.zeros((n, 6)) for b in BODIES}
    twist_ok = {b: np.zeros(n, bool) for b in BODIES}
    for i, text in enumerate(texts):
        def bad(what: str) -> DatasetFormatError:
            return DatasetFormatError(path, f'message {i} on {topic}: {what}')
        try:
            doc = json.loads(text)
        except ValueError:
            raise bad('not a JSON document (the tracking status is JSON, not a status '
                      'word)') from None
        if not isinstance(doc, dict):
            raise bad('not a JSON object')
        stale = doc.get('stale', False)
        if not isinstance(stale, bool):
            raise bad(f'stale is {stale!r}, not true/false')
        for b in BODIES:
            body = doc.get(b)
            if not isinstance(body, dict):
                raise bad(f'no {b!r} body')
            pv, ov = body.get('position_valid'), body.get('orientation_valid')
            if not isinstance(pv, bool) or not isinstance(ov, bool):
                raise bad(f'{b}.position_valid/orientation_valid are not true/false')
            valid[b][i] = pv and ov and not stale
            lost[b].append(', '.join(w for w, gone in (('stale', stale), ('position', not pv),
                                                        ('orientation', not ov)) if gone))
            lin, ang, flags = (body.get(k) for k in ('linear_velocity', 'angular_velocity',
                                                      'velocity_flags'))
            if not (_vector(lin, 3) and _vector(ang, 3) and isinstance(flags, int)):
                raise bad(f'{b}: linear_velocity/angular_velocity are not 3 numbers each, '
                          'or velocity_flags is not an integer')
            twist[b][i] = [*lin, *ang]
            twist_ok[b][i] = (flags & VELOCITY_VALID) == VELOCITY_VALID and not stale
        inputs = doc.get('input')
        if not isinstance(inputs, dict):
            raise bad('no input block')
        if not all(_number(inputs.get(k)) for k in TRIGGERS):
            raise bad(f'input triggers {", ".join(TRIGGERS)} are not all numbers')
        if not all(_vector(inputs.get(k), 2) for k in JOYSTICKS):
            raise bad('input joysticks are not [x, y] pairs')
        axes[i] = [*(inputs[k] for k in TRIGGERS), *inputs['left_joystick'],
                   *inputs['right_joystick']]
        for j, key in enumerate(('buttons', 'touches')):
            mask = inputs.get(key)
            if isinstance(mask, bool) or not isinstance(mask, int) or not \
                    0 <= mask < 1 << MASK_BITS:
                raise bad(f'input {key} is {mask!r}, not a {MASK_BITS}-bit mask')
            masks[i, j] = mask
    return TrackingStatus(np.asarray(log_ns, np.int64), valid, lost, axes, masks[:, 0],
                          masks[:, 1], twist, twist_ok)


def mask_bits(mask: int) -> list[int]:
    return [(int(mask) >> b) & 1 for b in range(MASK_BITS)]


def nearest_status(status_ns: np.ndarray, pose_ns: np.ndarray, max_gap_ns: int) -> np.ndarray:
    """Index of the status logged nearest each pose; -1 where none is within max_gap_ns."""
    if len(status_ns) == 0:
        return np.full(len(pose_ns), -1)
    right = np.clip(np.searchsorted(status_ns, pose_ns), 0, len(status_ns) - 1)
    left = np.clip(right - 1, 0, len(status_ns) - 1)
    pick = np.where(np.abs(status_ns[left] - pose_ns) <= np.abs(status_ns[right] - pose_ns),
                    left, right)
    return np.where(np.abs(status_ns[pick] - pose_ns) <= max_gap_ns, pick, -1)


def pose_validity(status: TrackingStatus, body: str, pose_log_ns: np.ndarray,
                  max_gap_ns: int) -> tuple[np.ndarray, dict[str, int]]:
    """Mask of the poses the status says are valid, and why the others are not (counts)."""
    idx = nearest_status(status.log_ns, pose_log_ns, max_gap_ns)
    ok = np.zeros(len(idx), bool)
    ok[idx >= 0] = status.valid[body][idx[idx >= 0]]
    why: dict[str, int] = {}
    for i in np.flatnonzero(~ok):
        reason = (f'{body} {status.lost[body][idx[i]]} not valid' if idx[i] >= 0
                  else f'no tracking status within {max_gap_ns / 1e6:g} ms')
        why[reason] = why.get(reason, 0) + 1
    return ok, why


def invalid_pose_offsets(poses: np.ndarray, ok: np.ndarray) -> tuple[float, float]:
    """How far the rejected poses are from the last valid one before each: (m, deg), max.

    What publishing them would read: the body jumping this far and back.
    """
    dist, angle = 0.0, 0.0
    last = None
    for p, good in zip(poses, ok):
        if good:
            last = p
        elif last is not None:
            dist = max(dist, float(np.linalg.norm(p[:3] - last[:3])))
            dot = min(1.0, abs(float(np.dot(p[3:7], last[3:7]))))
            angle = max(angle, float(np.degrees(2 * np.arccos(dot))))
    return dist, angle


__all__ = ['BODIES', 'JOY_AXES', 'MASK_BITS', 'TrackingStatus', 'invalid_pose_offsets',
           'mask_bits', 'nearest_status', 'pose_validity', 'read_status']
