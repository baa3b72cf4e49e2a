"""One camera picture at one moment, with its overlays; and the virtual overview camera
for an episode that has no camera (mocap objects), looking at its TF frames."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image as PilImage, ImageDraw

from react_ros.preview.draw import Drawn, Painter, View, draw_scene, font
from react_ros.preview.imaging import Scale, image_rgb_scaled
from react_ros.preview.projection import CameraModel, look_at, pinhole
from react_ros.preview.scene import Camera, Scene, deserialize, stamp_ns
from react_ros.preview.state import State
from react_ros.preview.tf_buffer import invert

TITLE_H = 16
BACKGROUND = (24, 24, 28)


@dataclass
class Tile:
    image: PilImage.Image
    title: str
    topic: str = ''
    role: str = 'camera'  # camera (drawn over), image (no CameraInfo), aux, overview, error
    drawn: Drawn = field(default_factory=Drawn)
    scale: Scale | None = None  # a colour-mapped picture's colour bar

    def summary(self) -> dict[str, Any]:
        """What the tile shows, for a sheet's summary (make previews compares it)."""
        d = self.drawn
        return {'topic': self.topic, 'role': self.role,
                'size': [self.image.width, self.image.height],
                'overlays': sorted(d.overlays), 'labels': sorted([list(x) for x in d.labels]),
                'labels_left_out': len(d.hidden),
                'label_cover_px': d.label_cover,
                'extent': list(d.extent) if d.extent else None,
                'colour_bar': None if self.scale is None else
                [round(self.scale.lo, 4), round(self.scale.hi, 4), self.scale.unit]}


def fit(img: PilImage.Image, height: int) -> tuple[PilImage.Image, float]:
    """`img` at most `height` tall (never enlarged), and the scale used."""
    if img.height <= height:
        return img, 1.0
    s = height / img.height
    return img.resize((max(1, round(img.width * s)), height), PilImage.Resampling.BILINEAR), s


def camera_model(scene: Scene, cam: Camera, t_ns: int, size: tuple[int, int]
                 ) -> CameraModel | None:
    if cam.info is None:
        return None
    info = scene.series[cam.info].nearest(t_ns)
    if info is None:
        return None
    model = CameraModel.from_camera_info(info, size)
    return model if model.valid else None


