"""`react-ros preview`: an episode or a bag drawn as a contact sheet (.png) or a clip (.mp4)."""
from __future__ import annotations

import argparse

from react_ros.cli.arguments import episode_args, non_negative
from react_ros.cli.episode import open_given


def add_parser(sub) -> None:
    p = sub.add_parser('preview', help='draw an episode or bag: a sheet (.png) or a clip (.mp4)')
    episode_args(p)
    p.add_argument('-o', '--output', required=True, metavar='FILE',
                   help='sheet.png (every camera at a few moments, topic strip, TF tree) or '
                        'clip.mp4 (one camera, every frame)')
    p.add_argument('--at', type=non_negative, nargs='+', metavar='T',
                   help='moments of a sheet, seconds from the start (default: 3 spread out)')
    p.add_argument('--camera', metavar='TOPIC', help='the image topic of a clip (default: the '
                   'first with a CameraInfo)')
    p.add_argument('--tile-height', type=int, default=360, metavar='PX',
                   help='pictures of a sheet at most this tall (default 360)')
    p.add_argument('--overwrite', action='store_true', help='replace an existing FILE')
    p.add_argument('-q', '--quiet', action='store_true',
                   help='print nothing but errors')
    p.add_argument('--progress', action='store_true',
                   help='show progress even when stderr is not a terminal')


def run(args: argparse.Namespace) -> int:
    from react_ros.preview.run import run_command
    return run_command(args, lambda: open_given(args))
