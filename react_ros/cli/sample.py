"""`react-ros sample`: a small synthetic episode (or release) faithful to a kind's format
document, pitfalls included."""
from __future__ import annotations

import argparse
from pathlib import Path

from react_ros.registry import KINDS
from react_ros.cli.arguments import count, positive
from react_ros.errors import ReactRosError


def add_parser(sub) -> None:
    p = sub.add_parser('sample', help='write a synthetic episode faithful to a format document')
    p.add_argument('kind', choices=[k for k, d in KINDS.items() if d.sample],
                   help='the dataset kind')
    # a string: an empty DIR is refused, not taken as the cwd
    p.add_argument('dir', help='where to write it (must not exist, or be empty)')
    p.add_argument('--seed', type=int, default=0,
                   help='random seed: the same seed writes the same data (default 0)')
    p.add_argument('--duration', type=positive, default=None, metavar='S',
                   help='seconds of recording (default: the kind\'s own, a few seconds)')
    p.add_argument('--resolution', default=None, metavar='WxH',
                   help='video size (default: the dataset\'s own)')
    p.add_argument('--episodes', type=count, default=None, metavar='N',
                   help='write a release of N episodes (default: the kind\'s usual sample)')


def _resolution(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    w, sep, h = text.lower().partition('x')
    if not sep or not w.isdigit() or not h.isdigit() or int(w) < 16 or int(h) < 16 \
            or int(w) % 2 or int(h) % 2:
        raise ReactRosError(f'--resolution: expected even WxH such as 640x400, got {text!r}')
    return int(w), int(h)


def write_sample(kind: str, out: str | Path, seed: int = 0, duration: float | None = None,
                 resolution: tuple[int, int] | None = None, episodes: int | None = None) -> Path:
    writer = KINDS[kind].sample_writer() if kind in KINDS else None
    if writer is None:
        raise ReactRosError(f'no sample generator for {kind!r} '
                            f'(available: {", ".join(k for k, d in KINDS.items() if d.sample)})')
    kwargs: dict[str, object] = {'seed': seed}
    if duration is not None:
        kwargs['duration_s'] = duration
    if resolution is not None:
        kwargs['width'], kwargs['height'] = resolution
    if episodes is not None:
        kwargs['episodes'] = episodes
    return writer(out, **kwargs)


def run(args: argparse.Namespace) -> int:
    path = write_sample(args.kind, args.dir, args.seed, args.duration,
                        _resolution(args.resolution), args.episodes)
    what = 'release' if args.episodes is not None else 'episode'
    print(f'wrote {args.kind} sample {what} to {path}')
    return 0
