"""`react-ros info`: what an episode holds, as text or as one JSON document.

Per stream: count, median rate from its stamps, frame_id, image size and encoding,
and the QoS the player offers it with; then the TF tree and the kind's checks.
Cheap on purpose: a video-backed stream gives its stamps without decoding (its
VideoSource), only a stream's first message is ever kept, and TF messages are
read only for their edges.
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Iterator

import numpy as np

from react_ros.adapters.base import Episode
from react_ros.streams import Role, Stream

# Bump when a field changes meaning or goes away; adding a field keeps the version.
SCHEMA_VERSION = 1
SCHEMA_FILE = 'info.schema.json'
TF_TYPE = 'tf2_msgs/msg/TFMessage'
IMAGE_TYPE = 'sensor_msgs/msg/Image'
COMPRESSED_TYPES = ('sensor_msgs/msg/CompressedImage', 'foxglove_msgs/msg/CompressedVideo')


def median_rate(stamps: np.ndarray | list[int]) -> float | None:
    """1 / the median positive interval: a 10 Hz stream with one gap still reads 10 Hz."""
    # plain ndarray: numpy's stubs make the diff of int64s timedelta64s
    dt: np.ndarray = np.diff(np.asarray(stamps, dtype=np.int64))
    dt = dt[dt > 0]
    return float(1e9 / np.median(dt)) if len(dt) else None


def deserialized(msg: Any, msg_type: str) -> Any:
    """A message object, for streams that carry recorded CDR bytes; None if unreadable."""
    if not isinstance(msg, (bytes, bytearray, memoryview)):
        return msg
    from rclpy.serialization import deserialize_message

    from react_ros.ros.msgs import message_class
    try:
        return deserialize_message(bytes(msg), message_class(msg_type))
    except Exception:  # a type not installed, or bytes that are not this type
        return None


def message_facts(msg: Any, msg_type: str) -> tuple[str | None, dict[str, Any] | None]:
    """(frame_id, image) of one message: what its header and pixels' description say."""
    if msg is None:
        return None, None
    header = getattr(msg, 'header', None)
    frame_id = header.frame_id if header is not None else getattr(msg, 'frame_id', None)
    if msg_type == IMAGE_TYPE:
        return frame_id, image_facts(msg.width, msg.height, msg.encoding, None)
    if msg_type in COMPRESSED_TYPES:
        return frame_id, image_facts(None, None, None, msg.format)
    return frame_id, None


def image_facts(width: int | None, height: int | None, encoding: str | None,
                fmt: str | None) -> dict[str, Any]:
    return {'width': width, 'height': height, 'encoding': encoding, 'format': fmt}


def qos_facts(reliability: str, durability: str, history: str,
              depth: int | None) -> dict[str, Any]:
    return {'reliability': reliability, 'durability': durability, 'history': history,
            'depth': depth}


def _player_qos(stream: Stream) -> dict[str, Any]:
    """What the live player (or, for robot state, robot_state_publisher) offers."""
    from react_ros.ros import qos
    if stream.role is Role.ROBOT_STATE:
        profile = qos.TF if stream.topic == '/tf' and not stream.latched else qos.LATCHED
    else:
        profile = qos.live_writer(stream.latched)
    keep_all = profile.history.name == 'KEEP_ALL'
    return qos_facts(profile.reliability.name.lower(), profile.durability.name.lower(),
                     profile.history.name.lower(), None if keep_all else int(profile.depth))


