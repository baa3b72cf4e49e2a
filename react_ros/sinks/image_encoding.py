"""`--images jpeg|png`: every sensor_msgs/Image stream becomes a CompressedImage stream.

Which plugin and codec a stream gets (the first message's encoding decides; a later
message with another encoding is refused):

| Image | `jpeg` | `png` |
|---|---|---|
| rgb8, bgr8, mono8, 8UC1 | `compressed` JPEG | `compressed` PNG |
| labels (`Stream.labels`: segmentation colours, 16UC1 ids), mono16 | `compressed` PNG | `compressed` PNG |
| 16UC1 depth (16UC1 without `labels`: REP 118 millimetres) | `compressedDepth` PNG | `compressedDepth` PNG |
| 32FC1 depth (metres) | `compressedDepth` PNG (inverse-depth quantised) | `compressed` TIFF (exact) |
| 32FC2, 32FC3 (fields: RoboTwin's optical and scene flow) | stays sensor_msgs/Image | stays sensor_msgs/Image |

A field of vectors is data, not a picture: no image_transport plugin carries it (compressed
takes 1 or 3 channels of 8 or 16 bits, compressedDepth one), so under `jpeg` or `png` it is
written as the Image it is, on its own topic, and said once per topic. Any other encoding
the table lacks is refused.

The topic is the Image topic plus `/` and the transport name, as image_transport names
them (`/x/image_raw/compressed`, `/x/image_raw/compressedDepth`), so RViz's transport
hint and `image_transport republish` find them.

Why 32FC1 under `png` is a TIFF and not compressedDepth: compressedDepth has no
lossless float path (32FC1 is quantised to 16-bit inverse depth; 16UC1 is whole
millimetres), and the depths we publish are not whole millimetres (RoboTwin stores
float64 millimetres computed from camera z). `png` promises what PNG promises, no loss,
and the `compressed` plugin's `tiff` format is the one standard codec that keeps a
32FC1 image bit for bit (`32FC1; tiff compressed `, decoded by cv::imdecode as 32FC1).

Encoding runs on a thread pool shared by the streams: each stream keeps a window of
frames in flight and yields them in order, so the bag is the same whatever the
scheduling (the encoders are deterministic; two runs give identical bytes). A camera
recorded as a video (`decodable`) is decoded here, not through its Image stream, and
its JPEGs are made from the decoder's 4:2:0 planes by libjpeg-turbo on that pool, which
it runs on every core (the encoder releases the GIL): no RGB frame, no Image, no copy
to another process (issue 43). Other JPEGs go to Pillow in worker processes
(formats/jpeg_encoder.py: Pillow's JPEG encoder holds the GIL) where there is more
than one core. After a stop
signal (react_ros/output.py) the workers skip what is queued, the reader stops waiting
within STOP_POLL_S, and the pools are joined when the encoder's `with` block ends.
"""
from __future__ import annotations

import array
import os
import struct
import sys
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Sequence

import numpy as np
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import CompressedImage, Image

from react_ros.errors import DatasetFormatError, SinkError
from react_ros.formats import video
from react_ros.formats.jpeg_encoder import JpegProcesses, encode_planes
from react_ros.ros import compressed_image as ci
from react_ros.ros.msgs import stamp
from react_ros.ros.serialization import cdr_payload
from react_ros.output import STOP_POLL_S, check_stop
from react_ros.streams import Pieces, Stream, VideoSource

IMAGE = 'sensor_msgs/msg/Image'
COMPRESSED_IMAGE = 'sensor_msgs/msg/CompressedImage'
MODES = ('raw', 'jpeg', 'png')
# Frames one stream keeps in flight, per worker: enough to keep the pool busy while the
# merge pulls streams in turn, few enough that full-size frames stay in memory bounds.
WINDOW_PER_WORKER = 2
MAX_WORKERS = 8


@dataclass(frozen=True)
class Plan:
    """How one Image stream is encoded."""

    encoding: str  # of the source Images
    transport: str  # ci.COMPRESSED or ci.COMPRESSED_DEPTH: the topic suffix ('' kept raw)
    codec: str  # 'jpeg', 'png', 'tiff' (compressed), 'png' (compressedDepth) or 'raw'

    def encode(self, msg: Image, quality: int) -> CompressedImage:
        if self.transport == ci.COMPRESSED_DEPTH:
            return ci.compress_depth(msg)
        return ci.compress(msg, self.codec, quality)


