"""JPEG frames stored one per record (RoboTwin's HDF5, TrueTrace's export), decoded strictly.

FFmpeg's mjpeg decoder and Pillow both turn a damaged scan (bytes zeroed, or noise
in place of the entropy-coded data) into a picture without a word: a frame that is
noise would go out as an Image. libjpeg-turbo notices: the decoder's warnings
("Corrupt JPEG data: 134 extraneous bytes before marker 0xd9", "premature end of data
segment") mean the scan did not decode as written. simplejpeg raises on them
(strict=True), so a frame is either what the file holds or refused, naming it.

Every frame of a camera is also held to one size: its CameraInfo says one width and
height, and an Image of another size beside it would be drawn through the wrong K.
No ROS here.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import simplejpeg

from react_ros.errors import DatasetFormatError

SOI, EOI = b'\xff\xd8', b'\xff\xd9'


def check_markers(data: bytes, path: Path, what: str) -> None:
    """The start and end of image markers, without decoding (cheap, for every frame)."""
    if not data.startswith(SOI) or not data.endswith(EOI):
        raise DatasetFormatError(path, f'{what} is not a JPEG (no start or end of image marker;'
                                 f' {len(data)} bytes)')


def jpeg_size(data: bytes, path: Path, what: str) -> tuple[int, int]:
    """(width, height) from the frame's header, without decoding its scan."""
    check_markers(data, path, what)
    try:
        height, width, _, _ = simplejpeg.decode_jpeg_header(data)
    except ValueError as exc:
        raise DatasetFormatError(path, f'{what} does not decode as a JPEG ({exc})') from None
    return int(width), int(height)


def check_size(data: bytes, path: Path, what: str, expected: tuple[int, int],
               of: str) -> None:
    """Refuse a frame whose size is not `expected` (the size `of` names: the camera's)."""
    size = jpeg_size(data, path, what)
    if size != expected:
        raise DatasetFormatError(path, f'{what} is {size[0]}x{size[1]} but {of} is '
                                 f'{expected[0]}x{expected[1]}: one camera, one size')


def decode(data: bytes, path: Path, what: str, *, expected: tuple[int, int] | None = None,
           size: tuple[int, int] | None = None) -> np.ndarray:
    """HxWx3 uint8 in the channel order the JPEG holds; refused unless it decodes cleanly.

    `expected` (width, height) refuses a frame of another size; `size` resizes the
    decoded frame (AREA, as the video decoder scales).
    """
    check_markers(data, path, what)
    try:
        image = simplejpeg.decode_jpeg(data, colorspace='RGB', strict=True)
    except ValueError as exc:
        raise DatasetFormatError(path, f'{what} does not decode cleanly as a JPEG '
                                 f'({_one_line(exc)}): a damaged frame is not published') from None
    got = (int(image.shape[1]), int(image.shape[0]))
    if expected is not None and got != expected:
        raise DatasetFormatError(path, f'{what} is {got[0]}x{got[1]} but the camera\'s frames '
                                 f'are {expected[0]}x{expected[1]}: one camera, one size')
    if size is not None and size != got:
        image = resize_area(image, size)
    return image


def resize_area(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """`image` at (width, height) with area averaging (FFmpeg's swscale, as videos are)."""
    import av
    frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format='rgb24')
    return np.ascontiguousarray(frame.reformat(width=size[0], height=size[1], format='rgb24',
                                               interpolation='AREA').to_ndarray())


def _one_line(exc: BaseException) -> str:
    return ' '.join(str(exc).split())


__all__ = ['check_markers', 'check_size', 'decode', 'jpeg_size', 'resize_area']
