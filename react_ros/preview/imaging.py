"""Image messages to RGB pixels a person can look at: colour as it is, depth and label
images colour-mapped, CompressedImage decoded with Pillow, CompressedVideo with PyAV."""
from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image as PilImage

from react_ros.preview.scene import COMPRESSED_IMAGE, IMAGE


def _turbo_lut() -> np.ndarray:
    """Google's Turbo colour map (its published polynomial fit), 256 entries."""
    x = np.linspace(0.0, 1.0, 256)
    r = 0.13572138 + x * (4.61539260 + x * (-42.66032258 + x * (132.13108234 + x * (
        -152.94239396 + x * 59.28637943))))
    g = 0.09140261 + x * (2.19418839 + x * (4.84296658 + x * (-14.18503333 + x * (
        4.27729857 + x * 2.82956604))))
    b = 0.10667330 + x * (12.64194608 + x * (-60.58204836 + x * (110.36276771 + x * (
        -89.90310912 + x * 27.34824973))))
    return (np.clip(np.stack([r, g, b], axis=1), 0, 1) * 255).astype(np.uint8)


TURBO = _turbo_lut()


@dataclass(frozen=True)
class Scale:
    """What a colour-mapped image's colours stand for: lo (blue) to hi (red), in `unit`."""

    lo: float
    hi: float
    unit: str

    def text(self, value: float) -> str:
        digits = max(0, min(3, 1 - int(np.floor(np.log10(max(abs(self.hi - self.lo), 1e-9))))))
        return f'{value:.{digits}f} {self.unit}'.strip()


def depth_unit(encoding: str) -> str:
    """REP 118: a float depth image is in metres, an integer one in millimetres."""
    enc = encoding.split(';')[0].strip()
    return 'm' if enc in ('32FC1', '64FC1') else 'mm' if enc in ('16UC1', 'mono16') else ''


def colormap(values: np.ndarray, lo: float | None = None, hi: float | None = None
             ) -> np.ndarray:
    """Values -> RGB through Turbo; NaN, inf and non-positive depths black."""
    return colormap_scaled(values, lo, hi)[0]


def colormap_scaled(values: np.ndarray, lo: float | None = None, hi: float | None = None,
                    unit: str = '') -> tuple[np.ndarray, Scale]:
    """`colormap` and the range it mapped (the 2nd to 98th percentile unless given)."""
    v = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(v) & (v > 0)
    if lo is None or hi is None:
        if ok.any():
            lo, hi = (float(x) for x in np.percentile(v[ok], [2, 98]))
        else:
            lo, hi = 0.0, 1.0
    span = hi - lo if hi > lo else 1.0
    idx = np.clip((np.where(ok, v, lo) - lo) / span * 255, 0, 255).astype(np.uint8)
    out = TURBO[idx]
    out[~ok] = 0
    return out, Scale(float(lo), float(lo + span), unit)


def label_colours(ids: np.ndarray) -> np.ndarray:
    """Integer labels -> distinct colours (a hash of the id); 0 black."""
    i = np.asarray(ids).astype(np.uint32)
    h = (i * np.uint32(2654435761)) & np.uint32(0xFFFFFF)
    out = np.stack([(h >> 16) & 255, (h >> 8) & 255, h & 255], axis=-1).astype(np.uint8)
    out = (out // 2 + 96).astype(np.uint8)
    out[i == 0] = 0
    return out


def _grey_or_labels(a: np.ndarray, encoding: str, topic: str
                    ) -> tuple[np.ndarray, Scale | None]:
    if encoding == '32FC1' or a.dtype.kind == 'f':
        return colormap_scaled(a, unit=depth_unit(encoding) or 'm')
    if 'depth' in topic or 'disparity' in topic:
        return colormap_scaled(a.astype(np.float64),
                               unit='px' if 'disparity' in topic else depth_unit(encoding))
    if encoding in ('mono8', '8UC1') and a.dtype == np.uint8 and 'label' not in topic \
            and 'segmentation' not in topic:
        return np.repeat(a[..., None], 3, axis=2), None
    return label_colours(a), None


def image_rgb(msg: Any, msg_type: str, topic: str = '') -> np.ndarray:
    """HxWx3 uint8 for an Image or CompressedImage; ValueError for what cannot be shown."""
    return image_rgb_scaled(msg, msg_type, topic)[0]


def image_rgb_scaled(msg: Any, msg_type: str, topic: str = ''
                     ) -> tuple[np.ndarray, Scale | None]:
    """`image_rgb`, and for a colour-mapped depth image the Scale its colours stand for."""
    if msg_type == IMAGE:
        return _raw(msg, topic)
    if msg_type == COMPRESSED_IMAGE:
        fmt = str(msg.format)
        data = bytes(msg.data)
        if 'compresseddepth' in fmt.lower():
            from react_ros.ros.compressed_image import depth_from_decoded, split_depth
            _, a, b, png = split_depth(msg)
            decoded = np.asarray(PilImage.open(io.BytesIO(png)))
            enc = fmt.split(';')[0].strip()
            return colormap_scaled(depth_from_decoded(decoded, enc, a, b).astype(np.float64),
                                   unit=depth_unit(enc))
        img = PilImage.open(io.BytesIO(data))
        if img.mode in ('I;16', 'I;16B', 'I', 'F'):
            return _grey_or_labels(np.asarray(img), fmt.split(';')[0].strip(), topic)
        return np.asarray(img.convert('RGB')), None
    raise ValueError(f'{msg_type} is not an image message')


def _raw(msg: Any, topic: str) -> tuple[np.ndarray, Scale | None]:
    enc = str(msg.encoding)
    h, w = int(msg.height), int(msg.width)
    if enc in ('rgba8', 'bgra8', '8UC4'):
        rows = np.frombuffer(bytes(msg.data), np.uint8, count=msg.step * h).reshape(h, -1)
        a = rows[:, :w * 4].reshape(h, w, 4)[..., :3]
        return np.ascontiguousarray(a[..., ::-1] if enc == 'bgra8' else a), None
    if enc == '8UC3':
        enc_msg = type(msg)(height=h, width=w, encoding='rgb8', is_bigendian=msg.is_bigendian,
                            step=msg.step, data=msg.data)
        msg, enc = enc_msg, 'rgb8'
    from react_ros.ros.compressed_image import image_array
    a = image_array(msg)
    if enc == 'rgb8':
        return a, None
    if enc == 'bgr8':
        return np.ascontiguousarray(a[..., ::-1]), None
    return _grey_or_labels(a, enc, topic)


class VideoDecoder:
    """foxglove_msgs/CompressedVideo messages, one frame each, decoded in order with PyAV."""

    def __init__(self) -> None:
        self._ctx: Any = None
        self._format = ''

    def decode(self, msg: Any) -> np.ndarray | None:
        import av
        fmt = str(msg.format) or 'h264'
        if self._ctx is None or fmt != self._format:
            name = {'h265': 'hevc'}.get(fmt, fmt)
            self._ctx = av.CodecContext.create(name, 'r')
            self._format = fmt
        try:  # one frame a message, Annex B, no B-frames: one packet, one frame
            frames = self._ctx.decode(av.Packet(bytes(msg.data)))
        except av.FFmpegError:
            return None  # before the first keyframe
        if not frames:
            return None
        return frames[-1].to_ndarray(format='rgb24')


__all__ = ['TURBO', 'Scale', 'VideoDecoder', 'colormap', 'colormap_scaled', 'depth_unit',
           'image_rgb', 'image_rgb_scaled', 'label_colours']
