"""Which video frame each row of an episode shows, and whether this FFmpeg can decode it.
No ROS.

LeRobot reads row i of episode k from the video at from_timestamp(k) + timestamp(i)
(v2.1: from 0, one file per episode) and accepts the frame whose time is within its
tolerance of that; here every row's frame is found the same way before anything is
published, and a row whose time no frame has is refused (never i / fps, never the
file's first frames).
"""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from react_ros.errors import DatasetFormatError
from react_ros.formats import video
from react_ros.kinds.lerobot.meta import VideoPart


def check_codec(path: Path) -> str:
    """The file's codec name; refuses one the installed FFmpeg has no decoder for."""
    if not path.is_file():
        raise DatasetFormatError(path, 'video file is missing')
    try:
        # PyAV's stubs type stream_options as list[str]; it takes one dict per stream
        with av.open(str(path), mode='r',  # type: ignore[call-overload]
                     stream_options=[{'skip_frame': 'all'}]) as c:
            if not c.streams.video:
                raise DatasetFormatError(path, 'file holds no video stream')
            ctx = c.streams.video[0].codec_context  # None: FFmpeg knows no such codec
            name = ctx.codec.name if ctx is not None and ctx.codec is not None else ''
    except av.FFmpegError as err:
        raise DatasetFormatError(path, f'not a readable video ({err})') from None
    if not name or not _decodable(name):
        what = repr(name) if name else f'with sample entry {_fourcc(path)!r}'
        raise DatasetFormatError(path, f'video codec {what} has no decoder in the installed '
                                 f'FFmpeg (PyAV {av.__version__})')
    return name


def _fourcc(path: Path) -> str:
    """The mp4 sample entry's format (stsd's first entry): what names an unknown codec."""
    size = path.stat().st_size
    with path.open('rb') as f:
        head = f.read(1 << 20)
        f.seek(max(0, size - (1 << 20)))
        tail = f.read()
    for data in (head, tail):
        i = data.find(b'stsd')
        if i >= 0 and i + 20 <= len(data):
            return data[i + 16:i + 20].decode('latin-1')
    return '?'


def _decodable(name: str) -> bool:
    try:
        av.codec.Codec(name, 'r')
    except (av.FFmpegError, ValueError, KeyError):
        return False
    return True


def frame_times_s(path: Path) -> tuple[np.ndarray, float]:
    """Every frame's presentation time (s, from the file's start) and the file's end."""
    pts = np.asarray(video.frame_pts(path), dtype=np.int64)
    # PyAV's stubs type stream_options as list[str]; it takes one dict per stream
    with av.open(str(path), mode='r',  # type: ignore[call-overload]
                 stream_options=[{'skip_frame': 'all'}]) as c:
        s = c.streams.video[0]
        tb = s.time_base or Fraction(1, 1)
        start = s.start_time or 0
    times = (pts - start) * float(tb)
    step = float(np.median(np.diff(times))) if len(times) > 1 else 0.0
    return times, float(times[-1] + step) if len(times) else 0.0


def match_rows(part: VideoPart, times: np.ndarray, end_s: float, ts: np.ndarray,
               tolerance_s: float, listed_in: Path, data: Path, episode: int,
               key: str) -> np.ndarray:
    """The frame index of each row: the frame at part.from_s + ts[i], within tolerance."""
    if part.to_s is not None and (part.from_s > end_s + tolerance_s
                                  or part.to_s > end_s + tolerance_s):
        bad = 'to_timestamp' if part.from_s <= end_s + tolerance_s else 'from_timestamp'
        value = part.to_s if bad == 'to_timestamp' else part.from_s
        raise DatasetFormatError(listed_in, f'episode {episode}: videos/{key}/{bad} {value:.6g} s '
                                 f'is past the end of {part.path.name} ({end_s:.6g} s)')
    query = part.from_s + ts
    idx = np.clip(np.searchsorted(times, query), 1, max(1, len(times) - 1))
    if len(times) == 1:
        idx = np.zeros(len(query), dtype=np.int64)
    else:
        left = times[idx - 1]
        idx = np.where(np.abs(query - left) <= np.abs(times[idx] - query), idx - 1, idx)
    err = np.abs(times[idx] - query)
    if np.any(err > tolerance_s):
        row = int(np.argmax(err > tolerance_s))
        raise DatasetFormatError(data, f'episode {episode} row {row}: timestamp {ts[row]:.6g} s '
                                 f'(+ from_timestamp {part.from_s:.6g} s) has no frame of '
                                 f'{part.path.name} within {tolerance_s:g} s (nearest at '
                                 f'{times[idx[row]]:.6g} s)')
    if part.to_s is not None and query[-1] > part.to_s + tolerance_s:
        raise DatasetFormatError(data, f'episode {episode}: its last row is at '
                                 f'{query[-1]:.6g} s of {part.path.name}, after its '
                                 f'to_timestamp {part.to_s:.6g} s')
    return idx.astype(np.int64)
