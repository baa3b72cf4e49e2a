"""`ros2 run react_ros player --ros-args -p episode:=PATH ...`: the player as a ROS node.

Parameters:
  episode (string, required), kind (string, '' = detect), episode_id ('' = the only
  one; for releases of many, e.g. 2026-05-10/episode_000);
  expect_state_publisher (bool, default false; play.launch.py sets it when it starts
  robot_state_publisher beside the player): before the first message, wait until a
  node named robot_state_publisher subscribes /joint_states, so that the robot's
  /tf starts with the episode (up to 120 s, saying so after a few);
  every player option, named as the fields of react_ros/play_options.py (rate,
  loop, start_offset, playback_duration (-1, or any negative = to the end),
  playback_until_sec / playback_until_nsec (-1 = none), clock, topics /
  exclude_topics / remap (string arrays, or one comma-separated string; remap rules
  'FROM:=TO'; relative names resolved against this node), regex / exclude_regex,
  images, log_level (also this node's logger level), ...: `react-ros play --help`
  explains each, under the flag `--name-with-dashes`);
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

from react_ros.registry import kind_options, open_episode, resolve_kind
from react_ros.adapters.base import DatasetKind, EpisodeOptions
from react_ros.errors import ReactRosError
from react_ros.registry import own_values
from react_ros.play_options import PLAY_OPTIONS, PlayOptions
from react_ros.ros.stop_signals import StopSignals
from react_ros.sinks.compressed_video import episode_with_images
from react_ros.sinks.live import Player, PlayerRuntime
from react_ros.sinks.report import Report
from react_ros.sinks.tuning import freeze_heap, tune_for_playback
from react_ros.ros.dds import clear_dead_ports

# Which episode; how to play it is PlayOptions', and each kind's own options the registry's.
EPISODE_PARAMETERS: dict[str, str] = {'episode': '', 'kind': '', 'episode_id': ''}
# The node's own: play.launch.py sets expect_state_publisher when it starts one beside it.
NODE_PARAMETERS: dict[str, Any] = {'expect_state_publisher': False}


def parameter_defaults() -> dict[str, Any]:
    """Every parameter the node declares, with its default (None: declared unset)."""
    return {**EPISODE_PARAMETERS, **NODE_PARAMETERS,
            **{opt.name: opt.parameter(opt.default) for opt in PLAY_OPTIONS},
            **{opt.name: opt.default for _, opt in kind_options()}}


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


def play_options(p: dict[str, Any]) -> PlayOptions:
    return PlayOptions.read(
        p, lambda opt, value: f'parameter {opt.name!r} must be {opt.expected}, not {value!r}')


def episode_options(p: dict[str, Any], kind: DatasetKind,
                    play: PlayOptions | None = None) -> EpisodeOptions:
    """Parameters -> options of a `kind` episode; another kind's option set is refused."""
    own = own_values(kind, lambda opt: p.get(opt.name, opt.default),
                     lambda opt: f'parameter {opt.name!r}',
                     f'{p.get("episode") or "the episode"} is a {kind.name} episode')
    return EpisodeOptions(image_scale=(play or play_options(p)).image_scale,
                          episode=str(p['episode_id']) or None,
                          own=kind.options.from_values(own))


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
    clear_dead_ports()  # a port a killed process left half-made would hang Node()
    rclpy.init(args=['player', *ros_args], signal_handler_options=SignalHandlerOptions.NO)
    node = None
    try:
        since = time.monotonic()  # the DDS participant comes up with the first node
        node = Node('react_ros_player')
        p = declare_parameters(node)
        if not p['episode']:
            raise ReactRosError("parameter 'episode' is required (--ros-args -p episode:=PATH)")
        kind = resolve_kind(Path(p['episode']), p['kind'] or None)
        play = play_options(p)
        episode = open_episode(Path(p['episode']), kind.name, episode_options(p, kind, play))
        for warning in episode.warnings:  # odd but usable: said, as `react-ros play` says it
            node.get_logger().warning(warning)
        episode = episode_with_images(episode, play.images, reencode=not play.no_reencode,
                                      notes=Report(play.log_level).info)
        runtime = PlayerRuntime(keyboard=False,
                                expect_state_publisher=bool(p['expect_state_publisher']))
        player = Player(episode, play, runtime, node=node, since=since)
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