class _Scan:
    """One pass over a stream: its stamps, its first message, its TF edges."""

    def __init__(self, stream: Stream, edges: dict[tuple[str, str], bool]) -> None:
        self.stream, self.edges = stream, edges
        self.first: Any = None
        self.stamps = self._read()

    def _read(self) -> np.ndarray:
        s = self.stream
        if s.video is not None and s.msg_type != TF_TYPE:
            # its stamps without decoding; one frame decoded for size and encoding
            self.first = next((m for _, m in s.open()), None)
            return np.asarray(s.video.stamps, dtype=np.int64)
        return np.fromiter(self._stamps(s.open()), dtype=np.int64)

    def _stamps(self, messages: Iterator[tuple[int, Any]]) -> Iterator[int]:
        tf = self.stream.msg_type == TF_TYPE
        for n, (t_ns, msg) in enumerate(messages):
            if n == 0 or tf:
                msg = deserialized(msg, self.stream.msg_type)
            if n == 0:
                self.first = msg
            if tf and msg is not None:
                for tr in msg.transforms:
                    key = (tr.header.frame_id, tr.child_frame_id)
                    self.edges[key] = self.edges.get(key, False) or self.stream.latched
            yield t_ns


def stream_facts(stream: Stream, edges: dict[tuple[str, str], bool]) -> dict[str, Any]:
    scan = _Scan(stream, edges)
    frame_id, image = message_facts(deserialized(scan.first, stream.msg_type), stream.msg_type)
    if stream.msg_type == TF_TYPE:
        frame_id = None  # its frames are the TF tree's edges
    facts: dict[str, Any] = {
        'topic': stream.topic, 'type': stream.msg_type, 'count': int(len(scan.stamps)),
        'rate_hz': None if stream.latched else median_rate(scan.stamps),
        'frame_id': frame_id, 'image': image, 'qos': _player_qos(stream),
        'latched': stream.latched, 'role': stream.role.value, 'video': None}
    if stream.video is not None:
        from react_ros.formats.video import probe, scaled_size
        video = probe(stream.video.path)
        width, height = scaled_size(video.width, video.height, stream.video.scale)
        facts['video'] = {'path': str(stream.video.path), 'codec': video.codec,
                          'width': width, 'height': height}
    return facts


def tf_tree(edges: dict[tuple[str, str], bool]) -> list[dict[str, Any]]:
    return [{'parent': p, 'child': c, 'static': static}
            for (p, c), static in sorted(edges.items())]


# The checks' printed lines (each kind's report): a verdict word, then under it
# what the classic mistake would have read.
_CHECK = re.compile(r'^(ok|FAIL|--)\s+(.*)$')
_CONFORMANCE_CHECK = re.compile(r'^conformance: (.*): (OK|FAIL|CANNOT TELL)$')
_VERDICT = re.compile(r'^conformance: (PASS|FAIL)$')
_WOULD = re.compile(r'^\s*would read: (.*)$')
_STATUS = {'ok': 'pass', 'OK': 'pass', 'FAIL': 'fail', '--': 'not_checked',
           'CANNOT TELL': 'not_checked'}


def checks(report: list[str]) -> dict[str, Any]:
    """A kind's report lines as entries: status, text, and what each mistake would read."""
    verdict: str | None = None
    entries: list[dict[str, Any]] = []
    for line in '\n'.join(report).splitlines():  # a kind may put a check and its mistake in one
        if m := _VERDICT.match(line):
            verdict = m.group(1).lower()
        elif (m := _WOULD.match(line)) and entries:
            entries[-1]['would_read'].append(m.group(1))
        elif m := _CHECK.match(line):
            entries.append({'status': _STATUS[m.group(1)], 'text': m.group(2), 'would_read': []})
        elif m := _CONFORMANCE_CHECK.match(line):
            entries.append({'status': _STATUS[m.group(2)], 'text': m.group(1),
                            'would_read': []})
        elif line.strip():
            entries.append({'status': 'note', 'text': line.strip(), 'would_read': []})
    return {'verdict': verdict, 'entries': entries}


def episode_facts(episode: Episode) -> dict[str, Any]:
    """Everything `info` says about an episode, as the JSON document of info.schema.json."""
    edges: dict[tuple[str, str], bool] = {}
    streams = [stream_facts(s, edges) for s in episode.streams]
    return {'schema_version': SCHEMA_VERSION, 'kind': episode.kind, 'path': str(episode.path),
            'start_ns': episode.start_ns, 'end_ns': episode.end_ns,
            'duration_s': episode.duration_ns / 1e9,
            'messages': sum(s['count'] for s in streams), 'streams': streams,
            'tf_tree': tf_tree(edges), 'invalid_poses': dict(sorted(episode.invalid_poses.items())),
            'warnings': list(episode.warnings), 'checks': checks(episode.report), 'bag': None}