# Vector fields, kept as Images under --images jpeg|png (the table above)
KEPT_RAW = ('32FC2', '32FC3')


def plan_for(encoding: str, mode: str, labels: bool = False) -> Plan:
    """The table of the module docstring."""
    if encoding in KEPT_RAW and not labels:
        return Plan(encoding, '', 'raw')
    if encoding not in ci.ENCODINGS:
        raise SinkError(f'--images {mode}: cannot encode {encoding!r} images '
                        f'(only {", ".join(ci.ENCODINGS)})')
    if encoding == '32FC1':
        if labels:
            raise SinkError(f'--images {mode}: 32FC1 label images are not supported')
        return (Plan(encoding, ci.COMPRESSED, 'tiff') if mode == 'png'
                else Plan(encoding, ci.COMPRESSED_DEPTH, 'png'))
    if encoding == '16UC1' and not labels:
        return Plan(encoding, ci.COMPRESSED_DEPTH, 'png')
    if labels or encoding in ('mono16', '16UC1'):
        return Plan(encoding, ci.COMPRESSED, 'png')
    return Plan(encoding, ci.COMPRESSED, mode)


def _image(msg: Any) -> Image:
    return deserialize_message(msg, Image) if isinstance(msg, bytes) else msg


def _first_encoding(stream: Stream) -> str | None:
    """The encoding of the stream's first message (None when it has none)."""
    it = stream.open()
    try:
        for _, msg in it:
            return str(_image(msg).encoding)
        return None
    finally:
        close = getattr(it, 'close', None)
        if close is not None:
            close()


def transport_of(stream: Stream, mode: str) -> str:
    """The topic suffix `mode` ('jpeg', 'png') gives the Image `stream`, as ImageEncoder
    decides it (by the first image's encoding)."""
    encoding = _first_encoding(stream) if stream.count != 0 else None
    return plan_for(encoding or 'rgb8', mode, stream.labels).transport


# What a compressed frame weighs against its raw frame, for read-ahead budgets only.
_RATIO = {'jpeg': 10, 'png': 2, 'tiff': 2}


