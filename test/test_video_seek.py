"""Seeking in video by keyframe: frame n is still frame n, and the cost is at most one GOP.

The video here has what makes seeking hard: a keyframe every 12 frames, B-frames
(decode order is not presentation order) and a variable frame rate (the frame at
time T is not T x rate), like UMI's recordings.
"""
from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from react_ros.errors import DatasetFormatError
from react_ros.formats import video

FRAMES = 100
GOP = 12


def _frame(n: int) -> np.ndarray:
    img = np.full((48, 64, 3), (n * 7) % 256, np.uint8)
    img[:, :n % 64] = 255 - img[:, :n % 64]
    return img


@pytest.fixture(scope='module')
def vfr_video(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int]]:
    """A 64x48 H.264 mp4 with B-frames, a GOP of 12 and jittered frame times; its PTS."""
    path = tmp_path_factory.mktemp('seek') / 'vfr.mp4'
    rng = np.random.default_rng(5)
    pts = np.cumsum(rng.integers(12_000, 22_000, FRAMES)) - 12_000
    with av.open(str(path), 'w') as c:
        s = c.add_stream('libx264', rate=60, options={
            'preset': 'veryfast', 'g': str(GOP), 'keyint_min': str(GOP), 'bf': '3',
            'sc_threshold': '0'})
        s.width, s.height, s.pix_fmt = 64, 48, 'yuv420p'
        s.time_base = s.codec_context.time_base = Fraction(1, 1_000_000)
        for n, t in enumerate(pts):
            f = av.VideoFrame.from_ndarray(_frame(n), format='rgb24')
            f.pts, f.time_base = int(t), Fraction(1, 1_000_000)
            c.mux(s.encode(f))
        c.mux(s.encode(None))
    # the muxer moves the first PTS (edit list), the steps between them stay
    got = video.frame_pts(path)
    assert np.array_equal(np.diff(got), np.diff(pts))
    return path, got


def test_the_video_is_what_the_tests_need(vfr_video) -> None:
    path, pts = vfr_video
    with av.open(str(path)) as c:
        stream = c.streams.video[0]
        packets = [p for p in c.demux(stream) if p.size]
    assert any(p.dts != p.pts for p in packets)  # B-frames
    keys = sorted(p.pts for p in packets if p.is_keyframe)
    assert [pts.index(k) for k in keys] == list(range(0, FRAMES, GOP))
    assert len(set(np.diff(pts))) > FRAMES // 2  # no frame rate to go by


def test_decoding_from_any_frame_gives_the_same_frames_within_one_gop(vfr_video) -> None:
    path, pts = vfr_video
    full = list(video.decode_rgb(path))
    assert len(full) == FRAMES
    table = video.frame_table(path)
    assert table.pts == pts and table.keyframes == list(range(0, FRAMES, GOP))
    for first in range(FRAMES):
        stats: dict[str, int] = {}
        got = list(video.decode_rgb_from(path, first, table=table, stats=stats,
                                         expected_frames=FRAMES))
        assert [n for n, _ in got] == list(range(first, FRAMES)), first
        assert all(np.array_equal(img, full[n]) for n, img in got), first
        # from the keyframe at or before `first`: less than one GOP decoded to get there
        assert stats['decoded_from'] == first // GOP * GOP, (first, stats)


def test_decoding_from_a_frame_of_a_short_video_fails_as_decode_rgb_does(vfr_video) -> None:
    path, _ = vfr_video
    with pytest.raises(DatasetFormatError, match=f'ends after {FRAMES} of {FRAMES + 5}'):
        list(video.decode_rgb_from(path, 50, expected_frames=FRAMES + 5))


def test_image_stream_open_from_is_open_from_that_stamp(vfr_video) -> None:
    """Frame n keeps stamp n after a seek: the shared builder, on a VFR video."""
    from react_ros.adapters.video_streams import video_camera_streams
    path, pts = vfr_video
    stamps = 1_700_000_000_000_000_000 + np.asarray(pts, dtype=np.int64) * 1000
    image, info = video_camera_streams(path, stamps, '/cam', 'cam_optical_frame',
                                       {'width': 64, 'height': 48, 'k': [1.0] * 9})
    assert image.open_from is not None and info.open_from is None
    everything = [(t, bytes(m.data)) for t, m in image.open()]
    assert [t for t, _ in everything] == stamps.tolist()
    for t in [int(stamps[0]) - 1, int(stamps[37]), int(stamps[37]) + 1, int(stamps[60]),
              int(stamps[-1]), int(stamps[-1]) + 1]:
        got = [(ts, bytes(m.data)) for ts, m in image.open_from(t)]
        assert got == [e for e in everything if e[0] >= t], t


def test_umi_camera_stream_open_from_keeps_frame_to_pointer_stamps(umi_episode: Path) -> None:
    from react_ros.registry import open_episode
    from react_ros.ros.msgs import to_ns
    episode = open_episode(umi_episode)
    (cam,) = [s for s in episode.streams if s.topic == '/center/image_raw']
    everything = [(t, to_ns(m.header.stamp), bytes(m.data)) for t, m in cam.open()]
    t = everything[len(everything) * 2 // 3][0] + 1  # between two frames
    got = [(ts, to_ns(m.header.stamp), bytes(m.data)) for ts, m in cam.open_from(t)]
    assert got and got == [e for e in everything if e[0] >= t]


def _tasks() -> set[str]:
    return set(os.listdir('/proc/self/task'))


@pytest.mark.skipif(not Path('/proc/self/task').is_dir(), reason='Linux /proc only')
def test_rgb_conversion_starts_no_threads_per_frame_and_keeps_the_pixels(vfr_video) -> None:
    """PyAV's to_ndarray(format=...) builds a swscale context per frame, and with threads
    left to FFmpeg every context started threads of its own (~350 for a 2 s UMI episode,
    each soon with a malloc arena: the converter's page faults). decode_rgb keeps one
    context per video, single-threaded, with the same pixels as to_ndarray."""
    path, _ = vfr_video
    for scale in (1.0, 0.5):
        before = _tasks()
        seen: set[str] = set()
        got = []
        for frame in video.decode_rgb(path, scale):
            seen |= _tasks()
            got.append(frame)
        started = seen - before
        # FFmpeg's decoder threads are started once per video; not one per frame.
        assert len(started) < FRAMES // 4, f'{len(started)} threads for {FRAMES} frames'
        with av.open(str(path)) as c:
            stream = c.streams.video[0]
            w, h = video.scaled_size(stream.width, stream.height, scale)
            want = [f.to_ndarray(format='rgb24') if scale == 1.0 else
                    f.to_ndarray(width=w, height=h, format='rgb24', interpolation='AREA')
                    for f in c.decode(stream)]
        assert len(got) == len(want) == FRAMES
        assert all(np.array_equal(a, b) for a, b in zip(got, want)), scale
