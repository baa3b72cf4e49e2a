"""The ROS-free readers: MCAP records, video counts, PTS and decoding."""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from react_ros.errors import DatasetFormatError
from react_ros.formats import video
from react_ros.formats.mcap_bag import McapBag

MP4 = 'data/left.perception_interface.camera.state.mp4'


def _write_video(path: Path, pts_us: list[int], container_format: str | None = None) -> None:
    with av.open(str(path), mode='w', format=container_format) as c:
        s = c.add_stream('libx264', rate=60, options={'preset': 'ultrafast'})
        s.width, s.height, s.pix_fmt = 64, 48, 'yuv420p'
        s.time_base = s.codec_context.time_base = Fraction(1, 1_000_000)
        for i, pts in enumerate(pts_us):
            img = np.full((48, 64, 3), (i * 40) % 256, np.uint8)
            frame = av.VideoFrame.from_ndarray(img, format='rgb24')
            frame.pts, frame.time_base = pts, Fraction(1, 1_000_000)
            c.mux(s.encode(frame))
        c.mux(s.encode(None))


def test_mcap_messages_are_in_log_time_order_with_counts(umi_episode: Path) -> None:
    bag = McapBag(umi_episode / 'data/episode.mcap')
    msgs = list(bag.messages())
    assert [m.log_time_ns for m in msgs] == sorted(m.log_time_ns for m in msgs)
    counts: dict[str, int] = {}
    for m in msgs:
        counts[m.topic] = counts.get(m.topic, 0) + 1
        assert m.encoding == 'cdr' and m.data[:2] == b'\x00\x01'
        assert m.publish_time_ns == m.log_time_ns
    assert counts == {c.topic: c.count for c in bag.channels()}
    assert bag.start_ns == msgs[0].log_time_ns and bag.end_ns == msgs[-1].log_time_ns
    only = list(bag.messages(['/left/perception_interface/pose/state']))
    assert len(only) == counts['/left/perception_interface/pose/state']
    assert bag.channel('/nope') is None


