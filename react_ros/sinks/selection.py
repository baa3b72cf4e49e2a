"""Which streams a sink takes, under which topic names, and each topic folded from its streams.

Every sink (the bag writer, the DDS player, the Foxglove server) takes the same steps:
1. --topics / --exclude-topics name the episode's own topics, resolved as ROS resolves
   names (`left/image_raw` is /left/image_raw; ros/names.py); a name it lacks is a typo,
   never a wish for nothing, and is refused. -e/--regex and -x/--exclude-regex match
   whole names (as rosbag2's std::regex_match). As `ros2 bag play` filters: an excluded
   topic (by name or regex) is never played; else, with --topics or --regex, a topic is
   played when it is listed or matches.
2. --images turns Image streams into what image_transport or Foxglove carries, under
   their names (`.../image_raw/compressed`, `.../compressedDepth`, `.../compressed_video`).
3. Streams that share a topic (/tf from the data and from the robot state) become one
   topic: one bag channel, one publisher. Two message types on one topic are refused.
What differs between the sinks (a bag keeps robot state, the DDS player leaves it to
robot_state_publisher; how a refusal reads) is said by the caller's arguments.

One vocabulary: a stream is named by the topic it is published (or written) under, what
`ros2 topic list` and `ros2 bag info` show (`/x/image_raw/compressed_video` with
--images h264), and, as well, by its source Image topic (`/x/image_raw`). Players select
after --images (they see published names), convert before it (it sees source names,
and works out the published one: `_Names`), so both take both.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from react_ros.errors import ReactRosError, SinkError
from react_ros.ros.names import PLAYER_NODE, resolve_topics
from react_ros.sinks.compressed_video import COMPRESSED_VIDEO
from react_ros.sinks.compressed_video import MODE as VIDEO_MODE
from react_ros.sinks.compressed_video import TRANSPORT as VIDEO_TRANSPORT
from react_ros.sinks.compressed_video import compressed_video_streams
from react_ros.sinks.image_encoding import COMPRESSED_IMAGE, IMAGE, ImageEncoder, transport_of
from react_ros.streams import Role, Stream

# A player's own topic: naming it in --topics/--exclude-topics is no mistake.
CLOCK = '/clock'
# the topic suffix each encoded type is published under (image_transport's, Foxglove's)
_TRANSPORTS = {COMPRESSED_VIDEO: (VIDEO_TRANSPORT,),
               COMPRESSED_IMAGE: ('compressed', 'compressedDepth')}


@dataclass(frozen=True)
class TopicFilter:
    """What the user asked for: --topics (None: all), --exclude-topics, -e, -x."""

    topics: Sequence[str] | None = None
    exclude_topics: Sequence[str] = ()
    regex: str = ''
    exclude_regex: str = ''

    @property
    def narrows(self) -> bool:
        return bool(self.topics is not None or self.exclude_topics or self.regex
                    or self.exclude_regex)

    def resolved(self, node: str | None) -> TopicFilter:
        """The names made absolute as the node `node` (None: convert, no node) resolves them."""
        return TopicFilter(resolve_topics(self.topics, node, flag='--topics'),
                           resolve_topics(self.exclude_topics, node, flag='--exclude-topics')
                           or (), self.regex, self.exclude_regex)


@dataclass
class _Names:
    """Every name of one stream: its topic, and the other half of the vocabulary.

    `images`: the --images mode when the streams are the source ones (convert selects
    before encoding); None when they are already as published (the players).
    """

    stream: Stream
    images: str | None
    _all: tuple[str, ...] | None = field(default=None, init=False)

    @property
    def published(self) -> str:
        return self.all[0]

    @property
    def all(self) -> tuple[str, ...]:
        if self._all is None:
            self._all = self._names()
        return self._all

    def _names(self) -> tuple[str, ...]:
        s = self.stream
        if self.images is None:  # as published: an encoded image is also its source's name
            for suffix in _TRANSPORTS.get(s.msg_type, ()):
                if s.topic.endswith('/' + suffix):
                    return s.topic, s.topic[:-len(suffix) - 1]
            return (s.topic,)
        if s.msg_type != IMAGE or self.images == 'raw':
            return (s.topic,)
        if self.images == VIDEO_MODE:  # only an Image backed by a video becomes one
            return (f'{s.topic}/{VIDEO_TRANSPORT}', s.topic) if s.video is not None \
                else (s.topic,)
        # jpeg, png: compressed or compressedDepth, as the first image's encoding says (a
        # vector field stays an Image: image_encoding.KEPT_RAW)
        transport = transport_of(s, self.images)
        return (f'{s.topic}/{transport}', s.topic) if transport else (s.topic,)


def _chosen(names: list[_Names], given: Sequence[str], also: Sequence[str]
            ) -> tuple[set[int], list[str]]:
    """Indices of the streams `given` names (an exact topic first, else the other name),
    and the names that are no topic of these streams nor in `also`."""
    out: set[int] = set()
    unknown = []
    for name in given:
        exact = {i for i, n in enumerate(names) if n.stream.topic == name}
        hits = exact or {i for i, n in enumerate(names) if name in n.all}
        if not hits and name not in also:
            unknown.append(name)
        out |= hits
    return out, unknown


def _filtered(streams: Sequence[Stream], wanted: TopicFilter, images: str | None,
              no_such: Callable[[str], Exception], also: Sequence[str] = ()) -> list[Stream]:
    names = [_Names(s, images) for s in streams]
    listed, unknown_listed = _chosen(names, wanted.topics or (), also)
    excluded, unknown_excluded = _chosen(names, wanted.exclude_topics, also)
    if unknown_listed or unknown_excluded:
        flags = [f for f, u in (('--topics', unknown_listed),
                                ('--exclude-topics', unknown_excluded)) if u]
        known = sorted({n.published for n in names} | set(also))
        raise no_such(f'{"/".join(flags)}: no such topic in the episode: '
                      f'{", ".join(unknown_listed + unknown_excluded)} '
                      f'(it has {", ".join(known)})')

    def matches(pattern: str, n: _Names) -> bool:
        return any(re.fullmatch(pattern, name) for name in n.all)
    include = wanted.topics is not None or bool(wanted.regex)
    out = []
    for i, n in enumerate(names):
        if i in excluded or (wanted.exclude_regex and matches(wanted.exclude_regex, n)):
            continue
        if include and i not in listed and not (wanted.regex and matches(wanted.regex, n)):
            continue
        out.append(n.stream)
    return out


def select_streams(streams: Sequence[Stream], wanted: TopicFilter,
                   images: str = 'raw') -> list[Stream]:
    """What `convert` writes, robot state included: `streams` are the source ones, named
    as well by what `images` will publish them as; unknown names fail (SinkError naming
    the flag). Relative names are resolved from the root namespace; `~` is refused."""
    return _filtered(streams, wanted.resolved(None), images, SinkError)


def select_for_play(episode_path: Path, streams: Sequence[Stream], wanted: TopicFilter, *,
                    robot_state: bool, node: str = PLAYER_NODE) -> list[Stream]:
    """What a player plays of `streams` (as published): `wanted`, names resolved as the
    node `node` (in the root namespace) resolves them, and the Role.ROBOT_STATE streams
    only with `robot_state`; an unknown name, or a filter that leaves nothing, fail."""
    def no_such(text: str) -> Exception:
        return ReactRosError(f'{episode_path}: {text}')
    chosen = [s for s in _filtered(streams, wanted.resolved(node), None, no_such, [CLOCK])
              if robot_state or s.role is not Role.ROBOT_STATE]
    if streams and not chosen and wanted.narrows:
        raise ReactRosError(f'{episode_path}: --topics/--exclude-topics/--regex/'
                            '--exclude-regex leave no topic to play')
    return chosen


class BagSelection:
    """The streams a bag writes: selected, then with --images applied.

    Made before the output exists, so a refusal (an unknown topic, a mode, a video that
    --no-reencode will not re-encode) comes first; use as a context manager around the
    write: inside it the streams are valid to open (the image encoder's pool lives there).
    """

    def __init__(self, streams: Sequence[Stream], wanted: TopicFilter, images: str = 'raw', *,
                 jpeg_quality: int = 95, reencode: bool = True) -> None:
        chosen = select_streams(streams, wanted, images)
        if images == VIDEO_MODE:  # planned, and refused, here
            chosen = compressed_video_streams(chosen, reencode=reencode)
        self._chosen = chosen
        self._encoder = ImageEncoder('raw' if images == VIDEO_MODE else images, jpeg_quality)

    def __enter__(self) -> list[Stream]:
        return self._encoder.__enter__().streams(self._chosen)

    def __exit__(self, *exc: object) -> None:
        self._encoder.__exit__(*exc)


@dataclass
class Topic:
    """One topic as the sink carries it, whichever streams feed it."""

    name: str
    msg_type: str
    latched: bool  # any stream of it latched
    heavy: bool  # any stream of it heavy
    approx_bytes: int  # the largest of its streams' messages


def fold_topics(streams: Sequence[Stream],
                conflict: Callable[[str, str, str], Exception]) -> dict[str, Topic]:
    """One Topic per topic name, in order of first appearance.

    `conflict(topic, first type, other type)` is raised for two types on one topic.
    """
    out: dict[str, Topic] = {}
    for s in streams:
        t = out.get(s.topic)
        if t is None:
            out[s.topic] = Topic(s.topic, s.msg_type, s.latched, s.heavy, s.approx_bytes)
            continue
        if t.msg_type != s.msg_type:
            raise conflict(s.topic, t.msg_type, s.msg_type)
        t.latched = t.latched or s.latched
        t.heavy = t.heavy or s.heavy
        t.approx_bytes = max(t.approx_bytes, s.approx_bytes)
    return out


def published_names(topics: Mapping[str, Topic], remap: Mapping[str, str],
                    own: Mapping[str, str], refuse: Callable[[str], Exception]
                    ) -> dict[str, str]:
    """Each topic's published name under `remap` (FROM -> TO, names resolved).

    A ROS topic carries one type: rmw refuses a second publisher of another type on a
    name (an RCLError traceback once the player was under way). So a remap that puts two
    types on one name, the episode's own or one of the sink's `own` topics (name -> type,
    the player's /clock), is refused here, before anything is published, naming both
    topics and types. Two topics of one type may share a name, as ROS allows.
    """
    rules = {src: f'{src}:={dst}' for src, dst in remap.items()}
    # published name -> (topic, type, how the refusal names it)
    on = {name: (name, t, f"{name} ({t}, the player's own)") for name, t in own.items()}
    out = {}
    for name, t in topics.items():
        dst = out[name] = remap.get(name, name)
        first = on.setdefault(dst, (name, t.msg_type, f'{name} ({t.msg_type})'))
        if first[1] == t.msg_type:
            continue
        given = ' '.join(rules[n] for n in (first[0], name) if n in rules)
        raise refuse(f'--remap {given}: {first[2]} and {name} ({t.msg_type}) would both be '
                     f'published on {dst}; a ROS topic carries one type')
    return out


def player_conflict(episode_path: Path) -> Callable[[str, str, str], Exception]:
    """The players' refusal of a topic with two types."""
    def conflict(topic: str, first: str, other: str) -> Exception:
        return ReactRosError(f'{episode_path}: topic {topic} carries both {first} and {other}')
    return conflict


__all__ = ['CLOCK', 'BagSelection', 'Topic', 'TopicFilter', 'fold_topics',
           'player_conflict', 'published_names', 'select_for_play', 'select_streams']
