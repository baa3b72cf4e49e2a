"""How big a bag will be, whether it fits on its disk, and how far its writing has got.

A raw bag of a high-resolution episode grows by gigabytes a second of data, so the
writer does not wait for ENOSPC: early in the write (see BagSizer) it extrapolates what
it wrote so far to the whole episode, says so once, and refuses (NotEnoughSpace, exit
2) when the estimate is more than the output's filesystem has free. docs/bags.md,
"Bag size before it is written", is the user's side of this.

The estimate, from the parts a bag is made of:
- what is on disk already (bytes_written: the file's position);
- what the writer holds in its open chunk, at the compression measured on it;
- every stream's remaining messages at that stream's mean size so far (a stream whose
  count is unknown, by data time), at the compression seen so far;
- the parts every bag has whatever its messages (the summary with each schema and
  channel, the rosbag2 metadata record, metadata.yaml): measured on the empty bag.
"""
from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from react_ros.errors import OutputWriteError
from react_ros.rosbag2.chunk_writer import joined, message_bytes
from react_ros.progress import size_text

if TYPE_CHECKING:
    from react_ros.streams import Stream

# The estimate is made once this much data time is written, or this share of the span,
# whichever comes first: a bag too big for its disk is refused within seconds...
ESTIMATE_AFTER_NS = 1_000_000_000
ESTIMATE_AFTER_SHARE = 0.05
# ...but not before this much, however short the episode: a stream's first two or three
# messages say little about the rest (the sizes of a scene's first frames, how well they
# compress together).
ESTIMATE_NOT_BEFORE_NS = 200_000_000
# ...and once each stream of images, video or points (most of a bag's bytes) has shown
# two messages (a video's first is a keyframe, much bigger than the rest), unless this
# share of the span has gone by without: a camera that starts late must not delay it.
BIG_TYPES = frozenset({'sensor_msgs/msg/Image', 'sensor_msgs/msg/CompressedImage',
                       'foxglove_msgs/msg/CompressedVideo', 'sensor_msgs/msg/PointCloud2'})
ESTIMATE_BY_SHARE = 0.25
# What a message costs besides its payload: its record's header inside the chunk
# (compressed with it), and its entry in the message index after the chunk.
RECORD_HEADER = 31
INDEX_ENTRY = 16
# How much of each stream's latest messages its compression is measured on.
SAMPLE_BYTES = 1 << 20
# A raw bag bigger than this per hour of data gets a hint at the smaller image modes:
# 10 GB an hour is a 640x480 camera at 10 Hz, uncompressed; the newcomer
# got 3.5 TB an hour.
HINT_BYTES_PER_HOUR = 10e9


class NotEnoughSpace(OutputWriteError):
    """The bag's estimate exceeds the free space: the machine's limit, not the episode's
    fault (convert-all records it as failed, tried again by its next run)."""


@dataclass(frozen=True)
class SizeEstimate:
    out: Path  # the bag folder
    bytes: int  # the whole bag: its MCAP and metadata.yaml
    data_ns: int  # the data time the bag covers
    compression: str
    free: int | None  # bytes the bag may use: free now plus what it wrote; None: unknown
    where: Path  # the folder whose filesystem `free` is of
    hint: str = ''  # advice towards smaller images, or ''

    def line(self) -> str:
        """`estimated bag size: 2.9 GB for 3.0 s of data (compression auto); 1.1 TB free on
        /data`."""
        free = (f'{size_text(self.free)} free on {self.where}' if self.free is not None
                else f'free space on {self.where} unknown')
        hint = f'; {self.hint}' if self.hint else ''
        return (f'estimated bag size: {size_text(self.bytes)} for {self.data_ns / 1e9:.1f} s '
                f'of data (compression {self.compression}); {free}{hint}')

    def refusal(self) -> str:
        return (f'{self.out}: the bag would take about {size_text(self.bytes)} '
                f'({self.data_ns / 1e9:.1f} s of data, compression {self.compression}) and only '
                f'{size_text(self.free or 0)} is free on {self.where}; free some space, write '
                'it elsewhere, choose smaller images (--images h264 or jpeg), or pass '
                '--no-space-check to write it anyway')


@dataclass
class SizeWatch:
    """The caller's side of a bag being written: filled in by write_bag as it goes.

    `check`: refuse a bag estimated bigger than the free space. `on_estimate` is called
    once with the estimate, after that check (a refusal says the numbers itself).
    """
    check: bool = True
    on_estimate: Callable[[SizeEstimate], None] | None = None
    written: int = 0  # bytes of the bag on disk so far
    done_ns: int = 0  # data time written so far
    span_ns: int = 0  # the data time of the whole bag
    estimate: SizeEstimate | None = field(default=None)

    def fraction(self) -> float:
        """The share of the bag's data time written: 0..1."""
        if self.span_ns <= 0:
            return 0.0
        return min(1.0, max(0.0, self.done_ns / self.span_ns))


