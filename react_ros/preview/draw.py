"""Overlays drawn into one camera's picture through its CameraInfo and the TF at its stamp.

A `View` is a camera model at the size drawn plus `cam_T(frame)`, the transform from
a frame into the camera's optical frame (TF at the image's stamp, or a virtual camera's
pose). Everything is projected through the same model the data's CameraInfo names, so a
wrong transform or calibration shows as a drawing off by pixels. Colours: TF axes x red,
y green, z blue; TF parent-child links grey; forces orange; keypoints cyan; markers
their own colour; point clouds coloured by depth.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import AbstractSet, Any, Callable
from urllib.parse import unquote, urlparse

import numpy as np
from PIL import Image as PilImage, ImageDraw, ImageFont

from react_ros.preview.imaging import TURBO
from react_ros.preview.labels import Label, place
from react_ros.preview.projection import NEAR_M, CameraModel
from react_ros.preview.state import State
from react_ros.preview.tf_buffer import matrix

AXIS_COLOURS = ((235, 50, 50), (40, 210, 60), (60, 110, 255))
LINK = (200, 200, 200)
FORCE = (255, 150, 0)
KEYPOINT = (0, 230, 230)
POSE = (255, 255, 120)
DEFAULT_MARKER = (255, 200, 80)
NEWTONS_TO_M = 0.01  # force arrows: 10 N is 0.1 m long
MAX_ITEMS = 20_000  # line segments a picture draws at most (a mesh is drawn by its bounds)
# Label priorities: what a label names decides which one keeps a crowded spot.
TEXT_PRIORITY, FORCE_PRIORITY, MOVING_FRAME, POSE_PRIORITY, STATIC_FRAME = range(5)

# Marker types (visualization_msgs/Marker)
ARROW, CUBE, SPHERE, CYLINDER, LINE_STRIP, LINE_LIST, CUBE_LIST, SPHERE_LIST, POINTS, \
    TEXT, MESH, TRIANGLE_LIST = range(12)


@lru_cache(maxsize=16)
def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=max(6, size))


class View:
    def __init__(self, model: CameraModel, cam_T: Callable[[str], np.ndarray | None],
                 label_size: int = 11) -> None:
        self.model = model
        self._cam_T = cam_T
        self._cache: dict[str, np.ndarray | None] = {}
        self.label_size = label_size

    def cam_T(self, frame: str) -> np.ndarray | None:
        if frame not in self._cache:
            self._cache[frame] = self._cam_T(frame)
        return self._cache[frame]

    def to_cam(self, frame: str, pts: np.ndarray, pose: np.ndarray | None = None
               ) -> np.ndarray | None:
        m = self.cam_T(frame)
        if m is None:
            return None
        if pose is not None:
            m = m @ pose
        p = np.asarray(pts, dtype=np.float64).reshape(-1, 3)
        return p @ m[:3, :3].T + m[:3, 3]

    def inside(self, uv: np.ndarray, margin: float = 0.0) -> np.ndarray:
        return (np.isfinite(uv).all(axis=1) & (uv[:, 0] >= -margin) & (uv[:, 1] >= -margin)
                & (uv[:, 0] < self.model.width + margin) & (uv[:, 1] < self.model.height + margin))


class Painter:
    """Draws into one PIL image through one View."""

    def __init__(self, img: PilImage.Image, view: View) -> None:
        self.img = img
        self.view = view
        self.layer = PilImage.new('RGBA', img.size, (0, 0, 0, 0))
        self.draw = ImageDraw.Draw(self.layer)
        self.labels: list[Label] = []
        self.lines = 0  # segments and discs drawn, for `_drew`
        self.extent: tuple[int, int, int, int] | None = None  # of the lines, once finished
        self.label_cover = 0  # overlay pixels under the labels, once finished
        self.budget = MAX_ITEMS
        self.origins: list[np.ndarray] = []  # optical-frame origins of the axes drawn
        m = view.model
        self._far = 4.0 * max(m.width, m.height)  # 2D coordinates beyond this are not drawn

    # -- primitives in camera coordinates -------------------------------------------
    def segments(self, a: np.ndarray, b: np.ndarray, colour: Any, width: int = 1) -> None:
        """3D segments a[i]-b[i] in the optical frame, clipped at the near plane, curved
        through the distortion (subdivided) where the model has one."""
        a = np.asarray(a, float).reshape(-1, 3)
        b = np.asarray(b, float).reshape(-1, 3)
        za, zb = a[:, 2], b[:, 2]
        keep = (za > NEAR_M) | (zb > NEAR_M)
        a, b, za, zb = a[keep], b[keep], za[keep], zb[keep]
        if not len(a):
            return
        # Clip the part behind the near plane.
        with np.errstate(invalid='ignore', divide='ignore'):
            s = np.clip((NEAR_M - za) / (zb - za), 0, 1)
        a = np.where((za < NEAR_M)[:, None], a + (b - a) * s[:, None], a)
        with np.errstate(invalid='ignore', divide='ignore'):
            s = np.clip((NEAR_M - zb) / (za - zb), 0, 1)
        b = np.where((zb < NEAR_M)[:, None], b + (a - b) * s[:, None], b)
        pieces = 6 if self.view.model.distorted else 1
        w = np.linspace(0.0, 1.0, pieces + 1)
        pts = a[:, None, :] + (b - a)[:, None, :] * w[None, :, None]
        uv = self.view.model.project(pts.reshape(-1, 3)).reshape(len(a), pieces + 1, 2)
        colours = colour if isinstance(colour, list) else [colour] * len(a)
        for line, c in zip(uv, colours):
            if self.budget <= 0:
                return
            ok = np.isfinite(line).all(axis=1) & (np.abs(line) < self._far).all(axis=1)
            if ok.sum() < 2:
                continue
            self.budget -= 1
            self.lines += 1
            self.draw.line([tuple(p) for p in line[ok]], fill=c, width=width)

    def dots(self, p: np.ndarray, colour: Any, radius: float = 2.0,
             metres: float | None = None) -> np.ndarray:
        """Filled discs at 3D points (optical frame); `metres` sizes them by distance."""
        p = np.asarray(p, float).reshape(-1, 3)
        uv = self.view.model.project(p)
        ok = self.view.inside(uv, margin=10)
        colours = colour if isinstance(colour, list) else [colour] * len(p)
        f = self.view.model.k[0, 0]
        for i in np.flatnonzero(ok):
            if self.budget <= 0:
                break
            self.budget -= 1
            self.lines += 1
            r = radius if metres is None else max(radius, f * metres / 2 / p[i, 2])
            u, v = uv[i]
            self.draw.ellipse([u - r, v - r, u + r, v + r], fill=colours[i])
        return uv

    def arrow(self, a: np.ndarray, b: np.ndarray, colour: Any, width: int = 2) -> None:
        self.segments(a, b, colour, width)
        uv = self.view.model.project(np.stack([a, b]))
        if not np.isfinite(uv).all():
            return
        d = uv[1] - uv[0]
        n = np.hypot(*d)
        if n < 3:
            return
        d /= n
        head = min(12.0, 0.35 * n)
        left = uv[1] - head * d + 0.5 * head * np.array([-d[1], d[0]])
        right = uv[1] - head * d - 0.5 * head * np.array([-d[1], d[0]])
        self.draw.polygon([tuple(uv[1]), tuple(left), tuple(right)], fill=colour)

    def label(self, p: np.ndarray, text: str, colour: Any = (255, 255, 255),
              priority: int = STATIC_FRAME, beside: bool = True) -> None:
        uv = self.view.model.project(np.asarray(p, float).reshape(1, 3))[0]
        if self.view.inside(uv[None])[0]:
            self.labels.append(Label((float(uv[0]), float(uv[1])), text, colour, priority,
                                     len(self.labels), beside))

    def finish(self) -> tuple[list[tuple[str, int, int, int, int]], list[str]]:
        """Lay the lines over the picture, then place the labels: (drawn, left out)."""
        alpha = self.layer.getchannel('A')
        self.extent = alpha.getbbox()
        occupied = np.asarray(alpha) > 0
        self.img.paste(PilImage.alpha_composite(self.img.convert('RGBA'), self.layer)
                       .convert(self.img.mode))
        placed = place(ImageDraw.Draw(self.img), self.labels, occupied,
                       font(self.view.label_size))
        self.labels.clear()
        self.label_cover = placed.covered
        if placed.hidden:  # said, so a reader knows names were left out
            f = font(max(8, self.view.label_size - 2))
            text = f'+{len(placed.hidden)} labels'
            d = ImageDraw.Draw(self.img)
            w = d.textlength(text, font=f)
            d.text((self.img.width - w - 4, self.img.height - self.view.label_size - 4), text,
                   fill=(200, 200, 200), font=f, stroke_width=2, stroke_fill=(0, 0, 0))
        return placed.drawn, placed.hidden

    # -- things ----------------------------------------------------------------------
    def axes(self, frame: str, length: float | None = None, label: str | None = None,
             width: int = 2, pose: np.ndarray | None = None,
             priority: int = STATIC_FRAME) -> bool:
        """A frame's x, y, z axes; False when its origin is not in view."""
        origin = self.view.to_cam(frame, np.zeros(3), pose)
        if origin is None or origin[0, 2] <= NEAR_M:
            return False
        uv = self.view.model.project(origin)
        if not self.view.inside(uv)[0]:
            return False
        z = float(origin[0, 2])
        ln = length if length is not None else float(np.clip(0.12 * z, 0.01, 0.5))
        tips = self.view.to_cam(frame, np.eye(3) * ln, pose)
        assert tips is not None
        for i in (2, 1, 0):  # x drawn last, on top
            self.segments(origin, tips[i], AXIS_COLOURS[i], width)
        if label:
            self.label(origin[0], label, priority=priority)
        self.origins.append(origin[0])
        return True

    def near_drawn(self, p: np.ndarray, tol_m: float = 0.002) -> bool:
        return any(np.linalg.norm(o - p) < tol_m for o in self.origins)


