"""numpy arrays to sensor_msgs/Image with as few copies as rclpy allows."""
from __future__ import annotations

import array

import numpy as np
from sensor_msgs.msg import Image

from react_ros.ros.msgs import stamp

# Measured here (1920x1200 rgb8, build + serialize_message, best of 5x20, rclpy 9.1.2,
# a loaded 2-core machine): array.array('B').frombytes(ndarray) 12.1-14.1 ms,
# msg.data = ndarray.tobytes() 16.8-18.1 ms (two copies: tobytes, then the setter's
# array.array), numpy assigned to the private msg._data 11.3 ms. The setter keeps an
# array.array as it is, so frombytes costs one copy through public API only; the
# private-numpy route saves ~1 ms more but breaks message equality (numpy == is
# elementwise) and relies on an attribute rclpy does not promise.


def rgb_image(frame: np.ndarray, t_ns: int, frame_id: str) -> Image:
    if frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8:
        raise ValueError(f'expected HxWx3 uint8, got {frame.shape} {frame.dtype}')
    msg = Image()
    msg.header.stamp = stamp(t_ns)
    msg.header.frame_id = frame_id
    msg.height, msg.width = int(frame.shape[0]), int(frame.shape[1])
    msg.encoding = 'rgb8'
    msg.is_bigendian = 0
    msg.step = msg.width * 3
    data = array.array('B')
    data.frombytes(np.ascontiguousarray(frame).data.cast('B'))
    msg.data = data
    return msg


def array_image(frame: np.ndarray, encoding: str, t_ns: int, frame_id: str) -> Image:
    """An HxW or HxWxC array under `encoding` (32FC1, 16UC1, 32FC2, ...) in its own byte
    order; the caller chose an encoding that matches the dtype and channels."""
    msg = Image()
    msg.header.stamp = stamp(t_ns)
    msg.header.frame_id = frame_id
    msg.height, msg.width = int(frame.shape[0]), int(frame.shape[1])
    msg.encoding = encoding
    msg.is_bigendian = int(frame.dtype.byteorder == '>')
    channels = frame.shape[2] if frame.ndim == 3 else 1
    msg.step = msg.width * frame.dtype.itemsize * channels
    data = array.array('B')
    data.frombytes(np.ascontiguousarray(frame).data.cast('B'))
    msg.data = data
    return msg
