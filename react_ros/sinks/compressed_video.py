"""`--images h264`: each video-backed Image stream as foxglove_msgs/CompressedVideo.

The stream on `<image topic>/compressed_video` carries, as message n, frame n of
what the Image stream would publish: `timestamp` and `frame_id` are that raw
image's, `data` one Annex B frame (parameter sets in every keyframe message,
formats/video_packets.py) and `format` the codec ('h264', 'h265', 'vp9', 'av1').
Foxglove's Image panel decodes these messages; the CameraInfo streams stay as
they are.

Pass-through (the recorded packets, nothing decoded) when all of these hold:
- the codec is one CompressedVideo names (video_packets.FOXGLOVE_FORMATS);
- the video has no B-frames (viewers decode without reordering frames);
- `--image-scale` is 1 (the packets hold the recorded pixels);
- the frames published are one contiguous run of the video starting at a keyframe
  (React's tactile latency or a trimmed segment may start mid-GOP or skip rows);
- their stamps do not decrease in frame order (messages go out in stamp order,
  and decode order must be that order).
Otherwise the stream is re-encoded (libx264, no B-frames) from the very frames
the Image stream publishes, so rows, offsets, scale and stamps are exactly the
raw stream's. One stderr line says which topic and video are re-encoded and
why; one more, when the stream first ends, what it cost. `no_reencode` refuses
such a stream (SinkError, exit 2) before anything is written.

Image streams not backed by a video (RoboTwin's HDF5 JPEGs, depth, labels) stay
sensor_msgs/Image, with one stderr note per topic.

Seeks (`open_from`, the live player): a passed-through stream starts at the
keyframe at or before the first frame stamped `from_ns` or later, so the first
message after a seek is decodable. The frames between that keyframe and the
target are stamped before `from_ns`, and the player's read-ahead drops what
comes before its start; so they are yielded at `from_ns` (sent at once when
playback resumes) while each message keeps its own `timestamp`. Bags never
seek: `open()` yields every message at its own stamp. A re-encoded stream
starts encoding at the target, and an encoder's first frame is a keyframe.
"""
from __future__ import annotations

import array
import bisect
import sys
import time
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np
from builtin_interfaces.msg import Time
from foxglove_msgs.msg import CompressedVideo
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import Image

from react_ros.errors import DatasetFormatError, SinkError
from react_ros.formats import video
from react_ros.formats.video_packets import FOXGLOVE_FORMATS, encode_h264, has_b_frames, \
    read_packets
from react_ros.ros.msgs import stamp
from react_ros.streams import Stream, VideoSource

if TYPE_CHECKING:
    from react_ros.adapters.base import Episode

MODE = 'h264'
IMAGE = 'sensor_msgs/msg/Image'
COMPRESSED_VIDEO = 'foxglove_msgs/msg/CompressedVideo'
TRANSPORT = 'compressed_video'  # the topic suffix (spec/INTERFACE.md)
# What a compressed frame weighs, for read-ahead budgets only: a re-encoded frame
# against its raw frame; a passed-through one against the video's mean frame
# (keyframes weigh several P-frames).
_REENCODE_RATIO = 20
_KEYFRAME_WEIGHT = 4
_DEFAULT_FPS = 30.0
Notes = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class VideoPlan:
    """How one Image stream becomes CompressedVideo."""

    topic: str  # the Image topic
    video: Path
    format: str  # CompressedVideo.format of what is published
    reason: str | None  # why it is re-encoded; None: passed through
    keyframes: tuple[int, ...] = ()  # frame indices (pass-through only)

    @property
    def passthrough(self) -> bool:
        return self.reason is None


def plan_for(stream: Stream) -> VideoPlan:
    """Pass-through or re-encode, by the conditions of the module docstring."""
    source = _video(stream)
    path = Path(source.path)
    frames = np.asarray(source.frames, dtype=np.int64)
    info = video.probe(path)
    if info.codec not in FOXGLOVE_FORMATS:
        return VideoPlan(stream.topic, path, 'h264', f'its codec {info.codec} is none that '
                         f'CompressedVideo carries ({", ".join(FOXGLOVE_FORMATS.values())})')
    fmt = FOXGLOVE_FORMATS[info.codec]

    def reencode(reason: str) -> VideoPlan:
        return VideoPlan(stream.topic, path, 'h264', reason)
    if has_b_frames(path):
        return reencode('has B-frames, which foxglove_msgs/CompressedVideo cannot carry')
    scale = float(source.scale)
    if scale != 1.0:
        return reencode(f'--image-scale {scale:g} changes its pixels')
    if len(frames) == 0:
        return VideoPlan(stream.topic, path, fmt, None)
    order = np.argsort(frames, kind='stable')
    in_frame_order = frames[order]
    if not np.array_equal(in_frame_order, np.arange(in_frame_order[0],
                                                    in_frame_order[0] + len(frames))):
        return reencode(f'the stream publishes {len(frames)} of frames {in_frame_order[0]}..'
                        f'{in_frame_order[-1]}, not one run of the video')
    # Released in stamp order (ties in frame order), so frames in frame order means
    # stamps that do not decrease in frame order.
    if not np.array_equal(order, np.arange(len(frames))):
        return reencode('its frames are not stamped in frame order')
    keyframes = tuple(video.frame_table(path).keyframes)
    first = int(frames[0])
    if first not in keyframes:
        return reencode(f'the stream starts at frame {first}, which is not a keyframe')
    return VideoPlan(stream.topic, path, fmt, None, keyframes)


