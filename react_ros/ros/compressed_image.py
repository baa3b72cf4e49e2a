"""sensor_msgs/Image to sensor_msgs/CompressedImage as image_transport_plugins write them.

Checked against ros-perception/image_transport_plugins (rolling, which Jazzy and Kilted
ship; humble where it differs):
- `compressed` plugin (compressed_publisher.cpp): format is the Image encoding, then
  `; jpeg compressed ` or `; png compressed ` or `; tiff compressed `, then what the data
  decodes to with OpenCV: `bgr8` for a colour JPEG, `mono8` for a grey JPEG, `bgr<depth>`
  for a colour PNG, and nothing at all for a grey PNG or a TIFF (the trailing space stays:
  "16UC1; png compressed "). Defaults: jpeg_quality 95, png_level 3. Its subscriber
  decodes with cv::imdecode(IMREAD_UNCHANGED) and swaps BGR back to the named encoding.
- `compressedDepth` plugin (codec.cpp, compression_common.h): format
  `<encoding>; compressedDepth png` (humble writes `; compressedDepth` and reads only the
  part before ';', so both read ours); data is a 12-byte ConfigHeader {int32 format =
  INV_DEPTH (0); float depthParam[2]} in host (little-endian) order, then a 16-bit PNG.
  32FC1 is quantised as inverse depth, q = A / d + B with A = z0 (z0 + 1), B = 1 - A /
  depth_max (z0 = depth_quantization 100, depth_max 10 m), decoded d = A / (q - B), q = 0
  meaning no depth (NaN); 16UC1 (millimetres) is stored as it is.

Pillow does the encoding here (a video's frames are JPEG-encoded from their planes
instead: formats/jpeg_encoder.py encode_planes, same format string): zlib releases the
GIL, so callers may run PNG and TIFF on threads, but Pillow's JPEG encoder holds it, so
a caller with many JPEGs to make sends `jpeg_input` to processes (formats/jpeg_encoder.py)
and wraps what comes back with `jpeg_message`: the same bytes as `compress`. The bytes differ from OpenCV's, the decoded
images do not depend on which wrote them. The decoders below take an already decoded
array, so tests can decode with OpenCV, the decoder image_transport itself uses.
"""
from __future__ import annotations

import io
import struct
from typing import Any

import numpy as np
from PIL import Image as PilImage
from sensor_msgs.msg import CompressedImage, Image

from react_ros.formats import jpeg_encoder

COMPRESSED = 'compressed'  # transport names: the topic suffix after the base topic
COMPRESSED_DEPTH = 'compressedDepth'
JPEG_QUALITY = 95
PNG_LEVEL = 3  # both plugins' default png_level
DEPTH_MAX = 10.0
DEPTH_QUANTIZATION = 100.0
INV_DEPTH = 0  # compressionFormat of compression_common.h
CONFIG_HEADER = struct.Struct('<iff')

# encoding -> (numpy element type, channels, colour)
_LAYOUT: dict[str, tuple[str, int, bool]] = {
    'rgb8': ('u1', 3, True), 'bgr8': ('u1', 3, True), 'mono8': ('u1', 1, False),
    '8UC1': ('u1', 1, False), 'mono16': ('u2', 1, False), '16UC1': ('u2', 1, False),
    '32FC1': ('f4', 1, False),
}
ENCODINGS = tuple(_LAYOUT)


