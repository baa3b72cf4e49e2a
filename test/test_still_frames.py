"""The one builder of still-frame cameras (react_ros/adapters/still_frames.py) gives the
pixels and CameraInfo the kinds that scaled still frames by hand give today, so each can
switch to it with its bags unchanged."""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PilImage

from react_ros.adapters.still_frames import (scale_still, still_camera_info,
                                             still_camera_streams, still_size)
from react_ros.adapters.video_streams import MAX_SIDE
from react_ros.errors import ReactRosError
from react_ros.formats import jpeg
from react_ros.formats.video import scaled_size
from react_ros.ros.camera_info import camera_info

SCALES = (0.25, 0.37, 0.5, 1.0, 1.5)
META = {'width': 320, 'height': 240, 'k': [300.0, 0, 161.5, 0, 302.0, 119.25, 0, 0, 1],
        'd': [0.1, -0.05, 0.0, 0.0, 0.01], 'distortion_model': 'plumb_bob'}


def _jpeg(seed: int, size: tuple[int, int] = (320, 240)) -> bytes:
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    out = io.BytesIO()
    PilImage.fromarray(pixels).save(out, format='JPEG', quality=90)
    return out.getvalue()


@pytest.mark.parametrize('scale', SCALES)
def test_a_scaled_still_is_what_the_jpeg_decoder_gives_at_that_size(scale: float) -> None:
    """TrueTrace (files.decode_jpeg_frames) and RoboTwin (hdf5.JpegDecoder) scale inside
    jpeg.decode(size=...) today: the builder's scaling gives the same bytes."""
    data = _jpeg(3)
    size = still_size(320, 240, scale, 'cam0')
    assert size == scaled_size(320, 240, scale)
    native = jpeg.decode(data, Path('x.h5'), 'frame 0')
    want = jpeg.decode(data, Path('x.h5'), 'frame 0', size=size)
    got = scale_still(native, size)
    assert got.shape == want.shape and np.array_equal(got, want)
    if scale == 1.0:
        assert got is native  # nothing done at the frame's own size


def test_scaling_comes_before_the_channel_swap() -> None:
    """RoboTwin's JPEGs hold B, G, R: it scales, then swaps. The area filter is not
    symmetric in its channels, so the other order gives other pixels; the builder's
    to_rgb runs after the scaling."""
    native = jpeg.decode(_jpeg(5), Path('x.h5'), 'frame 0')
    size = still_size(320, 240, 0.37, 'head_camera')
    swap = (lambda a: np.ascontiguousarray(a[..., ::-1]))
    kinds_order = swap(scale_still(native, size))
    other_order = scale_still(swap(native), size)
    assert not np.array_equal(kinds_order, other_order)  # the order matters here
    (image,) = still_camera_streams('/head_camera', 'head_optical', np.array([7]),
                                    lambda: [native], (320, 240), image_scale=0.37,
                                    to_rgb=swap)
    msg = next(image.open())[1]
    assert (msg.width, msg.height) == size
    assert bytes(msg.data) == kinds_order.tobytes()


def test_a_size_past_the_largest_side_is_refused_naming_the_camera() -> None:
    with pytest.raises(ReactRosError, match=r'--image-scale 60 would make the 320x240 frames '
                       rf'of cam0 19200x14400; at most {MAX_SIDE} pixels a side'):
        still_size(320, 240, 60, 'cam0')


@pytest.mark.parametrize('scale', SCALES)
def test_camera_info_is_what_the_kinds_build_today(scale: float) -> None:
    size = still_size(320, 240, scale, 'cam0')
    # TrueTrace: camera_info(meta, t, frame_id, size=size)
    assert still_camera_info(META, 5, 'cam0_optical', size) == \
        camera_info(META, 5, 'cam0_optical', size=size)
    # RoboTwin: the same, then cx, cy (K[2], K[5], P[2], P[6]) less half a pixel
    want = camera_info(META, 5, 'head_optical', size=size)
    k, p = list(want.k), list(want.p)
    k[2] -= 0.5
    k[5] -= 0.5
    p[2] -= 0.5
    p[6] -= 0.5
    got = still_camera_info(META, 5, 'head_optical', size, pixel_centre=0.5)
    assert list(got.k) == k and list(got.p) == p
    assert (got.width, got.height) == size and list(got.d) == META['d']


def test_the_streams_carry_each_stamp_once_with_a_scaled_calibration() -> None:
    frames = [jpeg.decode(_jpeg(s), Path('x.h5'), f'frame {s}') for s in range(3)]
    stamps = np.array([10, 20, 35], dtype=np.int64)
    per_row = [dict(META, k=[300.0 + n, 0, 161.5, 0, 302.0, 119.25, 0, 0, 1]) for n in range(3)]
    image, info = still_camera_streams('/cam0', 'cam0_optical', stamps, lambda: iter(frames),
                                       (320, 240), lambda n: per_row[n], image_scale=0.5)
    assert (image.topic, info.topic) == ('/cam0/image_raw', '/cam0/camera_info')
    assert image.count == info.count == 3 and image.heavy
    images, infos = list(image.open()), list(info.open())
    assert [t for t, _ in images] == [t for t, _ in infos] == [10, 20, 35]
    assert list(image.open())[2][1] == images[2][1]  # each open starts again
    for n, ((_, im), (_, ci)) in enumerate(zip(images, infos)):
        assert (im.width, im.height, ci.width, ci.height) == (160, 120, 160, 120)
        assert bytes(im.data) == scale_still(frames[n], (160, 120)).tobytes()
        assert ci.k[0] == pytest.approx((300.0 + n) * 0.5)
        assert im.header.frame_id == ci.header.frame_id == 'cam0_optical'


def test_label_images_are_never_scaled() -> None:
    ids = np.zeros((240, 320, 3), dtype=np.uint8)
    ids[100:, 200:] = (3, 0, 0)
    (image,) = still_camera_streams('/seg', 'cam', np.array([1]), lambda: [ids], (320, 240),
                                    image_scale=0.5, labels=True)
    msg = next(image.open())[1]
    assert image.labels and (msg.width, msg.height) == (320, 240)
    assert bytes(msg.data) == ids.tobytes()