class CompressedVideoStreams:
    """Plans every Image stream of an episode, then builds the CompressedVideo streams.

    Planning reads each video's packet table (no decoding) and refuses a stream
    that needs re-encoding when `reencode` is False; nothing is written until
    `streams()` is opened, so a refusal comes before any output.
    """

    def __init__(self, streams: Sequence[Stream], *, reencode: bool = True,
                 notes: Notes = _stderr) -> None:
        self.notes = notes
        self.source = list(streams)
        self.plans: dict[int, VideoPlan] = {}
        kept: list[str] = []
        for i, s in enumerate(self.source):
            if s.msg_type != IMAGE:
                continue
            if s.video is None:
                if s.topic not in kept:
                    kept.append(s.topic)
                continue
            self.plans[i] = plan_for(s)
        refused = [p for p in self.plans.values() if not p.passthrough]
        if refused and not reencode:
            p = refused[0]
            more = f' (and {len(refused) - 1} more video(s))' if len(refused) > 1 else ''
            raise SinkError(f'{p.video}: {p.reason}; --no-reencode refuses to re-encode it'
                            f'{more}')
        for topic in kept:
            notes(f'note: --images h264: {topic} is not from a video; it stays '
                  'sensor_msgs/Image')
        for p in refused:
            notes(f'note: --images h264: re-encoding {p.topic} ({p.video}) as h264: {p.reason}')

    def streams(self) -> list[Stream]:
        return [self._stream(s, self.plans[i]) if i in self.plans else s
                for i, s in enumerate(self.source)]

    def _stream(self, stream: Stream, plan: VideoPlan) -> Stream:
        source = _video(stream)
        frames = np.asarray(source.frames, dtype=np.int64)
        stamps = np.asarray(source.stamps, dtype=np.int64)
        frame_id = str(source.frame_id)
        if plan.passthrough:
            def open_() -> Iterator[tuple[int, Any]]:
                return _passed_through(plan, frames, stamps, frame_id)

            def open_from(t_ns: int) -> Iterator[tuple[int, Any]]:
                return _passed_through(plan, frames, stamps, frame_id, from_ns=t_ns)
            size = plan.video.stat().st_size
            approx = size // max(1, len(frames)) * _KEYFRAME_WEIGHT + 200
        else:
            fps = _fps(stamps)
            cost = _Cost(plan, self.notes)
            raw_open, raw_from = stream.open, stream.open_from

            def open_() -> Iterator[tuple[int, Any]]:
                return _reencoded(raw_open(), fps, cost)

            def open_from(t_ns: int) -> Iterator[tuple[int, Any]]:
                source = raw_from(t_ns) if raw_from is not None else \
                    ((t, m) for t, m in raw_open() if t >= t_ns)
                return _reencoded(source, fps, cost)
            approx = max(stream.approx_bytes - 200, 0) // _REENCODE_RATIO + 200
        return replace(stream, topic=f'{stream.topic}/{TRANSPORT}', msg_type=COMPRESSED_VIDEO,
                       open=open_, open_from=open_from, heavy=True, approx_bytes=approx)


def _video(stream: Stream) -> VideoSource:
    if stream.video is None:
        raise ValueError(f'{stream.topic}: not backed by a video')
    return stream.video


def compressed_video_streams(streams: Sequence[Stream], *, reencode: bool = True,
                             notes: Notes = _stderr) -> list[Stream]:
    """`streams` with each video-backed Image stream replaced by its CompressedVideo stream."""
    return CompressedVideoStreams(streams, reencode=reencode, notes=notes).streams()


def _message(timestamp: Time, frame_id: str, data: bytes, fmt: str) -> CompressedVideo:
    msg = CompressedVideo()
    msg.timestamp = timestamp
    msg.frame_id = frame_id
    buf = array.array('B')  # the setter keeps an array.array as it is: one copy
    buf.frombytes(data)
    msg.data = buf
    msg.format = fmt
    return msg


