"""Recorded video packets, passed through (or re-encoded) for foxglove_msgs/CompressedVideo.

CompressedVideo carries one frame per message. For h264/h265 that frame is an
Annex B byte stream (00 00 00 01 start codes), and a viewer may start at any
keyframe, so every keyframe message must carry the parameter sets (SPS+PPS;
VPS+SPS+PPS for h265) in front of its slices. Foxglove decodes with no frame
reordering, so a stream with B-frames has to be re-encoded without them.

mp4 stores h264/hevc as length-prefixed NAL units with the parameter sets once,
in the avcC/hvcC extradata: the `*_mp4toannexb` bitstream filter rewrites the
framing and inserts the sets before IDR slices. A keyframe that is not an IDR
(an open-GOP I-frame, a recovery point) gets none from it, so every keyframe
is checked and given the last sets seen when it lacks them.

The encoder is libx264 with `bf=0` (no B-frames), a fixed GOP with scene-cut
keyframes off (keyframes where the caller can predict them), and without the
global-header flag, which makes x264 repeat SPS/PPS in-band at every IDR.

Plain bytes and numbers out, no rclpy.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Generator, Iterable, Iterator, cast

import av
import numpy as np

from react_ros.errors import DatasetFormatError
from react_ros.formats import video
from react_ros.formats.video import _AV_ERRORS, _open, _why
from react_ros.formats.x264 import x264_options


@dataclass(frozen=True)
class Packet:
    index: int  # frame number in presentation order: frame n of the video
    pts: int | None  # in the stream's time base
    dts: int | None
    time_s: float  # presentation time in seconds; 0.0 without a pts
    keyframe: bool
    data: bytes  # one frame; h264/hevc: Annex B, parameter sets before every keyframe


# PyAV codec name -> CompressedVideo.format
FOXGLOVE_FORMATS = {'h264': 'h264', 'hevc': 'h265', 'vp9': 'vp9', 'av1': 'av1'}

_TO_ANNEX_B = {'h264': 'h264_mp4toannexb', 'hevc': 'hevc_mp4toannexb'}
# NAL unit types of the parameter sets a decoder needs to start at a keyframe
_PARAMETER_SETS = {'h264': (7, 8), 'hevc': (32, 33, 34)}
_START_CODE = b'\x00\x00\x00\x01'


def video_format(path: Path | str) -> str:
    """The CompressedVideo format of the file's first video stream."""
    path = Path(path)
    container = _open(path, decode=False)
    try:
        return _format_of(container.streams.video[0], path)
    finally:
        container.close()


def _format_of(stream: av.video.stream.VideoStream, path: Path) -> str:
    name = stream.codec_context.name
    if name not in FOXGLOVE_FORMATS:
        raise DatasetFormatError(path, f'video codec {name} cannot be passed through as '
                                 f'CompressedVideo ({", ".join(FOXGLOVE_FORMATS.values())})')
    return FOXGLOVE_FORMATS[name]


def has_b_frames(path: Path | str) -> bool:
    """True when presentation order differs from decode order.

    Demuxes only; a raw stream, which has no timestamps, is opened in full instead.
    """
    path = Path(path)
    container = _open(path, decode=False)
    try:
        pts = _demuxed_pts(container, path)
    finally:
        container.close()
    if None not in pts:
        stamped = cast('list[int]', pts)  # `not in` narrows no list for mypy
        return any(b <= a for a, b in zip(stamped, stamped[1:]))
    # A raw stream has no timestamps to compare; the decoder's reorder delay, found
    # by decoding its first frames as a full open does, tells.
    container = _open(path)
    try:
        return bool(container.streams.video[0].codec_context.has_b_frames)
    finally:
        container.close()


def _demuxed_pts(container: av.container.InputContainer, path: Path) -> list[int | None]:
    """Every frame's pts, in decode order; also the check that the file is whole."""
    stream = container.streams.video[0]
    try:
        pts = [p.pts for p in container.demux(stream) if p.size]
    except _AV_ERRORS as exc:
        raise DatasetFormatError(path, f'video is corrupt ({_why(exc)})') from None
    if not pts:
        raise DatasetFormatError(path, 'video has no frames')
    if stream.frames and len(pts) < stream.frames:
        raise DatasetFormatError(path, f'video is truncated: {len(pts)} of its '
                                 f'{stream.frames} frames are there')
    return pts


def _presentation_index(pts: list[int | None]) -> list[int]:
    """Per packet in decode order, its frame's place in presentation order."""
    stamps = [p for p in pts if p is not None]
    if len(stamps) < len(pts) or len(set(stamps)) < len(stamps):
        return list(range(len(pts)))  # nothing to sort by: decode order is all there is
    order = sorted(range(len(stamps)), key=stamps.__getitem__)
    index = [0] * len(pts)
    for rank, i in enumerate(order):
        index[i] = rank
    return index


