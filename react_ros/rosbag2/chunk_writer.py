"""An MCAP writer that compresses and writes chunks off the caller's thread.

mcap.writer.Writer finalizes a chunk synchronously: compression, CRC and the file
write all stall the thread that produces messages. ChunkWriter keeps mcap's file
layout (same calls with one compression give the same bytes, pinned by
test/test_mcap_writer.py) but hands each finalized chunk to a pool of worker threads
(lz4, zstandard and the CRC release the GIL on large buffers) and one writer
thread, which writes the chunks in the order they were finalized and computes the
offsets for the indexes as it goes.

Channels may ask for their own compression (`register_channel(compression=...)`):
each compression in use is a "lane" with an open chunk of its own, so already
compressed payloads need not pass through lz4 again.

Message buffers are referenced, not copied, until their chunk is written: a caller
must not change a buffer after handing it to add_message. A message may come as Pieces
(its bytes as several buffers in order: an Image's CDR head, then the decoder's pixels),
written as they are: the pixels are never joined to a head (the CRC chains over them).
"""
from __future__ import annotations

import io
import queue
import struct
import threading
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

import lz4.frame
import zstandard
# zlib-ng's CRC-32 (the same polynomial as zlib's, which MCAP names) runs on the CPU's
# carry-less multiply: ~0.1 ms per 7 MB Image here against zlib 1.2's 1.7-2.9 ms, a fifth
# of a raw conversion's CPU per image (issue 43).
from zlib_ng.zlib_ng import crc32
from mcap.data_stream import RecordBuilder
from mcap.opcode import Opcode
from mcap.records import (
    Channel, ChunkIndex, DataEnd, Footer, Header, McapRecord, MessageIndex, Metadata,
    MetadataIndex, Schema, Statistics, SummaryOffset,
)

from react_ros.rosbag2.write_behind import WriteBehind

from react_ros.streams import Pieces  # (re-exported: what add_message takes)

MAGIC = b'\x89MCAP0\r\n'
COMPRESSIONS = ('none', 'lz4', 'zstd')
# A message this large stays a separate buffer of its own in an uncompressed chunk;
# smaller records are packed together so that writing stays a few calls per chunk.
SEPARATE_BYTES = 64 * 1024

# opcode, record length, channel id, sequence, log time, publish time
_MESSAGE_HEADER = struct.Struct('<BQHIQQ')
_MESSAGE_FIELDS = 2 + 4 + 8 + 8
# opcode, record length, start, end, uncompressed size, uncompressed crc
_CHUNK_HEADER = struct.Struct('<BQQQQI')


def message_bytes(data: Any) -> int:
    """The length of a message given to add_message (a buffer or Pieces)."""
    return data.nbytes if isinstance(data, Pieces) else len(data)


def joined(data: Any) -> Any:
    """A message given to add_message as one buffer (Pieces joined: a copy)."""
    return b''.join(data) if isinstance(data, Pieces) else data


def _bytes(data: Any) -> Any:
    """`data` as byte-addressed buffers: lengths in bytes, as the records count them."""
    if isinstance(data, Pieces):
        return Pieces(_bytes(p) for p in data)
    if isinstance(data, (bytes, bytearray)) or (
            isinstance(data, memoryview) and data.ndim == 1 and data.format == 'B'):
        return data
    return memoryview(data).cast('B')


def _record(rec: Any) -> bytes:
    builder = RecordBuilder()
    rec.write(builder)
    return builder.end()  # type: ignore[no-any-return]


class _Lane:
    """The open chunk of one compression: its records as buffers, in order."""

    def __init__(self, compression: str) -> None:
        self.compression = compression
        self.carried_schemas: set[int] = set()  # Schema records already in this lane
        self._reset()

    def _reset(self) -> None:
        self.pieces: list[Any] = []
        self.packed = bytearray()
        self.count = 0
        self.num_messages = 0
        self.start = self.end = 0
        self.indexes: dict[int, MessageIndex] = {}

    def add(self, head: bytes, data: Any = b'') -> None:
        self.packed += head
        self.count += len(head)
        for piece in data if isinstance(data, Pieces) else (data,):
            if len(piece) >= SEPARATE_BYTES:
                self.pieces += [self.packed, piece]
                self.packed = bytearray()
            else:
                self.packed += piece
            self.count += len(piece)

    def take(self) -> _Job:
        """The chunk so far as a job for the workers; the lane starts a new one."""
        if self.packed:
            self.pieces.append(self.packed)
        job = _Job(self.compression, self.pieces, self.count, self.start, self.end,
                   list(self.indexes.values()))
        self._reset()
        return job


