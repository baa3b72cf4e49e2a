"""Sinks that decode a video-backed Image stream themselves (issue 43): the raw bag's
Images as the decoder's pixel buffer behind a small CDR head, the JPEGs from the
decoder's planes. What they decode must be what the stream itself would publish.
"""
from __future__ import annotations

import weakref
from pathlib import Path

import av
import numpy as np
import pytest

from react_ros.adapters.video_streams import video_camera_streams
from react_ros.formats import video
from react_ros.rosbag2.chunk_writer import Pieces
from react_ros.ros.serialization import cdr_payload
from react_ros.sinks.image_encoding import decodable, image_cdr_frames, video_frames


@pytest.fixture(scope='module')
def umi_video(umi_episode: Path) -> Path:
    (path,) = umi_episode.rglob('center.*.mp4')
    return path


def _stream(path: Path, scale: float = 1.0):  # type: ignore[no-untyped-def]
    """An Image stream over `path` whose frames are neither all, nor from the first, nor in
    stamp order: rows 3.. shifted by an offset of 2, two stamps swapped."""
    n = video.probe(path).frame_count
    stamps = np.arange(n, dtype=np.int64) * 20_000_000 + 1_000_000_000
    stamps[10], stamps[11] = stamps[11], stamps[10]
    rows = np.arange(3, n - 4)
    (image,) = video_camera_streams(path, stamps, '/cam', 'cam_optical', rows=rows, offset=2,
                                    image_scale=scale)
    return image


@pytest.mark.parametrize('scale', [1.0, 0.5])
def test_video_frames_are_the_streams_frames(umi_video: Path, scale: float) -> None:
    stream = _stream(umi_video, scale)
    assert decodable(stream)
    theirs = [(t, bytes(m.data)) for t, m in stream.open()]
    ours = [(t, np.ascontiguousarray(px).tobytes()) for t, px in video_frames(stream.video)]
    assert [t for t, _ in ours] == [t for t, _ in theirs]
    assert ours == theirs


def test_video_frames_from_a_stamp_are_the_streams_from_it(umi_video: Path) -> None:
    stream = _stream(umi_video)
    t0 = [t for t, _ in stream.open()][20]
    theirs = [(t, bytes(m.data)) for t, m in stream.open_from(t0)]
    ours = [(t, np.ascontiguousarray(px).tobytes())
            for t, px in video_frames(stream.video, from_ns=t0)]
    assert ours == theirs and len(ours) > 0


def test_raw_cdr_is_the_decoders_buffer_behind_the_images_head(umi_video: Path) -> None:
    """Each raw Image written as Pieces: the CDR of the stream's own Image, its pixels the
    array the decoder's rgb24 conversion wrote (formats/swscale.py's pool), no copy made on
    the way: once a frame's pieces are let go, a later frame's pixels are in that same
    buffer (the pool's: its arrays are views of it)."""
    stream = _stream(umi_video)
    messages = list(stream.open())
    written = list(image_cdr_frames(stream.video))
    assert len(written) == len(messages)
    for (t, msg), (t2, pieces) in zip(messages, written):
        assert t == t2 and isinstance(pieces, Pieces)
        head, pixels = pieces
        assert bytes(head) + pixels.tobytes() == bytes(cdr_payload(msg))
    del written, pieces, pixels
    frames = image_cdr_frames(stream.video)
    first = weakref.ref(next(frames)[1][1].base)
    later = [next(frames)[1][1].base is first() for _ in range(3)]
    assert first() is not None and any(later)


@pytest.mark.parametrize('scale', [1.0, 0.5])
def test_the_player_sends_each_frame_as_the_images_cdr(umi_video: Path, scale: float) -> None:
    """What the player sends for a video camera (live._as_cdr: the Image's head and the
    decoder's buffer, one buffer on the read-ahead thread or at the publish) is the bytes
    of the stream's own Image, serialised: from the start and from a stamp (a seek, a
    start offset)."""
    from react_ros.sinks.live import _as_cdr
    from react_ros.sinks.readahead import serialised
    stream = _stream(umi_video, scale)
    cdr = _as_cdr(stream)
    t0 = [t for t, _ in stream.open()][20]
    for theirs, ours in ((stream.open(), cdr.open()),
                         (stream.open_from(t0), cdr.open_from(t0))):  # type: ignore[misc]
        want = [(t, serialised(m)) for t, m in theirs]
        got = [(t, serialised(m)) for t, m in ours]
        assert len(got) == len(want) > 0
        # At the video's own size the head goes before the pool's pixels (one buffer,
        # nothing copied: swscale.cdr_in_place); scaled frames are joined once.
        kind = memoryview if scale == 1.0 else bytes
        assert all(isinstance(b, kind) for _, b in got)
        assert [(t, bytes(b)) for t, b in got] == want


def test_a_video_that_ends_early_is_refused(umi_video: Path) -> None:
    stream = _stream(umi_video)
    n = video.probe(umi_video).frame_count
    source = stream.video
    beyond = type(source)(source.path, np.append(source.frames, n + 5),
                          np.append(source.stamps, source.stamps.max() + 1), source.frame_id)
    from react_ros.errors import DatasetFormatError
    with pytest.raises(DatasetFormatError, match=f'video ends after {n} of {n + 6} frames'):
        list(video_frames(beyond))


def test_planes_are_the_decoders_yuv420(umi_video: Path) -> None:
    """decode_yuv420 hands out the decoder's own planes (views, video range), which
    swscale's rgb24 of the same frame is made from."""
    with av.open(str(umi_video)) as container:
        first = next(container.decode(video=0))
        expected = first.to_ndarray()  # yuv420p: Y rows, then U, V
    frame = next(iter(video.decode_yuv420(umi_video)))
    assert isinstance(frame, video.Yuv420) and not frame.full_range
    h, w = frame.y.shape
    assert np.array_equal(frame.y, expected[:h])
    assert np.array_equal(frame.u.ravel(), expected[h:h + h // 4].ravel())
    assert np.array_equal(frame.v.ravel(), expected[h + h // 4:].ravel())