class ImageEncoder:
    """Encodes Image streams on one pool; use as a context manager (the pool's lifetime)."""

    def __init__(self, mode: str, jpeg_quality: int = ci.JPEG_QUALITY,
                 workers: int | None = None,
                 notes: Callable[[str], None] | None = None) -> None:
        if mode not in MODES:
            raise SinkError(f'--images: unknown mode {mode!r} (one of {", ".join(MODES)})')
        if not 1 <= jpeg_quality <= 100:
            raise SinkError(f'--jpeg-quality: must be 1-100, got {jpeg_quality}')
        self.mode = mode
        self.quality = jpeg_quality
        self.notes = notes or (lambda line: print(line, file=sys.stderr))
        self.workers = workers or min(MAX_WORKERS, os.cpu_count() or 1)
        self._pool: ThreadPoolExecutor | None = None
        # JPEGs in processes, started at the first; on one core threads do as well.
        self._jpeg = JpegProcesses(self.workers) if self.workers > 1 else None

    def __enter__(self) -> ImageEncoder:
        if self.mode != 'raw':
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix='image-encode')
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._jpeg is not None:
            self._jpeg.close()

    def streams(self, streams: Sequence[Stream]) -> list[Stream]:
        """`streams` with each Image stream replaced by its CompressedImage stream (a
        field of vectors stays as it is: KEPT_RAW)."""
        if self.mode == 'raw':
            return list(streams)
        return [self.stream(s) if s.msg_type == IMAGE else s for s in streams]

    def stream(self, stream: Stream) -> Stream:
        # (labels are never encoded lossily: they take the table's PNG)
        source = stream.video if self.mode == 'jpeg' and decodable(stream) \
            and not stream.labels else None
        # (a video's frames are rgb8: no first image needs decoding to know it)
        encoding = 'rgb8' if source is not None else \
            _first_encoding(stream) if stream.count != 0 else None
        plan = plan_for(encoding or 'rgb8', self.mode, stream.labels)
        if not plan.transport:
            self.notes(f'note: --images {self.mode}: {stream.topic} ({plan.encoding}) stays '
                       'sensor_msgs/Image: no compressed transport carries a vector field')
            return stream
        opener = stream.open_from

        def open_() -> Iterator[tuple[int, Any]]:
            if source is not None:
                return self._from_planes(source, video_frames(source, planes=True))
            return self._encoded(stream.topic, plan, stream.open())
        open_from = None
        if source is not None:
            def open_from(t_ns: int) -> Iterator[tuple[int, Any]]:
                return self._from_planes(source, video_frames(source, planes=True,
                                                              from_ns=t_ns))
        elif opener is not None:
            def open_from(t_ns: int) -> Iterator[tuple[int, Any]]:
                return self._encoded(stream.topic, plan, opener(t_ns))
        raw = max(stream.approx_bytes - 200, 0)
        return replace(stream, topic=f'{stream.topic}/{plan.transport}',
                       msg_type=COMPRESSED_IMAGE, open=open_,
                       approx_bytes=raw // _RATIO[plan.codec] + 200,
                       open_from=open_from)

    def _from_planes(self, source: VideoSource, frames: Iterator[tuple[int, Any]]
                     ) -> Iterator[tuple[int, CompressedImage]]:
        """The JPEGs of a video's frames, made from the decoder's planes on the pool."""
        pool = self._checked_pool()
        quality = self.quality

        def work(frame: Any) -> bytes:
            check_stop()  # queued before a stop: skipped, the reader is leaving
            return encode_planes(frame, quality)

        def submit(t_ns: int, frame: Any) -> tuple[int, Future[bytes], Callable[[], Any]]:
            fut = pool.submit(work, frame)

            def finish() -> CompressedImage:
                out = CompressedImage()
                out.header.stamp = stamp(t_ns)
                out.header.frame_id = source.frame_id
                out.format = ci.jpeg_format('rgb8')
                data = array.array('B')
                data.frombytes(_result(fut))
                out.data = data
                return out
            return t_ns, fut, finish
        yield from _in_order((submit(t, frame) for t, frame in frames),
                             WINDOW_PER_WORKER * self.workers, frames)

    def _checked_pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            raise RuntimeError('ImageEncoder used outside its `with` block')
        return self._pool

    def _encoded(self, topic: str, plan: Plan, source: Iterator[tuple[int, Any]]
                 ) -> Iterator[tuple[int, CompressedImage]]:
        pool = self._checked_pool()
        quality = self.quality
        jpeg = self._jpeg if plan.transport == ci.COMPRESSED and plan.codec == 'jpeg' else None

        def checked(t_ns: int, msg: Any) -> Image:
            image = _image(msg)
            if image.encoding != plan.encoding:
                raise SinkError(f'{topic}: the image at {t_ns} ns is {image.encoding}, '
                                f'the stream began as {plan.encoding}')
            return image

        def refused(t_ns: int, err: ValueError) -> SinkError:
            return SinkError(f'{topic}: the image at {t_ns} ns: {err}')

        def work(t_ns: int, msg: Any) -> CompressedImage:
            check_stop()  # queued before a stop: skipped, the reader is leaving
            image = checked(t_ns, msg)
            try:
                return plan.encode(image, quality)
            except ValueError as err:
                raise refused(t_ns, err) from None

        def submit(t_ns: int, msg: Any) -> tuple[Future[Any], Callable[[], CompressedImage]]:
            """The frame's encoding under way, and what waits for its message."""
            if jpeg is None:
                fut = pool.submit(work, t_ns, msg)
                return fut, lambda: _result(fut)
            image = checked(t_ns, msg)
            try:
                jpeg_fut = jpeg.submit(*ci.jpeg_input(image), quality)
            except ValueError as err:
                raise refused(t_ns, err) from None

            def finish() -> CompressedImage:
                try:
                    return ci.jpeg_message(image, _result(jpeg_fut))
                except ValueError as err:  # the encoder's refusal
                    raise refused(t_ns, err) from None
            return jpeg_fut, finish

        yield from _in_order(((t_ns, *submit(t_ns, msg)) for t_ns, msg in source),
                             WINDOW_PER_WORKER * self.workers, source)


def _in_order(submitted: Iterator[tuple[int, Future[Any], Callable[[], Any]]], limit: int,
              source: Iterator[Any]) -> Iterator[tuple[int, Any]]:
    """(t, finish()) of each (t, future, finish) submitted, in that order, with `limit` of
    them in flight: so the bag is the same whatever the scheduling. What is in flight is
    cancelled and `source` closed however the iteration ends."""
    window: deque[tuple[int, Future[Any], Callable[[], Any]]] = deque()
    try:
        for item in submitted:
            window.append(item)
            if len(window) >= limit:
                t, _fut, finish = window.popleft()
                yield t, finish()
        while window:
            t, _fut, finish = window.popleft()
            yield t, finish()
    finally:
        for _, fut, _finish in window:
            fut.cancel()
        close: Callable[[], None] | None = getattr(source, 'close', None)
        if close is not None:
            close()


