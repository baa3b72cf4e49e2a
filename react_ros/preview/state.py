"""What is current at a time t: markers as a viewer holds them, the latest force, keypoints
and poses of each topic (while still current), and the point cloud nearest t."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from react_ros.preview.scene import MARKER, MARKER_ARRAY, POSE, POSE_ARRAY, WRENCH, Scene, \
    deserialize, frame_of, nearest_message, stamp_ns
from react_ros.streams import Stream

ADD, DELETE, DELETEALL = 0, 2, 3


class MarkerState:
    """Replays Marker and MarkerArray topics as RViz does: (topic, ns, id) -> marker.

    ADD replaces, DELETE removes one, DELETEALL clears the topic's markers; a marker
    with a lifetime expires after it. `advance(t)` applies everything up to t (times
    only go forward: a sheet's moments are sorted, a clip's frames are in order).
    """

    def __init__(self, scene: Scene) -> None:
        events: list[tuple[int, int, str, Any]] = []
        for topic, series in scene.of_type(MARKER_ARRAY, MARKER):
            many = scene.types[topic] == MARKER_ARRAY
            for i, (t, msg) in enumerate(zip(series.times, series.msgs)):
                events.append((t, i, topic, msg.markers if many else [msg]))
        self._events = sorted(events, key=lambda e: (e[0], e[2], e[1]))
        self._next = 0
        self.current: dict[tuple[str, str, int], tuple[int, Any]] = {}

    def advance(self, t_ns: int) -> list[tuple[str, Any]]:
        while self._next < len(self._events) and self._events[self._next][0] <= t_ns:
            t, _, topic, markers = self._events[self._next]
            self._next += 1
            for m in markers:
                if m.action == DELETEALL:
                    for key in [k for k in self.current if k[0] == topic]:
                        del self.current[key]
                elif m.action == DELETE:
                    self.current.pop((topic, m.ns, m.id), None)
                else:
                    self.current[(topic, m.ns, m.id)] = (t, m)
        out = []
        for (topic, _, _), (t, m) in sorted(self.current.items(), key=lambda kv: kv[0]):
            life = m.lifetime.sec * 10**9 + m.lifetime.nanosec
            if life and t_ns > t + life:
                continue
            out.append((topic, m))
        return out


@dataclass
class State:
    t_ns: int
    markers: list[tuple[str, Any]] = field(default_factory=list)
    wrenches: list[tuple[str, str, np.ndarray, int]] = field(default_factory=list)
    keypoints: list[tuple[str, str, np.ndarray, int]] = field(default_factory=list)
    poses: list[tuple[str, str, np.ndarray, np.ndarray, int]] = field(default_factory=list)
    clouds: list[tuple[str, str, np.ndarray, int]] = field(default_factory=list)


def state_at(scene: Scene, markers: MarkerState, t_ns: int,
             clouds: dict[str, tuple[int, Any]] | None = None) -> State:
    """The state at t; `clouds` (topic -> (t, msg)) are given by a clip's cursor, else read."""
    st = State(t_ns, markers=markers.advance(t_ns))
    for topic, series in scene.of_type(WRENCH):
        got = series.latest(t_ns)
        if got:
            f = got[1].wrench.force
            st.wrenches.append((topic, frame_of(got[1]), np.array([f.x, f.y, f.z]),
                                stamp_ns(got[1], got[0])))
    for topic, series in scene.of_type(POSE_ARRAY):
        got = series.latest(t_ns)
        if got and got[1].poses:
            pts = np.array([[p.position.x, p.position.y, p.position.z] for p in got[1].poses])
            st.keypoints.append((topic, frame_of(got[1]), pts, stamp_ns(got[1], got[0])))
    for topic, series in scene.of_type(POSE):
        got = series.latest(t_ns)
        if got:
            p, q = got[1].pose.position, got[1].pose.orientation
            st.poses.append((topic, frame_of(got[1]), np.array([p.x, p.y, p.z]),
                             np.array([q.x, q.y, q.z, q.w]), stamp_ns(got[1], got[0])))
    if clouds is None:
        clouds = {}
        for stream in scene.clouds:
            got = nearest_message(stream, t_ns)
            if got is not None:
                clouds[stream.topic] = got
    for topic, (t, raw) in clouds.items():
        msg = deserialize(raw, 'sensor_msgs/msg/PointCloud2')
        st.clouds.append((topic, frame_of(msg), cloud_xyz(msg), stamp_ns(msg, t)))
    return st


_DTYPES = {1: 'i1', 2: 'u1', 3: 'i2', 4: 'u2', 5: 'i4', 6: 'u4', 7: 'f4', 8: 'f8'}


def cloud_xyz(msg: Any, limit: int = 40_000) -> np.ndarray:
    """The finite x, y, z of a PointCloud2 as (N, 3) float64, at most `limit` (evenly taken)."""
    fields = {f.name: f for f in msg.fields}
    if not all(k in fields for k in 'xyz'):
        return np.zeros((0, 3))
    order: Literal['>', '<'] = '>' if msg.is_bigendian else '<'
    n = int(msg.width) * int(msg.height)
    step = int(msg.point_step)
    if n == 0 or step == 0:
        return np.zeros((0, 3))
    buf = np.frombuffer(bytes(msg.data), np.uint8, count=n * step).reshape(n, step)
    cols = []
    for k in 'xyz':
        f = fields[k]
        dt = np.dtype(_DTYPES.get(int(f.datatype), 'f4')).newbyteorder(order)
        cols.append(np.ascontiguousarray(buf[:, f.offset:f.offset + dt.itemsize])
                    .view(dt).ravel().astype(np.float64))
    xyz = np.stack(cols, axis=1)
    xyz = xyz[np.all(np.isfinite(xyz), axis=1)]
    if len(xyz) > limit:
        xyz = xyz[np.linspace(0, len(xyz) - 1, limit).astype(np.int64)]
    return xyz


class CloudCursor:
    """The point clouds nearest each time, for times that only go forward (a clip)."""

    def __init__(self, streams: list[Stream]) -> None:
        self._its = {s.topic: s.open() for s in streams}
        self._cur: dict[str, tuple[int, Any]] = {}
        self._ahead: dict[str, tuple[int, Any]] = {}

    def at(self, t_ns: int) -> dict[str, tuple[int, Any]]:
        for topic, it in self._its.items():
            while True:
                nxt = self._ahead.get(topic) or next(it, None)
                if nxt is None:
                    break
                cur = self._cur.get(topic)
                if cur is None or abs(nxt[0] - t_ns) <= abs(cur[0] - t_ns) or nxt[0] <= t_ns:
                    self._cur[topic] = nxt
                    self._ahead.pop(topic, None)
                    continue
                self._ahead[topic] = nxt
                break
        return dict(self._cur)


__all__ = ['CloudCursor', 'MarkerState', 'State', 'cloud_xyz', 'state_at']
