"""react-ros: dataset episodes as ROS 2 topics on one /clock, or as rosbag2 MCAP bags.

Thin on purpose: parse options, open the episode, hand it to a sink. Anything
the user can fix arrives as a ReactRosError and is printed as one line with
exit status 2; anything else is a bug and keeps its traceback. One module per
command: its parser and what it runs.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import NoReturn, Sequence

from react_ros import __version__
from react_ros.cli import (arguments, control, convert, episode, examples, info, list_episodes,
                           play, preview, sample, topic)
from react_ros.cli.play import demo_episode_dir
from react_ros.cli.sample import write_sample
from react_ros.errors import ReactRosError, interrupt_behind

EXIT_BAD_INPUT = 2


# `ros2 bag play` flags that react-ros does not take, and why: a user who reaches for one
# learns what happens instead, not only that it is unknown.
NOT_TAKEN = {
    '--storage': 'the storage is read from the bag itself (MCAP)',
    '-s': 'the storage is read from the bag itself (MCAP)',
    '--read-ahead-queue-size': 'reading ahead is bounded in bytes (256 MiB across the image '
                               'topics), not in messages',
    '--qos-profile-overrides-path': "each topic's QoS is the kind's (its page in docs/) or the "
                                    "bag's recorded one",
    '--storage-preset-profile': 'that is a recording option; a bag of any preset plays',
    '--storage-config-file': 'the MCAP reader needs no storage configuration',
    '--disable-loan-messages': 'messages are never loaned',
}


def _not_taken(message: str) -> str | None:
    """One line for an unrecognized `ros2 bag play` flag that react-ros leaves out on purpose."""
    if not message.startswith('unrecognized arguments:'):
        return None
    for word in message.split(':', 1)[1].split():
        flag = word.split('=', 1)[0]
        if flag in NOT_TAKEN:
            return (f'error: react-ros does not take {flag} (ros2 bag play\'s): '
                    f'{NOT_TAKEN[flag]}; `react-ros play --help` lists what it takes')
    return None


class _Parser(argparse.ArgumentParser):
    """argparse with a usage error as one line, like every other refusal (exit 2)."""

    def error(self, message: str) -> NoReturn:
        line = _not_taken(message)
        self.exit(EXIT_BAD_INPUT, (line or f'error: {message} (see {self.prog} --help)') + '\n')


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole CLI. With `argv` asking for help about an episode (or naming --kind),
    the help lists only that kind's options."""
    arguments.help_kinds = _kinds_for_help(argv)
    parser = _Parser(prog='react-ros', description=__doc__.splitlines()[0],
                     epilog='`react-ros COMMAND --help` says more, with examples; the manual '
                            'is docs/ in the repository')
    parser.add_argument('--version', action='version',
                        version=f'react-ros {__version__} (Python {sys.version.split()[0]})')
    sub = parser.add_subparsers(dest='command', required=True, parser_class=_Parser,
                                metavar='COMMAND')

    info.add_parser(sub)
    list_episodes.add_parser(sub)
    play.add_parsers(sub)
    convert.add_parsers(sub)
    sample.add_parser(sub)
    preview.add_parser(sub)
    topic.add_parser(sub)
    control.add_parser(sub)
    for command, p in sub.choices.items():
        p.formatter_class = argparse.RawDescriptionHelpFormatter  # keeps the epilog's lines
        p.epilog = examples.epilog(command)
        if arguments.help_kinds is not None and any(
                isinstance(a.help, str) and a.dest == 'kind' for a in p._actions):
            p.description = _help_scope(arguments.help_kinds)
    return parser


def _kinds_for_help(argv: Sequence[str] | None) -> frozenset[str] | None:
    """The kinds whose options `--help` should list: the one of `--kind K`, or of the
    episode named on the command line (a bag has none); None (all) when unknown."""
    from react_ros.registry import KINDS, resolve_kind
    words = list(sys.argv[1:] if argv is None else argv)
    if '-h' not in words and '--help' not in words:
        return None
    for i, word in enumerate(words):
        name = word.partition('=')[2] if word.startswith('--kind=') else \
            words[i + 1] if word == '--kind' and i + 1 < len(words) else None
        if name is not None and name in KINDS:
            return frozenset({name})
    for word in words[1:]:  # the first is the command
        if word.startswith('-') or not Path(word).exists():
            continue
        if episode.is_bag(Path(word)):
            return frozenset()
        try:
            return frozenset({resolve_kind(Path(word), None).name})
        except ReactRosError:
            continue
    return None


def _help_scope(kinds: frozenset[str]) -> str:
    shown = f'the options of {", ".join(sorted(kinds))} episodes' if kinds else \
        'no dataset options (a bag plays as recorded)'
    return f'This help lists {shown};\n`--help` without an episode lists every kind\'s.'


COMMANDS = {'info': info.run, 'list': list_episodes.run, 'play': play.run_play,
            'convert': convert.run_convert,
            'convert-all': convert.run_convert_all, 'sample': sample.run, 'demo': play.run_demo,
            'preview': preview.run, 'topic': topic.run, 'control': control.run}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit status (128 + the signal's number after a stop signal)."""
    from react_ros.registry import BROKEN
    from react_ros.output import stop_requested
    if BROKEN:  # a kind folder of REACT_ROS_KINDS_PATH that does not load
        print(f'error: {BROKEN[0]}', file=sys.stderr)
        return EXIT_BAD_INPUT
    args = build_parser(argv).parse_args(argv)
    try:
        status = COMMANDS[args.command](args)
        sys.stdout.flush()  # here, where a reader that went away is ours to handle
    except BrokenPipeError:
        return _reader_gone()
    except ReactRosError as err:
        if stop_requested():  # a stop that came first, and a refusal it caused: the stop
            return _stopped(signal.SIGINT)
        print(f'error: {err}', file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as stop:  # Ctrl-C, or a stop signal while writing (Interrupted)
        return _stopped(getattr(stop, 'signum', signal.SIGINT))
    except Exception as err:
        behind = _interrupt_behind(err)
        if behind is None:
            raise
        return _stopped(getattr(behind, 'signum', signal.SIGINT))
    # A stop signal during the last rename: the output is whole, but the user asked to stop.
    return _stopped(signal.SIGINT) if stop_requested() else status


def _reader_gone() -> int:
    """stdout's reader went away (`react-ros info EP | head`): stop quietly, as a command
    killed by SIGPIPE does, with its status (128 + SIGPIPE). Python ignores SIGPIPE (a
    Foxglove client hanging up must not kill the server), so the write raised instead.
    stdout now points at /dev/null: the interpreter's last flush has nowhere to fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + signal.SIGPIPE


def _stopped(signum: int) -> int:
    """128 + the first stop signal's number; later ones are ignored while the process exits."""
    from react_ros.output import ignore_stop_signals, stop_requested
    ignore_stop_signals()
    return 128 + (stop_requested() or signum)


def _interrupt_behind(err: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt that `err` was raised from, if any.

    While writing, a stop signal only sets a flag (react_ros/output.py), so nothing
    raises from inside a C extension's callback. Before the writer starts (opening
    the episode, `info`, `play`'s own set-up) Ctrl-C is still Python's default
    KeyboardInterrupt, raised wherever it lands: inside rclpy's deserialisation,
    which builds messages in Python, it comes back as a TypeError caused by the
    interrupt. Still a stop, not a bug.
    """
    return interrupt_behind(err)


__all__ = ['EXIT_BAD_INPUT', 'build_parser', 'demo_episode_dir', 'main', 'write_sample']
