"""Flags shared by several commands, and the declared options (a kind's, the
player's) as flags."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from react_ros.registry import KINDS, kind_options
from react_ros.errors import ReactRosError
from react_ros.options import Option
from react_ros.convert_options import BAG_OPTIONS
from react_ros.play_options import BY_NAME, FOXGLOVE_HOST, FOXGLOVE_PORT, PLAY_OPTIONS


def positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f'must be > 0, got {text}')
    return value


def non_negative(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f'must be >= 0, got {text}')
    return value


def count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f'must be >= 1, got {text}')
    return value


def bag_args(p: argparse.ArgumentParser) -> None:
    """What goes into a bag (convert_options.BagOptions): shared by convert and convert-all."""
    for opt in BAG_OPTIONS:
        add_option(p, opt)


def _option_type(opt: Option):
    def parse(text: str) -> object:
        try:  # a list option's words arrive one by one
            return opt.coerce((text,))[0] if opt.type is tuple else opt.coerce(text)
        except ReactRosError as err:
            raise argparse.ArgumentTypeError(str(err).removeprefix(f'{opt.flag}: ')) from None
    parse.__name__ = 'str' if opt.type is tuple else opt.type.__name__  # named in messages
    return parse


class _Words(argparse.Action):
    """A list option's words, the flag repeated adding to them (argparse's `extend` would
    keep a list where the declared default is a tuple, and a value equal to the default
    must still compare equal to it: an option of another kind left alone is not "set")."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, tuple(getattr(namespace, self.dest) or ()) + tuple(values))


def add_option(p: argparse.ArgumentParser | argparse._ArgumentGroup, opt: Option,
               hidden: bool = False) -> None:
    """One declared option (a kind's or the player's) as a flag (`hidden`: parsed, not
    listed by --help)."""
    flags = opt.flags
    help_text = argparse.SUPPRESS if hidden else opt.help
    if opt.type is bool:
        action = argparse.BooleanOptionalAction if opt.default else 'store_true'
        p.add_argument(*flags, dest=opt.name, action=action, default=opt.default,
                      help=help_text)
        return
    shape: dict[str, Any] = {}  # add_argument's nargs and const
    if opt.type is tuple:  # words: `--flow-step 1 4`, `--flow-step 1 --flow-step 4` alike
        shape.update(nargs='+', action=_Words)
    elif opt.const is not None:  # the flag alone means `const`
        shape.update(nargs='?', const=opt.const)
    p.add_argument(*flags, dest=opt.name, type=_option_type(opt), default=opt.default,
                   choices=opt.choices, metavar=opt.metavar, help=help_text, **shape)


# The kinds whose options `--help` lists (None: every kind). build_parser narrows it when
# the command line names an episode or --kind, so that `play EPISODE --help` is one
# screen; the other kinds' flags are still parsed, to be refused by name.
help_kinds: frozenset[str] | None = None


def kind_option_args(p: argparse.ArgumentParser, skip: frozenset[str] = frozenset()) -> None:
    """Every kind's own options, one group per kind, from its options dataclass."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for kind, opt in kind_options():
        if opt.name in skip:
            continue
        if help_kinds is not None and kind.name not in help_kinds:
            add_option(p, opt, hidden=True)
            continue
        if kind.name not in groups:
            groups[kind.name] = p.add_argument_group(f'{kind.name} options ({kind.title})')
        add_option(groups[kind.name], opt)


def episode_args(p: argparse.ArgumentParser, image_scale: bool = True) -> None:
    """Which episode, and how it becomes messages (`play` adds --image-scale with the
    player's options)."""
    p.add_argument('episode', type=Path, help='episode folder or file')
    p.add_argument('--kind', choices=list(KINDS), help='dataset kind (detected from the layout)')
    p.add_argument('--episode', dest='episode_id', metavar='ID',
                   help='episode inside a release that holds many')
    if image_scale:
        add_option(p, BY_NAME['image_scale'])
    kind_option_args(p)


# Flags ros2 bag play refuses together: argparse refuses them as it does there.
EXCLUSIVE = ('playback_until_sec', 'playback_until_nsec')


def play_args(p: argparse.ArgumentParser) -> None:
    """The player's options (play_options.py), then what only the CLI has."""
    group = p.add_argument_group('playing')
    exclusive = group.add_mutually_exclusive_group()
    for opt in PLAY_OPTIONS:
        add_option(exclusive if opt.name in EXCLUSIVE else group, opt)
    # the CLI's only: the node never reads a keyboard
    group.add_argument('--disable-keyboard-controls', action='store_true',
                       help='do not read the keyboard (space pause/resume, right arrow play '
                            'the next message, up/down arrow rate +/-0.1); without it they '
                            'work when stdin is a terminal, and are printed at the start')
    p.add_argument('--node-name', default='react_ros_player', metavar='NAME',
                   help='the player node\'s name; its services are ~/pause, ~/resume, ... '
                        '(default react_ros_player)')
    p.add_argument('--no-state-publisher', action='store_true',
                   help='do not start react_ros\'s robot_state_publisher (one runs already)')
    foxglove_args(p)


def foxglove_args(p: argparse.ArgumentParser) -> None:
    """`--foxglove [PORT]`: serve over the Foxglove WebSocket protocol instead of DDS."""

    def port(text: str) -> int:
        if not text.isdigit() or int(text) > 65535:
            raise argparse.ArgumentTypeError(f'not a TCP port: {text!r}')
        return int(text)
    p.add_argument('--foxglove', type=port, nargs='?', const=FOXGLOVE_PORT, default=None,
                   metavar='PORT', help='serve the episode to Foxglove or Lichtblick (WebSocket, '
                   f'default port {FOXGLOVE_PORT}; 0: a free one) instead of on DDS, playing once '
                   'a viewer subscribes; needs the [foxglove] extra')
    p.add_argument('--foxglove-host', default=FOXGLOVE_HOST, metavar='HOST',
                   help=f'address the Foxglove server binds (default {FOXGLOVE_HOST}: this '
                   'machine only)')
    p.add_argument('--foxglove-no-wait', action='store_true',
                   help='with --foxglove, do not hold the start until a viewer subscribes; '
                   'wait at most --wait-for-subscribers S instead, as on DDS')