def read_packets(path: Path | str) -> Generator[Packet, None, None]:
    """Yield one Packet per frame, lazily, in decode (file) order.

    A first demux pass (no decoding) ranks the frames by pts, so each packet
    can say which frame of the presentation it is, and finds a truncated file
    before anything is yielded. A raw stream (.h264) has no pts: its index is
    the decode position, right only without B-frames (see `has_b_frames`).
    """
    path = Path(path)
    container = _open(path, decode=False)
    try:
        _format_of(container.streams.video[0], path)
        index = _presentation_index(_demuxed_pts(container, path))
    finally:
        container.close()
    container = _open(path, decode=False)
    n = 0
    try:
        stream = container.streams.video[0]
        codec = stream.codec_context.name
        tb = stream.time_base or Fraction(1, 1)
        bsf = (av.bitstream.BitStreamFilterContext(_TO_ANNEX_B[codec], stream)
               if codec in _TO_ANNEX_B else None)
        sets = (_ParameterSets(codec, bytes(stream.codec_context.extradata or b''))
                if codec in _PARAMETER_SETS else None)
        for p in _filtered(container.demux(stream), bsf):
            if n >= len(index):
                raise DatasetFormatError(path, 'video gave more packets on a second read')
            data = bytes(p)
            if sets is not None:
                data = sets.complete(data, p.is_keyframe, path, n)
            yield Packet(index[n], p.pts, p.dts,
                         float(p.pts * tb) if p.pts is not None else 0.0,
                         p.is_keyframe, data)
            n += 1
    except _AV_ERRORS as exc:
        raise DatasetFormatError(path, f'video packet {n} cannot be read '
                                 f'({_why(exc)})') from None
    finally:
        container.close()
    if n < len(index):
        raise DatasetFormatError(path, f'video ends after {n} of {len(index)} packets')


def _filtered(packets: Iterable[av.Packet],
              bsf: av.bitstream.BitStreamFilterContext | None) -> Iterator[av.Packet]:
    """The non-empty packets, through the filter when there is one (then drained)."""
    for raw in packets:
        # the demuxer's closing empty packet would read as end of stream to the filter
        if raw.size:
            yield from (p for p in bsf.filter(raw) if p.size) if bsf is not None else [raw]
    if bsf is not None:
        yield from (p for p in bsf.filter(None) if p.size)


def _nal_units(data: bytes) -> list[bytes]:
    """Split an Annex B byte stream into its NAL units (start codes removed)."""
    units, start = [], None
    i = data.find(b'\x00\x00\x01')
    while i >= 0:
        if start is not None:
            units.append(data[start:i].rstrip(b'\x00'))  # a 4-byte start code's leading zero
        start = i + 3
        i = data.find(b'\x00\x00\x01', start)
    if start is not None:
        units.append(data[start:])
    return [u for u in units if u]


def nal_type(codec: str, unit: bytes) -> int:
    """The NAL unit type of one unit: h264 keeps it in 5 bits, hevc in 6 after a zero bit."""
    return unit[0] & 0x1F if codec == 'h264' else (unit[0] >> 1) & 0x3F


def nal_types(codec: str, data: bytes) -> list[int]:
    """The NAL unit types of an Annex B access unit, in order."""
    return [nal_type(codec, u) for u in _nal_units(data)]


def _extradata_units(codec: str, extradata: bytes) -> list[bytes]:
    """The parameter-set NAL units of avcC / hvcC extradata, or of Annex B extradata."""
    if extradata.startswith((b'\x00\x00\x01', _START_CODE)):
        return _nal_units(extradata)
    units: list[bytes] = []
    try:
        if codec == 'h264':  # avcC: 5 header bytes, SPS count, SPSs, PPS count, PPSs
            pos = 5
            for mask in (0x1F, 0xFF):
                count, pos = extradata[pos] & mask, pos + 1
                for _ in range(count):
                    size = int.from_bytes(extradata[pos:pos + 2], 'big')
                    units.append(extradata[pos + 2:pos + 2 + size])
                    pos += 2 + size
        else:  # hvcC: 22 header bytes, array count, per array: type, count, units
            pos, arrays = 23, extradata[22]
            for _ in range(arrays):
                count = int.from_bytes(extradata[pos + 1:pos + 3], 'big')
                pos += 3
                for _ in range(count):
                    size = int.from_bytes(extradata[pos:pos + 2], 'big')
                    units.append(extradata[pos + 2:pos + 2 + size])
                    pos += 2 + size
    except IndexError:
        return []  # unreadable extradata: the stream's own in-band sets may still do
    return [u for u in units if u]


