"""What the end poses are, from the data: which robot link, which quaternion order, which frame.

The format document says only "末端位姿" (end pose) for `endpose/<side>_endpose`; it
states the order x y z qw qx qy qz and the world frame for `entities/pose` alone. RoboTwin
builds the end pose from the arm's end link: the link's world pose times a fixed offset
(a constant rotation, and a shift along the gripper). So the right reading is the one
under which `inverse(link pose) · end pose` stays constant over the episode, for one of
the robot's links. Under the other quaternion order, or read as relative to the robot's
base, that offset wanders with the arm: the check tells the readings apart.

Everything here takes poses as x y z qx qy qz qw (ROS order); `as_stored_xyzw` gives the
other reading of the stored numbers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation


@dataclass(frozen=True)
class Spread:
    """How much inverse(link) · end pose wanders over the rows: the worst row against the first."""

    mm: float
    deg: float
    offset_mm: tuple[float, float, float]  # the offset at the first row, in the link's frame
    offset_rotvec_deg: tuple[float, float, float]

    def within(self, max_mm: float, max_deg: float) -> bool:
        return self.mm <= max_mm and self.deg <= max_deg

    def text(self) -> str:
        return f'{self.mm:.3g} mm / {self.deg:.3g}°'


def as_stored_xyzw(stored: np.ndarray) -> np.ndarray:
    """The stored x y z a b c d read as if a b c d were qx qy qz qw (the other order)."""
    return np.asarray(stored, dtype=np.float64)


def compose(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise pose product a · b (poses x y z qx qy qz qw, (T, 7) or (7,))."""
    ra, rb = Rotation.from_quat(a[..., 3:7]), Rotation.from_quat(b[..., 3:7])
    p = a[..., :3] + ra.apply(b[..., :3])
    return np.concatenate([p, (ra * rb).as_quat()], axis=-1)


def spread(link: np.ndarray, end: np.ndarray) -> Spread:
    """Spread of inverse(link) · end over the rows (both (T, 7), x y z qx qy qz qw)."""
    r_link = Rotation.from_quat(link[:, 3:7])
    rel_p = r_link.inv().apply(end[:, :3] - link[:, :3])
    rel_r = r_link.inv() * Rotation.from_quat(end[:, 3:7])
    mm = float(np.max(np.linalg.norm(rel_p - rel_p[0], axis=1))) * 1000.0
    deg = float(np.max((rel_r[0].inv() * rel_r).magnitude())) * 180.0 / np.pi
    x, y, z = (float(v) * 1000.0 for v in rel_p[0])
    rx, ry, rz = (float(v) for v in np.degrees(rel_r[0].as_rotvec()))
    return Spread(mm, deg, (x, y, z), (rx, ry, rz))


def joint_turns(chain: np.ndarray) -> np.ndarray:
    """(T, n) signed degrees link k has turned about link k-1 since the first row.

    `chain` is (T, n + 1, 7): a base link, then the link each joint turns. A revolute joint
    turns its link about one fixed axis: the angle is measured along the axis of the largest
    turn, so it is the joint's change, up to the axis' sign (the URDF's choice).
    """
    parent = Rotation.from_quat(chain[:, :-1, 3:7].reshape(-1, 4))
    child = Rotation.from_quat(chain[:, 1:, 3:7].reshape(-1, 4))
    t, n = chain.shape[0], chain.shape[1] - 1
    rel = (parent.inv() * child).as_quat().reshape(t, n, 4)
    out = np.zeros((t, n))
    for k in range(n):
        r = Rotation.from_quat(rel[:, k])
        turn = (r[0].inv() * r).as_rotvec()
        size = np.linalg.norm(turn, axis=1)
        if size.max() > 0:
            out[:, k] = np.degrees(turn @ (turn[np.argmax(size)] / size.max()))
    return out


def joint_error_deg(turned: np.ndarray, q: np.ndarray) -> float:
    """Worst |turn - change of q| (degrees) over rows and joints, each joint's sign free."""
    change = np.degrees(q - q[0])
    per_joint = np.minimum(np.max(np.abs(turned - change), axis=0, initial=0.0),
                           np.max(np.abs(turned + change), axis=0, initial=0.0))
    return float(np.max(per_joint, initial=0.0))


def still(poses: np.ndarray, max_mm: float, max_deg: float) -> bool:
    """Whether a (T, 7) pose track stays put (a robot's base)."""
    return spread(poses[:1].repeat(len(poses), axis=0), poses).within(max_mm, max_deg)


__all__ = ['Spread', 'as_stored_xyzw', 'compose', 'joint_error_deg', 'joint_turns', 'spread',
           'still']
