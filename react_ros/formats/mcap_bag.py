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
from mcap.records import Channel, Chunk, ChunkIndex, Message, Schema
from mcap.stream_reader import breakup_chunk
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
        found: list[tuple[int, int, int, Message]] = []
        for ci in run:
            f.seek(ci.chunk_start_offset + 1 + 8, io.SEEK_SET)
            chunk = Chunk.read(ReadDataStream(f))
            for i, rec in enumerate(breakup_chunk(chunk, validate_crc=True)):
                if isinstance(rec, Message) and rec.channel_id in ids:
                    found.append((rec.log_time, ci.chunk_start_offset, i, rec))
        found.sort(key=lambda e: e[:3])
        for _, _, _, m in found:
            ch = summary.channels[m.channel_id]
            schema = summary.schemas.get(ch.schema_id)
            yield RawMessage(topic=ch.topic, schema_name=schema.name if schema else '',
                             encoding=ch.message_encoding, data=m.data,
                             log_time_ns=m.log_time, publish_time_ns=m.publish_time)


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
