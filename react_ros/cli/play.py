"""`react-ros play` (an episode or a bag on ROS 2 topics with /clock) and `demo` (a
sample, written once and played)."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from react_ros.errors import DatasetFormatError
from react_ros.registry import KINDS, EpisodeOptions, missing, open_episode
from react_ros.cli.arguments import episode_args, play_args
from react_ros.cli.episode import check_images, open_given
from react_ros.cli.sample import write_sample
from react_ros.play_options import PlayOptions
from react_ros.ros.isolation import RANGE_VAR, announce, keep_discovery_local
from react_ros.sinks.report import shows

DEMO_SECONDS = 10.0


def add_parsers(sub) -> None:
    p = sub.add_parser('play', help='publish an episode on ROS 2 topics with /clock')
    episode_args(p, image_scale=False)
    play_args(p)

    p = sub.add_parser('demo', help='make (or reuse) a sample episode and play it')
    playable = [k for k, d in KINDS.items() if d.sample]
    p.add_argument('kind', nargs='?', default=playable[0], choices=playable,
                   help=f'the dataset kind to demonstrate (default {playable[0]}, the first '
                        'in the registry)')
    p.add_argument('--dir', type=Path, default=None,
                   help='where the sample lives (default: ~/.cache/react_ros/samples)')
    play_args(p)


def _play(episode, args: argparse.Namespace, show_rates: bool = False) -> int:
    """Below the CLI: PlayOptions (the user's), what the CLI decides, no Namespace."""
    from react_ros.play import FoxgloveServing, play_episode
    from react_ros.sinks.live import PlayerRuntime
    foxglove = None if args.foxglove is None else FoxgloveServing(
        args.foxglove, args.foxglove_host, wait_for_viewer=not args.foxglove_no_wait)
    # ros2 bag's --disable-keyboard-controls; the keys need stdin to be a terminal anyway
    runtime = PlayerRuntime(node_name=args.node_name,
                            keyboard=not getattr(args, 'disable_keyboard_controls', False))
    return play_episode(episode, PlayOptions.from_args(args), runtime,
                        state_publisher=not args.no_state_publisher, foxglove=foxglove,
                        show_rates=show_rates)


def run_play(args: argparse.Namespace) -> int:
    why = missing(args.episode)
    if why is not None:  # refused at once, before the player and ROS are loaded
        raise DatasetFormatError(args.episode, why)

    def opened():
        episode = open_given(args, warn=shows('warn', args.log_level))
        check_images(episode, episode.streams, args.images)
        return episode
    # opened by the player, once its DDS participant is up (discovery runs meanwhile)
    return _play(opened, args)


def _cache_dir() -> Path:
    base = os.environ.get('XDG_CACHE_HOME') or str(Path.home() / '.cache')
    return Path(base) / 'react_ros' / 'samples'


def demo_episode_dir(root: Path, kind: str) -> Path:
    """Where the demo keeps (and reuses) its sample of `kind` under `root`."""
    size = KINDS[kind].demo_resolution
    return root / (f'{kind}_demo' + (f'_{size[0]}x{size[1]}' if size else ''))


def run_demo(args: argparse.Namespace) -> int:
    # The demo plays to itself: unless the user chose a discovery range, keep it
    # on this machine (before anything creates a DDS participant; the state
    # publisher's process inherits it). `play` keeps ROS 2's default, so an
    # RViz on another machine sees it.
    # The first line: the domain and range, and how a second terminal joins.
    local = keep_discovery_local()
    if shows('info', args.log_level):
        announce('react-ros demo', f'DDS discovery stays on this machine; set {RANGE_VAR}=SUBNET '
                 'to watch from another one' if local else '')
    root = args.dir or _cache_dir()
    kind = KINDS[args.kind]
    size = KINDS[args.kind].demo_resolution
    episode = demo_episode_dir(root, args.kind)
    if not episode.exists():
        print(f'react-ros demo: writing a sample {args.kind} episode to {episode}',
              file=sys.stderr)
        # Long enough to watch, short enough to write in about half a minute.
        write_sample(args.kind, episode, seed=0, duration=DEMO_SECONDS, resolution=size)
    else:
        print(f'react-ros demo: reusing {episode}', file=sys.stderr)
    options = EpisodeOptions(episode=kind.demo_episode, image_scale=args.image_scale)
    return _play(lambda: open_episode(episode, args.kind, options), args, show_rates=True)