def image_array(msg: Image) -> np.ndarray:
    """The pixels of `msg` as an HxW (grey) or HxWx3 array in this machine's byte order."""
    if msg.encoding not in _LAYOUT:
        raise ValueError(f'encoding {msg.encoding!r} is not one of {", ".join(_LAYOUT)}')
    kind, channels, _ = _LAYOUT[msg.encoding]
    dtype = np.dtype(kind).newbyteorder('>' if msg.is_bigendian else '<')
    h, w = int(msg.height), int(msg.width)
    row = w * channels * dtype.itemsize
    if msg.step < row or len(msg.data) < msg.step * h:
        raise ValueError(f'{w}x{h} {msg.encoding} needs step >= {row} and '
                         f'{msg.step * h} bytes; has step {msg.step}, {len(msg.data)} bytes')
    rows = np.frombuffer(msg.data, np.uint8, count=msg.step * h).reshape(h, msg.step)
    pixels = np.ascontiguousarray(rows[:, :row]).view(dtype)
    shape = (h, w, channels) if channels > 1 else (h, w)
    return pixels.reshape(shape).astype(dtype.newbyteorder('='), copy=False)


# encoding -> Pillow's image mode and raw mode of its pixels
_PIL_MODES = {'rgb8': ('RGB', 'RGB'), 'bgr8': ('RGB', 'BGR'), 'mono8': ('L', 'L'),
              '8UC1': ('L', 'L'), 'mono16': ('I;16', 'I;16'), '16UC1': ('I;16', 'I;16'),
              '32FC1': ('F', 'F')}


def _pil(array: np.ndarray, encoding: str) -> PilImage.Image:
    h, w = array.shape[:2]
    mode, raw = _PIL_MODES[encoding]
    if array.dtype.itemsize > 1:  # Pillow's I;16 and F raw modes are little-endian / native
        array = array.astype(array.dtype.newbyteorder('<'), copy=False)
    return PilImage.frombuffer(mode, (w, h), np.ascontiguousarray(array), 'raw', raw, 0, 1)


def _saved(img: PilImage.Image, fmt: str, **params: Any) -> bytes:
    out = io.BytesIO()
    img.save(out, fmt, **params)
    return out.getvalue()


def _message(msg: Image, fmt: str, data: bytes) -> CompressedImage:
    out = CompressedImage()
    out.header = msg.header
    out.format = fmt
    out.data = data
    return out


def compress(msg: Image, codec: str, quality: int = JPEG_QUALITY) -> CompressedImage:
    """What the `compressed` plugin publishes for `msg` with format = `codec`.

    jpeg: 8-bit colour or grey only (the plugin's 16-bit JPEG is 8-bit, lossy twice);
    png: 8- and 16-bit, lossless; tiff: every encoding here, lossless (32FC1 included).
    """
    if codec == 'jpeg':
        return jpeg_message(msg, jpeg_encoder.encode(*jpeg_input(msg), quality))
    array = image_array(msg)
    colour = _LAYOUT[msg.encoding][2]
    bits = array.dtype.itemsize * 8
    img = _pil(array, msg.encoding)
    if codec == 'png':
        if bits not in (8, 16):
            raise ValueError(f'png takes 8- and 16-bit images, not {msg.encoding}')
        return _message(msg, f'{msg.encoding}; png compressed {f"bgr{bits}" if colour else ""}',
                        _saved(img, 'PNG', compress_level=PNG_LEVEL))
    if codec == 'tiff':
        return _message(msg, f'{msg.encoding}; tiff compressed ',
                        _saved(img, 'TIFF', compression='tiff_adobe_deflate'))
    raise ValueError(f'unknown codec {codec!r} (jpeg, png, tiff)')


def jpeg_input(msg: Image) -> tuple[np.ndarray, int, int, str, str]:
    """What formats/jpeg_encoder.encode takes for `msg` after the quality: its pixels, width,
    height and Pillow modes. 8-bit colour or grey only (ValueError otherwise)."""
    array = image_array(msg)
    if array.dtype.itemsize != 1:
        raise ValueError(f'jpeg takes 8-bit images, not {msg.encoding}')
    mode, raw = _PIL_MODES[msg.encoding]
    return np.ascontiguousarray(array), int(msg.width), int(msg.height), mode, raw


def jpeg_message(msg: Image, data: bytes) -> CompressedImage:
    """The CompressedImage of `msg` holding `data`, its JPEG."""
    return _message(msg, jpeg_format(msg.encoding), data)


