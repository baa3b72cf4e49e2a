"""RoboTwin flow and point-track streams (`--flow-step`, `--tracks`), from flow.py's numbers.

Per played frame t and step K (t + K within the episode), stamped at t, in
head_camera_optical_frame: /head_camera/scene_flow/kK (32FC3 metres, world-frame p2 − p1,
NaN where not visible), /head_camera/optical_flow/kK (32FC2 pixels, du dv in ROS pixel
coordinates, NaN where the pixel cannot be followed: no depth, no entity pose),
/head_camera/flow_visible/kK (mono8, 255 = visible). The three topics of a (t, K) share one
computation (a small cache: the sinks read the streams side by side).

Tracks: N seeds on a grid of the first played frame, followed to every played frame:
/head_camera/tracks (PointCloud2, fields u v visible track_id entity_id, u v in ROS pixels
of the head camera, NaN where unfollowable) and /head_camera/tracks/markers (MarkerArray,
one POINTS marker in `world`: green visible, red hidden).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
from geometry_msgs.msg import Point
from sensor_msgs.msg import PointCloud2, PointField
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from react_ros.kinds.robotwin import flow as fl
from react_ros.kinds.robotwin import hdf5 as rh
from react_ros.ros.image import array_image
from react_ros.ros.msgs import stamp
from react_ros.streams import Stream

FRAME = 'head_camera_optical_frame'
CACHE = 24  # (t, K) results kept: enough for three topics read side by side per step
TRACK_FIELDS = (('u', 0, PointField.FLOAT32), ('v', 4, PointField.FLOAT32),
                ('visible', 8, PointField.UINT8), ('track_id', 12, PointField.UINT32),
                ('entity_id', 16, PointField.UINT32))
TRACK_DTYPE = np.dtype({'names': ['u', 'v', 'visible', 'track_id', 'entity_id'],
                        'formats': ['<f4', '<f4', 'u1', '<u4', '<u4'],
                        'offsets': [0, 4, 8, 12, 16], 'itemsize': 20})


class FlowSource:
    """Depth, actor ids, cameras and entity motions of one episode, read per frame."""

    def __init__(self, episode: Path, extra: Path, cal: rh.Calibration, entity_ids: np.ndarray,
                 poses_wxyz: np.ndarray, tolerance_m: float) -> None:
        self.episode, self.extra, self.cal = episode, extra, cal
        self.ids, self.poses, self.tolerance = entity_ids, poses_wxyz, tolerance_m
        self.lock = threading.Lock()
        self.cache: OrderedDict[tuple[int, int], tuple[np.ndarray, ...]] = OrderedDict()

    def camera(self, r: int) -> fl.Camera:
        return fl.Camera(self.cal.intrinsic[r].astype(np.float64),
                         self.cal.extrinsic[r].astype(np.float64))

    def frame(self, ep: rh.Frames, ex: rh.Frames, r: int) -> tuple[np.ndarray, np.ndarray]:
        """Frame r's depth (m) and actor ids."""
        return ep.get(f'{rh.HEAD}/depth', r) / 1000.0, ex.get(f'{rh.HEAD}/actor_id', r)

    def images(self, ep: rh.Frames, ex: rh.Frames, r: int, k: int) -> tuple[np.ndarray, ...]:
        """(scene flow, 2D flow, mask) of frame r to r + k, computed once for three topics."""
        with self.lock:
            got = self.cache.get((r, k))
            if got is None:
                d1, i1 = self.frame(ep, ex, r)
                d2, i2 = self.frame(ep, ex, r + k)
                move = fl.motion(self.ids, self.poses[r], self.poses[r + k])
                f = fl.dense(d1, i1, self.camera(r), d2, i2, self.camera(r + k), move,
                             self.tolerance)
                got = self.cache[(r, k)] = fl.flow_images(f)
                while len(self.cache) > CACHE:
                    self.cache.popitem(last=False)
            return got


def flow_streams(src: FlowSource, rows: np.ndarray, t_ns: np.ndarray, steps: list[int],
                 frames: int, size: tuple[int, int]) -> list[Stream]:
    w, h = size
    out = []
    for k in steps:
        mine = rows[rows + k < frames]
        for i, (name, enc, per_px) in enumerate((('scene_flow', '32FC3', 12),
                                                 ('optical_flow', '32FC2', 8),
                                                 ('flow_visible', 'mono8', 1))):
            out.append(Stream(f'/head_camera/{name}/k{k}', 'sensor_msgs/msg/Image',
                              _gen(src, mine, t_ns, k, i, enc), count=len(mine), heavy=True,
                              approx_bytes=w * h * per_px + 200, labels=enc == 'mono8'))
    return out