def decodable(stream: Stream) -> bool:
    """Whether a sink may decode `stream`'s pixels from its video itself (video_frames):
    an Image stream backed by a video, each frame published once."""
    source = stream.video
    return (source is not None and stream.msg_type == IMAGE
            and len(np.unique(source.frames)) == len(source.frames))


def image_cdr_frames(source: VideoSource, from_ns: int | None = None
                     ) -> Iterator[tuple[int, Pieces]]:
    """(stamp, Pieces(head, pixels)) of every Image the stream `source` backs (decodable):
    the CDR that ros/image.py's rgb_image would serialise to, as the Image's fields before
    its pixels (their count last) and then the decoder's rgb24 buffer itself, not copied.
    Joined they are the message's bytes (test_video_frames.py); the bag writer takes the
    two pieces as they are, the player joins them once (three copies of each frame fewer
    than building the Image and serialising it)."""
    for t_ns, rgb in video_frames(source, from_ns=from_ns):
        pixels = np.ascontiguousarray(rgb)  # a copy only where the decoder padded its rows
        msg = Image()
        msg.header.stamp = stamp(t_ns)
        msg.header.frame_id = source.frame_id
        msg.height, msg.width = int(pixels.shape[0]), int(pixels.shape[1])
        msg.encoding = 'rgb8'
        msg.step = msg.width * 3
        head = cdr_payload(msg)  # the empty data's count last: the pixels' count instead
        head[-4:] = struct.pack('<I', pixels.nbytes)
        yield t_ns, Pieces((head, pixels))


def video_frames(source: VideoSource, planes: bool = False, from_ns: int | None = None
                 ) -> Iterator[tuple[int, Any]]:
    """(stamp, pixels) of every message of the Image stream `source` backs (decodable), in
    the stream's order, decoded here: the rgb24 array the stream's Image holds, or with
    `planes` what video.decode_yuv420 gives; from the first stamped `from_ns` or later.

    The video is decoded from the keyframe before the first frame wanted to the last
    one wanted; a video that ends before it is a DatasetFormatError, as it is for the
    stream itself."""
    from react_ros.adapters.video_streams import in_stamp_order
    frames, stamps = np.asarray(source.frames), np.asarray(source.stamps)
    if from_ns is not None:
        keep = stamps >= from_ns
        frames, stamps = frames[keep], stamps[keep]
    if not len(frames):
        return
    order = np.argsort(frames, kind='stable')
    frames, stamps = frames[order], stamps[order]
    first, last = int(frames[0]), int(frames[-1])
    wanted = set(frames.tolist())
    if first == 0:
        decoded: Iterator[tuple[int, Any]] = enumerate(
            (video.decode_yuv420 if planes else video.decode_rgb)(source.path, source.scale))
    else:
        decoded = (video.decode_yuv420_from if planes else video.decode_rgb_from)(
            source.path, first, source.scale)

    def pixels() -> Iterator[Any]:
        n = -1
        try:
            for n, frame in decoded:
                if n in wanted:
                    yield frame
                if n >= last:
                    return
        finally:
            close = getattr(decoded, 'close', None)
            if close is not None:
                close()
        raise DatasetFormatError(source.path, f'video ends after {n + 1} of {last + 1} '
                                 'frames')
    yield from in_stamp_order(pixels(), stamps)


def _result(fut: Future[Any]) -> Any:
    """The future's result, looking at the stop flag every STOP_POLL_S while it waits."""
    while True:
        check_stop()
        try:
            return fut.result(timeout=STOP_POLL_S)
        except TimeoutError:  # (concurrent.futures raises the builtin one)
            continue


@contextmanager
def encoded_streams(streams: Sequence[Stream], mode: str, jpeg_quality: int = ci.JPEG_QUALITY,
                    workers: int | None = None) -> Iterator[list[Stream]]:
    """`streams` with Images encoded per `mode`, valid to open inside the `with` block."""
    with ImageEncoder(mode, jpeg_quality, workers) as encoder:
        yield encoder.streams(streams)
