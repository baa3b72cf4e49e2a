"""`ros2 run react_ros player --ros-args -p episode:=PATH ...`: the player as a ROS node.

Parameters (named like `react-ros play`'s options):
  episode (string, required), kind (string, '' = detect), rate (1.0), loop (false),
  start_offset (0.0 s; at or past the episode's end is refused), playback_duration
  (-1, or any negative = to the end; 0 is refused), start_paused (false),
  clock (100.0 Hz, 0 = no /clock), topics / exclude (string arrays, or one
  comma-separated string), remap (strings 'FROM:=TO'), image_scale (1.0),
  delay (0.0 s), publish_robot_state (false), quiet (false), episode_id ('' = the
  only one; for releases of many, e.g. 2026-05-10/episode_000), wait_for_subscribers
  (2.0 s at most for DDS discovery before playing, 0 = off), images ('raw', or 'h264':
  camera videos as foxglove_msgs/CompressedVideo), no_reencode (false; with h264, refuse
  a video that would need re-encoding);
  and every dataset kind's own options, named as their fields
  (`react-ros play --help` lists them; e.g. segment, skip_bad, tactile_latency,
  gel_axis for React). An option that is unset by default is declared without a
  value: set it with `-p NAME:=VALUE`.
A parameter the node does not have (`-p ratee:=2.0`, or one in a params file under
the node's name or `/**`) is refused (exit 2), naming the closest it has; those
every rclpy node declares (use_sim_time, start_type_description_service) are taken.
The node is named react_ros_player; `-r __node:=NAME` renames it (and its services).
"""
from __future__ import annotations

import difflib
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from react_ros.adapters import kind_options, open_episode, resolve_kind
from react_ros.adapters.base import DatasetKind, EpisodeOptions
from react_ros.errors import ReactRosError
from react_ros.ros.stop_signals import StopSignals
from react_ros.sinks.compressed_video import episode_with_images
from react_ros.sinks.live import Player, PlayOptions
from react_ros.sinks.tuning import freeze_heap, tune_for_playback

# What every kind shares; each kind's own options are added from the registry.
SHARED: dict[str, Any] = {
    'episode': '', 'kind': '', 'rate': 1.0, 'loop': False, 'start_offset': 0.0,
    'playback_duration': -1.0, 'start_paused': False, 'clock': 100.0, 'topics': '',
    'exclude': '', 'remap': '', 'image_scale': 1.0, 'delay': 0.0,
    'publish_robot_state': False, 'quiet': False, 'episode_id': '',
    'wait_for_subscribers': 2.0, 'images': 'raw', 'no_reencode': False,
    'drop_late': -1.0,
}


def parameter_defaults() -> dict[str, Any]:
    """Every parameter the node declares, with its default (None: declared unset)."""
    return {**SHARED, **{opt.name: opt.default for _, opt in kind_options()}}


def declare_parameters(node: Node) -> dict[str, Any]:
    # Dynamic typing: `-p rate:=2` arrives as an integer and must still work.
    dyn = ParameterDescriptor(dynamic_typing=True)
    values = {name: node.declare_parameter(name, default, dyn).value
              for name, default in parameter_defaults().items()}
    refuse_unknown_parameters(node)
    return values


def refuse_unknown_parameters(node: Node) -> None:
    """Refuse an override (-p, a params file) of a parameter `node` never declared.

    rclpy drops those without a word (allow_undeclared_parameters is False), so
    `-p ratee:=2.0` played at rate 1. The overrides are what rcl resolved for
    this node from its --ros-args: `-p`, and params files' entries under its
    name or a wildcard. rclpy keeps them in Node._parameter_overrides (every
    release from Foxy to Kilted), and no public call lists them.
    """
    known = sorted(node.list_parameters([], 0).names)  # ours, and rclpy's own (use_sim_time)
    unknown = [name for name in sorted(getattr(node, '_parameter_overrides', {}))
               if name not in known]
    if not unknown:
        return
    problems = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        problems.append(f'parameter {name!r} is not a parameter of the player; '
                        + (f'did you mean {close[0]!r}?' if close
                           else f'it has {", ".join(known)}'))
    raise ReactRosError('; '.join(problems))


def _strings(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v for v in value.replace(',', ' ').split() if v]
    return [str(v) for v in value if str(v)]


