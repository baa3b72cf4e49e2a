"""Builders for TF messages; quaternions are always ROS order (x, y, z, w)."""
from __future__ import annotations

from typing import Iterable

from geometry_msgs.msg import TransformStamped
from tf2_msgs.msg import TFMessage

from react_ros.ros.msgs import stamp


def transform_stamped(parent: str, child: str, t_ns: int, translation: Iterable[float],
                      quat_xyzw: Iterable[float]) -> TransformStamped:
    ts = TransformStamped()
    ts.header.stamp = stamp(t_ns)
    ts.header.frame_id = parent
    ts.child_frame_id = child
    tr = ts.transform.translation
    tr.x, tr.y, tr.z = (float(v) for v in translation)
    q = ts.transform.rotation
    q.x, q.y, q.z, q.w = (float(v) for v in quat_xyzw)
    return ts


def tf_message(transforms: Iterable[TransformStamped]) -> TFMessage:
    return TFMessage(transforms=list(transforms))
