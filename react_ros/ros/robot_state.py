"""What robot_state_publisher derives from a URDF and joint states, as messages.

Same rules as the real node: fixed joints go out once on /tf_static, movable
joints (revolute, continuous, prismatic) on /tf for every JointState that names
them, a mimic joint only when the joint it mimics is in that JointState, and
floating/planar joints never (their poses come from the data).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
from geometry_msgs.msg import TransformStamped
from scipy.spatial.transform import Rotation
from std_msgs.msg import String

from react_ros.formats.urdf import Joint, Robot, parse_urdf
from react_ros.ros.msgs import to_ns
from react_ros.ros.tf import tf_message, transform_stamped
from react_ros.streams import Role, Stream

MOVABLE = ('revolute', 'continuous', 'prismatic')
# JointStates turned into transforms this many at a time: a scipy Rotation call costs
# ~20 us however many rotations it holds, so one call per joint per block, not per message.
BLOCK = 64

# (joint names, positions, stamp in ns) of one JointState
JointState = tuple[Sequence[str], Sequence[float], int]


@dataclass(frozen=True)
class _Origin:
    translation: np.ndarray
    rotation: Rotation


def _origin(joint: Joint) -> _Origin:
    # URDF rpy: roll about fixed X, then pitch about fixed Y, then yaw about fixed
    # Z, i.e. R = Rz(yaw) Ry(pitch) Rx(roll) -- scipy's extrinsic 'xyz'.
    return _Origin(np.asarray(joint.xyz, dtype=float),
                   Rotation.from_euler('xyz', joint.rpy))


class RobotModel:
    """A parsed URDF ready to turn joint positions into transforms."""

    def __init__(self, robot: Robot, urdf_text: str) -> None:
        self.robot = robot
        self.urdf_text = urdf_text
        self._origins = {name: _origin(j) for name, j in robot.joints.items()}
        self.fixed = [j for j in robot.joints.values() if j.type == 'fixed']
        self.movable = {j.name: j for j in robot.joints.values() if j.type in MOVABLE}
        self.mimics = {name: j for name, j in self.movable.items() if j.mimic is not None}

    @classmethod
    def from_urdf(cls, text: str, source: Path) -> 'RobotModel':
        return cls(parse_urdf(text, source), text)

    def joint_transform(self, joint: Joint, position: float, t_ns: int) -> TransformStamped:
        translations, quats = self._poses(joint, np.array([float(position)]))
        return transform_stamped(joint.parent, joint.child, t_ns, translations[0], quats[0])

    def _poses(self, joint: Joint, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The child's translations (n, 3) and quaternions (n, 4, x y z w) in the parent
        frame at each of the joint's `positions` (n,)."""
        origin = self._origins[joint.name]
        moves = np.asarray(joint.axis, dtype=float) * positions[:, None]
        n = len(positions)
        if joint.type == 'prismatic':
            return (origin.translation + origin.rotation.apply(moves),
                    np.tile(origin.rotation.as_quat(), (n, 1)))
        if joint.type in ('revolute', 'continuous'):
            return (np.tile(origin.translation, (n, 1)),
                    (origin.rotation * Rotation.from_rotvec(moves)).as_quat())
        return np.tile(origin.translation, (n, 1)), np.tile(origin.rotation.as_quat(), (n, 1))

    def static_transforms(self, t_ns: int) -> list[TransformStamped]:
        return [self.joint_transform(j, 0.0, t_ns) for j in self.fixed]

    def _positions(self, names: Sequence[str], positions: Sequence[float]) -> dict[str, float]:
        """The movable joints' positions a JointState gives, mimic joints included."""
        values: dict[str, float] = {}
        for name, q in zip(names, positions):
            if name in self.movable:
                values[name] = float(q)
        for name, joint in self.mimics.items():
            mimic = joint.mimic
            if mimic is not None and mimic.joint in values:
                values[name] = mimic.multiplier * values[mimic.joint] + mimic.offset
        return values

    def joint_transforms(self, names: Sequence[str], positions: Sequence[float],
                         t_ns: int) -> list[TransformStamped]:
        return self.transforms_of([(names, positions, t_ns)])[0]

    def transforms_of(self, states: Sequence[JointState]) -> list[list[TransformStamped]]:
        """joint_transforms of each state, with one Rotation call per joint for them all."""
        values = [self._positions(names, positions) for names, positions, _ in states]
        per_joint: dict[str, list[float]] = {}
        for v in values:
            for name, q in v.items():
                per_joint.setdefault(name, []).append(q)
        poses = {name: self._poses(self.movable[name], np.array(qs))
                 for name, qs in per_joint.items()}
        used = dict.fromkeys(per_joint, 0)  # each joint's poses taken so far, in state order
        out = []
        for (_, _, t_ns), v in zip(states, values):
            transforms = []
            for name in v:
                joint, (translations, quats), k = self.movable[name], poses[name], used[name]
                transforms.append(transform_stamped(joint.parent, joint.child, t_ns,
                                                    translations[k], quats[k]))
                used[name] = k + 1
            out.append(transforms)
        return out


def robot_state_streams(urdf_text: str, joint_states: Stream, start_ns: int,
                        source: Path) -> list[Stream]:
    """/robot_description, /tf_static and /tf as robot_state_publisher would publish them.

    Raises DatasetFormatError (naming `source`) when the URDF is not valid.
    """
    model = RobotModel.from_urdf(urdf_text, source)

    def description() -> Iterator[tuple[int, Any]]:
        yield start_ns, String(data=urdf_text)

    def static() -> Iterator[tuple[int, Any]]:
        # One merged message, like tf2_ros's StaticTransformBroadcaster: a
        # transient-local depth-1 topic only keeps the last message.
        yield start_ns, tf_message(model.static_transforms(start_ns))

    def dynamic() -> Iterator[tuple[int, Any]]:
        messages = iter(joint_states.open())
        while block := list(itertools.islice(messages, BLOCK)):
            states = [(msg.name, msg.position, to_ns(msg.header.stamp) or t_ns)
                      for t_ns, msg in block]
            for (_, _, stamp_ns), transforms in zip(states, model.transforms_of(states)):
                if transforms:
                    yield stamp_ns, tf_message(transforms)

    streams = [
        Stream('/robot_description', 'std_msgs/msg/String', description, latched=True,
               role=Role.ROBOT_STATE, count=1, approx_bytes=len(urdf_text)),
        Stream('/tf_static', 'tf2_msgs/msg/TFMessage', static, latched=True,
               role=Role.ROBOT_STATE, count=1, approx_bytes=100 * len(model.fixed)),
    ]
    if model.movable:
        streams.append(Stream('/tf', 'tf2_msgs/msg/TFMessage', dynamic, role=Role.ROBOT_STATE,
                              approx_bytes=100 * len(model.movable)))
    return streams


__all__ = ['MOVABLE', 'RobotModel', 'robot_state_streams']
