"""A rosbag2 bag as an Episode: one stream per recorded topic, its CDR bytes as recorded.

So `react-ros play BAG` is the same player as for a dataset episode: /clock from the
bag's log times, rate, loop, seek, services, flow control. Nothing is deserialised on
the way: each message goes out as the bytes the bag holds, at its log time (as
`ros2 bag play` does; header stamps are the recorder's business).

- A topic offered transient local by its recorder(s) is latched: re-sent after a seek,
  a loop or a start offset (the recorded `offered_qos_profiles` say so).
- A topic whose type this ROS 2 install lacks, that is not CDR, or whose channel has no
  schema, is skipped with one warning naming it and why; the rest plays.
- A bag without metadata.yaml (a lone .mcap, or a folder that lost it) is read from the
  MCAP summary with one warning saying so (rosbag2/reader.py).
- A recorded /clock is not replayed: the player publishes /clock from the log times.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from react_ros.adapters.base import Episode
from react_ros.rosbag2.reader import Rosbag2, Topic
from react_ros.ros.msgs import message_class
from react_ros.streams import Stream

KIND = 'rosbag2'
# Types whose messages are large: read ahead on a worker thread like decoded video.
HEAVY_TYPES = {'sensor_msgs/msg/Image', 'sensor_msgs/msg/CompressedImage',
               'sensor_msgs/msg/PointCloud2', 'foxglove_msgs/msg/CompressedVideo'}


def open_bag(path: Path | str) -> Episode:
    bag = Rosbag2(path)
    streams, warnings = [], list(bag.notes)
    for topic in bag.topics:
        why = _not_playable(topic, bag.missing_schema.get(topic.name))
        if why:
            typed = f' ({topic.type})' if topic.type else ''
            warnings.append(f'{bag.path}: topic {topic.name}{typed} is not played: {why}')
            continue
        if topic.count:
            streams.append(_stream(bag, topic))
    return Episode(kind=KIND, path=bag.path, start_ns=bag.start_ns, end_ns=bag.end_ns,
                   streams=streams, warnings=warnings)


def _not_playable(topic: Topic, missing_schema: str | None = None) -> str:
    if missing_schema:
        return f'its channel has no schema ({missing_schema}), so its type is unknown'
    if topic.name == '/clock':
        return 'the player publishes /clock from the log times'
    if topic.serialization_format != 'cdr':
        return f'serialised as {topic.serialization_format!r}, not CDR'
    try:
        message_class(topic.type)
    except (ImportError, AttributeError, ValueError):
        return 'its type is not installed in this ROS 2'
    return ''


def _stream(bag: Rosbag2, topic: Topic) -> Stream:
    name = topic.name

    def gen() -> Iterator[tuple[int, Any]]:
        for m in bag.messages([name]):
            yield m.log_time_ns, m.data

    def gen_from(t_ns: int) -> Iterator[tuple[int, Any]]:
        for m in bag.messages([name], start_ns=t_ns):
            yield m.log_time_ns, m.data

    heavy = topic.type in HEAVY_TYPES
    approx = 200
    if heavy:  # one message read to size the read-ahead budget
        first = next(bag.messages([name]), None)
        approx = len(first.data) if first is not None else approx
    return Stream(name, topic.type, gen, latched=topic.latched, count=topic.count, heavy=heavy,
                  approx_bytes=approx, open_from=gen_from)


__all__ = ['KIND', 'open_bag']
