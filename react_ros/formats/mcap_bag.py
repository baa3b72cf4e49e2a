"""Read a ROS 2 MCAP bag as plain records: bytes and int-ns times, no rclpy.

Meaning (deserialisation) belongs to the adapters; this module only moves
bytes, like mcap's own reader which knows no encodings.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from mcap.exceptions import McapError
from mcap.reader import make_reader
from mcap.records import Channel

from react_ros.errors import DatasetFormatError

# What a damaged file makes the mcap package raise besides its own McapError:
# short reads surface as struct/EOF errors, garbage lengths as Value/Memory errors.
_PARSE_ERRORS = (McapError, struct.error, EOFError, ValueError, KeyError, MemoryError,
                 OSError, IndexError)


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
    schema_name: str
    encoding: str
    count: int
    metadata: dict[str, str]


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
            raise DatasetFormatError(self.path, f'not a readable MCAP file ({exc})') from None

    @staticmethod
    def _info(ch: Channel, schemas: dict, counts: dict[int, int]) -> ChannelInfo:
        schema = schemas.get(ch.schema_id)
        return ChannelInfo(topic=ch.topic, schema_name=schema.name if schema else '',
                           encoding=ch.message_encoding, count=counts.get(ch.id, 0),
                           metadata=dict(ch.metadata))

    def channels(self) -> list[ChannelInfo]:
        return list(self._channels)

    def channel(self, topic: str) -> ChannelInfo | None:
        return next((c for c in self._channels if c.topic == topic), None)

    def messages(self, topics: Iterable[str] | None = None) -> Iterator[RawMessage]:
        """Messages in log-time order (ties in file order), CRCs checked."""
        wanted = list(topics) if topics is not None else None
        try:
            with self.path.open('rb') as f:
                reader = make_reader(f, validate_crcs=True)
                for schema, channel, message in reader.iter_messages(topics=wanted,
                                                                     log_time_order=True):
                    yield RawMessage(topic=channel.topic,
                                     schema_name=schema.name if schema else '',
                                     encoding=channel.message_encoding,
                                     data=message.data,
                                     log_time_ns=message.log_time,
                                     publish_time_ns=message.publish_time)
        except FileNotFoundError:
            raise DatasetFormatError(self.path, 'file is missing') from None
        except _PARSE_ERRORS as exc:
            raise DatasetFormatError(self.path, f'MCAP data is corrupt ({exc})') from None
