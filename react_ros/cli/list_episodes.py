"""`react-ros list RELEASE`: a release's episodes, each with the command that plays it."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from react_ros.registry import KINDS


def add_parser(sub) -> None:
    p = sub.add_parser('list', help="the episodes of a release (any kind's, a folder of UMI "
                                    'episode folders too), each with its play command')
    p.add_argument('release', type=Path, metavar='RELEASE',
                   help='the release root (React, TrueTrace, objects, RoboTwin) or a folder '
                        'of UMI episode folders')
    p.add_argument('--kind', choices=list(KINDS), default=None,
                   help='the release\'s dataset kind, where the folder looks like more than '
                        'one (default: detected)')
    p.add_argument('--json', action='store_true',
                   help='print one JSON document (kind, root, and per episode its id, path, '
                        '--episode value and play command) instead of text')


def run(args: argparse.Namespace) -> int:
    from react_ros.release.listing import listing
    found = listing(args.release, args.kind)
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    episodes = found['episodes']
    print(f'{found["root"]}: {len(episodes)} {found["kind"]} episode'
          f'{"s" if len(episodes) != 1 else ""}')
    width = max(len(e['id']) for e in episodes)
    for e in episodes:
        print(f'  {e["id"].ljust(width)}  {e["play"]}')
    return 0
