"""Named, lazily produced streams of time-stamped messages, and their merge.

An adapter describes an episode as a list of Streams. Nothing is read until a
sink iterates one; each iteration starts from the beginning, so a sink may open
the same stream twice (the bag writer and `info` do) without caching it.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, NamedTuple, Sequence

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np


class Pieces(tuple):  # type: ignore[type-arg]
    """One message's serialised bytes as buffers not joined yet, in order (an Image's CDR
    head, then the decoder's pixels): the bag writer writes them as they are, the player
    joins them once when it sends. `nbytes` is their length together."""

    @property
    def nbytes(self) -> int:
        # (not len(): an HxWx3 array's is H)
        return sum(p.nbytes if isinstance(p, memoryview) else memoryview(p).nbytes
                   for p in self)


class Role(Enum):
    """Who publishes a stream live."""

    DATA = 'data'
    # What robot_state_publisher derives from the URDF and /joint_states:
    # written into bags so they are self-contained, but left to the real (or our
    # drop-in) robot_state_publisher during live playback.
    ROBOT_STATE = 'robot_state'


@dataclass(frozen=True)
class VideoSource:
    """The video an Image stream decodes, for sinks that carry the video itself
    (sinks/compressed_video.py) or only need its stamps (the preview): message n
    of the stream is video frame `frames[n]`, stamped `stamps[n]`."""

    path: Path
    frames: np.ndarray  # int64 frame indices, in the stream's (stamp) order
    stamps: np.ndarray  # int64 ns, non-decreasing
    frame_id: str
    scale: float = 1.0  # --image-scale applied to the decoded pixels


@dataclass(frozen=True)
class Stream:
    """One topic of an episode.

    `open()` yields (t_ns, msg) with t_ns non-decreasing; t_ns is the message's
    header stamp where it has one, else the time of the sample it describes.
    `msg` is a message of `msg_type`, or `bytes` holding one already serialised
    as CDR: recorded messages are republished as they were recorded, with no
    deserialise/serialise round trip on the player's hot path.

    `open_from(t_ns)`, where a stream has it, yields what `open()` yields from
    the first message stamped t_ns or later, without the work of what it
    skips (video: decoding starts at the keyframe before). `open_at` uses it
    when present; sinks that seek call that.
    """

    topic: str
    msg_type: str  # 'sensor_msgs/msg/Image'
    open: Callable[[], Iterator[tuple[int, Any]]]
    latched: bool = False  # reliable + transient local, depth 1
    role: Role = Role.DATA
    count: int | None = None  # known without reading, for `info` and progress
    heavy: bool = False  # decodes video: sinks read it ahead on a worker thread
    approx_bytes: int = 0  # size of one message, for read-ahead budgets
    # Image pixels are labels or ids (segmentation colours, instance ids): never
    # encoded lossily, never taken for depth (sinks/image_encoding.py).
    labels: bool = False
    video: VideoSource | None = field(default=None, compare=False)  # backed by a video file
    open_from: Callable[[int], Iterator[tuple[int, Any]]] | None = field(default=None,
                                                                         compare=False)


def open_at(stream: Stream, t_ns: int) -> Iterator[tuple[int, Any]]:
    """The messages of `stream` stamped t_ns or later: `open_from` where it has one."""
    if stream.open_from is not None:
        return stream.open_from(t_ns)
    return ((t, m) for t, m in stream.open() if t >= t_ns)


class Event(NamedTuple):
    t_ns: int
    stream_idx: int
    seq: int
    msg: Any


def _events(idx: int, it: Iterable[tuple[int, Any]]) -> Iterator[Event]:
    for seq, (t_ns, msg) in enumerate(it):
        yield Event(t_ns, idx, seq, msg)


def merge(iterators: Sequence[Iterable[tuple[int, Any]]]) -> Iterator[Event]:
    """Merge per-stream iterators in stamp order.

    Ties break on stream index then sequence, so live and bag runs emit equal
    stamps in the same order.
    """
    return heapq.merge(*(_events(i, it) for i, it in enumerate(iterators)),
                       key=lambda e: (e.t_ns, e.stream_idx, e.seq))
