"""A camera recorded as still frames (a JPEG per row in HDF5, PNG bytes in a parquet
column, an array dataset): its Image stream, its CameraInfo, and --image-scale.

A video's frames are scaled inside the decoder (formats/video.py); a still frame is
scaled here by the same rules: the size of video.scaled_size (even sides, so a camera
is as large whether recorded as video or stills), the same refusal past MAX_SIDE, the
same filter (swscale's area average, formats/jpeg.resize_area), and K and P scaled
with the pixels by ros/camera_info.py. Scaling happens on the frame as the kind holds
it, before any channel swap: swscale's rgb24 area filter is not symmetric in its
channels, so swapping R and B first changes pixels by up to 10 levels
(test_still_frames.py).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Mapping

import numpy as np
from rclpy.serialization import serialize_message
from sensor_msgs.msg import CameraInfo

from react_ros.adapters.video_streams import Calibration, scaled_frame_size
from react_ros.formats.jpeg import resize_area
from react_ros.ros.camera_info import camera_info
from react_ros.ros.image import rgb_image
from react_ros.streams import Stream


def still_size(width: int, height: int, scale: float, what: str) -> tuple[int, int]:
    """(width, height) of a `width`x`height` frame under --image-scale `scale`; refuses a
    size past MAX_SIDE or below one pixel, naming `what` (the camera or its file): the
    rule of video cameras (video_streams.scaled_frame_size)."""
    return scaled_frame_size(width, height, scale, what)


def scale_still(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """`image` (HxWx3 uint8) at `size` (width, height); itself when it has that size."""
    if (image.shape[1], image.shape[0]) == tuple(size):
        return image
    return resize_area(image, size)


def still_camera_info(meta: Mapping[str, Any], t_ns: int, frame_id: str,
                      size: tuple[int, int], pixel_centre: float = 0.0) -> CameraInfo:
    """The CameraInfo of a frame published at `size`: K and P scaled from the calibration's
    own width and height (ros/camera_info.py), then cx, cy moved by -`pixel_centre`.

    `pixel_centre`: where the calibration puts the centre of pixel u, less ROS's u (0.5 for
    a renderer that samples at half-integers, as RoboTwin's SAPIEN); applied after the
    scaling, so a scaled image keeps the same rays.
    """
    msg = camera_info(meta, t_ns, frame_id, size=size)
    if pixel_centre:
        k, p = list(msg.k), list(msg.p)
        for i in (2, 5):
            k[i] -= pixel_centre
        for i in (2, 6):
            p[i] -= pixel_centre
        msg.k, msg.p = k, p
    return msg


def still_camera_streams(prefix: str, frame_id: str, stamps: np.ndarray,
                         frames: Callable[[], Iterable[np.ndarray]], frame_size: tuple[int, int],
                         calibration: Calibration | None = None, *, image_scale: float = 1.0,
                         what: str = '', pixel_centre: float = 0.0,
                         to_rgb: Callable[[np.ndarray], np.ndarray] | None = None,
                         labels: bool = False) -> list[Stream]:
    """`[prefix/image_raw, prefix/camera_info]`, or only the Image without a calibration.

    `frames()` yields one HxWx3 uint8 frame per stamp, in stamp order, at `frame_size`
    (width, height: the camera's, which its reader has checked), lazily and from the
    start on every call. Each is scaled, then passed through `to_rgb` (a channel swap for
    frames stored BGR), and published at its stamp. The CameraInfo of row n is
    still_camera_info of calibration(n) (or the one calibration) at the scaled size.
    `labels`: the pixels are ids or classes (Stream.labels): never scaled, never lossy.
    """
    stamps = np.asarray(stamps, dtype=np.int64)
    width, height = frame_size
    size = (width, height) if labels else \
        still_size(width, height, image_scale, what or f'{prefix}/image_raw')

    def images() -> Iterator[tuple[int, Any]]:
        for t, frame in zip(stamps.tolist(), frames()):
            frame = scale_still(frame, size)
            yield t, rgb_image(to_rgb(frame) if to_rgb else frame, t, frame_id)
    streams = [Stream(f'{prefix}/image_raw', 'sensor_msgs/msg/Image', images,
                      count=len(stamps), heavy=True, labels=labels,
                      approx_bytes=size[0] * size[1] * 3 + 200)]
    if calibration is None:
        return streams
    calib: Callable[[int], Mapping[str, Any]] = \
        calibration if callable(calibration) else (lambda n: calibration)

    def infos() -> Iterator[tuple[int, Any]]:
        for n, t in enumerate(stamps.tolist()):
            yield t, still_camera_info(calib(n), t, frame_id, size, pixel_centre)
    first = still_camera_info(calib(0), 0, frame_id, size, pixel_centre) if len(stamps) \
        else None
    streams.append(Stream(f'{prefix}/camera_info', 'sensor_msgs/msg/CameraInfo', infos,
                          count=len(stamps),
                          approx_bytes=len(serialize_message(first)) if first else 400))
    return streams


__all__ = ['scale_still', 'still_camera_info', 'still_camera_streams', 'still_size']