def _gen(src: FlowSource, rows: np.ndarray, t_ns: np.ndarray, k: int, which: int,
         encoding: str) -> Callable[[], Iterator[tuple[int, Any]]]:
    def gen() -> Iterator[tuple[int, Any]]:
        with rh.Frames(src.episode) as ep, rh.Frames(src.extra) as ex:
            for r in rows:
                t = int(t_ns[r])
                yield t, array_image(src.images(ep, ex, int(r), k)[which], encoding, t, FRAME)
    return gen


def track_streams(src: FlowSource, rows: np.ndarray, t_ns: np.ndarray, n: int,
                  size: tuple[int, int], world: str) -> list[Stream]:
    """N grid seeds of the first played frame, at every played frame (shared per frame)."""
    u0, v0 = fl.grid_seeds(n, *size)
    first = int(rows[0])
    lock = threading.Lock()
    cache: OrderedDict[int, fl.Flow] = OrderedDict()

    def follow(ep: rh.Frames, ex: rh.Frames, r: int) -> fl.Flow:
        with lock:
            got = cache.get(r)
            if got is None:
                d1, i1 = src.frame(ep, ex, first)
                d2, i2 = src.frame(ep, ex, r)
                move = fl.motion(src.ids, src.poses[first], src.poses[r])
                got = cache[r] = fl.track(u0, v0, d1, i1, src.camera(first), d2, i2,
                                          src.camera(r), move, src.tolerance)
                while len(cache) > 4:
                    cache.popitem(last=False)
            return got

    def cloud(f: fl.Flow, t: int) -> PointCloud2:
        return track_cloud(f, t)

    def markers(f: fl.Flow, t: int) -> MarkerArray:
        return track_markers(f, t, world)

    def gen(build: Callable[[fl.Flow, int], Any]) -> Callable[[], Iterator[tuple[int, Any]]]:
        def inner() -> Iterator[tuple[int, Any]]:
            with rh.Frames(src.episode) as ep, rh.Frames(src.extra) as ex:
                for r in rows:
                    t = int(t_ns[r])
                    yield t, build(follow(ep, ex, int(r)), t)
        return inner
    m = len(u0)
    return [Stream('/head_camera/tracks', 'sensor_msgs/msg/PointCloud2', gen(cloud),
                   count=len(rows), approx_bytes=20 * m + 300),
            Stream('/head_camera/tracks/markers', 'visualization_msgs/msg/MarkerArray',
                   gen(markers), count=len(rows), approx_bytes=40 * m + 300)]


def track_cloud(f: fl.Flow, t_ns: int) -> PointCloud2:
    n = len(f.u2)
    rec = np.zeros(n, dtype=TRACK_DTYPE)
    ok = np.isfinite(f.z2) & (f.z2 > 0)
    rec['u'] = np.where(ok, f.u2, np.nan)
    rec['v'] = np.where(ok, f.v2, np.nan)
    rec['visible'] = f.visible
    rec['track_id'] = np.arange(n)
    rec['entity_id'] = f.entity_id
    msg = PointCloud2()
    msg.header.stamp = stamp(t_ns)
    msg.header.frame_id = FRAME
    msg.height, msg.width = 1, n
    msg.fields = [PointField(name=name, offset=off, datatype=dt, count=1)
                  for name, off, dt in TRACK_FIELDS]
    msg.is_bigendian = False
    msg.point_step = TRACK_DTYPE.itemsize
    msg.row_step = msg.point_step * n
    msg.is_dense = False
    msg.data = rec.tobytes()
    return msg


def track_markers(f: fl.Flow, t_ns: int, world: str) -> MarkerArray:
    ok = np.all(np.isfinite(f.p2), axis=-1)
    m = Marker()
    m.header.stamp = stamp(t_ns)
    m.header.frame_id = world
    m.ns, m.id, m.type, m.action = 'tracks', 0, Marker.POINTS, Marker.ADD
    m.pose.orientation.w = 1.0
    m.scale.x = m.scale.y = 0.006
    green, red = ColorRGBA(r=0.1, g=0.9, b=0.2, a=1.0), ColorRGBA(r=0.9, g=0.1, b=0.1, a=0.6)
    for p, vis in zip(f.p2[ok].tolist(), f.visible[ok].tolist()):
        m.points.append(Point(x=p[0], y=p[1], z=p[2]))
        m.colors.append(green if vis else red)
    return MarkerArray(markers=[m])


__all__ = ['FlowSource', 'TRACK_FIELDS', 'flow_streams', 'track_cloud', 'track_markers',
           'track_streams']
