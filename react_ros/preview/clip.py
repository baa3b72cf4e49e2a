"""`-o clip.mp4`: one camera's every frame with the same overlays as the sheet, H.264 yuv420p.

The frames keep their stamps (presentation times in milliseconds from the first frame),
so a variable-rate camera plays at its own pace. Pictures wider than MAX_WIDTH are
scaled down (the overlays are drawn at the scaled size, through the scaled K).
"""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Callable

import numpy as np
from PIL import ImageDraw

from react_ros.errors import ReactRosError
from react_ros.formats.x264 import x264_options
from react_ros.preview.draw import font
from react_ros.preview.imaging import VideoDecoder
from react_ros.preview.render import decode, message_stamp, overlay_tile, plain_tile
from react_ros.preview.scene import COMPRESSED_VIDEO, Camera, Scene, deserialize
from react_ros.preview.state import CloudCursor, MarkerState, state_at

MAX_HEIGHT = 720
CRF = 23


def choose_camera(scene: Scene, topic: str | None) -> Camera:
    cams = scene.cameras + [a for c in scene.cameras for a in c.aux]
    if topic is not None:
        for c in cams:
            if c.topic == topic:
                return c
        raise ReactRosError(f'--camera {topic}: not an image topic of {scene.path} '
                            f'(image topics: {", ".join(c.topic for c in cams) or "none"})')
    with_info = [c for c in scene.cameras if c.info is not None]
    if with_info:
        return with_info[0]
    if scene.cameras:
        return scene.cameras[0]
    raise ReactRosError(f'{scene.path}: has no image topic to make a clip of')


def write_clip(scene: Scene, cam: Camera, path: Path,
               progress: Callable[[int, int], None] | None = None) -> int:
    """Encode every frame of `cam` with its overlays into `path`; returns the frame count."""
    import av
    markers = MarkerState(scene)
    clouds = CloudCursor(scene.clouds)
    total = len(scene.timelines.get(cam.topic, ('', []))[1])
    video = VideoDecoder() if cam.stream.msg_type == COMPRESSED_VIDEO else None
    n = 0
    t0: int | None = None
    last_pts = -1
    with av.open(str(path), 'w', format='mp4') as container:
        stream = None
        for t, raw in cam.stream.open():
            if video is not None:
                rgb = video.decode(deserialize(raw, COMPRESSED_VIDEO))
                if rgb is None:
                    continue
            else:
                rgb = decode(cam, raw)
            t_img = message_stamp(cam, t, raw)
            state = state_at(scene, markers, t, clouds.at(t))
            offset = (t - scene.start_ns) / 1e9
            if cam.info is not None:
                tile = overlay_tile(scene, cam, t_img, rgb, state, MAX_HEIGHT, offset)
            else:
                tile = plain_tile(cam, rgb, MAX_HEIGHT, f'+{offset:.3f} s')
            img = tile.image
            ImageDraw.Draw(img).text((6, 4), tile.title, fill=(255, 255, 255), font=font(12),
                                     stroke_width=2, stroke_fill=(0, 0, 0))
            w, h = img.width // 2 * 2, img.height // 2 * 2
            if stream is None:
                stream = container.add_stream('libx264', rate=_rate(scene, cam))
                stream.width, stream.height = w, h
                stream.pix_fmt = 'yuv420p'
                stream.time_base = Fraction(1, 1000)
                stream.codec_context.time_base = Fraction(1, 1000)
                stream.options = {**x264_options({'crf': str(CRF), 'preset': 'veryfast'})}
            if (img.width, img.height) != (w, h):
                img = img.crop((0, 0, w, h))
            frame = av.VideoFrame.from_ndarray(np.asarray(img), format='rgb24')
            t0 = t if t0 is None else t0
            pts = max(last_pts + 1, round((t - t0) / 1e6))
            frame.pts, frame.time_base = pts, Fraction(1, 1000)
            last_pts = pts
            for packet in stream.encode(frame):
                container.mux(packet)
            n += 1
            if progress is not None:
                progress(n, total)
        if stream is None:
            raise ReactRosError(f'{cam.topic}: no frame to make a clip of')
        for packet in stream.encode():
            container.mux(packet)
    return n


def _rate(scene: Scene, cam: Camera) -> Fraction:
    times = scene.timelines.get(cam.topic, ('', np.zeros(0)))[1]
    if len(times) < 2:
        return Fraction(30)
    dt = np.diff(times)
    med = float(np.median(dt[dt > 0])) if np.any(dt > 0) else 0.0
    return Fraction(round(1e9 / med * 1000), 1000) if med > 0 else Fraction(30)


__all__ = ['choose_camera', 'write_clip']
