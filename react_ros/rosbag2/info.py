"""`react-ros info BAG`: what `ros2 bag info` prints, and what a user checks next.

Per topic besides type, count and serialisation: the median rate from log-time
intervals (a 10 Hz stream with one gap still reads 10 Hz), the offered QoS, the
frame_id of its first message, and an image's size and encoding; then the TF tree
that /tf and /tf_static build. Reading the rates and the tree reads the whole bag
once (MCAP keeps no per-topic times in its summary).
"""
from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from react_ros.rosbag2.reader import Rosbag2, Topic
from react_ros.info import (SCHEMA_VERSION, image_text, median_rate, message_facts, qos_facts,
                            tf_tree_lines)
from react_ros.ros.msgs import message_class

TF_TOPICS = ('/tf', '/tf_static')
TF_TYPE = 'tf2_msgs/msg/TFMessage'


def bag_facts(path: Path | str) -> dict[str, Any]:
    """Everything `info` prints about the bag, as plain data."""
    bag = Rosbag2(path)
    times: dict[str, list[int]] = defaultdict(list)
    first: dict[str, bytes] = {}
    edges: dict[str, tuple[str, bool]] = {}  # child -> (parent, static)
    for m in bag.messages():
        times[m.topic].append(m.log_time_ns)
        first.setdefault(m.topic, m.data)
        if m.topic in TF_TOPICS and m.schema_name == TF_TYPE:
            for parent, child in _tf_edges(m.data):
                edges[child] = (parent, m.topic == '/tf_static')
    topics = [_topic_facts(t, times.get(t.name, []), first.get(t.name),
                           bag.missing_schema.get(t.name)) for t in bag.topics]
    return {'path': str(bag.path), 'files': [f.name for f in bag.files], 'notes': bag.notes,
            'version': bag.version, 'size_bytes': bag.size_bytes,
            'start_ns': bag.start_ns, 'end_ns': bag.end_ns,
            'duration_s': bag.duration_ns / 1e9, 'messages': bag.message_count,
            'topics': topics, 'tf_edges': {c: p for c, (p, _) in edges.items()},
            'tf_static': sorted(c for c, (_, s) in edges.items() if s)}


def _topic_facts(topic: Topic, stamps: list[int], data: bytes | None,
                 missing_schema: str | None = None) -> dict[str, Any]:
    facts: dict[str, Any] = {'name': topic.name, 'type': topic.type, 'count': topic.count,
                             'missing_schema': missing_schema,
                             'serialization': topic.serialization_format,
                             'qos': topic.qos_summary(), 'offered': topic.qos,
                             'latched': topic.latched,
                             'rate_hz': median_rate(stamps), 'frame_id': None}
    if data is not None and topic.serialization_format == 'cdr' and topic.type:
        frame_id, image = message_facts(_deserialize(data, topic.type), topic.type)
        facts['frame_id'] = None if topic.type == TF_TYPE else frame_id
        if image is not None:
            facts['image'] = image_text(image)
            facts['image_facts'] = image
    return facts


def _deserialize(data: bytes, msg_type: str) -> Any:
    from rclpy.serialization import deserialize_message
    try:
        return deserialize_message(data, message_class(msg_type))
    except Exception:  # a type not installed, or bytes that are not this type
        return None


def _tf_edges(data: bytes) -> list[tuple[str, str]]:
    msg = _deserialize(data, TF_TYPE)
    if msg is None:
        return []
    return [(ts.header.frame_id, ts.child_frame_id) for ts in msg.transforms]


def bag_document(path: Path | str) -> dict[str, Any]:
    """`info --json BAG`: the bag in the schema of an episode's document (kind rosbag2)."""
    f = bag_facts(path)
    streams = [{'topic': t['name'], 'type': t['type'], 'count': t['count'],
                'rate_hz': None if t['latched'] else t['rate_hz'], 'frame_id': t['frame_id'],
                'image': t.get('image_facts'), 'qos': _first_qos(t['offered']),
                'latched': t['latched'], 'role': 'recorded', 'video': None}
               for t in f['topics']]
    static = set(f['tf_static'])
    return {'schema_version': SCHEMA_VERSION, 'kind': 'rosbag2', 'path': f['path'],
            'start_ns': f['start_ns'], 'end_ns': f['end_ns'], 'duration_s': f['duration_s'],
            'messages': f['messages'], 'streams': streams,
            'tf_tree': [{'parent': p, 'child': c, 'static': c in static}
                        for c, p in sorted(f['tf_edges'].items(), key=lambda e: (e[1], e[0]))],
            'invalid_poses': {}, 'warnings': list(f['notes']) + [
                f'topic {t["name"]} has no schema: {t["missing_schema"]}' for t in f['topics']
                if t['missing_schema']],
            'checks': {'verdict': None, 'entries': []},
            'bag': {'files': f['files'], 'version': f['version'],
                    'size_bytes': f['size_bytes']}}


def _first_qos(offered: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first publisher's offered QoS as recorded (unknown policies stay unknown)."""
    if not offered:
        return None
    q = offered[0]
    history = str(q.get('history', 'unknown'))
    depth = q.get('depth') if history == 'keep_last' else None
    return qos_facts(str(q.get('reliability', 'unknown')), str(q.get('durability', 'unknown')),
                     history, int(depth) if depth is not None else None)


def describe_bag(path: Path | str) -> str:
    f = bag_facts(path)
    lines = [f'Files:             {", ".join(f["files"])}',
             f'Bag size:          {_size(f["size_bytes"])}',
             'Storage id:        mcap' + (f' (metadata version {f["version"]})'
                                          if f['version'] is not None else
                                          ' (no metadata.yaml: read from the MCAP summary)'),
             f'Duration:          {f["duration_s"]:.9f}s',
             f'Start:             {_when(f["start_ns"])}',
             f'End:               {_when(f["end_ns"])}',
             f'Messages:          {f["messages"]}',
             f'Topic information: {len(f["topics"])} topics']
    for t in f['topics']:
        rate = f'{t["rate_hz"]:.4g} Hz' if t['rate_hz'] else '-'
        kind = t['type'] if not t['missing_schema'] else \
            f'none, the channel has no schema ({t["missing_schema"]})'
        parts = [f'Topic: {t["name"]}', f'Type: {kind}', f'Count: {t["count"]}',
                 f'Rate: {rate}', f'Serialization Format: {t["serialization"]}']
        if t['frame_id'] is not None:
            parts.append(f'frame_id: {t["frame_id"] or "(empty)"}')
        if 'image' in t:
            parts.append(f'image: {t["image"]}')
        parts.append(f'QoS: {t["qos"]}')
        lines.append('  ' + ' | '.join(parts))
    lines.append('TF tree:' + ('' if f['tf_edges'] else ' (no /tf or /tf_static)'))
    lines += tf_tree_lines(f['tf_edges'], set(f['tf_static']))
    return '\n'.join(lines)


def _size(n: float) -> str:
    for unit in ('B', 'KiB', 'MiB', 'GiB'):
        if n < 1024 or unit == 'GiB':
            return f'{n:.0f} {unit}' if unit == 'B' else f'{n:.1f} {unit}'
        n /= 1024
    raise AssertionError


def _when(ns: int) -> str:
    return time.strftime('%b %d %Y %H:%M:%S', time.gmtime(ns // 10**9)) + \
        f'.{ns % 10**9 // 10**6:03d} UTC ({ns / 1e9:.9f})'


__all__ = ['bag_document', 'bag_facts', 'describe_bag']
