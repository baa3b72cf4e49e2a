"""The player's options are declared once (react_ros/play_options.py): every field of
PlayOptions is a `react-ros play`/`demo` flag with its help, a node parameter and a
launch argument with its default, and carries the same value through each; no
surface has a player option of its own beyond the few named here."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Iterator

import pytest

from react_ros import cli
from react_ros.registry import kind_options
from react_ros.errors import ReactRosError
from react_ros.launch_args import LAUNCH_DEFAULTS, episode_and_parameters, launch_arguments
from react_ros.options import Option
from react_ros.play_options import PLAY_OPTIONS, PlayOptions

# What one entry point has and the others do not: which episode, and its own extras.
# (--disable-keyboard-controls: the node never reads a keyboard)
CLI_ONLY = {'help', 'episode', 'kind', 'episode_id', 'node_name', 'no_state_publisher',
            'foxglove', 'foxglove_host', 'foxglove_no_wait', 'disable_keyboard_controls'}
DEMO_ONLY = {'help', 'kind', 'dir', 'node_name', 'no_state_publisher', 'foxglove',
             'foxglove_host', 'foxglove_no_wait', 'disable_keyboard_controls'}
# ros2 bag refuses these together (one stamp to stop at): a value for the first only
EXCLUSIVE = {'playback_until_nsec': 'playback_until_sec'}
NODE_ONLY = {'episode', 'kind', 'episode_id', 'expect_state_publisher'}
RCLPY_OWN = {'use_sim_time', 'start_type_description_service'}
LAUNCH_ONLY = {'episode', 'kind', 'episode_id', 'rviz'}

KIND_OPTIONS = {opt.name for _, opt in kind_options()}
NAMES = [opt.name for opt in PLAY_OPTIONS]


def _subparser(command: str) -> argparse.ArgumentParser:
    sub = next(a for a in cli.build_parser()._actions
               if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def _other(opt: Option) -> Any:
    """A valid value that is not the default."""
    if opt.type is bool:
        return not opt.default
    if opt.choices is not None:
        return next(c for c in opt.choices if c != opt.default)
    if opt.name in EXCLUSIVE:
        return opt.default
    if opt.type is tuple:
        return ('/a:=/b', '/c:=/d')  # words that are remap rules, too
    if opt.type is str:
        return 'x'  # a plain word: a topic regex, too
    if opt.type is float:
        return 0.5 if opt.default != 0.5 else 0.25
    if opt.type is int:
        return (opt.default or 0) + 1
    return 'x'


@pytest.fixture(scope='module')
def node_parameters() -> Iterator[dict[str, Any]]:
    """What a real player node declares: name -> value, with every option set by -p."""
    import rclpy
    from rclpy.context import Context
    from rclpy.node import Node

    from react_ros.node import declare_parameters
    ros = []
    for opt in PLAY_OPTIONS:
        value = _other(opt)
        ros += ['-p', f'{opt.name}:=' + (f"[{', '.join(repr(v) for v in value)}]"
                                          if opt.type is tuple else opt.text(value))]
    context = Context()
    rclpy.init(args=['test', '--ros-args', *ros], context=context)
    try:
        node = Node('play_options_params', context=context)
        values = declare_parameters(node)
        declared = {name: node.get_parameter(name).value
                    for name in node.list_parameters([], 0).names}
        node.destroy_node()
        yield {'read': values, 'declared': declared}
    finally:
        rclpy.try_shutdown(context=context)


@pytest.mark.parametrize('command', ['play', 'demo'])
@pytest.mark.parametrize('name', NAMES)
def test_every_option_is_a_flag_with_help(command: str, name: str) -> None:
    opt = next(o for o in PLAY_OPTIONS if o.name == name)
    action = next(a for a in _subparser(command)._actions if a.dest == name)
    assert action.option_strings == list(opt.flags)  # ros2 bag's spellings, then aliases
    assert action.help == opt.help and action.help
    assert action.default == opt.default


@pytest.mark.parametrize('command, only', [('play', CLI_ONLY), ('demo', DEMO_ONLY)])
def test_no_flag_is_a_player_option_play_options_lacks(command: str, only: set[str]) -> None:
    dests = {a.dest for a in _subparser(command)._actions}
    assert dests - set(NAMES) - KIND_OPTIONS == only


def test_every_option_is_a_node_parameter_with_its_default() -> None:
    from react_ros.node import parameter_defaults
    defaults = parameter_defaults()
    for opt in PLAY_OPTIONS:
        assert defaults[opt.name] == opt.parameter(opt.default), opt.name
    assert set(defaults) - set(NAMES) - KIND_OPTIONS == NODE_ONLY


def test_a_real_node_declares_and_reads_every_option(node_parameters: dict) -> None:
    declared = node_parameters['declared']
    assert set(declared) - set(NAMES) - KIND_OPTIONS - RCLPY_OWN == NODE_ONLY
    from react_ros.node import play_options
    read = play_options(node_parameters['read'])
    for opt in PLAY_OPTIONS:
        assert getattr(read, opt.name) == _other(opt), opt.name


def test_every_option_is_a_launch_argument_with_its_default() -> None:
    args = launch_arguments()
    for opt in PLAY_OPTIONS:
        default = LAUNCH_DEFAULTS.get(opt.name, opt.default)
        assert args[opt.name] == (opt.text(default), opt.help), opt.name
    assert set(args) - set(NAMES) - KIND_OPTIONS == LAUNCH_ONLY


def test_a_value_set_anywhere_arrives_the_same(umi_episode: Path) -> None:
    given = {opt.name: _other(opt) for opt in PLAY_OPTIONS}
    argv = ['play', str(umi_episode)]
    for opt in PLAY_OPTIONS:
        value = given[opt.name]
        if value is None:  # unset (the exclusive pair's second): no flag
            continue
        if opt.type is bool:
            argv += [opt.flag] if value else []
        else:
            argv += [opt.flag, *(value if opt.type is tuple else [opt.text(value)])]
    assert PlayOptions.from_args(cli.build_parser().parse_args(argv)) == PlayOptions(**given)

    values = {name: text for name, (text, _) in launch_arguments().items()}
    values.update({opt.name: opt.text(given[opt.name]) for opt in PLAY_OPTIONS},
                  episode=str(umi_episode))
    _, _, params = episode_and_parameters(values)
    assert PlayOptions.read(params, lambda opt, v: f'{opt.name}: {v!r}') == PlayOptions(**given)


def test_parameters_spell_unset_as_launch_and_node_did() -> None:
    # -1 (or any negative) = to the end / nothing dropped; '' = every topic
    read = PlayOptions.read({'playback_duration': -2.5, 'drop_late': '-1.0', 'topics': ''},
                            lambda opt, v: opt.name)
    assert (read.playback_duration, read.drop_late, read.topics) == (None, None, None)


def test_parameters_take_what_ros_makes_of_them() -> None:
    # `-p loop:=1` and `-p rate:=2` arrive as integers; one string lists topics
    read = PlayOptions.read({'loop': 1, 'rate': 2, 'exclude_topics': '/a, /b',
                             'playback_until_nsec': 7}, lambda opt, v: opt.name)
    assert (read.loop, read.rate, read.exclude_topics, read.playback_until_ns) == \
        (True, 2.0, ('/a', '/b'), 7)
    from react_ros.node import play_options
    with pytest.raises(ReactRosError, match="parameter 'loop' must be true or false, not 2"):
        play_options({'loop': 2})