@dataclass
class Drawn:
    """What one picture shows: each overlay drawn ('frame NAME', 'pose TOPIC', 'keypoints
    TOPIC', 'force TOPIC', 'marker TOPIC NS/ID', 'cloud TOPIC'), its labels (text and box:
    left, top, right, bottom), the labels left out, the box the lines span, and how many
    of the lines' pixels its labels cover."""

    overlays: list[str] = field(default_factory=list)
    labels: list[tuple[str, int, int, int, int]] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)
    extent: tuple[int, int, int, int] | None = None
    label_cover: int = 0  # overlay pixels under its labels


def draw_scene(img: PilImage.Image, view: View, state: State, tf_edges: dict[str, str],
               frames: set[str], skip_frames: AbstractSet[str] = frozenset(),
               cloud_limits: tuple[float, float] | None = None,
               static_frames: AbstractSet[str] = frozenset()) -> Drawn:
    """Everything in view at state.t_ns, bottom to top: point clouds, TF links, TF axes,
    poses, keypoints, forces, markers; labels last."""
    out = Drawn()
    for topic, frame, xyz, _ in state.clouds:
        if _cloud(img, view, frame, xyz, cloud_limits):
            out.overlays.append(f'cloud {topic}')
    p = Painter(img, view)
    for child, parent in sorted(tf_edges.items()):
        if child in skip_frames or parent in skip_frames:
            continue
        a = view.to_cam(child, np.zeros(3))
        b = view.to_cam(parent, np.zeros(3))
        if a is not None and b is not None:
            p.segments(a, b, LINK, 1)
    for frame in sorted(frames):
        # a frame that moves is what a reader looks for; its static children say less
        moving = frame in tf_edges and frame not in static_frames
        if frame not in skip_frames and p.axes(
                frame, label=frame, priority=MOVING_FRAME if moving else STATIC_FRAME):
            out.overlays.append(f'frame {frame}')
    for topic, frame, xyz, q, _ in state.poses:
        try:
            pose = matrix(xyz, q)
        except ValueError:
            continue
        origin = view.to_cam(frame, np.zeros(3), pose)
        if origin is None or p.near_drawn(origin[0]):  # a pose that TF draws already
            continue
        if p.axes(frame, width=1, pose=pose):
            out.overlays.append(f'pose {topic}')
            p.label(origin[0], topic.rsplit('/', 1)[-1] if topic.count('/') < 2 else
                    topic.strip('/').split('/')[0], POSE, POSE_PRIORITY)
    for topic, frame, pts, _ in state.keypoints:
        # a name of its own: `cam`, assigned again below, loses its narrowing in the lambda
        cam_pts = view.to_cam(frame, pts)
        if cam_pts is not None and _drew(p, lambda: p.dots(cam_pts, KEYPOINT, radius=2)):
            out.overlays.append(f'keypoints {topic}')
    for topic, frame, force, _ in state.wrenches:
        cam = view.to_cam(frame, np.stack([np.zeros(3), force * NEWTONS_TO_M]))
        if cam is not None and cam[0, 2] > NEAR_M and \
                _drew(p, lambda: p.arrow(cam[0], cam[1], FORCE, 3)):
            out.overlays.append(f'force {topic}')
            p.label(cam[1], f'{np.linalg.norm(force):.1f} N', FORCE, FORCE_PRIORITY)
    for topic, m in state.markers:
        if _drew(p, lambda: _marker(p, view, m)):
            out.overlays.append(f'marker {topic} {m.ns}/{m.id}')
    out.labels, out.hidden = p.finish()
    out.extent = p.extent
    out.label_cover = p.label_cover
    return out


