"""formats/swscale.py: rgb24 frames into reused arrays, the same pixels as PyAV's reformat."""
from __future__ import annotations

import sys

import av
import numpy as np
import pytest
from av.video.reformatter import VideoReformatter

from react_ros.formats import swscale, video
from react_ros.formats.mapped import mapped_library
from react_ros.formats.swscale import RgbPool

# (off Linux there is no /proc/self/maps to find PyAV's libswscale in: PyAV's path only)
pytestmark = pytest.mark.skipif(not sys.platform.startswith('linux'), reason='Linux only')


def test_pyavs_own_libswscale_is_found() -> None:
    path = mapped_library('libswscale')
    assert path is not None and swscale._library()
    assert mapped_library('libswscal') is None  # a name is matched whole


def _pyav(frame: av.VideoFrame) -> np.ndarray:
    return VideoReformatter().reformat(frame, format='rgb24', threads=1).to_ndarray()


def _frame(seed: int, fmt: str = 'yuv420p', width: int = 320, height: int = 180,
           colorspace: int | None = None, color_range: int | None = None) -> av.VideoFrame:
    """A frame of noise with the decoder's layout (odd chroma sizes rounded up)."""
    rng = np.random.default_rng(seed)
    planes = rng.integers(0, 256, (height * 3 // 2, width), np.uint8)
    frame = av.VideoFrame.from_ndarray(planes, format=fmt)
    if colorspace is not None:
        frame.colorspace = colorspace
    if color_range is not None:
        frame.color_range = color_range
    return frame


@pytest.mark.parametrize('fmt, colorspace, color_range, width', [
    ('yuv420p', None, None, 320),     # untagged, as the samples' videos
    ('yuv420p', None, None, 322),     # odd chroma width, rows padded
    ('yuv420p', 5, 1, 320),           # BT.601 tagged, video range
    ('yuvj420p', None, None, 320),    # JPEG range by its format
    ('yuv420p', 1, 1, 320),           # BT.709: the frame API converts by it, sws_scale does not
    ('yuv420p', 5, 2, 320),           # full range by its tag
])
def test_every_frame_is_pyavs_pixels(fmt: str, colorspace: int | None,
                                     color_range: int | None, width: int) -> None:
    pool = RgbPool(_pyav)
    for seed in range(4):
        frame = _frame(seed, fmt, width, colorspace=colorspace, color_range=color_range)
        assert np.array_equal(pool(frame), _pyav(frame)), seed


def test_a_tag_the_plain_api_ignores_keeps_pyavs_path() -> None:
    pool = RgbPool(_pyav)
    pool(_frame(0, colorspace=1, color_range=1))  # BT.709
    pool(_frame(0))  # untagged: the samples' videos, converted into the pool
    assert sorted(pool._same.values()) == [False, True]
    assert len(pool._buffers) == 1  # (the BT.709 frame's array, not handed out, is reused)


def test_decoded_videos_are_pyavs_pixels(umi_episode) -> None:
    path = sorted(umi_episode.rglob('*.mp4'))[0]
    decoded = video.decode_rgb(path)
    container = av.open(str(path))
    try:
        for n, (got, frame) in enumerate(zip(decoded, container.decode(video=0))):
            assert np.array_equal(got, _pyav(frame)), n
        assert n > 10
    finally:
        container.close()


def test_an_array_is_written_again_only_once_nothing_refers_to_it() -> None:
    pool = RgbPool(_pyav)
    first = pool(_frame(0))
    kept = memoryview(first)  # as a bag's chunk holds a frame until it is written
    address = first.ctypes.data
    del first
    second = pool(_frame(1))
    assert second.ctypes.data != address
    assert bytes(kept) == _pyav(_frame(0)).tobytes()
    del kept, second
    third = pool(_frame(2))
    assert any(third.base is b for b in pool._buffers[:2])  # (the slice refers to both)
    assert len(pool._buffers) == 2


def test_frames_a_consumer_keeps_are_fresh_arrays_beyond_the_pool() -> None:
    pool = RgbPool(_pyav)
    kept = [pool(_frame(i % 3)) for i in range(swscale.POOL_MAX + 4)]
    assert len(pool._buffers) == swscale.POOL_MAX
    assert len({a.ctypes.data for a in kept}) == len(kept)
    assert all(np.array_equal(a, _pyav(_frame(i % 3))) for i, a in enumerate(kept[-3:], 1))


def test_a_head_goes_before_a_pool_arrays_pixels_without_copying_them() -> None:
    """cdr_in_place: the Image's CDR head written into the room before the pixels, the
    two one buffer over the pool's memory (what the player publishes), the pixels aligned."""
    pool = RgbPool(_pyav)
    pixels = pool(_frame(0))
    assert pixels.ctypes.data % 64 == 0
    head = bytes(range(70))
    joined = swscale.cdr_in_place(head, pixels)
    assert joined is not None and bytes(joined) == head + pixels.tobytes()
    assert np.frombuffer(joined, np.uint8)[len(head):].ctypes.data == pixels.ctypes.data
    address = pixels.ctypes.data
    del pixels
    assert pool(_frame(1)).ctypes.data != address  # the buffer is busy while joined is held
    del joined
    assert pool(_frame(2)).ctypes.data == address


def test_no_head_goes_where_no_room_was_made() -> None:
    pool = RgbPool(_pyav)
    frame = _frame(0)
    assert swscale.cdr_in_place(b'h' * 8, _pyav(frame)) is None  # PyAV's own array
    too_long = b'h' * (swscale.HEAD_ROOM + 64)  # (the room is HEAD_ROOM, up to 63 more)
    assert swscale.cdr_in_place(too_long, pool(frame)) is None
    plain = np.zeros(64 + 320 * 180 * 3, np.uint8)
    assert swscale.cdr_in_place(b'h' * 8, plain[64:].reshape(180, 320, 3)) is None
    assert not plain.any()  # an array from elsewhere is never written into
