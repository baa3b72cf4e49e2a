"""A small TF buffer built from /tf and /tf_static: parent -> child transforms over time.

`transform(target, source, t_ns)` answers what tf2's lookupTransform(target, source, t)
answers: the 4x4 matrix taking points in `source` to `target`, composed through the tree
at time t. Between two samples of an edge it interpolates (translation linearly, rotation
by normalised lerp, which for the small steps between TF samples is slerp to 1e-6); a time
further than `max_gap` outside an edge's samples has no answer (None), as tf2 refuses to
extrapolate: a frame whose poses stopped (an object turned invalid) is not drawn. ROS-free.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.transform import Rotation

# How far outside an edge's samples a lookup still takes the nearest sample: a
# camera frame stamped a little before the first TF of a 30 Hz stream is still drawn.
EDGE_SLACK_NS = 100_000_000


@dataclass
class _Edge:
    parent: str
    static: bool
    times: list[int] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)  # x y z qx qy qz qw
    _t: np.ndarray | None = None
    _v: np.ndarray | None = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._t is None or len(self._t) != len(self.times):
            order = np.argsort(np.asarray(self.times, dtype=np.int64), kind='stable')
            self._t = np.asarray(self.times, dtype=np.int64)[order]
            self._v = np.asarray(self.values, dtype=np.float64).reshape(-1, 7)[order]
        assert self._v is not None
        return self._t, self._v


def matrix(xyz: np.ndarray, quat_xyzw: np.ndarray) -> np.ndarray:
    """4x4 homogeneous transform from a translation and an x, y, z, w quaternion."""
    out = np.eye(4)
    q = np.asarray(quat_xyzw, dtype=np.float64)
    n = np.linalg.norm(q)
    if not np.isfinite(n) or n < 1e-9:
        raise ValueError('zero or non-finite quaternion')
    out[:3, :3] = Rotation.from_quat(q / n).as_matrix()
    out[:3, 3] = xyz
    return out


def invert(m: np.ndarray) -> np.ndarray:
    out = np.eye(4)
    r = m[:3, :3].T
    out[:3, :3] = r
    out[:3, 3] = -r @ m[:3, 3]
    return out


class TfBuffer:
    """child -> (parent, samples); one parent per child (a later parent replaces it)."""

    def __init__(self, slack_ns: int = EDGE_SLACK_NS) -> None:
        self._edges: dict[str, _Edge] = {}
        self.slack_ns = slack_ns
        self.bad = 0  # transforms refused (NaN, zero quaternion)

    def add(self, parent: str, child: str, t_ns: int, xyz: tuple[float, float, float],
            quat_xyzw: tuple[float, float, float, float], static: bool = False) -> None:
        value = np.array([*xyz, *quat_xyzw], dtype=np.float64)
        if not np.all(np.isfinite(value)) or np.linalg.norm(value[3:]) < 1e-9:
            self.bad += 1
            return
        edge = self._edges.get(child)
        if edge is None or edge.parent != parent:
            edge = self._edges[child] = _Edge(parent, static)
        edge.static = edge.static or static
        if static:  # the latest static transform holds for all time
            edge.times[:] = [t_ns]
            edge.values[:] = [value]
        else:
            edge.times.append(t_ns)
            edge.values.append(value)

    def add_message(self, msg: object, static: bool = False) -> None:
        """Every TransformStamped of a tf2_msgs/TFMessage, at its header stamp."""
        for ts in msg.transforms:  # type: ignore[attr-defined]
            st = ts.header.stamp
            tr, q = ts.transform.translation, ts.transform.rotation
            self.add(ts.header.frame_id, ts.child_frame_id, st.sec * 10**9 + st.nanosec,
                     (tr.x, tr.y, tr.z), (q.x, q.y, q.z, q.w), static)

    @property
    def frames(self) -> set[str]:
        return set(self._edges) | {e.parent for e in self._edges.values()}

    def edges(self) -> dict[str, str]:
        """child -> parent."""
        return {c: e.parent for c, e in self._edges.items()}

    def static_frames(self) -> set[str]:
        return {c for c, e in self._edges.items() if e.static}

    def span(self, child: str) -> tuple[int, int] | None:
        edge = self._edges.get(child)
        if edge is None or edge.static:
            return None
        t, _ = edge.arrays()
        return int(t[0]), int(t[-1])

    def _edge_at(self, child: str, t_ns: int) -> np.ndarray | None:
        """parent_T_child at t (points in child -> parent), or None outside its samples."""
        edge = self._edges[child]
        times, values = edge.arrays()
        if edge.static or len(times) == 1:
            if not edge.static and abs(t_ns - int(times[0])) > self.slack_ns:
                return None
            v = values[-1]
            return matrix(v[:3], v[3:])
        i = int(np.searchsorted(times, t_ns, side='right'))
        if i == 0:
            return matrix(values[0, :3], values[0, 3:]) if times[0] - t_ns <= self.slack_ns \
                else None
        if i == len(times):
            return matrix(values[-1, :3], values[-1, 3:]) \
                if t_ns - times[-1] <= self.slack_ns else None
        t0, t1 = int(times[i - 1]), int(times[i])
        a, b = values[i - 1], values[i]
        w = 0.0 if t1 == t0 else (t_ns - t0) / (t1 - t0)
        qb = b[3:] if np.dot(a[3:], b[3:]) >= 0 else -b[3:]
        return matrix(a[:3] + w * (b[:3] - a[:3]), a[3:] + w * (qb - a[3:]))

    def _to_root(self, frame: str, t_ns: int) -> tuple[str, np.ndarray] | None:
        """(root, root_T_frame) at t, or None when an edge on the way has no answer."""
        m = np.eye(4)
        seen = {frame}
        while frame in self._edges:
            step = self._edge_at(frame, t_ns)
            if step is None:
                return None
            m = step @ m
            frame = self._edges[frame].parent
            if frame in seen:  # a loop in the data: no answer rather than a hang
                return None
            seen.add(frame)
        return frame, m

    def transform(self, target: str, source: str, t_ns: int) -> np.ndarray | None:
        """target_T_source at t (points in source -> target), or None when not connected."""
        if target == source:
            return np.eye(4)
        a = self._to_root(source, t_ns)
        b = self._to_root(target, t_ns)
        if a is None or b is None or a[0] != b[0]:
            return None
        return invert(b[1]) @ a[1]


__all__ = ['TfBuffer', 'invert', 'matrix']
