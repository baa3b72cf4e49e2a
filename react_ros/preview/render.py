"""One camera picture at one moment, with its overlays; and the virtual overview camera
for an episode that has no camera (mocap objects), looking at its TF frames."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image as PilImage, ImageDraw

from react_ros.preview.draw import Painter, View, draw_scene, font
from react_ros.preview.imaging import image_rgb
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


def fit(img: PilImage.Image, height: int) -> tuple[PilImage.Image, float]:
    """`img` at most `height` tall (never enlarged), and the scale used."""
    if img.height <= height:
        return img, 1.0
    s = height / img.height
    return img.resize((max(1, round(img.width * s)), height), PilImage.BILINEAR), s


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
    if model is None:
        note = ' (no CameraInfo: nothing drawn)' if cam.info is None else ''
    else:
        if s != 1.0:
            model = model.scaled(s)
        tf = scene.tf
        view = View(model, lambda f: tf.transform(cam.frame_id, f, t_img),
                    label_size=max(9, min(13, img.height // 28)))
        if view.cam_T(cam.frame_id) is not None and cam.frame_id in tf.frames:
            draw_scene(img, view, state, tf.edges(), tf.frames, {cam.frame_id})
        elif model is not None:
            note = f' (frame {cam.frame_id!r} not in TF: only its own frame drawn)'
            draw_scene(img, view, state, {}, set(), {cam.frame_id})
        if model.note:
            note += f' ({model.note})'
    dt = (t_img - state.t_ns) / 1e6
    return Tile(img, f'{cam.topic}  +{offset_s:.3f} s  (image {dt:+.0f} ms){note}')


def plain_tile(cam: Camera, rgb: np.ndarray, height: int, what: str) -> Tile:
    img, _ = fit(PilImage.fromarray(rgb), height)
    return Tile(img, f'{cam.topic}  {what}')


def decode(cam: Camera, msg: Any) -> np.ndarray:
    return image_rgb(deserialize(msg, cam.stream.msg_type), cam.stream.msg_type, cam.topic)


def message_stamp(cam: Camera, t: int, msg: Any) -> int:
    """The image's header stamp (TF is looked up there), its log time without one."""
    return stamp_ns(deserialize(msg, cam.stream.msg_type), t)


def error_tile(title: str, text: str, height: int) -> Tile:
    img = PilImage.new('RGB', (max(200, height * 4 // 3), height), BACKGROUND)
    ImageDraw.Draw(img).text((8, 8), text, fill=(255, 120, 120), font=font(12))
    return Tile(img, title)


class Overview:
    """A virtual camera over the TF frames (z up), for an episode without a camera."""

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
        pts = []
        for t in moments:
            for frame in tf.frames:
                m = tf.transform(self.root, frame, t)
                if m is not None:
                    pts.append(m[:3, 3])
        p = np.array(pts) if pts else np.zeros((1, 3))
        centre = np.median(p, axis=0)
        radius = max(0.5, float(np.percentile(np.linalg.norm(p - centre, axis=1), 90)))
        direction = np.array([1.0, -1.4, 1.1])
        eye = centre + direction / np.linalg.norm(direction) * radius * 3.2
        self.root_T_cam = look_at(eye, centre)
        self.model = pinhole(size[0], size[1], 0.9 * size[0])
        self.centre, self.radius = centre, radius

    def tile(self, scene: Scene, state: State, offset_s: float) -> Tile:
        img = PilImage.new('RGB', (self.model.width, self.model.height), BACKGROUND)
        cam_T_root = invert(self.root_T_cam)
        tf = scene.tf

        def cam_T(frame: str) -> np.ndarray | None:
            m = tf.transform(self.root, frame, state.t_ns)
            return None if m is None else cam_T_root @ m
        view = View(self.model, cam_T)
        self._grid(Painter(img, view), cam_T_root)
        draw_scene(img, view, state, tf.edges(), tf.frames, {self.root})
        return Tile(img, f'overview of {self.root!r} (virtual camera, no camera in the data)'
                         f'  +{offset_s:.3f} s')

    def _grid(self, p: Painter, cam_T_root: np.ndarray) -> None:
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


__all__ = ['Overview', 'Tile', 'camera_model', 'decode', 'error_tile', 'fit', 'message_stamp',
           'overlay_tile', 'plain_tile']