def jpeg_format(encoding: str) -> str:
    """The `compressed` plugin's format of a JPEG made from an Image of `encoding`."""
    colour = _LAYOUT[encoding][2]
    return f'{encoding}; jpeg compressed {"bgr8" if colour else "mono8"}'


def compress_depth(msg: Image, depth_max: float = DEPTH_MAX,
                   depth_quantization: float = DEPTH_QUANTIZATION) -> CompressedImage:
    """What the `compressedDepth` plugin publishes for a 32FC1 or 16UC1 depth `msg` (png).

    16UC1 keeps every value: unlike the plugin, values above depth_max are not zeroed
    (its depth_max filter is a publisher setting; the decoder never sees it), and the
    header's unused depthParam are zeros where the plugin leaves them uninitialised.
    32FC1 loses what inverse-depth quantisation loses: NaN, inf, d <= 0 and d >= depth_max
    become q = 0 (decoded as NaN); depths closer than A / (65535 - B) (0.15 m by default),
    where the plugin's cast would wrap, are clamped to q = 65535.
    """
    array = image_array(msg)
    if msg.encoding == '16UC1':
        header = CONFIG_HEADER.pack(INV_DEPTH, 0.0, 0.0)
        q = array
    elif msg.encoding == '32FC1':
        # In float32, as the plugin computes them.
        z0, d_max = np.float32(depth_quantization), np.float32(depth_max)
        a = np.float32(z0 * (z0 + np.float32(1.0)))
        b = np.float32(np.float32(1.0) - a / d_max)
        header = CONFIG_HEADER.pack(INV_DEPTH, float(a), float(b))
        with np.errstate(divide='ignore', invalid='ignore', over='ignore'):
            valid = np.isfinite(array) & (array > 0) & (array < d_max)
            inv = np.where(valid, a / np.where(valid, array, np.float32(1.0)) + b,
                           np.float32(0.0))
        q = np.clip(inv, 0, 65535).astype(np.uint16)  # truncates, as the C++ cast
    else:
        raise ValueError(f'compressedDepth takes 32FC1 or 16UC1, not {msg.encoding}')
    png = _saved(_pil(q, '16UC1'), 'PNG', compress_level=PNG_LEVEL)
    return _message(msg, f'{msg.encoding}; compressedDepth png', header + png)


# -- decoding (the subscribers' side), given the array cv::imdecode returned ------------

def format_encoding(fmt: str) -> str:
    """The Image encoding a CompressedImage's format names (the part before ';')."""
    return fmt.split(';', 1)[0]


def split_depth(msg: CompressedImage) -> tuple[int, float, float, bytes]:
    """A compressedDepth message's ConfigHeader (format, depthParam[0], [1]) and its PNG."""
    data = bytes(msg.data)
    if len(data) <= CONFIG_HEADER.size:
        raise ValueError(f'compressedDepth data of {len(data)} bytes holds no image')
    fmt, a, b = CONFIG_HEADER.unpack_from(data)
    return fmt, a, b, data[CONFIG_HEADER.size:]


def depth_from_decoded(decoded: np.ndarray, encoding: str, a: float, b: float) -> np.ndarray:
    """decodeCompressedDepthImage's result from the decoded 16-bit PNG."""
    if encoding != '32FC1':
        return decoded
    q = decoded.astype(np.float32)
    with np.errstate(divide='ignore'):
        depth = np.float32(a) / (q - np.float32(b))
    return np.where(decoded == 0, np.float32(np.nan), depth).astype(np.float32)


def image_from_decoded(decoded: np.ndarray, fmt: str) -> np.ndarray:
    """CompressedSubscriber's pixels, in the named encoding, from what cv::imdecode gave."""
    encoding = format_encoding(fmt)
    if encoding in ('rgb8', 'rgb16') and 'compressed bgr' in fmt:
        return np.ascontiguousarray(decoded[..., ::-1])
    return decoded
