"""Read a ROS 2 MCAP bag as plain records: bytes and int-ns times, no rclpy.

Meaning (deserialisation) belongs to the adapters; this module only moves
bytes, like mcap's own reader which knows no encodings.
"""
from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterable, Iterator

from mcap.data_stream import ReadDataStream
from mcap.exceptions import EndOfFile, McapError
from mcap.reader import McapReader, make_reader
from mcap.records import Channel, Chunk, ChunkIndex, Schema
from mcap.stream_reader import get_chunk_data_stream
from mcap.summary import Summary

from react_ros.errors import DatasetFormatError

try:  # the decompressors mcap uses for chunks; either may be absent
    from zstandard import ZstdError
except ImportError:  # pragma: no cover
    ZstdError = McapError  # type: ignore[misc,assignment]

# What a damaged file makes the mcap package raise besides its own McapError:
# short reads surface as struct/EOF errors, garbage lengths as Value/Memory errors,
# damaged chunk bytes as the decompressor's error (zstd's own, lz4's RuntimeError).
_PARSE_ERRORS = (McapError, struct.error, EOFError, ValueError, KeyError, MemoryError,
                 OSError, IndexError, ZstdError, RuntimeError)
# What such an error means here, said before its own text (which may be empty:
# mcap's EndOfFile() and EOFError() carry none, struct.error's is about buffers).
_MEANING = ((EndOfFile, 'the file ends inside a record, truncated?'),
            (EOFError, 'the file ends inside a record, truncated?'),
            (struct.error, 'a record is shorter than its fields, truncated?'),
            (MemoryError, 'a record declares a length larger than memory'),
            (KeyError, 'a record names an id the file does not define'),
            (IndexError, 'a record is shorter than its fields'),
            (UnicodeDecodeError, 'a name or text field is not UTF-8'))


def detail(exc: BaseException) -> str:
    """What went wrong, never empty: what the error means here, and its own text."""
    text = ' '.join(str(exc).split())[:240]
    meaning = next((m for t, m in _MEANING if isinstance(exc, t)), None)
    if meaning is None:  # mcap's own errors name themselves (InvalidMagic, ...)
        meaning = type(exc).__name__
    return f'{meaning}: {text}' if text else meaning


@dataclass(frozen=True)
class RawMessage:
    topic: str
    schema_name: str  # 'geometry_msgs/msg/PoseStamped'
    encoding: str  # message encoding of the channel, 'cdr' for ROS 2
    data: bytes  # serialised message, CDR for ROS 2
    log_time_ns: int
    publish_time_ns: int


@dataclass(frozen=True)
class ChannelInfo:
    topic: str
    schema_name: str  # '' when the channel has no schema (see `missing_schema`)
    encoding: str
    count: int
    metadata: dict[str, str]
    # Why the channel has no schema ('' when it has one): MCAP allows schema id 0 (no
    # schema), and a damaged or hand-made file may name a schema id it never defines.
    missing_schema: str = ''