def _drew(p: Painter, paint: Callable[[], Any]) -> bool:
    """Whether `paint` put a line, disc or label into the picture."""
    before = (p.lines, len(p.labels))
    paint()
    return (p.lines, len(p.labels)) != before


def _colour(c: Any, fallback: tuple[int, int, int] = DEFAULT_MARKER) -> tuple[int, int, int]:
    if c is None or (c.r == 0 and c.g == 0 and c.b == 0 and c.a == 0):
        return fallback
    return (int(np.clip(c.r, 0, 1) * 255), int(np.clip(c.g, 0, 1) * 255),
            int(np.clip(c.b, 0, 1) * 255))


BOX_EDGES = [(0, 1), (1, 3), (3, 2), (2, 0), (4, 5), (5, 7), (7, 6), (6, 4),
             (0, 4), (1, 5), (2, 6), (3, 7)]


def _box(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1])
                  for z in (lo[2], hi[2])])
    e = np.array(BOX_EDGES)
    return c[e[:, 0]], c[e[:, 1]]


def _marker(p: Painter, view: View, m: Any) -> None:
    o, q = m.pose.position, m.pose.orientation
    try:
        pose = matrix(np.array([o.x, o.y, o.z]),
                      np.array([q.x, q.y, q.z, q.w]) if (q.x, q.y, q.z, q.w) != (0, 0, 0, 0)
                      else np.array([0, 0, 0, 1.0]))
    except ValueError:
        return
    s = np.array([m.scale.x, m.scale.y, m.scale.z])
    colour = _colour(m.color)
    pts = np.array([[a.x, a.y, a.z] for a in m.points]).reshape(-1, 3)
    colours = [_colour(c, colour) for c in m.colors] if len(m.colors) == len(pts) and len(pts) \
        else colour

    def cam(x: np.ndarray) -> np.ndarray | None:
        return view.to_cam(m.header.frame_id, x, pose)
    t = m.type
    if t == ARROW:
        ends = pts[:2] if len(pts) >= 2 else np.array([[0, 0, 0], [s[0], 0, 0]])
        c = cam(ends)
        if c is not None:
            p.arrow(c[0], c[1], colour, 2)
    elif t in (CUBE, CYLINDER):
        a, b = _box(-s / 2, s / 2)
        ca, cb = cam(a), cam(b)
        if ca is not None and cb is not None:
            p.segments(ca, cb, colour, 2)
    elif t == SPHERE:
        c = cam(np.zeros(3))
        if c is not None:
            p.dots(c, colour, radius=3, metres=float(np.max(s)))
    elif t in (LINE_STRIP, LINE_LIST) and len(pts) >= 2:
        if t == LINE_STRIP:
            a, b = pts[:-1], pts[1:]
            cs = colours[:-1] if isinstance(colours, list) else colours
        else:
            n = len(pts) // 2 * 2
            a, b = pts[0:n:2], pts[1:n:2]
            cs = colours[0:n:2] if isinstance(colours, list) else colours
        ca, cb = cam(a), cam(b)
        if ca is not None and cb is not None:
            width = int(np.clip(view.model.k[0, 0] * s[0] / max(float(np.median(ca[:, 2])),
                                                                  NEAR_M), 1, 4))
            p.segments(ca, cb, cs, width)
    elif t in (CUBE_LIST, SPHERE_LIST, POINTS) and len(pts):
        c = cam(pts)
        if c is not None:
            p.dots(c, colours, radius=2, metres=float(s[0]) if t != POINTS else None)
    elif t == TEXT:
        c = cam(np.zeros(3))
        if c is not None:
            p.label(c[0], m.text, colour, TEXT_PRIORITY, beside=False)
    elif t == MESH:
        lo_hi = _mesh_bounds(m.mesh_resource)
        if lo_hi is not None:
            a, b = _box(lo_hi[0] * s, lo_hi[1] * s)
            ca, cb = cam(a), cam(b)
            if ca is not None and cb is not None:
                p.segments(ca, cb, colour, 2)
    elif t == TRIANGLE_LIST and len(pts) >= 3:
        n = len(pts) // 3 * 3
        tri = pts[:n].reshape(-1, 3, 3)
        a = tri.reshape(-1, 3)
        b = tri[:, [1, 2, 0]].reshape(-1, 3)
        ca, cb = cam(a), cam(b)
        if ca is not None and cb is not None:
            p.segments(ca, cb, colour, 1)


