"""`ros2 run react_ros player --ros-args -p episode:=PATH ...`: the player as a ROS node.

Parameters (named like `react-ros play`'s options):
  episode (string, required), kind (string, '' = detect), rate (1.0), loop (false),
  start_offset (0.0 s), playback_duration (-1 = to the end), start_paused (false),
  clock (100.0 Hz, 0 = no /clock), topics / exclude (string arrays, or one
  comma-separated string), remap (strings 'FROM:=TO'), image_scale (1.0),
  delay (0.0 s), publish_robot_state (false), quiet (false);
  for releases holding many episodes (React): episode_id ('' = none, e.g.
  2026-05-10/episode_000), segment (-1 = all), skip_bad (false),
  tactile_latency (0), gel_axis ('local_y' or 'dual_ball').
The node is named react_ros_player; `-r __node:=NAME` renames it (and its services).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Sequence

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from react_ros.adapters import open_episode
from react_ros.adapters.base import EpisodeOptions
from react_ros.ros.dds import prefer_async_publishing
from react_ros.errors import ReactRosError
from react_ros.sinks.live import Player, PlayOptions

_DEFAULTS: dict[str, Any] = {
    'episode': '', 'kind': '', 'rate': 1.0, 'loop': False, 'start_offset': 0.0,
    'playback_duration': -1.0, 'start_paused': False, 'clock': 100.0, 'topics': '',
    'exclude': '', 'remap': '', 'image_scale': 1.0, 'delay': 0.0,
    'publish_robot_state': False, 'quiet': False,
    'episode_id': '', 'segment': -1, 'skip_bad': False, 'tactile_latency': 0,
    'gel_axis': 'local_y',
}


def _params(node: Node) -> dict[str, Any]:
    # Dynamic typing: `-p rate:=2` arrives as an integer and must still work.
    dyn = ParameterDescriptor(dynamic_typing=True)
    return {name: node.declare_parameter(name, default, dyn).value
            for name, default in _DEFAULTS.items()}


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
    topics = _strings(p['topics'])
    return PlayOptions(
        rate=_number(p, 'rate'), loop=_flag(p, 'loop'),
        start_offset_s=_number(p, 'start_offset'),
        playback_duration_s=duration if duration > 0 else None,
        start_paused=_flag(p, 'start_paused'), clock_hz=_number(p, 'clock'),
        topics=topics or None, exclude=tuple(_strings(p['exclude'])), remap=remap,
        quiet=_flag(p, 'quiet'), keyboard=False, delay_s=_number(p, 'delay'),
        publish_robot_state=_flag(p, 'publish_robot_state'))


def episode_options(p: dict[str, Any]) -> EpisodeOptions:
    segment = int(_number(p, 'segment'))
    return EpisodeOptions(image_scale=_number(p, 'image_scale'),
                          episode=str(p['episode_id']) or None,
                          segment=segment if segment >= 0 else None,
                          skip_bad=_flag(p, 'skip_bad'),
                          tactile_latency=int(_number(p, 'tactile_latency')),
                          gel_axis=str(p['gel_axis']))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    ros_args = args[args.index('--ros-args'):] if '--ros-args' in args else []
    # Our own arguments only (see notes: rclpy would apply sys.argv's remaps itself),
    # and no rclpy signal handlers: the Player turns Ctrl-C into a clean stop.
    prefer_async_publishing()
    rclpy.init(args=['player', *ros_args], signal_handler_options=SignalHandlerOptions.NO)
    node = None
    try:
        node = Node('react_ros_player')
        p = _params(node)
        if not p['episode']:
            raise ReactRosError("parameter 'episode' is required (--ros-args -p episode:=PATH)")
        episode = open_episode(Path(p['episode']), p['kind'] or None, episode_options(p))
        return Player(episode, play_options(p), node=node).run()
    except ReactRosError as err:
        print(f'player: {err}', file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    sys.exit(main())