class _Job:
    """A finalized chunk on its way to the file."""

    def __init__(self, compression: str, pieces: list[Any], size: int, start: int,
                 end: int, indexes: list[MessageIndex]) -> None:
        self.compression = compression
        self.pieces = pieces
        self.size = size
        self.start = start
        self.end = end
        self.indexes = indexes
        # What build() made, until the writer thread has written it: the job keeps it,
        # not the future, which stays referenced (finalized_bytes) after the write.
        self.built: tuple[list[Any], int, list[tuple[int, bytes]]] | None = None

    def build(self) -> int:
        """On a worker: the Chunk record as buffers, its data's length, and the message
        index records (kept in `built`); returns the bytes they take in the file. An
        uncompressed chunk keeps its buffers (no join); the CRC chains over them, which
        equals the CRC of their concatenation."""
        if self.compression == 'none':
            crc = 0
            for p in self.pieces:
                crc = crc32(p, crc)
            data = self.pieces
            name = b''
        else:
            joined = self.pieces[0] if len(self.pieces) == 1 else b''.join(self.pieces)
            crc = crc32(joined)
            # The same calls mcap.Writer makes, so that the bytes are the same.
            packed = lz4.frame.compress(joined) if self.compression == 'lz4' \
                else zstandard.compress(joined)
            data = [packed]
            name = self.compression.encode()
        data_len = sum(len(d) for d in data)
        length = 8 + 8 + 8 + 4 + 4 + len(name) + 8 + data_len
        head = _CHUNK_HEADER.pack(Opcode.CHUNK, length, self.start, self.end, self.size, crc) \
            + struct.pack('<I', len(name)) + name + struct.pack('<Q', data_len)
        self.pieces = []  # the workers' copy is enough now
        indexes = [(i.channel_id, _record(i)) for i in self.indexes]
        self.built = [head, *data], data_len, indexes
        return len(head) + data_len + sum(len(r) for _, r in indexes)


class _MetadataItem:
    def __init__(self, name: str, record: bytes) -> None:
        self.name = name
        self.record = record


class Output(Protocol):
    """What ChunkWriter writes to: a binary file (IO[bytes]) or a direct_file.DirectFile."""

    def write(self, data: Any, /) -> int: ...
    def tell(self) -> int: ...
    def seekable(self) -> bool: ...
    def flush(self) -> None: ...


