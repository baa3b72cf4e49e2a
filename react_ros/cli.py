"""`react-ros`: info, play, convert, sample, demo.

Thin on purpose: parse options, open the episode, hand it to a sink. Anything
the user can fix arrives as a ReactRosError and is printed as one line with
exit status 2; anything else is a bug and keeps its traceback.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Sequence

from react_ros.adapters import KINDS, EpisodeOptions, open_episode
from react_ros.errors import ReactRosError
from react_ros.ros.isolation import RANGE_VAR, keep_discovery_local

EXIT_BAD_INPUT = 2
DEMO_SECONDS = 10.0
# Kinds whose sample is a release of many episodes: the one the demo plays.
DEMO_EPISODES = {'react': '2026-05-10/episode_000'}


def _positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f'must be > 0, got {text}')
    return value


def _non_negative(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f'must be >= 0, got {text}')
    return value


def _remap(text: str) -> tuple[str, str]:
    src, sep, dst = text.partition(':=')
    if not sep or not src or not dst:
        raise argparse.ArgumentTypeError(f'expected FROM:=TO, got {text!r}')
    return src, dst


def _episode_args(p: argparse.ArgumentParser) -> None:
    p.add_argument('episode', type=Path, help='episode folder or file')
    p.add_argument('--kind', choices=KINDS, help='dataset kind (detected from the layout)')
    p.add_argument('--episode', dest='episode_id', metavar='ID',
                   help='episode inside a release that holds many')
    p.add_argument('--image-scale', type=_positive, default=1.0, metavar='F',
                   help='scale images (and K, P of camera_info) by F')
    react = p.add_argument_group('React')
    react.add_argument('--segment', type=int, default=None, metavar='K',
                       help='play only clean segment K of segments.json (from 0)')
    react.add_argument('--skip-bad', action='store_true',
                       help='drop the rows bad_frames.json flags')
    react.add_argument('--tactile-latency', type=int, default=0, metavar='N',
                       help='pair view[i] with tactile[i+N] (15 for recordings before '
                       '2026-06-27)')
    react.add_argument('--gel-axis', choices=('local_y', 'dual_ball'), default='local_y',
                       help='force direction: the sensor\'s local -y, or the calibrated '
                       'gel_axis_in_rigid')


def _play_args(p: argparse.ArgumentParser) -> None:
    p.add_argument('-r', '--rate', type=_positive, default=1.0)
    p.add_argument('-l', '--loop', action='store_true')
    p.add_argument('--start-offset', type=_non_negative, default=0.0, metavar='S')
    p.add_argument('--playback-duration', type=_positive, default=None, metavar='S')
    p.add_argument('--start-paused', action='store_true')
    p.add_argument('--clock', type=_non_negative, nargs='?', const=100.0, default=100.0,
                   metavar='HZ', help='/clock rate (default 100 Hz; 0 turns it off)')
    p.add_argument('--topics', nargs='+', metavar='T', help='only these data topics')
    p.add_argument('--exclude', nargs='+', default=[], metavar='T')
    p.add_argument('--remap', type=_remap, nargs='+', default=[], metavar='FROM:=TO')
    p.add_argument('--node-name', default='react_ros_player')
    p.add_argument('--no-state-publisher', action='store_true',
                   help='do not start react_ros\'s robot_state_publisher (one runs already)')
    p.add_argument('-q', '--quiet', action='store_true')


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='react-ros', description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest='command', required=True)

    p = sub.add_parser('info', help='kind, duration and streams of an episode')
    _episode_args(p)

    p = sub.add_parser('play', help='publish an episode on ROS 2 topics with /clock')
    _episode_args(p)
    _play_args(p)

    p = sub.add_parser('convert', help='write a rosbag2 MCAP bag')
    _episode_args(p)
    p.add_argument('-o', '--output', type=Path, required=True, metavar='OUTDIR')
    p.add_argument('--overwrite', action='store_true')
    p.add_argument('--topics', nargs='+', metavar='T')
    p.add_argument('--exclude', nargs='+', default=[], metavar='T')
    p.add_argument('-q', '--quiet', action='store_true')

    p = sub.add_parser('sample', help='write a synthetic episode faithful to a format document')
    p.add_argument('kind', choices=KINDS)
    p.add_argument('dir', type=Path)
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--duration', type=_positive, default=None, metavar='S')
    p.add_argument('--resolution', default=None, metavar='WxH',
                   help='video size (default: the dataset\'s own)')

    p = sub.add_parser('demo', help='make (or reuse) a sample episode and play it')
    p.add_argument('kind', nargs='?', default='umi', choices=KINDS)
    p.add_argument('--dir', type=Path, default=None,
                   help='where the sample lives (default: ~/.cache/react_ros/samples)')
    _play_args(p)
    return parser


def _options(args: argparse.Namespace) -> EpisodeOptions:
    return EpisodeOptions(image_scale=args.image_scale, episode=args.episode_id,
                          segment=args.segment, skip_bad=args.skip_bad,
                          tactile_latency=args.tactile_latency, gel_axis=args.gel_axis)


def cmd_info(args: argparse.Namespace) -> int:
    from react_ros.info import describe
    episode = open_episode(args.episode, args.kind, _options(args))
    print(describe(episode))
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from react_ros.sinks.bag import write_bag
    episode = open_episode(args.episode, args.kind, _options(args))
    progress = None if args.quiet else _ProgressLine('converting')
    summary = write_bag(episode, args.output, overwrite=args.overwrite, topics=args.topics,
                        exclude=args.exclude, progress=progress)
    if progress:
        progress.close()
    if not args.quiet:
        print(f'wrote {summary.path} ({summary.message_count} messages)')
    return 0


def _resolution(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    w, sep, h = text.lower().partition('x')
    if not sep or not w.isdigit() or not h.isdigit() or int(w) < 16 or int(h) < 16 \
            or int(w) % 2 or int(h) % 2:
        raise ReactRosError(f'--resolution: expected even WxH such as 640x400, got {text!r}')
    return int(w), int(h)


def write_sample(kind: str, out: Path, seed: int = 0, duration: float | None = None,
                 resolution: tuple[int, int] | None = None) -> Path:
    from react_ros.samples import SAMPLES
    if kind not in SAMPLES:
        raise ReactRosError(f'no sample generator for {kind!r} yet '
                            f'(available: {", ".join(sorted(SAMPLES))})')
    kwargs: dict[str, object] = {'seed': seed}
    if duration is not None:
        kwargs['duration_s'] = duration
    if resolution is not None:
        kwargs['width'], kwargs['height'] = resolution
    return SAMPLES[kind](out, **kwargs)


def cmd_sample(args: argparse.Namespace) -> int:
    path = write_sample(args.kind, args.dir, args.seed, args.duration,
                        _resolution(args.resolution))
    print(f'wrote {args.kind} sample episode to {path}')
    return 0


def _play(episode_path: Path, args: argparse.Namespace, kind: str | None,
          options: EpisodeOptions, show_rates: bool = False) -> int:
    from react_ros.play import play_episode
    episode = open_episode(episode_path, kind, options)
    return play_episode(episode, args, show_rates=show_rates)


def cmd_play(args: argparse.Namespace) -> int:
    return _play(args.episode, args, args.kind, _options(args))


def _cache_dir() -> Path:
    base = os.environ.get('XDG_CACHE_HOME') or str(Path.home() / '.cache')
    return Path(base) / 'react_ros' / 'samples'


def cmd_demo(args: argparse.Namespace) -> int:
    from react_ros.samples import SAMPLES
    # The demo plays to itself: unless the user chose a discovery range, keep it
    # on this machine (before anything creates a DDS participant; the state
    # publisher's process inherits it). `play` keeps ROS 2's default, so an
    # RViz on another machine sees it.
    if keep_discovery_local():
        print(f'react-ros demo: DDS discovery stays on this machine ({RANGE_VAR}=LOCALHOST; '
              f'set {RANGE_VAR}=SUBNET to watch from another one)', file=sys.stderr)
    root = args.dir or _cache_dir()
    episode = root / f'{args.kind}_demo'
    if not episode.exists():
        print(f'react-ros demo: writing a sample {args.kind} episode to {episode}',
              file=sys.stderr)
        if args.kind not in SAMPLES:
            raise ReactRosError(f'no sample generator for {args.kind!r} yet')
        # Long enough to watch, short enough to write in about half a minute.
        SAMPLES[args.kind](episode, seed=0, duration_s=DEMO_SECONDS)
    else:
        print(f'react-ros demo: reusing {episode}', file=sys.stderr)
    return _play(episode, args, args.kind, EpisodeOptions(episode=DEMO_EPISODES.get(args.kind)),
                 show_rates=True)


class _ProgressLine:
    """One self-overwriting line on stderr; plain lines when stderr is no terminal."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.tty = sys.stderr.isatty()
        self.last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last < (0.2 if self.tty else 2.0) and done < total:
            return
        self.last = now
        pct = f'{100.0 * done / total:5.1f}%' if total else '     '
        line = f'{self.what}: {pct} {done}/{total or "?"} messages'
        print(('\r' + line) if self.tty else line, end='' if self.tty else '\n',
              file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.tty:
            print(file=sys.stderr)


COMMANDS = {'info': cmd_info, 'play': cmd_play, 'convert': cmd_convert,
            'sample': cmd_sample, 'demo': cmd_demo}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except ReactRosError as err:
        print(f'error: {err}', file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130


if __name__ == '__main__':
    sys.exit(main())