@pytest.mark.parametrize('content', [b'', b'\x89MCAP0\r\n', b'not an mcap file at all' * 10])
def test_mcap_that_does_not_parse(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / 'x.mcap'
    path.write_bytes(content)
    with pytest.raises(DatasetFormatError) as err:
        McapBag(path)
    assert err.value.path == path
    with pytest.raises(DatasetFormatError, match='missing'):
        McapBag(tmp_path / 'absent.mcap')


def test_probe_counts_frames_by_demuxing_when_the_container_does_not_say(tmp_path: Path) -> None:
    pts = [0, 16000, 33500, 50000, 67100, 83300]
    mkv = tmp_path / 'v.mkv'
    _write_video(mkv, pts, 'matroska')
    with av.open(str(mkv)) as c:
        assert c.streams.video[0].frames == 0  # Matroska keeps no count
    info = video.probe(mkv)
    assert (info.frame_count, info.width, info.height, info.codec) == (6, 64, 48, 'h264')
    # Matroska stores milliseconds (rounded by its muxer); the mp4 keeps microseconds.
    mkv_pts = video.frame_pts_ns(mkv)
    assert len(mkv_pts) == 6 and mkv_pts == sorted(mkv_pts)
    assert max(abs(a - b * 1000) for a, b in zip(mkv_pts, pts)) <= 1_000_000
    mp4 = tmp_path / 'v.mp4'
    _write_video(mp4, pts)
    assert video.probe(mp4).frame_count == 6
    assert video.frame_pts_ns(mp4) == [p * 1000 for p in pts]


def test_decode_is_rgb_scaled_and_checks_the_count(umi_episode: Path) -> None:
    path = umi_episode / MP4
    info = video.probe(path)
    frames = video.decode_rgb(path, scale=0.5, expected_frames=info.frame_count)
    first = next(frames)
    assert first.dtype == np.uint8 and first.shape == (info.height // 2, info.width // 2, 3)
    assert sum(1 for _ in frames) == info.frame_count - 1
    with pytest.raises(DatasetFormatError, match=f'after {info.frame_count} of'):
        list(video.decode_rgb(path, expected_frames=info.frame_count + 1))
    assert video.scaled_size(1920, 1200, 0.25) == (480, 300)
    assert video.scaled_size(321, 201, 1.0) == (321, 201)


@pytest.mark.parametrize('content', [b'', b'\x00\x00\x00\x18ftypmp42' + b'\x00' * 200])
def test_unreadable_video(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / 'bad.mp4'
    path.write_bytes(content)
    with pytest.raises(DatasetFormatError) as err:
        video.probe(path)
    assert err.value.path == path and '\n' not in str(err.value)
    with pytest.raises(DatasetFormatError, match='missing'):
        video.probe(tmp_path / 'absent.mp4')


def test_truncated_faststart_video_is_caught_by_probe(tmp_path: Path) -> None:
    # With the index at the front, a cut file still states the full frame count.
    path = tmp_path / 'fs.mp4'
    with av.open(str(path), mode='w', options={'movflags': 'faststart'}) as c:
        s = c.add_stream('libx264', rate=60, options={'preset': 'ultrafast'})
        s.width, s.height, s.pix_fmt = 64, 48, 'yuv420p'
        s.time_base = s.codec_context.time_base = Fraction(1, 1_000_000)
        rng = np.random.default_rng(0)
        for i in range(120):
            img = rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)
            frame = av.VideoFrame.from_ndarray(img, format='rgb24')
            frame.pts, frame.time_base = i * 16667, Fraction(1, 1_000_000)
            c.mux(s.encode(frame))
        c.mux(s.encode(None))
    assert video.probe(path).frame_count == 120
    data = path.read_bytes()
    path.write_bytes(data[:len(data) * 2 // 3])
    with pytest.raises(DatasetFormatError, match='truncated'):
        video.probe(path)


@pytest.mark.parametrize('chunked', [True, False])
def test_mcap_order_matches_the_mcap_package(tmp_path: Path, chunked: bool) -> None:
    """Out-of-order logging across overlapping chunks comes out as mcap orders it."""
    from mcap.reader import make_reader
    from mcap.writer import Writer
    path = tmp_path / 'x.mcap'
    rng = np.random.default_rng(1)
    with path.open('wb') as f:
        w = Writer(f, chunk_size=200, use_chunking=chunked)
        w.start()
        sid = w.register_schema('std_msgs/msg/String', 'ros2msg', b'string data\n')
        chans = [w.register_channel(f'/t{i}', 'cdr', sid) for i in range(3)]
        for i in range(300):
            t = int(10_000 + i * 1000 + rng.integers(-5000, 5000))
            w.add_message(chans[i % 3], t, i.to_bytes(4, 'little'), t)
        w.finish()
    with path.open('rb') as f:
        ref = [(c.topic, m.log_time, m.data)
               for _, c, m in make_reader(f).iter_messages(log_time_order=True)]
    bag = McapBag(path)
    assert [(m.topic, m.log_time_ns, m.data) for m in bag.messages()] == ref
    assert [(m.topic, m.log_time_ns, m.data) for m in bag.messages(['/t1'])] == \
        [r for r in ref if r[0] == '/t1']


@pytest.mark.parametrize('record, says', [
    (b'\x05' + (30).to_bytes(8, 'little') + bytes(20), 'runs past the end of its chunk'),
    (b'\x05' + (10).to_bytes(8, 'little') + bytes(10), 'message record of 10 bytes is shorter'),
])
def test_a_chunk_record_that_does_not_fit_is_named(tmp_path: Path, record: bytes,
                                                   says: str) -> None:
    """The chunk's records are walked by their own lengths (mcap_bag._chunk_messages): a
    record longer than what is left of its chunk, or a message record shorter than a
    message's fields, is an error naming that, not a message made of the next bytes."""
    import zlib

    from mcap.writer import CompressionType, Writer
    path = tmp_path / 'x.mcap'
    with path.open('wb') as f:
        w = Writer(f, chunk_size=10**6, compression=CompressionType.NONE)
        w.start()
        sid = w.register_schema('std_msgs/msg/String', 'ros2msg', b'string data\n')
        cid = w.register_channel('/t', 'cdr', sid)
        w.add_message(cid, 5, b'ABCD', 5)
        w.finish()
    data = bytearray(path.read_bytes())
    good = b'\x05' + (26).to_bytes(8, 'little') + cid.to_bytes(2, 'little') + bytes(4) \
        + (5).to_bytes(8, 'little') * 2 + b'ABCD'
    at = bytes(data).index(good)
    assert bytes(data[at + len(good) - 4:at + len(good)]) == b'ABCD'
    # The chunk's records start after ... crc u32, compression '' (u32 0), records length u64.
    start = next(c for c in range(at, 16, -1)
                 if int.from_bytes(data[c - 8:c], 'little') > at - c
                 and zlib.crc32(data[c:c + int.from_bytes(data[c - 8:c], 'little')])
                 == int.from_bytes(data[c - 16:c - 12], 'little'))
    size = int.from_bytes(data[start - 8:start], 'little')
    # the same number of bytes, so every offset in the file still holds; the CRC made anew
    data[at:at + len(good)] = (record + bytes(len(good)))[:len(good)]
    data[start - 16:start - 12] = zlib.crc32(data[start:start + size]).to_bytes(4, 'little')
    path.write_bytes(bytes(data))
    with pytest.raises(DatasetFormatError, match=says):
        list(McapBag(path).messages())


def test_cdr_reader_agrees_with_rclpy() -> None:
    from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
    from geometry_msgs.msg import PoseStamped
    from rclpy.serialization import serialize_message

    from react_ros.ros.cdr import CdrReader, header_stamp
    for n in range(10):  # every alignment of what follows a string
        pose = PoseStamped()
        pose.header.stamp.sec, pose.header.stamp.nanosec = 1_718_445_600 + n, 123_456_789
        pose.header.frame_id = 'f' * n
        p, q = pose.pose.position, pose.pose.orientation
        p.x, p.y, p.z, q.x, q.y, q.z, q.w = 0.5 + n, -1.25, 2.0, 0.1, 0.2, 0.3, 0.927
        data = serialize_message(pose)
        assert header_stamp(data) == (1_718_445_600 + n) * 10**9 + 123_456_789
        assert CdrReader(data).pose_stamped() == (0.5 + n, -1.25, 2.0, 0.1, 0.2, 0.3, 0.927)
        status = DiagnosticStatus(level=DiagnosticStatus.WARN, name='n' * n, message='m' * (n % 3),
                                  hardware_id='h' * (9 - n),
                                  values=[KeyValue(key='k' * i, value=str(i)) for i in range(n)])
        name, values = CdrReader(serialize_message(status)).diagnostic_status()
        assert name == 'n' * n and values == {'k' * i: str(i) for i in range(n)}