class ChunkWriter:
    """Writes an MCAP file: `start`, registrations and messages, `finish`; then `close`
    (also when anything failed: it stops the threads)."""

    def __init__(self, stream: Output, *, chunk_size: int, compression: str,
                 threads: int = 2, max_pending_bytes: int = 64 << 20) -> None:
        if compression not in COMPRESSIONS:
            raise ValueError(f'compression {compression!r}: expected one of {COMPRESSIONS}')
        if threads < 1:
            raise ValueError(f'threads {threads}: at least 1 is needed')
        # mcap.Writer buffers a raw stream the same way.
        self._stream = io.BufferedWriter(stream) if isinstance(stream, io.RawIOBase) else stream
        self._chunk_size = chunk_size
        self._compression = compression
        self._threads = threads
        self._max_pending = max_pending_bytes
        self._lanes: dict[str, _Lane] = {}
        self._channel_lanes: dict[int, _Lane] = {}
        self._schemas: dict[int, Schema] = {}
        self._channels: dict[int, Channel] = {}
        self._next_channel_id = 1
        self._stats = Statistics(
            attachment_count=0, channel_count=0, channel_message_counts=defaultdict(int),
            chunk_count=0, message_count=0, metadata_count=0, message_start_time=0,
            message_end_time=0, schema_count=0)
        # Written by the writer thread only, read by the caller once it has joined it.
        self._chunk_indexes: list[ChunkIndex] = []
        self._metadata_indexes: list[MetadataIndex] = []
        self._position = 0
        self._written = 0
        self._pending = 0  # bytes of finalized chunks not yet written
        self._cond = threading.Condition()
        self._error: BaseException | None = None
        self._abandon = False  # close() before finish(): the writer thread stops writing
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._queued = 0  # items put on the queue and not written yet (drain waits for 0)
        self._pool: ThreadPoolExecutor | None = None
        self._writer: threading.Thread | None = None
        # The caller's count of what finalized_bytes() returns: items sized so far, and
        # the chunks whose compressed size it has not asked for yet.
        self._finalized = 0
        self._unsized: list[Future[int]] = []
        self._behind: WriteBehind | None = None
        self._closed = False

    @property
    def compression(self) -> str:
        """The chunks' compression for channels registered without one of their own."""
        return self._compression

    @property
    def bytes_written(self) -> int:
        """Bytes handed to the file so far."""
        return self._written

    def drain(self) -> int:
        """Waits until every chunk finalized so far is written; the bytes written then
        (what mcap.Writer's file position says after each call: for a size estimate)."""
        with self._cond:
            while self._queued > 0 and self._error is None:
                self._cond.wait()
        self._check()
        return self._written

    def finalized_bytes(self) -> int:
        """What the file will hold once every chunk finalized so far is written: what
        drain() returns, without waiting for the writes (only for those chunks'
        compression, to know their sizes)."""
        self._check()
        self._finalized += sum(built.result() for built in self._unsized)
        self._unsized.clear()
        return self._finalized

    def _enqueue(self, item: Any) -> None:
        with self._cond:
            self._queued += 1
        if isinstance(item, tuple):
            self._unsized.append(item[1])
        else:
            self._finalized += len(item.record if isinstance(item, _MetadataItem) else item)
        self._queue.put(item)

    def start(self, profile: str = '', library: str = '') -> None:
        self._check()
        self._position = self._stream.tell() if self._stream.seekable() else 0
        self._finalized = self._position
        self._behind = WriteBehind.of(self._stream, self._position)
        self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix='mcap-chunk')
        self._writer = threading.Thread(target=self._write_loop, name='mcap-writer',
                                        daemon=True)
        self._writer.start()
        self._lane(self._compression)  # the writer's own lane comes first at finish
        self._enqueue(MAGIC + _record(Header(profile, library)))

    def register_schema(self, name: str, encoding: str, data: bytes) -> int:
        self._check()
        schema = Schema(id=len(self._schemas) + 1, name=name, encoding=encoding, data=data)
        self._schemas[schema.id] = schema
        self._stats.schema_count += 1
        lane = self._lane(self._compression)
        lane.carried_schemas.add(schema.id)
        self._add_record(lane, _record(schema))
        return schema.id

    def schema_id(self, name: str, encoding: str, data: bytes) -> int:
        """The id of the schema `name`, registering it (`register_schema`) the first time."""
        for schema in self._schemas.values():
            if schema.name == name and schema.encoding == encoding:
                return schema.id
        return self.register_schema(name, encoding, data)

    def reserve_channel_id(self) -> int:
        """An id for a channel registered later (`register_channel(channel_id=...)`), so
        that ids follow the order the caller knows its channels in, not the order their
        compression gets decided."""
        self._next_channel_id += 1
        return self._next_channel_id - 1

    def register_channel(self, topic: str, message_encoding: str, schema_id: int,
                         metadata: dict[str, str] | None = None,
                         compression: str | None = None, channel_id: int | None = None
                         ) -> int:
        """`compression` ('none', 'lz4', 'zstd'): the chunks this channel's messages go
        in; by default the writer's. `channel_id`: one `reserve_channel_id` gave."""
        self._check()
        if compression is not None and compression not in COMPRESSIONS:
            raise ValueError(f'{topic}: compression {compression!r}: expected one of '
                             f'{COMPRESSIONS}')
        if channel_id is None:
            channel_id = self.reserve_channel_id()
        elif channel_id in self._channels or not 0 < channel_id < self._next_channel_id:
            raise ValueError(f'{topic}: channel id {channel_id} was not reserved')
        channel = Channel(id=channel_id, topic=topic, schema_id=schema_id,
                          message_encoding=message_encoding, metadata=metadata or {})
        self._channels[channel.id] = channel
        self._stats.channel_count += 1
        lane = self._lane(compression or self._compression)
        self._channel_lanes[channel.id] = lane
        # A streaming reader meets a channel's schema before the channel, in every lane.
        if schema_id in self._schemas and schema_id not in lane.carried_schemas:
            lane.carried_schemas.add(schema_id)
            self._add_record(lane, _record(self._schemas[schema_id]))
        self._add_record(lane, _record(channel))
        return channel.id

    def add_message(self, channel_id: int, log_time: int, data: Any, publish_time: int,
                    sequence: int = 0) -> None:
        """`data`: a buffer, or Pieces; referenced until written (module docstring)."""
        self._check()
        lane = self._channel_lanes.get(channel_id)
        if lane is None:
            raise ValueError(f'channel {channel_id} was not registered')
        data = _bytes(data)
        size = message_bytes(data)
        self._wait_for_room()
        stats = self._stats
        stats.message_start_time = log_time if stats.message_count == 0 \
            else min(log_time, stats.message_start_time)
        stats.message_end_time = max(log_time, stats.message_end_time)
        stats.channel_message_counts[channel_id] += 1
        stats.message_count += 1
        lane.start = log_time if lane.num_messages == 0 else min(lane.start, log_time)
        lane.end = max(lane.end, log_time)
        index = lane.indexes.get(channel_id)
        if index is None:
            index = lane.indexes[channel_id] = MessageIndex(channel_id=channel_id, records=[])
        index.records.append((log_time, lane.count))
        lane.num_messages += 1
        head = _MESSAGE_HEADER.pack(Opcode.MESSAGE, _MESSAGE_FIELDS + size, channel_id,
                                    sequence, log_time, publish_time)
        self._add_record(lane, head, data)

    def add_metadata(self, name: str, data: dict[str, str]) -> None:
        """Written between the chunks finalized so far and the next one, as mcap does."""
        self._check()
        self._stats.metadata_count += 1
        self._enqueue(_MetadataItem(name, _record(Metadata(name=name, metadata=data))))

    def finish(self) -> None:
        """Finalizes the open chunks, waits for every chunk to be written, then writes the
        summary and footer. The stream is left open."""
        self._check()
        for lane in self._lanes.values():
            self._finalize(lane)
        self._enqueue(_record(DataEnd(data_section_crc=0)))
        self._stop_threads()
        self._closed = True  # nothing more to add; close() has nothing left to stop
        if self._error is not None:
            raise self._error
        self._write_summary()
        self._stream.flush()

    def close(self) -> None:
        """Stops and joins the threads; what was not written yet is dropped. Safe to call
        more than once, after finish, or after an error."""
        if self._closed:
            return
        self._closed = True
        self._abandon = True
        self._stop_threads()

    # The caller's side.

    def _check(self) -> None:
        if self._error is not None:
            raise self._error
        if self._closed:
            raise ValueError('the MCAP writer is closed')

    def _lane(self, compression: str) -> _Lane:
        lane = self._lanes.get(compression)
        if lane is None:
            lane = self._lanes[compression] = _Lane(compression)
        return lane

    def _add_record(self, lane: _Lane, head: bytes, data: Any = b'') -> None:
        lane.add(head, data)
        # mcap's rule: a record goes in first, then the chunk closes once over the size.
        if lane.count > self._chunk_size:
            self._finalize(lane)

    def _finalize(self, lane: _Lane) -> None:
        # An empty chunk is not written; its Schema and Channel records wait for the next.
        if lane.num_messages == 0:
            return
        self._stats.chunk_count += 1
        job = lane.take()
        with self._cond:
            self._pending += job.size
        assert self._pool is not None
        # Sizes of chunks already compressed are folded in as they come, so that a caller
        # who never asks (finalized_bytes) does not keep one future per chunk.
        while self._unsized and self._unsized[0].done():
            self._finalized += self._unsized.pop(0).result()
        self._enqueue((job, self._pool.submit(job.build)))

    def _wait_for_room(self) -> None:
        with self._cond:
            while self._pending > self._max_pending and self._error is None:
                self._cond.wait()
        self._check()

    def _stop_threads(self) -> None:
        self._queue.put(None)
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=self._abandon)
        if self._writer is not None:
            self._writer.join()
        if self._pool is not None:
            # The writer thread took every chunk it will write: the rest (after an error
            # or close) is not worth compressing.
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = self._writer = None

    def _write_summary(self) -> None:
        """mcap.Writer's summary section: the same groups in the same order."""
        start = self._position
        summary = RecordBuilder()
        offsets: list[SummaryOffset] = []
        channels = sorted(self._channels.values(), key=lambda c: c.id)
        groups: list[tuple[Opcode, Sequence[McapRecord]]] = [
            (Opcode.SCHEMA, list(self._schemas.values())),
            (Opcode.CHANNEL, channels),
            (Opcode.STATISTICS, [self._stats]),
            (Opcode.CHUNK_INDEX, self._chunk_indexes),
            (Opcode.ATTACHMENT_INDEX, []),
            (Opcode.METADATA_INDEX, self._metadata_indexes),
        ]
        for opcode, records in groups:
            group_start = summary.count
            for rec in records:
                rec.write(summary)
            offsets.append(SummaryOffset(group_opcode=opcode, group_start=start + group_start,
                                         group_length=summary.count - group_start))
        offsets_start = start + summary.count
        for offset in offsets:
            offset.write(summary)
        data = summary.end()
        crc = crc32(struct.pack('<BQQQ', Opcode.FOOTER, 8 + 8 + 4, start, offsets_start),
                         crc32(data))
        tail = _record(Footer(summary_start=start, summary_offset_start=offsets_start,
                              summary_crc=crc)) + MAGIC
        for piece in (data, tail):
            self._stream.write(piece)
            self._written += len(piece)

    # The writer thread's side.

    def _write_loop(self) -> None:
        try:
            while (item := self._queue.get()) is not None:
                if self._abandon:
                    break
                if isinstance(item, tuple):
                    self._write_chunk(*item)
                elif isinstance(item, _MetadataItem):
                    self._metadata_indexes.append(MetadataIndex(
                        offset=self._position, length=len(item.record), name=item.name))
                    self._write(item.record)
                else:
                    self._write(item)
                with self._cond:
                    self._queued -= 1
                    self._cond.notify_all()
        except BaseException as exc:  # noqa: B036 - handed to the caller, who raises it
            with self._cond:
                if not self._abandon:
                    self._error = exc
                self._cond.notify_all()

    def _write_chunk(self, job: _Job, built: Future[int]) -> None:
        built.result()  # raises what the worker raised
        assert job.built is not None
        pieces, data_len, indexes = job.built
        job.built = None  # the buffers go once written
        chunk_start = self._position
        for piece in pieces:
            self._write(piece)
        index_start = self._position
        offsets = {}
        for channel_id, record in indexes:
            offsets[channel_id] = self._position
            self._write(record)
        self._chunk_indexes.append(ChunkIndex(
            message_start_time=job.start, message_end_time=job.end,
            chunk_start_offset=chunk_start, chunk_length=index_start - chunk_start,
            message_index_offsets=offsets, message_index_length=self._position - index_start,
            compression='' if job.compression == 'none' else job.compression,
            compressed_size=data_len, uncompressed_size=job.size))
        with self._cond:
            self._pending -= job.size
            self._cond.notify_all()

    def _write(self, data: Any) -> None:
        self._stream.write(data)
        self._position += len(data)
        self._written += len(data)
        if self._behind is not None:
            self._behind.written(self._position)
