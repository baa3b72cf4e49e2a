"""`react-ros convert` (one episode to a bag) and `convert-all` (a release, resumably)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from react_ros.cli.arguments import add_option, bag_args, episode_args, kind_option_args
from react_ros.cli.episode import check_images, kind_values, open_given
from react_ros.convert_options import (BAG_OPTIONS, CONVERT_ALL_OPTIONS, CONVERT_OPTIONS,
                                       ConvertAllOptions, ConvertOptions)
from react_ros.registry import KINDS


def add_parsers(sub) -> None:
    p = sub.add_parser('convert', help='write a rosbag2 MCAP bag')
    episode_args(p)
    # A string, not a Path: Path('') is '.', and an empty -o must be refused, not the cwd.
    p.add_argument('-o', '--output', required=True, metavar='OUTDIR',
                   help='the bag folder to write (refused if it exists, unless --overwrite)')
    p.add_argument('--overwrite', action='store_true',
                   help='replace OUTDIR if it is a bag react_ros wrote (nothing else)')
    for opt in CONVERT_OPTIONS[len(BAG_OPTIONS):]:  # the topics, then how the bag is written
        add_option(p, opt)
    bag_args(p)
    p.add_argument('-q', '--quiet', action='store_true',
                   help='print nothing but errors')
    p.add_argument('--progress', action='store_true',
                   help='show progress even when stderr is not a terminal')

    p = sub.add_parser('convert-all', help='convert every episode of a release, resumably')
    p.add_argument('root', type=Path, help='the release folder')
    p.add_argument('-o', '--output', required=True, metavar='OUTDIR',
                   help='where the bags go, one folder per episode, with index.json')
    p.add_argument('--kind', choices=list(KINDS), help='dataset kind (detected from the layout)')
    run = {opt.name: opt for opt in CONVERT_ALL_OPTIONS[len(BAG_OPTIONS):]}
    add_option(p, run.pop('image_scale'))
    kind_option_args(p, skip=_from_run())
    bag_args(p)
    for opt in run.values():
        add_option(p, opt)
    p.add_argument('-q', '--quiet', action='store_true',
                   help='print nothing but errors')
    p.add_argument('--progress', action='store_true',
                   help='show progress even when stderr is not a terminal')


def run_convert(args: argparse.Namespace) -> int:
    options = ConvertOptions.from_args(args)
    episode = open_given(args)
    from react_ros.rosbag2.writer import select_streams, write_bag
    from react_ros.sinks.selection import TopicFilter
    wanted = TopicFilter(options.topics, options.exclude_topics, options.regex,
                         options.exclude_regex)
    chosen = select_streams(episode.streams, wanted, options.images)
    check_images(episode, chosen, options.images, 'among the topics chosen'
                 if wanted.narrows else 'in the episode')
    from react_ros.progress import Counter
    from react_ros.rosbag2.disk_space import SizeEstimate, SizeWatch
    # A log or a pipe gets no progress unless asked: its last line must be the error, if any.
    show = not args.quiet and (args.progress or sys.stderr.isatty())

    def say(estimate: SizeEstimate) -> None:
        if progress:
            progress.close()  # the estimate gets a line of its own; progress goes on below
        print(estimate.line(), file=sys.stderr, flush=True)
    # Shown as the progress line is: a bad frame found after it must stay the only line.
    watch = SizeWatch(check=not options.no_space_check, on_estimate=say if show else None)
    progress = Counter('converting', watch=watch) if show else None
    try:
        summary = write_bag(episode, args.output, options, overwrite=args.overwrite,
                            progress=progress, inputs=[args.episode], size=watch)
    finally:
        if progress:
            progress.close()  # ends the progress line, so an error starts on its own
    if not args.quiet:
        print(f'wrote {summary.path} ({summary.message_count} messages)')
    return 0


def run_convert_all(args: argparse.Namespace) -> int:
    from react_ros.release import convert_all
    kind = KINDS[args.kind] if args.kind is not None else None
    # Without --kind, the flags set are checked against the kind found in ROOT.
    own = kind_values(kind, args, f'{args.root} is a {args.kind} release', skip=_from_run())
    show = not args.quiet and (args.progress or sys.stderr.isatty())
    return convert_all(args.root, args.output, ConvertAllOptions.from_args(args), kind=args.kind,
                       own=own, progress=show, quiet=args.quiet)


def _from_run() -> frozenset[str]:
    """The kinds' options that follow convert-all's own of that name (KindOptions.FROM_RUN:
    TrueTrace's verify is --verify): they have no flag of the kind's there."""
    return frozenset(name for k in KINDS.values() for name in k.options.FROM_RUN)
