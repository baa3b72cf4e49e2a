"""Video files through PyAV: frame counts, per-frame PTS and lazy RGB (or planar) decoding.

Frame n is the n-th frame in presentation order, also when decoding starts
elsewhere: `decode_rgb_from` seeks to the keyframe before frame n and names
every decoded frame by its PTS's place in `frame_pts` (never by time x rate:
variable-frame-rate videos have no rate).

Plain numpy and int-ns out, no rclpy.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Iterator

import av
import numpy as np
from av.video.reformatter import VideoReformatter

from react_ros.errors import DatasetFormatError
from react_ros.formats.swscale import RgbPool

# swscale threads per conversion: one, as the videos are decoded side by side already.
SWS_THREADS = 1
_AV_ERRORS = (av.FFmpegError, EOFError, ValueError, IndexError, OSError)


@dataclass(frozen=True)
class VideoInfo:
    path: Path
    frame_count: int
    width: int
    height: int
    codec: str


# Opening a container decodes its first frames to fill in the stream's parameters
# (70 ms for a 1920x1200 mp4 here). What only demuxes needs none of that: with
# every frame skipped the open takes 2 ms, and width, height, codec, frame count
# and time base are still read from the container. One entry per stream, enough
# for any file a dataset holds.
_DEMUX_ONLY = [{'skip_frame': 'all'}] * 16


def _open(path: Path, decode: bool = True) -> av.container.InputContainer:
    """Open `path` for reading; `decode=False` when only its packets will be read."""
    if not path.is_file():
        raise DatasetFormatError(path, 'video file is missing')
    try:
        # PyAV's stubs say list[str]; stream_options takes one dict per stream
        container = av.open(str(path), mode='r',  # type: ignore[call-overload]
                            stream_options=None if decode else _DEMUX_ONLY)
    except _AV_ERRORS as exc:
        raise DatasetFormatError(path, f'not a readable video ({_why(exc)})') from None
    if not container.streams.video:
        container.close()
        raise DatasetFormatError(path, 'file holds no video stream')
    return container


def _why(exc: BaseException) -> str:
    return str(exc).split(': \'/')[0] or type(exc).__name__


def scaled_size(width: int, height: int, scale: float) -> tuple[int, int]:
    """Frame size after scaling; even sizes keep chroma subsampling exact."""
    if scale == 1.0:
        return width, height
    return max(2, round(width * scale / 2) * 2), max(2, round(height * scale / 2) * 2)


def probe(path: Path | str) -> VideoInfo:
    """Open the container and count its frames without decoding.

    mp4 states the count in its sample table; containers that do not
    (Matroska, raw streams) are counted by demuxing packets.
    """
    path = Path(path)
    container = _open(path, decode=False)
    try:
        stream = container.streams.video[0]
        ctx = stream.codec_context
        if not ctx.width or not ctx.height:
            # a raw stream states its size only in frames that are decoded
            container.close()
            container = _open(path)
            stream = container.streams.video[0]
            ctx = stream.codec_context
        if stream.frames:
            count = stream.frames
            _check_tail(container, path)
        else:
            count = _count_packets(container, path)
        if count == 0 or not ctx.width or not ctx.height:
            raise DatasetFormatError(path, 'video has no frames')
        return VideoInfo(path, count, ctx.width, ctx.height, ctx.name)
    finally:
        container.close()


def _check_tail(container: av.container.InputContainer, path: Path) -> None:
    """Read the last GOP's packets to catch a file that was cut short.

    With its index at the front (mp4 faststart) such a file still states the
    full frame count, but its last packets are missing.
    """
    stream = container.streams.video[0]
    if not stream.duration or not stream.frames:
        return
    start = stream.start_time or 0
    end = start + stream.duration
    try:
        container.seek(end, stream=stream, backward=True)
        last = max((p.pts for p in container.demux(stream) if p.size and p.pts is not None),
                   default=None)
    except _AV_ERRORS as exc:
        raise DatasetFormatError(path, f'video is corrupt ({_why(exc)})') from None
    # The last frame starts about one frame before the stated end; allow a few
    # frames of slack for a variable frame rate.
    slack = 4 * stream.duration // stream.frames
    if last is None or last < end - slack:
        raise DatasetFormatError(path, 'video is truncated: its last frames are missing')


def _count_packets(container: av.container.InputContainer, path: Path) -> int:
    try:
        return sum(1 for p in container.demux(container.streams.video[0]) if p.size)
    except _AV_ERRORS as exc:
        raise DatasetFormatError(path, f'video is corrupt ({_why(exc)})') from None


@dataclass(frozen=True)
class FrameTable:
    """Per frame, in presentation order: its PTS (stream time base); and which are keyframes."""

    pts: list[int]
    keyframes: list[int]  # frame indices, ascending


def frame_table(path: Path | str) -> FrameTable:
    """Read from the packets, without decoding (they come in decode order: sorted here)."""
    path = Path(path)
    container = _open(path, decode=False)
    try:
        stream = container.streams.video[0]
        packets = [(p.pts, p.is_keyframe) for p in container.demux(stream)
                   if p.size and p.pts is not None]
    except _AV_ERRORS as exc:
        raise DatasetFormatError(path, f'video is corrupt ({_why(exc)})') from None
    finally:
        container.close()
    packets.sort()
    return FrameTable([p for p, _ in packets], [i for i, (_, key) in enumerate(packets) if key])


def frame_pts(path: Path | str) -> list[int]:
    """Presentation time of every frame in the stream's time base; item n is frame n's."""
    return frame_table(path).pts


def frame_pts_ns(path: Path | str) -> list[int]:
    """Presentation time of every frame, in ns on the container's timeline."""
    path = Path(path)
    container = _open(path, decode=False)
    try:
        tb = container.streams.video[0].time_base or Fraction(1, 1)
    finally:
        container.close()
    return [int(p * tb.numerator * 1_000_000_000 // tb.denominator) for p in frame_pts(path)]


class _Rgb:
    """Decoded frames to HxWx3 rgb24 arrays through one swscale context per video.

    PyAV's frame.to_ndarray(format=...) builds a new context for every frame, and a
    context left to choose its thread count starts threads of its own: about two per
    frame, each with a stack and soon a malloc arena of its own (converting 2 s of UMI
    at 1920x1200 started ~350 threads). One context per video, with SWS_THREADS, starts
    none. At the frame's own size the arrays come from a pool (formats/swscale.py: no
    fresh pages per frame). Same pixels.
    """

    def __init__(self, size: tuple[int, int]) -> None:
        self._reformatter = VideoReformatter()
        self._size = size
        self._pool = RgbPool(self._reformat)

    def _reformat(self, frame: av.VideoFrame) -> np.ndarray:
        rgb = self._reformatter.reformat(frame, format='rgb24', threads=SWS_THREADS)
        return rgb.to_ndarray()

    def __call__(self, frame: av.VideoFrame) -> np.ndarray:
        width, height = self._size
        if (width, height) == (frame.width, frame.height):
            return self._pool(frame)
        # AREA: averages the source pixels (no aliasing when shrinking) and costs a
        # third less than swscale's default bicubic here.
        rgb = self._reformatter.reformat(frame, width=width, height=height,
                                         format='rgb24', interpolation='AREA',
                                         threads=SWS_THREADS)
        return rgb.to_ndarray()


@dataclass(frozen=True)
class Yuv420:
    """A frame's 8-bit 4:2:0 planes as the decoder made them (no RGB in between): y HxW,
    u and v half that (rounded up), rows without padding where the decoder left none. `full_range`:
    0-255 (JPEG's, yuvj420p) rather than the video range 16-235 / 16-240 that swscale
    takes an untagged yuv420p frame to be when it converts to rgb24 (_Rgb)."""

    y: np.ndarray
    u: np.ndarray
    v: np.ndarray
    full_range: bool


# Colour matrices (AVColorSpace) whose YCbCr is JPEG's, BT.601 (FCC differs from it in the
# fourth decimal): unspecified, FCC, BT470BG, SMPTE170M. swscale's rgb24 conversion takes an
# untagged frame to be BT.601 too (SWS_CS_DEFAULT), so planes and rgb24 show one colour.
_BT601 = frozenset({2, 4, 5, 6})
_YUV420 = {'yuv420p': False, 'yuvj420p': True}


class _Planes:
    """Decoded frames as Yuv420 (scaled in the same format where asked), or, for a frame
    whose planes are not 8-bit 4:2:0 in BT.601 colours, as _Rgb makes it."""

    def __init__(self, size: tuple[int, int]) -> None:
        self._reformatter = VideoReformatter()
        self._size = size
        self._rgb = _Rgb(size)

    def __call__(self, frame: av.VideoFrame) -> Yuv420 | np.ndarray:
        fmt = frame.format.name
        if fmt not in _YUV420 or _colorspace(frame) not in _BT601:
            return self._rgb(frame)
        width, height = self._size
        if (width, height) != (frame.width, frame.height):
            frame = self._reformatter.reformat(frame, width=width, height=height,
                                               interpolation='AREA', threads=SWS_THREADS)
        y, u, v = (_plane(p, w, h) for p, w, h in zip(
            frame.planes, (width, (width + 1) // 2, (width + 1) // 2),
            (height, (height + 1) // 2, (height + 1) // 2)))
        return Yuv420(y, u, v, _YUV420[fmt])


def _colorspace(frame: av.VideoFrame) -> int:
    return int(frame.colorspace)


def _plane(plane: Any, width: int, height: int) -> np.ndarray:
    """The plane's pixels as an HxW view of the frame's buffer (rows may be padded)."""
    rows = np.frombuffer(plane, np.uint8, count=plane.line_size * height)
    return rows.reshape(height, plane.line_size)[:, :width]


def decode_rgb(path: Path | str, scale: float = 1.0,
               expected_frames: int | None = None) -> Iterator[np.ndarray]:
    """Yield HxWx3 uint8 RGB frames in presentation order, decoded lazily.

    Scaling happens inside the one swscale conversion to rgb24, so a scaled
    frame costs no extra pass. When `expected_frames` is given, a video that
    ends early is an error rather than a silently short stream.
    """
    return _decoded(path, _Rgb, scale, expected_frames)


def decode_yuv420(path: Path | str, scale: float = 1.0, expected_frames: int | None = None
                  ) -> Iterator[Yuv420 | np.ndarray]:
    """What decode_rgb yields, as the decoder's Yuv420 planes where they are BT.601 4:2:0
    (else the rgb24 array): what a JPEG is made from without an RGB frame."""
    return _decoded(path, _Planes, scale, expected_frames)


def _decoded(path: Path | str, convert: Callable[[tuple[int, int]], Callable[[Any], Any]],
             scale: float, expected_frames: int | None) -> Iterator[Any]:
    path = Path(path)
    container = _open(path)
    n = 0
    try:
        stream, size = _video_stream(container, scale)
        pixels = convert(size)
        for frame in container.decode(stream):
            yield pixels(frame)
            n += 1
    except _AV_ERRORS as exc:
        raise DatasetFormatError(path, f'video frame {n} cannot be decoded '
                                 f'({_why(exc)})') from None
    finally:
        container.close()
    if expected_frames is not None and n < expected_frames:
        raise DatasetFormatError(path, f'video ends after {n} of {expected_frames} frames')


def decode_rgb_from(path: Path | str, first: int, scale: float = 1.0,
                    expected_frames: int | None = None, table: FrameTable | None = None,
                    stats: dict[str, int] | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """Yield (n, HxWx3 uint8 RGB) for frames n = first, first + 1, ... to the end.

    Decoding starts at the keyframe before frame `first`, so getting there
    costs at most one GOP wherever `first` is; the frames between that
    keyframe and `first` are decoded but not converted. `table` is
    `frame_table(path)` (read here when not given). Each decoded frame is named
    by its PTS, so frame n is frame n as `decode_rgb` counts it.
    `stats['decoded_from']` is set to the frame decoding started at.
    """
    return _decoded_from(path, _Rgb, first, scale, expected_frames, table, stats)


def decode_yuv420_from(path: Path | str, first: int, scale: float = 1.0,
                       expected_frames: int | None = None, table: FrameTable | None = None
                       ) -> Iterator[tuple[int, Yuv420 | np.ndarray]]:
    """decode_rgb_from's frames as decode_yuv420 gives them."""
    return _decoded_from(path, _Planes, first, scale, expected_frames, table, None)


def _decoded_from(path: Path | str, convert: Callable[[tuple[int, int]], Callable[[Any], Any]],
                  first: int, scale: float, expected_frames: int | None,
                  table: FrameTable | None, stats: dict[str, int] | None
                  ) -> Iterator[tuple[int, Any]]:
    path = Path(path)
    table = frame_table(path) if table is None else table
    pts = table.pts
    if not 0 <= first < len(pts):
        raise ValueError(f'{path}: frame {first} outside {len(pts)} frames')
    index = {p: i for i, p in enumerate(pts)}
    container = _open(path)
    n = first
    try:
        stream, size = _video_stream(container, scale)
        pixels = convert(size)
        start = _seek_before(container, stream, first, table, index)
        if stats is not None:
            stats['decoded_from'] = start
        expect = start
        for frame in container.decode(stream):
            # (from the start, a frame without a PTS is the next one, as decode_rgb counts)
            i = index.get(frame.pts) if frame.pts is not None else (expect if start == 0 else None)
            if i is not None and i < start:
                continue  # an open GOP's leading frames: before the keyframe, not needed
            if i is None or i != expect:
                what = (f'frame {i}, not {expect}' if i is not None else
                        'a frame with no PTS' if frame.pts is None else
                        f'a frame at PTS {frame.pts}, which no packet has')
                raise DatasetFormatError(path, f'decoding from frame {start} gave {what}')
            expect += 1
            if i >= first:
                n = i
                yield i, pixels(frame)
                n = i + 1
    except _AV_ERRORS as exc:
        raise DatasetFormatError(path, f'video frame {n} cannot be decoded '
                                 f'({_why(exc)})') from None
    finally:
        container.close()
    if expected_frames is not None and expect < expected_frames:
        raise DatasetFormatError(path, f'video ends after {expect} of {expected_frames} frames')


def _video_stream(container: av.container.InputContainer,
                  scale: float) -> tuple[av.video.stream.VideoStream, tuple[int, int]]:
    """The first video stream, set to decode on threads, and its frames' size at `scale`."""
    stream = container.streams.video[0]
    stream.thread_type = 'AUTO'
    ctx = stream.codec_context
    return stream, scaled_size(ctx.width, ctx.height, scale)


def _seek_before(container: av.container.InputContainer, stream: av.video.stream.VideoStream,
                 first: int, table: FrameTable, index: dict[int, int]) -> int:
    """Position the container on the last keyframe at or before frame `first`; its index.

    The container seeks by its own index timestamps, which are not quite the
    PTS (mp4: decode times, edit lists), so `seek(pts of that keyframe)` may
    land a keyframe early. Where a seek lands is cheap to see (the first packet
    after it is the keyframe), so the offset is bisected until it lands on the
    keyframe wanted; after a few tries the best landing at or before `first`
    is taken, or, with no keyframe at all in the table, the start.
    """
    pts, keys = table.pts, table.keyframes
    k = bisect.bisect_right(keys, first) - 1
    if first == 0 or k < 0 or keys[k] == 0:
        container.seek(pts[0], stream=stream, backward=True, any_frame=False)
        return 0
    want = keys[k]
    lo = pts[keys[k - 1]] if k > 0 else pts[0]
    hi = pts[keys[k + 1]] if k + 1 < len(keys) else pts[-1] + (pts[-1] - pts[0]) + 1
    best, best_offset = 0, pts[0]
    offset = pts[want]
    for _ in range(12):
        container.seek(int(offset), stream=stream, backward=True, any_frame=False)
        head = next((p for p in container.demux(stream) if p.size), None)
        landed = index.get(head.pts) if head is not None and head.pts is not None else None
        if landed is not None and best < landed <= first:
            best, best_offset = landed, offset
        if landed == want:
            break
        if landed is not None and landed > want:
            hi = offset
        else:
            lo = offset
        if hi - lo <= 1:
            break
        offset = (lo + hi) // 2
    container.seek(int(best_offset), stream=stream, backward=True, any_frame=False)
    return best