class McapBag:
    """An MCAP file whose header and summary have been checked on open."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        try:
            with self.path.open('rb') as f:
                reader = make_reader(f)
                reader.get_header()
                summary = reader.get_summary()
                if summary is None:
                    raise DatasetFormatError(self.path, 'MCAP file has no summary section '
                                             '(not finalised by its recorder?)')
                stats = summary.statistics
                counts = dict(stats.channel_message_counts) if stats else {}
                self._channels = [self._info(ch, summary.schemas, counts)
                                  for ch in summary.channels.values()]
                self.start_ns = stats.message_start_time if stats else 0
                self.end_ns = stats.message_end_time if stats else 0
        except FileNotFoundError:
            raise DatasetFormatError(self.path, 'file is missing') from None
        except _PARSE_ERRORS as exc:
            raise DatasetFormatError(self.path, f'not a readable MCAP file ({detail(exc)})'
                                     ) from None

    @staticmethod
    def _info(ch: Channel, schemas: dict[int, Schema], counts: dict[int, int]) -> ChannelInfo:
        schema = schemas.get(ch.schema_id)
        missing = '' if schema is not None else \
            'recorded without a schema (schema id 0)' if ch.schema_id == 0 else \
            f'its schema id {ch.schema_id} is not in the file'
        return ChannelInfo(topic=ch.topic, schema_name=schema.name if schema else '',
                           encoding=ch.message_encoding, count=counts.get(ch.id, 0),
                           metadata=dict(ch.metadata), missing_schema=missing)

    def channels(self) -> list[ChannelInfo]:
        return list(self._channels)

    def channel(self, topic: str) -> ChannelInfo | None:
        return next((c for c in self._channels if c.topic == topic), None)

    def messages(self, topics: Iterable[str] | None = None,
                 start_ns: int | None = None) -> Iterator[RawMessage]:
        """Messages in log-time order (ties in file order), chunk CRCs checked.

        `start_ns`: only those logged then or later, skipping the chunks before it.

        The mcap package orders messages through a heap of Python objects,
        which dominated opening an episode; here each run of chunks whose time
        ranges overlap is sorted at once (C-speed sort, same order as mcap's).
        """
        wanted = set(topics) if topics is not None else None
        try:
            with self.path.open('rb') as f:
                reader = make_reader(f)
                summary = reader.get_summary()
                if summary is None:
                    raise DatasetFormatError(self.path, 'MCAP file has no summary section')
                ids = {cid for cid, ch in summary.channels.items()
                       if wanted is None or ch.topic in wanted}
                if not summary.chunk_indexes:  # unchunked file: mcap's linear reader
                    yield from (m for m in self._unindexed(reader, wanted)
                                if start_ns is None or m.log_time_ns >= start_ns)
                    return
                indexes = summary.chunk_indexes if start_ns is None else \
                    [ci for ci in summary.chunk_indexes if ci.message_end_time >= start_ns]
                for run in _overlapping_runs(indexes, ids):
                    yield from (m for m in self._run(f, summary, run, ids)
                                if start_ns is None or m.log_time_ns >= start_ns)
        except FileNotFoundError:
            raise DatasetFormatError(self.path, 'file is missing') from None
        except _PARSE_ERRORS as exc:
            raise DatasetFormatError(self.path, f'MCAP data is corrupt ({detail(exc)})') from None

    @staticmethod
    def _unindexed(reader: McapReader, wanted: set[str] | None) -> Iterator[RawMessage]:
        for schema, ch, m in reader.iter_messages(topics=wanted, log_time_order=True):
            yield RawMessage(topic=ch.topic, schema_name=schema.name if schema else '',
                             encoding=ch.message_encoding, data=m.data,
                             log_time_ns=m.log_time, publish_time_ns=m.publish_time)

    def _run(self, f: IO[bytes], summary: Summary, run: list[ChunkIndex],
             ids: set[int]) -> Iterator[RawMessage]:
        found: list[tuple[int, int, int, int, int, bytes]] = []
        for ci in run:
            f.seek(ci.chunk_start_offset + 1 + 8, io.SEEK_SET)
            chunk = Chunk.read(ReadDataStream(f))
            found.extend(_chunk_messages(chunk, ci.chunk_start_offset, ids))
        found.sort(key=lambda e: e[:3])
        names = {cid: (ch.topic, _schema_name(summary, ch), ch.message_encoding)
                 for cid, ch in summary.channels.items() if cid in ids}
        for log_time, _, _, cid, publish_time, data in found:
            topic, schema_name, encoding = names[cid]
            yield RawMessage(topic=topic, schema_name=schema_name, encoding=encoding,
                             data=data, log_time_ns=log_time, publish_time_ns=publish_time)


def _schema_name(summary: Summary, ch: Channel) -> str:
    schema = summary.schemas.get(ch.schema_id)
    return schema.name if schema else ''


_RECORD = struct.Struct('<BQ')  # opcode, length of what follows
_MESSAGE = struct.Struct('<HIQQ')  # channel id, sequence, log time, publish time; then data
_MESSAGE_OPCODE = 0x05


def _chunk_messages(chunk: Chunk, offset: int, ids: set[int]
                    ) -> Iterator[tuple[int, int, int, int, int, bytes]]:
    """(log time, chunk offset, record number, channel id, publish time, data) of the
    chunk's messages on `ids`, its CRC checked.

    mcap's breakup_chunk builds an object per record through a Python stream reader,
    which took half of converting an episode's non-image topics; the records' framing
    (opcode, length) and a message's fixed fields are read here with struct instead.
    Decompression and the CRC stay mcap's (get_chunk_data_stream).
    """
    stream, size = get_chunk_data_stream(chunk, validate_crc=True)
    data = stream.read(size)
    pos, number = 0, 0
    while pos < size:
        opcode, length = _RECORD.unpack_from(data, pos)
        body, pos = pos + _RECORD.size, pos + _RECORD.size + length
        if pos > size:
            raise struct.error(f'a record of {length} bytes runs past the end of its chunk')
        if opcode == _MESSAGE_OPCODE:
            if length < _MESSAGE.size:
                raise struct.error(f'a message record of {length} bytes is shorter than its '
                                   'fields')
            cid, _, log_time, publish_time = _MESSAGE.unpack_from(data, body)
            if cid in ids:
                yield (log_time, offset, number, cid, publish_time,
                       data[body + _MESSAGE.size:pos])
        number += 1


def _overlapping_runs(indexes: Iterable[ChunkIndex],
                      ids: set[int]) -> Iterator[list[ChunkIndex]]:
    """Chunks holding wanted channels, grouped where their time ranges overlap."""
    todo = sorted((ci for ci in indexes if ids & set(ci.message_index_offsets)),
                  key=lambda ci: (ci.message_start_time, ci.chunk_start_offset))
    run: list[ChunkIndex] = []
    end = -1
    for ci in todo:
        if run and ci.message_start_time > end:
            yield run
            run = []
        run.append(ci)
        end = max(end, ci.message_end_time)
    if run:
        yield run
