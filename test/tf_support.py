"""TF as a test reads it back from a bag: a transform as a 4x4 matrix, a frame's chain to world."""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np
from scipy.spatial.transform import Rotation

from react_ros.ros.msgs import to_ns


def transform_matrix(tf: Any) -> np.ndarray:
    """parent_T_child of a TransformStamped (or a bare Transform)."""
    t = getattr(tf, 'transform', tf)
    q, p = t.rotation, t.translation
    m = np.eye(4)
    m[:3, :3] = Rotation.from_quat([q.x, q.y, q.z, q.w]).as_matrix()
    m[:3, 3] = [p.x, p.y, p.z]
    return m


def world_from(frame: str, t_ns: int, static: Iterable[Any], dynamic: Iterable[Any],
               world: str = 'world') -> np.ndarray | None:
    """world_T_frame as a TF user gets it at stamp t_ns: every transform of the `static`
    TFMessages and those of the `dynamic` ones stamped exactly t_ns (a lookup at a stamp /tf
    holds needs no interpolation). None: the chain does not reach `world`."""
    parent = {tf.child_frame_id: (tf.header.frame_id, transform_matrix(tf))
              for msg in static for tf in msg.transforms}
    parent.update({tf.child_frame_id: (tf.header.frame_id, transform_matrix(tf))
                   for msg in dynamic for tf in msg.transforms
                   if to_ns(tf.header.stamp) == t_ns})
    out = np.eye(4)
    while frame != world:
        if frame not in parent:
            return None
        frame, m = parent[frame]
        out = m @ out
    return out