@lru_cache(maxsize=64)
def _mesh_bounds(uri: str) -> tuple[np.ndarray, np.ndarray] | None:
    """A file:// mesh's vertex bounds (PLY), drawn as its box; None for what is not read."""
    url = urlparse(uri)
    if url.scheme not in ('file', '') or not uri.lower().endswith('.ply'):
        return None
    path = unquote(url.path)
    if not os.path.isfile(path):
        return None
    from pathlib import Path

    from react_ros.errors import ReactRosError
    from react_ros.formats.ply import ply_bounds
    try:
        return ply_bounds(Path(path))
    except (ReactRosError, OSError, ValueError):
        return None


def _cloud(img: PilImage.Image, view: View, frame: str, xyz: np.ndarray,
           limits: tuple[float, float] | None) -> bool:
    cam = view.to_cam(frame, xyz)
    if cam is None or not len(cam):
        return False
    uv = view.model.project(cam)
    ok = view.inside(uv)
    if not ok.any():
        return False
    z = cam[ok, 2]
    lo, hi = limits if limits is not None else (float(np.percentile(z, 2)),
                                                float(np.percentile(z, 98)))
    idx = np.clip((z - lo) / max(hi - lo, 1e-6) * 255, 0, 255).astype(np.uint8)
    a = np.array(img)
    u = uv[ok, 0].astype(np.int64)
    v = uv[ok, 1].astype(np.int64)
    a[v, u] = TURBO[idx]
    img.paste(PilImage.fromarray(a))
    return True


__all__ = ['Drawn', 'Painter', 'View', 'draw_scene', 'font']
