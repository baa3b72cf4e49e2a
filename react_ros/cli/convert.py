"""`react-ros convert` (one episode to a bag) and `convert-all` (a release, resumably)."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from react_ros.adapters import KINDS
from react_ros.cli.arguments import add_option, bag_args, count, episode_args, kind_option_args
from react_ros.cli.episode import check_images, kind_values, open_given
from react_ros.play_options import BY_NAME


def add_parsers(sub) -> None:
    p = sub.add_parser('convert', help='write a rosbag2 MCAP bag')
    episode_args(p)
    # A string, not a Path: Path('') is '.', and an empty -o must be refused, not the cwd.
    p.add_argument('-o', '--output', required=True, metavar='OUTDIR',
                   help='the bag folder to write (refused if it exists, unless --overwrite)')
    p.add_argument('--overwrite', action='store_true',
                   help='replace OUTDIR if it is a bag react_ros wrote (nothing else)')
    for name in ('topics', 'regex', 'exclude_topics', 'exclude_regex'):
        add_option(p, BY_NAME[name])
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
    add_option(p, BY_NAME['image_scale'])
    # convert-all's --verify covers TrueTrace's (checking MANIFEST.sha256): one flag, one meaning.
    kind_option_args(p, skip=frozenset({'verify'}))
    bag_args(p)
    p.add_argument('--workers', type=count, default=None, metavar='N',
                   help=f'episodes converted at once, in processes (default: the cores, '
                        f'{os.cpu_count()})')
    p.add_argument('--ray', nargs='?', const='', default=None, metavar='ADDRESS',
                   help='run the episodes as Ray tasks (a local Ray without ADDRESS); '
                        'ROOT and OUTDIR must be storage every Ray node sees')
    p.add_argument('--verify', action='store_true',
                   help='fingerprint sources by their contents (sha256), not size and mtime; '
                        'TrueTrace episodes are also checked against MANIFEST.sha256')
    p.add_argument('-q', '--quiet', action='store_true',
                   help='print nothing but errors')
    p.add_argument('--progress', action='store_true',
                   help='show progress even when stderr is not a terminal')


def run_convert(args: argparse.Namespace) -> int:
    from react_ros.sinks.bag import select_streams, write_bag
    from react_ros.sinks.selection import TopicFilter
    episode = open_given(args)
    wanted = TopicFilter(args.topics, args.exclude_topics, args.regex, args.exclude_regex)
    chosen = select_streams(episode.streams, wanted, args.images)
    check_images(episode, chosen, args.images, 'among the topics chosen'
                 if wanted.narrows else 'in the episode')
    from react_ros.progress import Counter
    from react_ros.sinks.disk_space import SizeEstimate, SizeWatch
    # A log or a pipe gets no progress unless asked: its last line must be the error, if any.
    show = not args.quiet and (args.progress or sys.stderr.isatty())

    def say(estimate: SizeEstimate) -> None:
        if progress:
            progress.close()  # the estimate gets a line of its own; progress goes on below
        print(estimate.line(), file=sys.stderr, flush=True)
    # Shown as the progress line is: a bad frame found after it must stay the only line.
    watch = SizeWatch(check=not args.no_space_check, on_estimate=say if show else None)
    progress = Counter('converting', watch=watch) if show else None
    try:
        summary = write_bag(episode, args.output, overwrite=args.overwrite, topics=args.topics,
                            exclude=args.exclude_topics, regex=args.regex,
                            exclude_regex=args.exclude_regex, progress=progress,
                            inputs=[args.episode], images=args.images,
                            jpeg_quality=args.jpeg_quality, compression=args.compression,
                            reencode=not args.no_reencode, size=watch)
    finally:
        if progress:
            progress.close()  # ends the progress line, so an error starts on its own
    if not args.quiet:
        print(f'wrote {summary.path} ({summary.message_count} messages)')
    return 0


def run_convert_all(args: argparse.Namespace) -> int:
    from react_ros.release import ConvertSettings, convert_all
    kind = KINDS[args.kind] if args.kind is not None else None
    # Without --kind, the flags set are checked against the kind found in ROOT.
    verify = args.__dict__.pop('verify')  # the run's flag, not only TrueTrace's (see above)
    own = kind_values(kind, args, f'{args.root} is a {args.kind} release')
    settings = ConvertSettings(kind=args.kind, image_scale=args.image_scale,
                               images=args.images, jpeg_quality=args.jpeg_quality,
                               compression=args.compression, own=own,
                               no_reencode=args.no_reencode,
                               space_check=not args.no_space_check)
    show = not args.quiet and (args.progress or sys.stderr.isatty())
    return convert_all(args.root, args.output, settings, workers=args.workers, ray=args.ray,
                       verify=verify, progress=show, quiet=args.quiet)