def rate_text(rate_hz: float | None) -> str:
    return '-' if rate_hz is None else f'{rate_hz:.1f} Hz'


def qos_text(q: dict[str, Any] | None) -> str:
    if q is None:
        return '-'
    history = 'keep all' if q['history'] == 'keep_all' else f'keep last {q["depth"]}'
    return f'{q["reliability"]}, {q["durability"]}, {history}'


def image_text(image: dict[str, Any] | None) -> str:
    if image is None:
        return ''
    if image['format'] is not None:
        return image['format']
    return f'{image["width"]}x{image["height"]} {image["encoding"]}'


def tf_tree_lines(edges: dict[str, str], static: set[str]) -> list[str]:
    """child -> parent edges drawn as an indented tree from each root."""
    children: dict[str, list[str]] = defaultdict(list)
    for child, parent in edges.items():
        children[parent].append(child)
    roots = sorted({p for p in children if p not in edges})
    out: list[str] = []

    def walk(frame: str, depth: int, seen: frozenset[str]) -> None:
        mark = ' (static)' if frame in static else ''
        out.append('  ' + '  ' * depth + frame + mark)
        for c in sorted(children.get(frame, [])):
            if c not in seen:
                walk(c, depth + 1, seen | {c})
    for r in roots:
        walk(r, 0, frozenset({r}))
    return out


def describe(episode: Episode) -> str:
    return describe_facts(episode_facts(episode), episode.report)


def describe_facts(f: dict[str, Any], report: list[str]) -> str:
    lines = [f'kind:      {f["kind"]}',
             f'path:      {f["path"]}',
             f'start:     {f["start_ns"] / 1e9:.9f} s',
             f'duration:  {f["duration_s"]:.3f} s',
             f'streams:   {len(f["streams"])} (topic, type, count, median rate, frame_id, '
             'image, QoS)']
    rows = []
    # A topic listed twice (UMI's /tf): the recorded transforms, and the joints' that
    # robot_state_publisher derives from the URDF; say which row is which.
    topics = [s['topic'] for s in f['streams']]
    for s in f['streams']:
        robot = s['role'] == Role.ROBOT_STATE.value
        notes = [n for n, on in (
            ('latched', s['latched']),
            ('robot state (from the URDF: robot_state_publisher\'s, live)', robot),
            ('the episode\'s own', not robot and topics.count(s['topic']) > 1)) if on]
        rows.append((s['topic'], s['type'], str(s['count']), rate_text(s['rate_hz']),
                     s['frame_id'] or '-', image_text(s['image']) or '-', qos_text(s['qos']),
                     ', '.join(notes)))
    widths = [max((len(r[i]) for r in rows), default=0) for i in range(7)]
    for r in rows:
        lines.append('  ' + '  '.join(c.ljust(w) for c, w in zip(r, widths)) + '  ' + r[7])
    edges = {e['child']: e['parent'] for e in f['tf_tree']}
    lines.append('TF tree:' + ('' if edges else ' (no /tf or /tf_static)'))
    lines += tf_tree_lines(edges, {e['child'] for e in f['tf_tree'] if e['static']})
    for source, n in f['invalid_poses'].items():
        lines.append(f'invalid poses: {source}: {n} not published')
    for w in f['warnings']:
        lines.append(f'warning: {w}')
    lines += report
    return '\n'.join(line.rstrip() for line in lines)


__all__ = ['SCHEMA_VERSION', 'checks', 'describe', 'episode_facts', 'median_rate', 'tf_tree_lines',
           'message_facts', 'qos_facts', 'image_facts']