def _passed_through(plan: VideoPlan, frames: np.ndarray, stamps: np.ndarray, frame_id: str,
                    from_ns: int | None = None) -> Iterator[tuple[int, CompressedVideo]]:
    """The recorded packets of frames[0]..frames[-1]; from a seek, from the keyframe before."""
    if len(frames) == 0:
        return
    base, last = int(frames[0]), int(frames[-1])
    start = base
    if from_ns is not None:
        j = int(np.searchsorted(stamps, from_ns, side='left'))
        if j == len(frames):
            return
        # the keyframe at or before the first frame wanted; the run starts at one
        start = plan.keyframes[bisect.bisect_right(plan.keyframes, base + j) - 1]
    expect = start
    packets = read_packets(plan.video)
    try:
        for p in packets:
            if p.index < start:
                continue
            if p.index != expect:
                raise DatasetFormatError(plan.video, f'packet of frame {p.index} came where '
                                         f'frame {expect} was due')
            if p.index == start and not p.keyframe:
                raise DatasetFormatError(plan.video, f'frame {start} was listed as a keyframe '
                                         'but its packet is not one')
            t = int(stamps[p.index - base])
            yield (t if from_ns is None else max(t, from_ns)), \
                _message(stamp(t), frame_id, p.data, plan.format)
            if p.index == last:
                return
            expect += 1
    finally:
        packets.close()
    raise DatasetFormatError(plan.video, f'video ends after {expect} of {last + 1} frames')


def _fps(stamps: np.ndarray) -> float:
    """The frame rate the stamps show (the median step), for the encoder's rate control."""
    steps = np.diff(np.sort(stamps))
    steps = steps[steps > 0]
    return 1e9 / float(np.median(steps)) if len(steps) else _DEFAULT_FPS


def _pixels(image: Image) -> np.ndarray:
    if image.encoding != 'rgb8':
        raise SinkError(f'--images h264: cannot encode {image.encoding!r} video frames')
    return np.frombuffer(image.data, np.uint8).reshape(image.height, image.width, 3)


class _Cost:
    """What re-encoding one stream cost, said once, when the stream first runs to its end.

    CPU time is the process's while this stream's generator ran (decoding its
    frames and encoding them, x264's worker threads included); on a player
    whose other cameras decode at the same time it includes some of theirs.
    """

    def __init__(self, plan: VideoPlan, notes: Notes) -> None:
        self.plan = plan
        self.notes = notes
        self.said = False

    def report(self, frames: int, cpu_s: float) -> None:
        if self.said:
            return
        self.said = True
        per = cpu_s / frames if frames else 0.0
        self.notes(f'note: --images h264: re-encoded {self.plan.topic}: {frames} frames, '
                   f'{cpu_s:.2f} CPU s, {per:.4f} s a frame')


def _reencoded(source: Iterator[tuple[int, Any]], fps: float,
               cost: _Cost) -> Iterator[tuple[int, CompressedVideo]]:
    """The raw stream's frames encoded as h264; message n carries raw image n's header."""
    pending: deque[tuple[int, Any]] = deque()  # frames given to the encoder, not out yet

    def frames() -> Iterator[np.ndarray]:
        for t, msg in source:
            image = deserialize_message(msg, Image) if isinstance(msg, bytes) else msg
            pending.append((t, image.header))
            yield _pixels(image)
    cpu = 0.0
    done = 0
    encoder = encode_h264(frames(), fps)
    try:
        began = time.process_time()
        for p in encoder:
            t, header = pending.popleft()
            msg = _message(header.stamp, header.frame_id, p.data, 'h264')
            done += 1
            cpu += time.process_time() - began
            yield t, msg
            began = time.process_time()
        cpu += time.process_time() - began
    finally:
        encoder.close()
        close = getattr(source, 'close', None)
        if close is not None:
            close()
    cost.report(done, cpu)


def episode_with_images(episode: Episode, images: str, *, reencode: bool = True,
                        notes: Notes = _stderr) -> Episode:
    """The episode as the player publishes it: `images` 'raw' (as it is) or 'h264'."""
    if images == 'raw':
        return episode
    if images != MODE:
        raise SinkError(f'images: {images!r} is not one the player publishes (raw or {MODE})')
    return replace(episode, streams=compressed_video_streams(episode.streams, reencode=reencode,
                                                             notes=notes))


__all__ = ['COMPRESSED_VIDEO', 'MODE', 'TRANSPORT', 'CompressedVideoStreams', 'VideoPlan',
           'compressed_video_streams', 'episode_with_images', 'plan_for']
