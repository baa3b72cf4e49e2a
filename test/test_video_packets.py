"""Video packets for CompressedVideo: Annex B, parameter sets at every keyframe, no B-frames.

The strongest check is a viewer's: a fresh decoder fed only our packets, from
any keyframe on, shows exactly the frames video.decode_rgb shows there.
"""
from __future__ import annotations

import itertools
from fractions import Fraction
from pathlib import Path
from typing import Iterable

import av
import numpy as np
import pytest

from react_ros.errors import DatasetFormatError
from react_ros.formats import video
from react_ros.formats import video_packets as vp
from react_ros.formats.video_packets import Packet

FRAMES = 40
GOP = 12
W, H = 64, 48


def _frame(n: int, w: int = W, h: int = H) -> np.ndarray:
    """Moving stripes, so every frame differs from its neighbours."""
    img = np.full((h, w, 3), (n * 7) % 256, np.uint8)
    img[:, :n % w] = 255 - img[:, :n % w]
    img[n % h, :, 1] = 255
    return img


def _smooth(n: int) -> np.ndarray:
    """A gradient, no edges, easy for the encoder; its level jumps from frame to frame,
    so a frame off by one is far outside the error bound."""
    y, x = np.mgrid[0:H, 0:W]
    level = (n * 37) % 80
    return np.stack([20 + 2 * x + level, 30 + 2 * y + level, 60 + x + y + level // 2],
                    axis=-1).astype(np.uint8)


def _via_yuv420(rgb: np.ndarray) -> np.ndarray:
    """What RGB -> 4:2:0 -> RGB alone makes of a frame: the best any H.264 of it can be."""
    frame = av.VideoFrame.from_ndarray(rgb, format='rgb24').reformat(format='yuv420p')
    return frame.to_ndarray(format='rgb24')


def _write(path: Path, codec: str, options: dict[str, str], frames: int = FRAMES,
           size: tuple[int, int] = (W, H), container_options: dict[str, str] | None = None,
           pix_fmt: str = 'yuv420p') -> Path:
    with av.open(str(path), 'w', options=container_options or {}) as c:
        s = c.add_stream(codec, rate=30, options=options)
        s.width, s.height, s.pix_fmt = size[0], size[1], pix_fmt
        for n in range(frames):
            c.mux(s.encode(av.VideoFrame.from_ndarray(_frame(n, *size), format='rgb24')))
        c.mux(s.encode(None))
    return path


X264 = {'preset': 'veryfast', 'g': str(GOP), 'keyint_min': str(GOP), 'sc_threshold': '0'}


@pytest.fixture(scope='module')
def videos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp('packets')
    return {
        'bframes': _write(d / 'bframes.mp4', 'libx264', {**X264, 'bf': '3'}),
        'plain': _write(d / 'plain.mp4', 'libx264', {**X264, 'bf': '0'}),
        # open GOP: keyframes after the first are I-frames, not IDRs
        'open_gop': _write(d / 'open_gop.mp4', 'libx264',
                           {**X264, 'bf': '3', 'x264-params': 'open-gop=1'}),
    }


def _nal_types(data: bytes) -> list[int]:
    """NAL unit types by start codes, parsed here rather than trusting the module's parser."""
    types, i = [], data.find(b'\x00\x00\x01')
    while i >= 0:
        types.append(data[i + 3] & 0x1F)
        i = data.find(b'\x00\x00\x01', i + 3)
    return types


def _decode(packets: Iterable[Packet], codec: str = 'h264') -> list[tuple[int | None, np.ndarray]]:
    """(pts, rgb) of every frame a fresh decoder makes of the packets' bytes alone."""
    ctx = av.CodecContext.create(codec, 'r')
    out = []
    for p in [*packets, None]:
        if p is None:
            frames = ctx.decode(None)
        else:
            pkt = av.Packet(p.data)
            pkt.pts = pkt.dts = p.pts
            frames = ctx.decode(pkt)
        out += [(f.pts, f.to_ndarray(format='rgb24')) for f in frames]
    return out


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float('inf') if mse == 0 else 10 * np.log10(255 ** 2 / mse)


def test_the_videos_are_what_the_tests_need(videos) -> None:
    for name in ('bframes', 'plain'):
        keys = video.frame_table(videos[name]).keyframes
        assert keys == list(range(0, FRAMES, GOP)), name
    with av.open(str(videos['open_gop'])) as c:
        s = c.streams.video[0]
        bsf = av.bitstream.BitStreamFilterContext('h264_mp4toannexb', s)
        keys = [bytes(q) for p in c.demux(s) if p.size for q in bsf.filter(p) if q.is_keyframe]
    # ffmpeg's filter inserts SPS/PPS only before IDR slices (type 5): these later
    # keyframes (I slices, type 1) come out of it without them.
    assert len(keys) > 2 and 5 not in _nal_types(keys[1]) and 7 not in _nal_types(keys[1])


@pytest.mark.parametrize('name', ['bframes', 'plain', 'open_gop'])
def test_one_packet_per_frame_indexed_in_presentation_order(videos, name) -> None:
    path = videos[name]
    packets = list(vp.read_packets(path))
    assert len(packets) == video.probe(path).frame_count == FRAMES
    assert sorted(p.index for p in packets) == list(range(FRAMES))
    if not vp.has_b_frames(path):
        assert [p.index for p in packets] == list(range(FRAMES))
    by_index = sorted(packets, key=lambda p: p.index)
    with av.open(str(path)) as c:
        tb = c.streams.video[0].time_base
    assert [p.pts for p in by_index] == video.frame_pts(path)
    assert [p.time_s for p in by_index] == [float(t * tb) for t in video.frame_pts(path)]
    assert all(p.data for p in packets)


def test_b_frames_are_seen_without_decoding(videos) -> None:
    assert vp.has_b_frames(videos['bframes'])
    assert not vp.has_b_frames(videos['plain'])
    with av.open(str(videos['bframes'])) as c:
        packets = [p for p in c.demux(c.streams.video[0]) if p.size]
    assert any(p.pts != p.dts for p in packets)


@pytest.mark.parametrize('name', ['bframes', 'plain', 'open_gop'])
def test_packets_decode_to_the_videos_frames(videos, name) -> None:
    path = videos[name]
    want = list(video.decode_rgb(path))
    got = _decode(vp.read_packets(path))
    assert len(got) == len(want) == FRAMES
    assert all(np.array_equal(g, w) for (_, g), w in zip(got, want))


@pytest.mark.parametrize('name', ['bframes', 'plain', 'open_gop'])
def test_every_keyframe_carries_sps_and_pps(videos, name) -> None:
    packets = list(vp.read_packets(videos[name]))
    keys = [p for p in packets if p.keyframe]
    assert len(keys) == len(range(0, FRAMES, GOP))
    for p in packets:
        types = _nal_types(p.data)
        assert p.data.startswith(b'\x00\x00\x00\x01') or p.data.startswith(b'\x00\x00\x01')
        if p.keyframe:
            assert {7, 8} <= set(types), (p.index, types)
            # the sets come before the picture's slices
            assert max(types.index(7), types.index(8)) < min(
                i for i, t in enumerate(types) if t in (1, 5))


@pytest.mark.parametrize('name', ['bframes', 'plain'])
def test_a_viewer_can_start_at_any_keyframe(videos, name) -> None:
    """Closed GOPs: keyframe k's packets up to the next keyframe are frames [k, next)."""
    path = videos[name]
    want = list(video.decode_rgb(path))
    packets = list(vp.read_packets(path))
    starts = [i for i, p in enumerate(packets) if p.keyframe] + [len(packets)]
    for a, b in zip(starts, starts[1:]):
        segment = packets[a:b]
        got = _decode(segment)
        first = packets[a].index
        assert len(got) == len(segment)
        assert [pts for pts, _ in got] == sorted(p.pts for p in segment)
        for n, (_, rgb) in enumerate(got, first):
            assert np.array_equal(rgb, want[n]), (name, first, n)


def test_a_viewer_can_start_at_an_open_gop_keyframe(videos) -> None:
    """Open GOP: from a later keyframe on, every frame at or after it is decoded exactly."""
    path = videos['open_gop']
    want = list(video.decode_rgb(path))
    packets = list(vp.read_packets(path))
    index_of = {p.pts: p.index for p in packets}
    for a in [i for i, p in enumerate(packets) if p.keyframe][1:]:
        first = packets[a].index
        got = {index_of[pts]: rgb for pts, rgb in _decode(packets[a:])}
        # (leading B-frames, shown before the keyframe, need the GOP before: not checked)
        assert set(range(first, FRAMES)) <= set(got)
        for n in range(first, FRAMES):
            assert np.array_equal(got[n], want[n]), (first, n)


def test_parameter_sets_from_avcc_extradata(videos) -> None:
    with av.open(str(videos['plain'])) as c:
        extradata = bytes(c.streams.video[0].codec_context.extradata)
    assert extradata[0] == 1  # avcC, not Annex B
    units = vp._extradata_units('h264', extradata)
    assert [vp.nal_type('h264', u) for u in units] == [7, 8]
    first = next(vp.read_packets(videos['plain'])).data
    assert all(b'\x00\x00\x01' + u in first for u in units)


def test_raw_annex_b_stream(videos, tmp_path) -> None:
    raw = tmp_path / 'plain.h264'
    raw.write_bytes(b''.join(p.data for p in vp.read_packets(videos['plain'])))
    assert vp.video_format(raw) == 'h264'
    assert not vp.has_b_frames(raw)
    packets = list(vp.read_packets(raw))
    assert [p.index for p in packets] == list(range(FRAMES))
    assert [p.index for p in packets if p.keyframe] == list(range(0, FRAMES, GOP))
    assert all({7, 8} <= set(_nal_types(p.data)) for p in packets if p.keyframe)
    want = list(video.decode_rgb(videos['plain']))
    got = _decode(packets)
    assert len(got) == FRAMES and all(np.array_equal(g, w) for (_, g), w in zip(got, want))
    # without timestamps, B-frames show in the parser's reorder delay
    raw_b = tmp_path / 'bframes.h264'
    raw_b.write_bytes(b''.join(p.data for p in vp.read_packets(videos['bframes'])))
    assert vp.has_b_frames(raw_b)
    assert len(list(vp.read_packets(raw_b))) == FRAMES


def test_hevc_gets_vps_sps_pps_at_every_keyframe(tmp_path) -> None:
    x265 = 'keyint=6:min-keyint=6:scenecut=0:bframes=0:log-level=0'
    path = _write(tmp_path / 'h265.mp4', 'libx265', {'preset': 'ultrafast', 'x265-params': x265},
                  frames=14, size=(64, 64))
    assert vp.video_format(path) == 'h265'
    packets = list(vp.read_packets(path))
    assert len(packets) == 14
    keys = [p for p in packets if p.keyframe]
    assert len(keys) >= 2
    for p in keys:
        assert {32, 33, 34} <= set(vp.nal_types('hevc', p.data))
    with av.open(str(path)) as c:
        extradata = bytes(c.streams.video[0].codec_context.extradata)
    units = vp._extradata_units('hevc', extradata)
    assert [vp.nal_type('hevc', u) for u in units][:3] == [32, 33, 34]
    want = list(video.decode_rgb(path))
    got = _decode(packets, 'hevc')
    assert len(got) == 14 and all(np.array_equal(g, w) for (_, g), w in zip(got, want))


def test_vp9_passes_through(tmp_path) -> None:
    path = _write(tmp_path / 'v.webm', 'libvpx-vp9', {'deadline': 'realtime', 'cpu-used': '8'},
                  frames=10)
    assert vp.video_format(path) == 'vp9'
    packets = list(vp.read_packets(path))
    assert [p.index for p in packets] == list(range(10))
    want = list(video.decode_rgb(path))
    got = _decode(packets, 'vp9')
    assert len(got) == 10 and all(np.array_equal(g, w) for (_, g), w in zip(got, want))


def test_other_codecs_are_refused(tmp_path) -> None:
    path = _write(tmp_path / 'm.mp4', 'mpeg4', {}, frames=5)
    with pytest.raises(DatasetFormatError, match=r'm\.mp4.*codec mpeg4 cannot be passed through'):
        vp.video_format(path)
    with pytest.raises(DatasetFormatError, match='codec mpeg4'):
        next(vp.read_packets(path))


def test_damaged_files_are_format_errors(videos, tmp_path) -> None:
    garbage = tmp_path / 'garbage.mp4'
    garbage.write_bytes(bytes(range(256)) * 40)
    # moov at the end (the default): cut short, the file has no index at all
    cut = tmp_path / 'cut.mp4'
    cut.write_bytes(videos['plain'].read_bytes()[:-2000])
    # moov in front: the index is whole but the last frames are missing
    fast = _write(tmp_path / 'fast.mp4', 'libx264', {**X264, 'bf': '0'},
                  container_options={'movflags': 'faststart'})
    fast_cut = tmp_path / 'fast_cut.mp4'
    fast_cut.write_bytes(fast.read_bytes()[:-300])
    missing = tmp_path / 'missing.mp4'
    for path in (garbage, cut, fast_cut, missing):
        with pytest.raises(DatasetFormatError, match=path.name):
            list(vp.read_packets(path))
        with pytest.raises(DatasetFormatError, match=path.name):
            vp.has_b_frames(path)
    with pytest.raises(DatasetFormatError, match='truncated'):
        list(vp.read_packets(fast_cut))
    with pytest.raises(DatasetFormatError, match=garbage.name):
        vp.video_format(garbage)


def _check_encoded(packets: list[Packet], n: int, gop: int, fps: float) -> None:
    assert len(packets) == n
    assert [p.index for p in packets] == [p.pts for p in packets] == list(range(n))
    assert [p.time_s for p in packets] == [i / fps for i in range(n)]
    assert [p.index for p in packets if p.keyframe] == list(range(0, n, gop))
    for p in packets:
        types = _nal_types(p.data)
        assert p.keyframe == (5 in types), (p.index, types)  # keyframes are IDRs
        if p.keyframe:
            assert {7, 8} <= set(types), (p.index, types)


def test_encode_h264_without_b_frames(tmp_path) -> None:
    frames = [_smooth(n) for n in range(45)]
    assert max(_psnr(a, b) for a, b in zip(frames, frames[1:])) < 25
    packets = list(vp.encode_h264(frames, 30, gop=10))
    _check_encoded(packets, 45, 10, 30)
    got = _decode(packets)
    # decode order is presentation order: no frame is held back for reordering
    assert [pts for pts, _ in got] == list(range(45))
    assert min(_psnr(g, f) for (_, g), f in zip(got, frames)) > 35
    assert max(np.abs(g.astype(int) - f).mean() for (_, g), f in zip(got, frames)) < 3
    # and each keyframe alone starts a decodable run
    rest = _decode(packets[20:])
    assert len(rest) == 25 and np.array_equal(rest[0][1], got[20][1])


def test_encode_h264_default_gop_is_about_a_second() -> None:
    packets = list(vp.encode_h264((_smooth(n) for n in range(20)), 8.0))
    _check_encoded(packets, 20, 8, 8.0)
    assert list(vp.encode_h264([], 30)) == []


def test_encode_h264_is_lazy() -> None:
    endless = (_smooth(n) for n in itertools.count())
    first = list(itertools.islice(vp.encode_h264(endless, 30, preset='ultrafast'), 3))
    assert [p.index for p in first] == [0, 1, 2]


def test_encode_h264_odd_sizes_and_bad_input() -> None:
    odd = [np.zeros((47, 63, 3), np.uint8) + n for n in range(3)]
    packets = list(vp.encode_h264(odd, 30))
    assert len(packets) == 3 and _decode(packets)[0][1].shape == (46, 62, 3)
    with pytest.raises(ValueError, match='frame 1'):
        list(vp.encode_h264([np.zeros((48, 64, 3), np.uint8),
                             np.zeros((48, 32, 3), np.uint8)], 30))
    with pytest.raises(ValueError, match='fps'):
        list(vp.encode_h264([np.zeros((48, 64, 3), np.uint8)], 0))


def test_reencode_removes_b_frames(videos, tmp_path) -> None:
    path = videos['bframes']
    want = list(video.decode_rgb(path))
    packets = list(vp.reencode_h264(path, gop=GOP))
    _check_encoded(packets, FRAMES, GOP, 30.0)
    got = _decode(packets)
    assert [pts for pts, _ in got] == list(range(FRAMES))
    # Sharp coloured stripes, judged against their own 4:2:0 conversion: about
    # 41 dB typical, 35 at worst here; a frame off by one is below 25.
    assert min(_psnr(g, _via_yuv420(w)) for (_, g), w in zip(got, want)) > 32
    assert max(_psnr(_via_yuv420(a), _via_yuv420(b)) for a, b in zip(want, want[1:])) < 25
    # written to a file, the result reads back as a video without B-frames
    out = tmp_path / 'reencoded.h264'
    out.write_bytes(b''.join(p.data for p in packets))
    assert not vp.has_b_frames(out)
    assert len(list(vp.read_packets(out))) == FRAMES


def test_reencode_takes_the_stream_rate(videos) -> None:
    with av.open(str(videos['plain'])) as c:
        assert c.streams.video[0].average_rate == Fraction(30)
    packets = list(vp.reencode_h264(videos['plain']))
    assert [p.index for p in packets if p.keyframe] == [0, 30]
    assert packets[-1].time_s == (FRAMES - 1) / 30