def free_space(path: Path) -> tuple[Path, int | None]:
    """The nearest existing folder at or above `path`, and the bytes an unprivileged
    user may still write on its filesystem (None if it cannot be told)."""
    where = Path(path)
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        st = os.statvfs(where)
    except OSError:
        return where, None
    return where, st.f_bavail * st.f_frsize


def _compressed(name: str, messages: Sequence[Any]) -> int:
    """The bytes of `messages` (buffers or Pieces, as the writer was given them) compressed
    together by `name`; uncompressed, their length, without joining gigabytes of frames."""
    if name not in ('lz4', 'zstd'):
        return sum(message_bytes(m) for m in messages)
    return len(_compressor(name)(b''.join(joined(m) for m in messages)))


def _compressor(name: str) -> Callable[[bytes], bytes]:
    """The chunk compression the MCAP writer applies (mcap.writer), by its CLI name."""
    if name == 'lz4':
        import lz4.frame
        return lz4.frame.compress
    if name == 'zstd':
        import zstandard
        return zstandard.compress
    return lambda data: data


class BagSizer:
    """Follows one bag's write message by message; makes the estimate once.

    `bytes_written()`: the bag file's bytes on disk now; it must grow only when the
    writer has put every message added so far to the same chunk compression out of its
    buffer (the MCAP writer flushes a whole chunk at once, one open chunk per
    compression). `start_ns`, `span_ns`: the episode's data time.
    `empty_bag`: the MCAP file this bag would be with no message; `extra`: the bytes
    every bag adds to that whatever its messages (its rosbag2 record, metadata.yaml).
    """

    def __init__(self, out: Path, streams: Sequence[Stream], start_ns: int, span_ns: int,
                 bytes_written: Callable[[], int], empty_bag: bytes, extra: int,
                 compression: str, images: str, watch: SizeWatch) -> None:
        self.out, self.streams, self.watch = out, streams, watch
        self.images, self.compression = images, compression
        # 'auto' (rosbag2/writer.py) puts what is not decided otherwise in lz4 chunks
        self.default = 'lz4' if compression == 'auto' else compression
        self._bytes_written = bytes_written
        self.head = bytes_written()  # what is on disk before the first chunk
        self.watch.written = self.head
        self.watch.span_ns = self.span = max(span_ns, 0)
        self.start_ns = start_ns
        self.tail = len(empty_bag) - self.head + extra  # what follows the last chunk
        self.window = min(ESTIMATE_AFTER_NS, max(int(self.span * ESTIMATE_AFTER_SHARE),
                                                 ESTIMATE_NOT_BEFORE_NS))
        self.deadline = max(self.window, int(self.span * ESTIMATE_BY_SHARE))
        # The first chunk opens with the schema and channel records: much like the empty
        # bag, whose compressed size stands for them.
        self.empty_bag = empty_bag
        n = len(streams)
        self.seen = [0] * n  # messages per stream
        self.record_bytes = [0] * n  # their records' bytes
        self.first_bytes = [0] * n  # the first record's bytes
        self.pending = [0] * n  # record bytes per stream in the writer's open chunks
        # Each stream's chunk compression, once it has a message ('' before); the writer
        # keeps an open chunk per compression (rosbag2/chunk_writer.py: its lanes).
        self.lanes = [''] * n
        self.chunks: dict[str, list[bytes]] = {}  # the open chunks' messages (references)
        self.flushed = [0] * n  # record bytes per stream in chunks on disk
        self.flushed_seen = [0] * n  # messages per stream in chunks on disk
        # Each stream's latest messages (references, not copies), to measure how well
        # it compresses: streams differ (video packets do not, joint states do a lot).
        self.samples: list[deque[bytes]] = [deque() for _ in range(n)]
        self.sample_bytes = [0] * n
        self.done = False

    def add(self, stream_idx: int, t_ns: int, data: bytes, compression: str = ''
            ) -> SizeEstimate | None:
        """Count one message just given to the writer, in a chunk of `compression` (by
        default the bag's); the estimate when it is due."""
        self.watch.done_ns = max(t_ns - self.start_ns, 0)
        if self.done:  # the data time only: the bytes when the progress line asks (update)
            return None
        i, size = stream_idx, message_bytes(data) + RECORD_HEADER
        if not self.seen[i]:
            self.first_bytes[i] = size
        self.seen[i] += 1
        self.record_bytes[i] += size
        self.pending[i] += size
        lane = self.lanes[i] = compression or self.default
        self.chunks.setdefault(lane, []).append(data)
        self._sample(i, data)
        written = self._bytes_written()
        if written != self.watch.written:  # this message's chunk went out, the message with it
            for j, other in enumerate(self.lanes):
                if other == lane:
                    self.flushed_seen[j] = self.seen[j]
                    self.flushed[j] = self.record_bytes[j]
                    self.pending[j] = 0
            self.chunks[lane] = []
            self.watch.written = written
        if not self._due():
            return None
        self.done = True
        estimate = self._estimate()
        self.samples, self.chunks = [], {}  # held only for this measurement
        return estimate

    def update(self) -> None:
        """Bring the bytes written up to date (asking the file costs a system call, too
        much for every message once the estimate is made)."""
        self.watch.written = self._bytes_written()

    def _sample(self, i: int, data: bytes) -> None:
        sample = self.samples[i]
        sample.append(data)
        self.sample_bytes[i] += message_bytes(data)
        while len(sample) > 1 and self.sample_bytes[i] - message_bytes(sample[0]) >= SAMPLE_BYTES:
            self.sample_bytes[i] -= message_bytes(sample.popleft())

    def _due(self) -> bool:
        elapsed = self.watch.done_ns
        if elapsed < self.window:
            return False
        return elapsed >= self.deadline or all(
            self.seen[i] >= min(2, s.count if s.count is not None else 2)
            for i, s in enumerate(self.streams) if s.msg_type in BIG_TYPES)

    def _estimate(self) -> SizeEstimate:
        default = self.default
        ratios = [_compressed(lane or default, sample) / max(size, 1)
                  for sample, size, lane in zip(self.samples, self.sample_bytes, self.lanes)]
        written = self.watch.written
        preamble = len(_compressor(default)(self.empty_bag))
        # Alone, a stream compresses better than among the others (a chunk interleaves
        # them): the streams' ratios are scaled to what the chunks so far made of the
        # same messages, those on disk and the open ones as they will be compressed.
        pending = float(sum(_compressed(lane, chunk) for lane, chunk in self.chunks.items()
                            if chunk))
        on_disk = 0.0
        flushed_count = sum(self.flushed_seen)
        if flushed_count:
            on_disk = max(written - self.head - INDEX_ENTRY * flushed_count - preamble, 0)
        alone = sum(r * (f + p) for r, f, p in zip(ratios, self.flushed, self.pending))
        scale = (on_disk + pending) / alone if alone and on_disk + pending else 1.0
        pending += 0 if flushed_count else preamble  # the first chunk's schemas
        left = self._left()
        rest = scale * sum(n * self._mean(i) * ratios[i] for i, n in enumerate(left))
        count = sum(self.seen) - flushed_count + sum(left)
        total = written + pending + rest + INDEX_ENTRY * count + self.tail
        where, free = free_space(self.out.parent)
        estimate = SizeEstimate(self.out, int(total), self.span, self.compression,
                                None if free is None else free + written, where,
                                self._hint(total))
        self.watch.estimate = estimate
        return estimate

    def _left(self) -> list[float]:
        """Each stream's messages still to come."""
        elapsed = self.watch.done_ns
        left: list[float] = []
        for i, s in enumerate(self.streams):
            if s.count is not None:
                left.append(max(s.count - self.seen[i], 0))
            elif elapsed > 0:  # unknown count: at the rate seen so far
                left.append(self.seen[i] * (self.span - elapsed) / elapsed)
            else:
                left.append(0)
        return left

    def _mean(self, i: int) -> float:
        """A stream's record size to come: its messages after the first when it has some
        (a video's first packet is a keyframe, the rest mostly are not); one not heard
        from yet is taken to be like the streams of its type that were, or the average."""
        if self.seen[i] > 1:
            return (self.record_bytes[i] - self.first_bytes[i]) / (self.seen[i] - 1)
        if self.seen[i]:
            return self.record_bytes[i]
        alike = [j for j, s in enumerate(self.streams)
                 if self.seen[j] and s.msg_type == self.streams[i].msg_type]
        if alike:
            return sum(self._mean(j) for j in alike) / len(alike)
        return sum(self.record_bytes) / max(sum(self.seen), 1)

    def _hint(self, total: float) -> str:
        if self.images != 'raw' or self.span <= 0:
            return ''
        per_hour = total / (self.span / 3.6e12)
        images = [s for s in self.streams if s.msg_type == 'sensor_msgs/msg/Image']
        if per_hour < HINT_BYTES_PER_HOUR or not images:
            return ''
        video = any(s.video is not None for s in images)
        smaller = ('--images h264 (the recorded video, smallest) or --images jpeg'
                   if video else '--images jpeg or --images png')
        return f'{size_text(per_hour)} per hour of data: {smaller} would be far smaller'


def check_fits(estimate: SizeEstimate, watch: SizeWatch) -> None:
    """NotEnoughSpace if the watch checks space and the estimate exceeds it."""
    if watch.check and estimate.free is not None and estimate.bytes > estimate.free:
        raise NotEnoughSpace(estimate.refusal())


__all__ = ['BagSizer', 'NotEnoughSpace', 'SizeEstimate', 'SizeWatch', 'check_fits',
           'free_space', 'size_text']
