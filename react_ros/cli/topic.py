"""`react-ros topic list|echo|hz`: the running player's topics from a second terminal,
as `ros2 topic` shows them, for whoever has no ros2cli (it is not on PyPI)."""
from __future__ import annotations

import argparse
import textwrap
import sys
import time

from react_ros.errors import ReactRosError

ACTIONS = ('list', 'echo', 'hz')
# Options of one action only: refused with another, so that a typo does not pass silently.
ONLY = {'once': 'echo', 'count': 'echo', 'truncate_length': 'echo', 'full_length': 'echo',
        'window': 'hz', 'duration': 'hz'}
DEFAULTS = {'once': False, 'count': None, 'truncate_length': 128, 'full_length': False,
            'window': 10000, 'duration': None}


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f'not a positive whole number: {text!r}')
    return value


def positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float('inf'):
        raise argparse.ArgumentTypeError(f'not a positive number of seconds: {text!r}')
    return value


def player_args(p: argparse.ArgumentParser) -> None:
    """Where the player is, and how long to look for it: `topic` and `control`."""
    p.add_argument('--node-name', default='react_ros_player', metavar='NAME',
                   help="the player's node name, as given to `react-ros play --node-name` "
                        '(default react_ros_player)')
    p.add_argument('--timeout', type=positive, default=10.0, metavar='S',
                   help='how long to wait for the player, a topic\'s publisher or a service\'s '
                        'answer before giving up with exit status 2 (default 10)')


def add_parser(sub) -> None:
    p = sub.add_parser(
        'topic', help="a running player's topics: list them, echo one, measure its rate",
        description=textwrap.fill("The topics of the running ROS graph, as `ros2 topic` shows "
                                  "them, in the player's domain (below the examples).", 92))
    p.add_argument('action', choices=ACTIONS,
                   help='list: every topic with its type, publishers and subscribers; '
                        'echo TOPIC: its messages as YAML, each ended by "---"; '
                        'hz TOPIC: its rate, intervals and window every second')
    p.add_argument('topic', nargs='?', metavar='TOPIC', help='the topic of echo and hz')
    player_args(p)
    p.add_argument('--once', action='store_true', help='echo: one message, then exit')
    p.add_argument('-n', '--count', type=positive_int, metavar='N',
                   help='echo: N messages, then exit (default: until Ctrl-C)')
    p.add_argument('--truncate-length', type=positive_int, default=DEFAULTS['truncate_length'],
                   metavar='N', help='echo: cut strings and arrays longer than N (default 128)')
    p.add_argument('--full-length', action='store_true',
                   help='echo: print strings and arrays whole (an image\'s every byte)')
    p.add_argument('-w', '--window', type=positive_int, default=DEFAULTS['window'], metavar='N',
                   help='hz: the rate of the last N intervals (default 10000)')
    p.add_argument('--duration', type=positive, metavar='S',
                   help='hz: measure S seconds, then exit; status 1 if no two messages came '
                        '(default: until Ctrl-C)')


def _checked(args: argparse.Namespace) -> str | None:
    for dest, action in ONLY.items():
        if getattr(args, dest) != DEFAULTS[dest] and args.action != action:
            flag = '--' + dest.replace('_', '-')
            raise ReactRosError(f'{flag} is an option of `topic {action}`, not of '
                                f'`topic {args.action}`')
    if args.action == 'list':
        if args.topic is not None:
            raise ReactRosError(f'topic list takes no topic (got {args.topic!r})')
        return None
    if args.topic is None:
        raise ReactRosError(f'topic {args.action} needs a TOPIC (`react-ros topic list` '
                            'shows them)')
    from rclpy.validate_full_topic_name import validate_full_topic_name
    topic = args.topic if args.topic.startswith('/') else '/' + args.topic
    try:
        validate_full_topic_name(topic)
    except Exception as err:  # rclpy's InvalidTopicNameException and its kin
        why = str(err).splitlines()[0].removeprefix('Invalid topic name: ').rstrip(':')
        raise ReactRosError(f'{args.topic!r} is not a topic name: {why}') from None
    return topic


def run(args: argparse.Namespace) -> int:
    topic = _checked(args)
    from react_ros.ros.second_terminal import Session
    session = Session('react-ros topic', args.node_name, args.timeout)
    try:
        if args.action == 'list':
            return _list(session)
        assert topic is not None  # _checked returns None for `list` only
        if args.action == 'echo':
            return _echo(session, topic, args)
        return _hz(session, topic, args)
    except BrokenPipeError:  # `| head`: the reader has what it wanted
        sys.stdout = open('/dev/null', 'w')  # noqa: SIM115 (no flush error at exit)
        return 0
    finally:
        session.close()


def _list(session) -> int:
    session.wait_for_player()
    rows = [(t, ', '.join(types), str(pubs), str(subs))
            for t, (types, pubs, subs) in sorted(session.graph().items())]
    head = ('topic', 'type', 'publishers', 'subscribers')
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(2)]
    for row in [head, *rows]:
        print(f'{row[0].ljust(widths[0])}  {row[1].ljust(widths[1])}  '
              f'{row[2]:>{len(head[2])}}  {row[3]:>{len(head[3])}}')
    sys.stdout.flush()
    return 0


def _echo(session, topic: str, args: argparse.Namespace) -> int:
    from react_ros.ros.message_yaml import to_yaml
    cls, profile = session.wait_for_topic(topic)
    wanted = 1 if args.once else args.count
    truncate = None if args.full_length else args.truncate_length
    printed = 0

    def show(msg) -> None:
        nonlocal printed
        if wanted is None or printed < wanted:
            sys.stdout.write(to_yaml(msg, truncate) + '---\n')
            sys.stdout.flush()
            printed += 1
    session.node.create_subscription(cls, topic, show, profile)
    session.spin_until(lambda: wanted is not None and printed >= wanted, None)
    return 0


def _hz(session, topic: str, args: argparse.Namespace) -> int:
    from react_ros.ros.second_terminal import reader_qos
    from react_ros.ros.topic_rate import RateWindow
    cls, _ = session.wait_for_topic(topic)
    window = RateWindow(args.window)
    # raw: the rate needs the arrival, not the message (an image would cost its decoding)
    session.node.create_subscription(cls, topic, lambda _: window.arrived(time.monotonic()),
                                     reader_qos(session.publishers(topic)), raw=True)
    end = None if args.duration is None else time.monotonic() + args.duration
    while end is None or time.monotonic() < end:
        tick = time.monotonic() + 1.0
        session.spin_until(lambda: time.monotonic() >= tick or
                           (end is not None and time.monotonic() >= end), None)
        line = window.report()
        if line is not None:
            print(line, flush=True)
        elif window.received:
            print('no new messages', flush=True)
    if window.received < 2:
        print(f'react-ros topic hz: {window.received} message(s) on {topic} in '
              f'{args.duration:g} s: no rate (is the player paused?)', file=sys.stderr)
        return 1
    return 0