def _number(p: dict[str, Any], name: str) -> float:
    try:
        return float(p[name])
    except (TypeError, ValueError):
        raise ReactRosError(f'parameter {name!r} must be a number, not {p[name]!r}') from None


def _flag(p: dict[str, Any], name: str) -> bool:
    v = p[name]
    if isinstance(v, str):
        if v.lower() not in ('true', 'false'):
            raise ReactRosError(f'parameter {name!r} must be true or false, not {v!r}')
        return v.lower() == 'true'
    return bool(v)


def play_options(p: dict[str, Any]) -> PlayOptions:
    remap = {}
    for rule in _strings(p['remap']):
        src, sep, dst = rule.partition(':=')
        if not sep:
            raise ReactRosError(f'remap rule {rule!r} is not FROM:=TO')
        remap[src] = dst
    duration = _number(p, 'playback_duration')
    drop_late = _number(p, 'drop_late')
    topics = _strings(p['topics'])
    return PlayOptions(
        rate=_number(p, 'rate'), loop=_flag(p, 'loop'),
        start_offset_s=_number(p, 'start_offset'),
        # negative: to the end (the default -1); 0 plays nothing and is refused
        playback_duration_s=duration if duration >= 0 else None,
        start_paused=_flag(p, 'start_paused'), clock_hz=_number(p, 'clock'),
        topics=topics or None, exclude=tuple(_strings(p['exclude'])), remap=remap,
        quiet=_flag(p, 'quiet'), keyboard=False, delay_s=_number(p, 'delay'),
        publish_robot_state=_flag(p, 'publish_robot_state'),
        wait_for_subscribers_s=_number(p, 'wait_for_subscribers'),
        drop_late_s=drop_late if drop_late >= 0 else None)


def episode_options(p: dict[str, Any], kind: DatasetKind) -> EpisodeOptions:
    """Parameters -> options of a `kind` episode; another kind's option set is refused."""
    own = {}
    for other, opt in kind_options():
        value = p.get(opt.name, opt.default)
        if other is kind:
            own[opt.name] = value
        elif value is not None and opt.coerce(value, f'parameter {opt.name!r}') != opt.default:
            raise ReactRosError(f'parameter {opt.name!r} is an option of {other.name} '
                                f'episodes, not of {kind.name}')
    return EpisodeOptions(image_scale=_number(p, 'image_scale'),
                          episode=str(p['episode_id']) or None,
                          own=kind.options.from_values(
                              own, lambda opt: f'parameter {opt.name!r}'))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    ros_args = args[args.index('--ros-args'):] if '--ros-args' in args else []
    # Our own arguments only (see notes: rclpy would apply sys.argv's remaps itself),
    # and no rclpy signal handlers: the Player turns Ctrl-C into a clean stop.
    tune_for_playback()
    # A stop signal abandons the set-up (KeyboardInterrupt, caught below), then stops
    # the player; a repeat (ros2 launch's copy of a terminal's Ctrl-C) is ignored, in
    # the shutdown too, never a traceback (ros/stop_signals.py).
    signals = StopSignals('player', _abandon)
    rclpy.init(args=['player', *ros_args], signal_handler_options=SignalHandlerOptions.NO)
    node = None
    try:
        since = time.monotonic()  # the DDS participant comes up with the first node
        node = Node('react_ros_player')
        p = declare_parameters(node)
        if not p['episode']:
            raise ReactRosError("parameter 'episode' is required (--ros-args -p episode:=PATH)")
        kind = resolve_kind(Path(p['episode']), p['kind'] or None)
        episode = open_episode(Path(p['episode']), kind.name, episode_options(p, kind))
        episode = episode_with_images(episode, str(p['images']),
                                      reencode=not _flag(p, 'no_reencode'))
        player = Player(episode, play_options(p), node=node, since=since)
        signals.on_stop = player.stop
        freeze_heap()
        return player.run()
    except ReactRosError as err:
        print(f'player: {err}', file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # a stop asked for: as ROS nodes do, a clean exit (0)
        return 0
    finally:
        signals.on_stop = None
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        signals.finish()  # a repeat may still be on its way: ignored


def _abandon() -> None:
    raise KeyboardInterrupt


if __name__ == '__main__':
    sys.exit(main())
