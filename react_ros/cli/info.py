"""`react-ros info`: what an episode (or a bag) holds, and the checks of its format."""
from __future__ import annotations

import argparse
import json

from react_ros.cli.arguments import episode_args
from react_ros.cli.episode import is_bag, open_bag_given, open_given


def add_parser(sub) -> None:
    p = sub.add_parser('info', help='streams (count, median rate, frame_id, image size, QoS), '
                                    'TF tree and format checks of an episode or a bag')
    episode_args(p)
    p.add_argument('--json', action='store_true',
                   help='print one JSON document instead of text (its schema: '
                        'react_ros/info.schema.json, schema_version 1)')


def run(args: argparse.Namespace) -> int:
    if args.kind is None and is_bag(args.episode):
        from react_ros.rosbag2.info import bag_document, describe_bag
        open_bag_given(args, warn=False)  # refuses what does not apply to a bag
        print(json.dumps(bag_document(args.episode), indent=2) if args.json
              else describe_bag(args.episode))
        return 0
    episode = open_given(args, warn=False)
    from react_ros.info import describe_facts, episode_facts
    facts = episode_facts(episode)
    print(json.dumps(facts, indent=2) if args.json else describe_facts(facts, episode.report))
    return 0

