"""`react-ros control ...`: the running player's services (rosbag2_interfaces, as `ros2
bag play` serves them) from a second terminal, without ros2cli's `ros2 service call`."""
from __future__ import annotations

import argparse
import textwrap
from decimal import Decimal, InvalidOperation

from react_ros.cli.topic import player_args
from react_ros.errors import ReactRosError

# What each action asks; VALUE: whether it takes a value (None: may).
ACTIONS = {
    'pause': 'pause playback (~/pause)',
    'resume': 'resume playback (~/resume)',
    'toggle': 'pause if playing, resume if paused (~/toggle_paused)',
    'status': 'whether it is paused, and its rate (~/is_paused, ~/get_rate)',
    'rate': 'rate: the rate (~/get_rate); rate X: play X times the recorded speed (~/set_rate)',
    'seek': 'seek T: jump to T seconds of /clock time, the recorded stamps (~/seek; before the '
            'start: the start, so `seek 0` plays again from it); seek +S / seek -S: S seconds '
            'after / before where /clock is now',
    'next': 'next: play the next message while paused (~/play_next); next N: the next N '
            '(~/burst)',
}
VALUE = {'pause': False, 'resume': False, 'toggle': False, 'status': False,
         'rate': None, 'seek': True, 'next': None}  # None: optional


def add_parser(sub) -> None:
    p = sub.add_parser(
        'control', help="a running player's services: pause, resume, toggle, status, rate, "
                        'seek, next',
        description=textwrap.fill(
            "Calls the player's rosbag2_interfaces services under /NODE_NAME/ and prints what "
            "it now does, in the player's domain (below the examples).", 92) + '\n\n' +
        '\n'.join(textwrap.fill(text, 92, initial_indent=f'  {name:<8}',
                                 subsequent_indent=' ' * 10) for name, text in ACTIONS.items()))
    p.add_argument('action', choices=list(ACTIONS), help='what to ask the player (above)')
    p.add_argument('value', nargs='?', metavar='VALUE',
                   help='the rate of `rate`, the time of `seek`, the count of `next`')
    player_args(p)


def _checked(args: argparse.Namespace):
    """The action's value, parsed; a ReactRosError naming what is wrong."""
    takes, text = VALUE[args.action], args.value
    if text is None:
        if takes:
            raise ReactRosError(f'control {args.action} needs a value ({ACTIONS[args.action]})')
        return None
    if takes is False:
        raise ReactRosError(f'control {args.action} takes no value (got {text!r})')
    try:
        number = Decimal(text)
    except InvalidOperation:
        number = None
    if number is None or not number.is_finite():
        raise ReactRosError(f'control {args.action}: not a number: {text!r}')
    if args.action == 'rate' and number <= 0:
        raise ReactRosError(f'control rate: the rate must be positive, not {text}')
    if args.action == 'next' and (number != int(number) or number < 1):
        raise ReactRosError(f'control next: a count of messages is a whole number from 1, '
                            f'not {text}')
    if args.action == 'seek':
        return number, text[0] in '+-'
    return number


def run(args: argparse.Namespace) -> int:
    value = _checked(args)
    from react_ros.ros.player_services import PlayerServices
    services = PlayerServices('react-ros control', args.node_name, args.timeout)
    try:
        print(_act(services, args.action, value), flush=True)
        return 0
    finally:
        services.close()


def _act(s, action: str, value) -> str:
    from rosbag2_interfaces import srv
    if action in ('pause', 'resume', 'toggle'):
        s.call(action if action != 'toggle' else 'toggle_paused',
               {'pause': srv.Pause, 'resume': srv.Resume, 'toggle': srv.TogglePaused}[action])
        return 'paused' if s.call('is_paused', srv.IsPaused).paused else 'playing'
    if action == 'status':
        paused = s.call('is_paused', srv.IsPaused).paused
        return f"{'paused' if paused else 'playing'}, rate {s.call('get_rate', srv.GetRate).rate:g}"
    if action == 'rate':
        if value is not None and not s.call('set_rate', srv.SetRate, rate=float(value)).success:
            raise ReactRosError(f'the player refused rate {value}')
        return f"rate {s.call('get_rate', srv.GetRate).rate:g}"
    if action == 'seek':
        return s.seek(*value)
    if value is None or value == 1:
        if not s.call('play_next', srv.PlayNext, idempotent=False).success:
            raise ReactRosError('nothing played: the player plays the next message only while '
                                'paused (react-ros control pause), and not past its end')
        return 'played 1 message'
    done = s.call('burst', srv.Burst, idempotent=False, num_messages=int(value)).actually_burst
    if not done:
        raise ReactRosError('nothing played: the player plays the next messages only while '
                            'paused (react-ros control pause), and not past its end')
    return f'played {done} message{"s" if done != 1 else ""}'


__all__ = ['add_parser', 'run']
