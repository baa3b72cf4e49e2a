"""`react-ros info`: what an episode (or a bag) holds, and the checks of its format."""
from __future__ import annotations

import argparse

from react_ros.cli.arguments import episode_args
from react_ros.cli.episode import is_bag, open_bag_given, open_given


def add_parser(sub) -> None:
    p = sub.add_parser('info', help='kind, duration and streams of an episode')
    episode_args(p)


def run(args: argparse.Namespace) -> int:
    from react_ros.info import describe
    if args.kind is None and is_bag(args.episode):
        from react_ros.bag_info import describe_bag
        open_bag_given(args, warn=False)  # refuses what does not apply to a bag
        print(describe_bag(args.episode))
        return 0
    episode = open_given(args, warn=False)
    print(describe(episode))
    return 0
