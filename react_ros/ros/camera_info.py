"""sensor_msgs/CameraInfo from a CameraInfo-layout dict (UMI's *.camera_info.meta.yaml)."""
from __future__ import annotations

from typing import Any, Mapping

from sensor_msgs.msg import CameraInfo

from react_ros.ros.msgs import stamp


def camera_info(meta: Mapping[str, Any], t_ns: int, frame_id: str,
                scale: float = 1.0, size: tuple[int, int] | None = None) -> CameraInfo:
    """Build a CameraInfo; `scale` resizes the calibration with the pixels.

    Focal lengths and principal point scale linearly with the image (the
    half-pixel offset of cx/cy is below calibration accuracy and ignored).
    `size` overrides width/height, e.g. with the exact even-rounded size of
    the scaled frames.
    """
    msg = CameraInfo()
    msg.header.stamp = stamp(t_ns)
    msg.header.frame_id = frame_id
    w, h = int(meta['width']), int(meta['height'])
    if size is None:
        size = (round(w * scale), round(h * scale))
    msg.width, msg.height = size
    msg.distortion_model = str(meta.get('distortion_model', 'plumb_bob'))
    msg.d = [float(v) for v in meta.get('d', [])]
    k = [float(v) for v in meta['k']]
    p = [float(v) for v in meta.get('p') or [k[0], 0, k[2], 0, 0, k[4], k[5], 0, 0, 0, 1, 0]]
    sx, sy = msg.width / w, msg.height / h
    for i in (0, 1, 2):
        k[i] *= sx
        k[3 + i] *= sy
    for i in (0, 1, 2, 3):
        p[i] *= sx
        p[4 + i] *= sy
    msg.k = k
    msg.r = [float(v) for v in meta.get('r') or [1, 0, 0, 0, 1, 0, 0, 0, 1]]
    msg.p = p
    return msg
