"""Which streams a sink takes, under which topic names, and each topic folded from its streams.

Every sink (the bag writer, the DDS player, the Foxglove server) takes the same steps:
1. --topics / --exclude name the episode's own topics; a name it lacks is a typo, never
   a wish for nothing, and is refused.
2. --images turns Image streams into what image_transport or Foxglove carries, under
   their names (`.../image_raw/compressed`, `.../compressedDepth`, `.../compressed_video`).
3. Streams that share a topic (/tf from the data and from the robot state) become one
   topic: one bag channel, one publisher. Two message types on one topic are refused.
What differs between the sinks (a bag keeps robot state, the DDS player leaves it to
robot_state_publisher; how a refusal reads) is said by the caller's arguments.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from react_ros.errors import ReactRosError, SinkError
from react_ros.sinks.compressed_video import MODE as VIDEO_MODE
from react_ros.sinks.compressed_video import compressed_video_streams
from react_ros.sinks.image_encoding import ImageEncoder
from react_ros.streams import Role, Stream

# A player's own topic: naming it in --topics/--exclude is no mistake.
CLOCK = '/clock'


def _unknown(streams: Sequence[Stream], names: Sequence[str], also: Sequence[str] = ()
             ) -> tuple[list[str], set[str]]:
    known = {s.topic for s in streams} | set(also)
    return [t for t in names if t not in known], known


def select_streams(streams: Sequence[Stream], topics: Sequence[str] | None,
                   exclude: Sequence[str] | None) -> list[Stream]:
    """The streams on `topics` (all when None) minus those on `exclude`; unknown names fail
    (SinkError naming the flag): what `convert` writes, robot state included."""
    exclude = exclude or ()
    for flag, named in (('--topics', topics or ()), ('--exclude', exclude)):
        unknown, known = _unknown(streams, named)
        if unknown:
            raise SinkError(f'{flag}: no such topic in the episode: {", ".join(unknown)} '
                            f'(it has {", ".join(sorted(known))})')
    return [s for s in streams
            if (topics is None or s.topic in topics) and s.topic not in exclude]


def select_for_play(episode_path: Path, streams: Sequence[Stream],
                    topics: Sequence[str] | None, exclude: Sequence[str], *,
                    robot_state: bool) -> list[Stream]:
    """What a player plays: `topics` (all when None) less `exclude`, and the Role.ROBOT_STATE
    streams only with `robot_state`; an unknown name, or flags that leave nothing, fail."""
    unknown, known = _unknown(streams, [*(topics or ()), *exclude], also=[CLOCK])
    if unknown:
        raise ReactRosError(f'{episode_path}: no such topic in the episode: '
                            f'{", ".join(unknown)} (it has {", ".join(sorted(known))})')
    chosen = [s for s in streams
              if (robot_state or s.role is not Role.ROBOT_STATE)
              and (topics is None or s.topic in topics) and s.topic not in exclude]
    if streams and not chosen and (topics is not None or exclude):
        raise ReactRosError(f'{episode_path}: --topics/--exclude leave no topic to play')
    return chosen


class BagSelection:
    """The streams a bag writes: selected, then with --images applied.

    Made before the output exists, so a refusal (an unknown topic, a mode, a video that
    --no-reencode will not re-encode) comes first; use as a context manager around the
    write: inside it the streams are valid to open (the image encoder's pool lives there).
    """

    def __init__(self, streams: Sequence[Stream], topics: Sequence[str] | None,
                 exclude: Sequence[str] | None, images: str = 'raw', *,
                 jpeg_quality: int = 95, reencode: bool = True) -> None:
        # --topics/--exclude name the episode's own topics, the Image topics included.
        chosen = select_streams(streams, topics, exclude)
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


def player_conflict(episode_path: Path) -> Callable[[str, str, str], Exception]:
    """The players' refusal of a topic with two types."""
    def conflict(topic: str, first: str, other: str) -> Exception:
        return ReactRosError(f'{episode_path}: topic {topic} carries both {first} and {other}')
    return conflict


__all__ = ['CLOCK', 'BagSelection', 'Topic', 'fold_topics', 'player_conflict',
           'select_for_play', 'select_streams']
