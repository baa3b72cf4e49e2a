"""Camera models from sensor_msgs/CameraInfo: points in the optical frame -> pixels. ROS-free.

The models CameraInfo names (REP 104 / image_geometry):
- `plumb_bob`: D = k1, k2, p1, p2, k3 (Brown-Conrady);
- `rational_polynomial`: D = k1, k2, p1, p2, k3, k4, k5, k6;
- `equidistant`: D = k1, k2, k3, k4 (Kannala-Brandt, OpenCV's fisheye);
- an empty D (or all zeros): a pinhole.
Points behind the camera, and for the polynomial models points so far outside the
view that the polynomial folds back, project to NaN. An image of another size than its
CameraInfo (binned, scaled) scales K with it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MODELS = ('plumb_bob', 'rational_polynomial', 'equidistant')
NEAR_M = 0.01  # nearer than this (metres, along the optical axis) is not drawn


@dataclass(frozen=True)
class CameraModel:
    width: int
    height: int
    k: np.ndarray  # 3x3
    d: np.ndarray
    model: str  # one of MODELS, or 'pinhole'
    note: str = ''  # said in the picture: a model this preview does not know

    @classmethod
    def from_camera_info(cls, msg: object, image_size: tuple[int, int] | None = None
                         ) -> 'CameraModel':
        w, h = int(msg.width), int(msg.height)  # type: ignore[attr-defined]
        k = np.asarray(msg.k, dtype=np.float64).reshape(3, 3).copy()  # type: ignore
        d = np.asarray(msg.d, dtype=np.float64)  # type: ignore[attr-defined]
        model = str(msg.distortion_model)  # type: ignore[attr-defined]
        note = ''
        if not d.size or not np.any(d):
            model = 'pinhole'
        elif model not in MODELS:
            note = f'distortion {model!r} unknown here: drawn without it'
            model = 'pinhole'
        if image_size is not None and w > 0 and h > 0 and (w, h) != image_size:
            sx, sy = image_size[0] / w, image_size[1] / h
            k[0] *= sx
            k[1] *= sy
            w, h = image_size
        return cls(w, h, k, d, model, note)

    @property
    def valid(self) -> bool:
        return bool(self.k[0, 0] > 0 and self.k[1, 1] > 0 and self.width > 0
                    and self.height > 0)

    def scaled(self, s: float) -> 'CameraModel':
        """The same camera drawn into an image `s` times the size."""
        k = self.k.copy()
        k[:2] *= s
        return CameraModel(round(self.width * s), round(self.height * s), k, self.d,
                           self.model, self.note)

    def project(self, pts: np.ndarray) -> np.ndarray:
        """(N, 3) points in the optical frame (x right, y down, z forward) -> (N, 2) pixels."""
        p = np.asarray(pts, dtype=np.float64).reshape(-1, 3)
        z = p[:, 2]
        front = z > NEAR_M
        with np.errstate(invalid='ignore', divide='ignore'):
            a = np.where(front, p[:, 0] / z, np.nan)
            b = np.where(front, p[:, 1] / z, np.nan)
        d = self.d
        if self.model == 'equidistant':
            k1, k2, k3, k4 = (list(d) + [0.0] * 4)[:4]
            r = np.hypot(a, b)
            th = np.arctan(r)
            t2 = th * th
            thd = th * (1 + k1 * t2 + k2 * t2**2 + k3 * t2**3 + k4 * t2**4)
            with np.errstate(invalid='ignore', divide='ignore'):
                s = np.where(r > 1e-12, thd / r, 1.0)
            a, b = a * s, b * s
        elif self.model in ('plumb_bob', 'rational_polynomial'):
            k1, k2, p1, p2, k3, k4, k5, k6 = (list(d) + [0.0] * 8)[:8]
            r2 = a * a + b * b
            radial = (1 + k1 * r2 + k2 * r2**2 + k3 * r2**3) / \
                (1 + k4 * r2 + k5 * r2**2 + k6 * r2**3)
            # Beyond about the image's own corners the polynomial may fold back into the
            # picture: such points are not drawn.
            r2_max = self._corner_r2() * 2.25
            ad = a * radial + 2 * p1 * a * b + p2 * (r2 + 2 * a * a)
            bd = b * radial + p1 * (r2 + 2 * b * b) + 2 * p2 * a * b
            far = r2 > r2_max
            a, b = np.where(far, np.nan, ad), np.where(far, np.nan, bd)
        u = self.k[0, 0] * a + self.k[0, 1] * b + self.k[0, 2]
        v = self.k[1, 1] * b + self.k[1, 2]
        return np.stack([u, v], axis=1)

    def _corner_r2(self) -> float:
        fx, fy, cx, cy = self.k[0, 0], self.k[1, 1], self.k[0, 2], self.k[1, 2]
        xs = np.array([-cx, self.width - cx]) / fx
        ys = np.array([-cy, self.height - cy]) / fy
        return float(np.max(xs**2)) + float(np.max(ys**2))

    @property
    def distorted(self) -> bool:
        return self.model != 'pinhole'


def look_at(eye: np.ndarray, target: np.ndarray, up: np.ndarray = np.array([0.0, 0, 1])
            ) -> np.ndarray:
    """root_T_camera (4x4) of an optical frame at `eye` looking at `target`."""
    z = np.asarray(target, float) - np.asarray(eye, float)
    z /= np.linalg.norm(z)
    x = np.cross(z, up)
    if np.linalg.norm(x) < 1e-6:
        x = np.cross(z, np.array([0.0, 1.0, 0.0]))
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    m = np.eye(4)
    m[:3, 0], m[:3, 1], m[:3, 2], m[:3, 3] = x, y, z, eye
    return m


def pinhole(width: int, height: int, f: float) -> CameraModel:
    k = np.array([[f, 0, width / 2], [0, f, height / 2], [0, 0, 1]], dtype=np.float64)
    return CameraModel(width, height, k, np.zeros(0), 'pinhole')


__all__ = ['MODELS', 'CameraModel', 'look_at', 'pinhole']