def overlay_tile(scene: Scene, cam: Camera, t_img: int, rgb: np.ndarray, state: State,
                 height: int, offset_s: float) -> Tile:
    """The camera's image at `height`, drawn over through its CameraInfo and TF at t_img."""
    img = PilImage.fromarray(rgb)
    img, s = fit(img, height)
    model = camera_model(scene, cam, t_img, (rgb.shape[1], rgb.shape[0]))
    note = ''
    drawn = Drawn()
    if model is None:
        note = ' (no CameraInfo: nothing drawn)' if cam.info is None else ''
    else:
        if s != 1.0:
            model = model.scaled(s)
        tf = scene.tf
        view = View(model, lambda f: tf.transform(cam.frame_id, f, t_img),
                    label_size=max(9, min(13, img.height // 28)))
        if view.cam_T(cam.frame_id) is not None and cam.frame_id in tf.frames:
            drawn = draw_scene(img, view, state, tf.edges(), tf.frames, {cam.frame_id},
                               static_frames=tf.static_frames())
        elif model is not None:
            note = f' (frame {cam.frame_id!r} not in TF: only its own frame drawn)'
            drawn = draw_scene(img, view, state, {}, set(), {cam.frame_id})
        if model.note:
            note += f' ({model.note})'
    dt = (t_img - state.t_ns) / 1e6
    return Tile(img, f'{cam.topic}  +{offset_s:.3f} s  (image {dt:+.0f} ms){note}', cam.topic,
                'camera', drawn)


def plain_tile(cam: Camera, rgb: np.ndarray, height: int, what: str, role: str = 'image',
               scale: Scale | None = None) -> Tile:
    img, _ = fit(PilImage.fromarray(rgb), height)
    if scale is not None:
        img = with_colour_bar(img, scale)
    return Tile(img, f'{cam.topic}  {what}', cam.topic, role, scale=scale)


BAR_W = 10


def with_colour_bar(img: PilImage.Image, scale: Scale) -> PilImage.Image:
    """`img` with the colour map's bar on its right: what a colour means, in units."""
    f = font(10)
    ticks = [scale.hi, (scale.lo + scale.hi) / 2, scale.lo]
    texts = [scale.text(v) for v in ticks]
    d0 = ImageDraw.Draw(img)
    text_w = int(max(d0.textlength(t, font=f) for t in texts))
    out = PilImage.new('RGB', (img.width + BAR_W + text_w + 10, img.height), BACKGROUND)
    out.paste(img, (0, 0))
    top, bottom = 6, img.height - 6
    x = img.width + 3
    from react_ros.preview.imaging import TURBO
    for y in range(top, bottom):
        c = TURBO[int(round((bottom - 1 - y) / max(1, bottom - 1 - top) * 255))]
        out.paste(tuple(int(v) for v in c), (x, y, x + BAR_W, y + 1))
    d = ImageDraw.Draw(out)
    for v, text in zip(ticks, texts):
        ty = bottom - 1 - (v - scale.lo) / max(scale.hi - scale.lo, 1e-12) * (bottom - 1 - top)
        d.line([(x + BAR_W, ty), (x + BAR_W + 2, ty)], fill=(230, 230, 230))
        d.text((x + BAR_W + 4, min(max(ty - 6, 0), img.height - 12)), text, fill=(230, 230, 230),
               font=f)
    return out


def decode(cam: Camera, msg: Any) -> np.ndarray:
    return decode_scaled(cam, msg)[0]


def decode_scaled(cam: Camera, msg: Any) -> tuple[np.ndarray, Scale | None]:
    """The picture and, for a colour-mapped depth, the values its colours stand for."""
    return image_rgb_scaled(deserialize(msg, cam.stream.msg_type), cam.stream.msg_type,
                            cam.topic)


def message_stamp(cam: Camera, t: int, msg: Any) -> int:
    """The image's header stamp (TF is looked up there), its log time without one."""
    return stamp_ns(deserialize(msg, cam.stream.msg_type), t)


def error_tile(title: str, text: str, height: int) -> Tile:
    img = PilImage.new('RGB', (max(200, height * 4 // 3), height), BACKGROUND)
    ImageDraw.Draw(img).text((8, 8), text, fill=(255, 120, 120), font=font(12))
    return Tile(img, title, title.split()[0] if title else '', 'error')


_CORNERS = np.array([[x, y, z] for x in (-.5, .5) for y in (-.5, .5) for z in (-.5, .5)])


def marker_extent(mk: Any) -> np.ndarray:
    """Points that bound a marker, in its header frame: a shape's box (its scale is its size),
    a list's points; a mesh or text by its origin (a mesh's scale multiplies, is no size)."""
    from react_ros.preview.draw import CUBE, CYLINDER, SPHERE
    from react_ros.preview.tf_buffer import matrix
    o, q = mk.pose.position, mk.pose.orientation
    quat = np.array([q.x, q.y, q.z, q.w])
    try:
        pose = matrix(np.array([o.x, o.y, o.z]), quat if np.any(quat) else np.array([0, 0, 0, 1.]))
    except ValueError:
        return np.zeros((0, 3))
    if mk.type in (CUBE, SPHERE, CYLINDER):
        s = np.array([mk.scale.x, mk.scale.y, mk.scale.z])
        local = _CORNERS * np.where(np.isfinite(s), np.abs(s), 0)
    elif len(mk.points):
        local = np.array([[a.x, a.y, a.z] for a in mk.points])
    else:
        local = np.zeros((1, 3))
    return local @ pose[:3, :3].T + pose[:3, 3]


class Overview:
    """A virtual camera over the TF frames and markers (z up), for an episode without a
    camera, placed so that what moves fills the picture (FILL of its width or height)."""

    FILL = 0.8
    DIRECTION = np.array([1.0, -1.4, 1.1])

    def __init__(self, scene: Scene, moments: list[int], size: tuple[int, int] = (640, 480)
                 ) -> None:
        tf = scene.tf
        edges = tf.edges()
        roots: dict[str, int] = {}
        for frame in tf.frames:
            f = frame
            while f in edges:
                f = edges[f]
            roots[f] = roots.get(f, 0) + 1
        self.root = max(sorted(roots), key=lambda r: roots[r]) if roots else ''
        p = self._content(scene, moments)
        lo, hi = p.min(axis=0), p.max(axis=0)
        centre = (lo + hi) / 2
        self.centre = centre
        self.radius = max(0.05, float(np.linalg.norm(hi - lo)) / 2)
        focal = 0.9 * size[0]
        direction = self.DIRECTION / np.linalg.norm(self.DIRECTION)
        # The nearest eye from which every point fits: the spans shrink as it backs away.
        near, far = self.radius * 0.2, self.radius * 400
        for _ in range(50):
            mid = (near + far) / 2
            if self._fits(p, centre + direction * mid, centre, focal, size):
                far = mid
            else:
                near = mid
        self.root_T_cam = look_at(centre + direction * far, centre)
        self.model = pinhole(size[0], size[1], focal)
        a, b = self._normalised(p, self.root_T_cam)
        k = self.model.k.copy()  # the content's middle at the picture's middle
        k[0, 2] = size[0] / 2 - focal * (a.min() + a.max()) / 2
        k[1, 2] = size[1] / 2 - focal * (b.min() + b.max()) / 2
        self.model = CameraModel(size[0], size[1], k, self.model.d, 'pinhole')

    def _content(self, scene: Scene, moments: list[int]) -> np.ndarray:
        """Frame origins and marker extents, in the root frame, at the moments drawn."""
        from react_ros.preview.scene import MARKER, MARKER_ARRAY
        tf = scene.tf
        pts = []
        for t in moments:
            for frame in tf.frames - {self.root}:  # the root itself is not drawn
                m = tf.transform(self.root, frame, t)
                if m is not None:
                    pts.append(m[:3, 3])
        t_first, t_last = (min(moments), max(moments)) if moments else (0, 0)
        for topic, series in scene.of_type(MARKER_ARRAY, MARKER):
            many = scene.types[topic] == MARKER_ARRAY
            for t, msg in zip(series.times, series.msgs):
                if t > t_last:
                    break
                for mk in (msg.markers if many else [msg]):
                    m = tf.transform(self.root, mk.header.frame_id, max(t, t_first))
                    if m is not None and mk.action == 0:
                        pts.extend(marker_extent(mk) @ m[:3, :3].T + m[:3, 3])
        p = np.array(pts, dtype=np.float64).reshape(-1, 3) if pts else np.zeros((1, 3))
        p = p[np.all(np.isfinite(p), axis=1)]
        return p if len(p) else np.zeros((1, 3))

    @staticmethod
    def _normalised(p: np.ndarray, root_T_cam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c = (p - root_T_cam[:3, 3]) @ root_T_cam[:3, :3]
        z = np.maximum(c[:, 2], 1e-9)
        return c[:, 0] / z, c[:, 1] / z

    def _fits(self, p: np.ndarray, eye: np.ndarray, centre: np.ndarray, f: float,
              size: tuple[int, int]) -> bool:
        m = look_at(eye, centre)
        if np.any((p - eye) @ m[:3, 2] < 0.05 * self.radius):
            return False
        a, b = self._normalised(p, m)
        return bool(f * (a.max() - a.min()) <= self.FILL * size[0]
                    and f * (b.max() - b.min()) <= self.FILL * size[1])

    def tile(self, scene: Scene, state: State, offset_s: float) -> Tile:
        img = PilImage.new('RGB', (self.model.width, self.model.height), BACKGROUND)
        cam_T_root = invert(self.root_T_cam)
        tf = scene.tf

        def cam_T(frame: str) -> np.ndarray | None:
            m = tf.transform(self.root, frame, state.t_ns)
            return None if m is None else cam_T_root @ m
        view = View(self.model, cam_T)
        self._grid(Painter(img, view), cam_T_root)
        drawn = draw_scene(img, view, state, tf.edges(), tf.frames, {self.root},
                           static_frames=tf.static_frames())
        return Tile(img, f'overview of {self.root!r} (virtual camera, no camera in the data)'
                         f'  +{offset_s:.3f} s', '', 'overview', drawn)

    def _grid(self, p: Painter, cam_T_root: np.ndarray) -> None:
        """Lines a metre-ish apart on the root's z = 0 plane, under the content."""
        step = float(10 ** np.floor(np.log10(self.radius)))
        n = int(np.ceil(2.5 * self.radius / step))
        c = np.round(self.centre[:2] / step) * step
        ticks = np.arange(-n, n + 1) * step
        a, b = [], []
        for x in ticks:
            a += [[c[0] + x, c[1] - n * step, 0], [c[0] - n * step, c[1] + x, 0]]
            b += [[c[0] + x, c[1] + n * step, 0], [c[0] + n * step, c[1] + x, 0]]
        to = cam_T_root
        pa = np.array(a) @ to[:3, :3].T + to[:3, 3]
        pb = np.array(b) @ to[:3, :3].T + to[:3, 3]
        p.segments(pa, pb, (70, 70, 80), 1)
        p.finish()


__all__ = ['Overview', 'Tile', 'camera_model', 'decode', 'error_tile', 'fit', 'message_stamp',
           'overlay_tile', 'plain_tile']