class _ParameterSets:
    """Makes every keyframe start with the parameter sets, the last ones the stream gave."""

    def __init__(self, codec: str, extradata: bytes) -> None:
        self.codec = codec
        self.needed = _PARAMETER_SETS[codec]
        self.units = [u for u in _extradata_units(codec, extradata)
                      if nal_type(codec, u) in self.needed]

    def complete(self, data: bytes, keyframe: bool, path: Path | str, n: int) -> bytes:
        units = _nal_units(data)
        types = [nal_type(self.codec, u) for u in units]
        if any(t in self.needed for t in types):
            # in-band sets replace older ones (a stream may change resolution midway)
            self.units = [u for u, t in zip(units, types) if t in self.needed]
        if not keyframe or all(t in types for t in self.needed):
            return data
        have = {nal_type(self.codec, u) for u in self.units}
        if not all(t in have for t in self.needed):
            raise DatasetFormatError(path, f'keyframe packet {n} has no parameter sets and '
                                     'neither has the stream before it')
        return b''.join(_START_CODE + u for u in self.units) + data


def encode_h264(frames: Iterable[np.ndarray], fps: float, *, crf: int = 18,
                preset: str = 'veryfast', gop: int | None = None) -> Generator[Packet, None, None]:
    """Encode RGB uint8 HxWxC frames to H.264 without B-frames: packet n is frame n.

    Keyframes fall on frames 0, gop, 2*gop, ... (default gop: about one
    second). x264 holds frames back for its lookahead, so packets come later
    than their frames and the rest come at the flush; memory stays bounded.
    Odd sizes are scaled down to even ones, as 4:2:0 needs.
    """
    if not fps > 0:
        raise ValueError(f'fps must be positive, not {fps}')
    gop = max(1, round(fps)) if gop is None else gop
    if gop < 1:
        raise ValueError(f'gop must be at least 1, not {gop}')
    rate = Fraction(fps).limit_denominator(100_000)
    ctx: av.VideoCodecContext | None = None
    shape: tuple[int, ...] = ()
    sets = _ParameterSets('h264', b'')  # re-made from the encoder's extradata once it is open
    done = 0

    def packets(encoded: list[av.Packet]) -> Iterator[Packet]:
        nonlocal done
        for p in encoded:
            if p.pts is not None and p.pts != done:
                raise RuntimeError(f'libx264 gave frame {p.pts} where {done} was due')
            yield Packet(done, done, done, done / fps, p.is_keyframe,
                         sets.complete(bytes(p), p.is_keyframe, '<encoder>', done))
            done += 1

    n = -1
    for n, rgb in enumerate(frames):
        if ctx is None:
            shape = rgb.shape
            ctx = _x264(rgb.shape[1], rgb.shape[0], rate, crf, preset, gop)
            sets = _ParameterSets('h264', bytes(ctx.extradata or b''))
        elif rgb.shape != shape:
            raise ValueError(f'frame {n} is {rgb.shape}, the first frame was {shape}')
        frame = _yuv(rgb, ctx.width, ctx.height)
        frame.pts = n
        if n % gop == 0:
            # the fixed GOP puts IDRs here already; forcing them keeps the promise
            # whatever a preset or another x264 build would decide
            frame.pict_type = av.video.frame.PictureType.I
        yield from packets(ctx.encode(frame))
    if ctx is None:
        return
    yield from packets(ctx.encode(None))
    if done != n + 1:
        raise RuntimeError(f'libx264 gave {done} packets for {n + 1} frames')


def _x264(width: int, height: int, rate: Fraction, crf: int, preset: str,
          gop: int) -> av.VideoCodecContext:
    ctx = av.CodecContext.create('libx264', 'w')
    ctx.width, ctx.height = max(2, width // 2 * 2), max(2, height // 2 * 2)
    ctx.pix_fmt = 'yuv420p'
    ctx.time_base = 1 / rate
    ctx.framerate = rate
    # no global-header flag: x264 then writes SPS/PPS in-band before every IDR
    # x264_options: the same bits on every run (formats/x264.py)
    ctx.options = x264_options({'crf': str(crf), 'preset': preset, 'bf': '0', 'g': str(gop),
                                'keyint_min': str(gop), 'sc_threshold': '0',
                                'forced-idr': '1'})
    ctx.open()
    return ctx


def _yuv(rgb: np.ndarray, width: int, height: int) -> av.VideoFrame:
    if rgb.ndim == 2 or rgb.shape[2] == 1:
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb.reshape(rgb.shape[:2])),
                                           format='gray')
    elif rgb.shape[2] in (3, 4):
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb),
                                           format='rgb24' if rgb.shape[2] == 3 else 'rgba')
    else:
        raise ValueError(f'a frame of shape {rgb.shape} is not an image')
    return frame.reformat(width=width, height=height, format='yuv420p')


def reencode_h264(path: Path | str, *, crf: int = 18, preset: str = 'veryfast',
                  gop: int | None = None) -> Generator[Packet, None, None]:
    """Decode `path` and encode it again without B-frames; frame n stays frame n."""
    path = Path(path)
    container = _open(path)
    try:
        rate = container.streams.video[0].average_rate
    finally:
        container.close()
    fps = float(rate) if rate else 30.0
    yield from encode_h264(video.decode_rgb(path), fps, crf=crf, preset=preset, gop=gop)
