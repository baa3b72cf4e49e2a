"""Opening what a command was given: a dataset episode with its kind's options,
or a rosbag2 bag."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from react_ros.registry import EpisodeOptions, kind_options, missing, open_episode, resolve_kind
from react_ros.adapters.base import DatasetKind
from react_ros.errors import ReactRosError
from react_ros.registry import own_values
from react_ros.options import KindOptions, Option

IMAGE_TYPE = 'sensor_msgs/msg/Image'  # what --images encodes


def _own_options(kind: DatasetKind, args: argparse.Namespace) -> KindOptions:
    """The kind's options from the flags; a flag of another kind is refused, not ignored."""
    return kind.options.from_values(
        kind_values(kind, args, f'{args.episode} is a {kind.name} episode'))


def kind_values(kind: DatasetKind | None, args: argparse.Namespace, what: str,
                skip: frozenset[str] = frozenset()) -> dict[str, object]:
    """The flags the user set for `kind`'s own options (all of them for None: not known
    yet); `skip`: names whose flag is the command's own, not a kind's (convert-all's
    --verify, which kinds' FROM_RUN options follow)."""
    def given(opt: Option) -> object:
        return opt.default if opt.name in skip else getattr(args, opt.name, opt.default)
    if kind is None:
        return {opt.name: given(opt) for _, opt in kind_options() if given(opt) != opt.default}
    own = own_values(kind, given, lambda opt: opt.flag, what)
    return {name: value for name, value in own.items()
            if hasattr(args, name) and name not in skip}


def open_given(args: argparse.Namespace, warn: bool = True):
    if args.kind is None and is_bag(args.episode):
        return open_bag_given(args, warn)
    try:
        kind = resolve_kind(args.episode, args.kind)
        options = EpisodeOptions(image_scale=args.image_scale, episode=args.episode_id,
                                 own=_own_options(kind, args))
        episode = open_episode(args.episode, kind.name, options)
    except ReactRosError as refused:
        if args.episode_id is not None or missing(args.episode) is not None:
            raise  # (a path that is not there is no release either)
        from react_ros.release.listing import many_episodes_hint
        hint = many_episodes_hint(args.episode, args.kind, str(refused))
        if hint is None:
            raise
        raise ReactRosError(hint) from None
    if warn:  # odd but usable: said, never silent (`info` lists them itself)
        for warning in episode.warnings:
            print(f'warning: {warning}', file=sys.stderr)
    return episode


def is_bag(path: Path) -> bool:
    from react_ros.rosbag2.reader import is_rosbag2
    return is_rosbag2(path)


def open_bag_given(args: argparse.Namespace, warn: bool):
    """A rosbag2 bag for info and play: its topics as recorded, through the same player."""
    from react_ros.rosbag2.episode import open_bag
    if args.command not in ('info', 'play', 'preview'):
        raise ReactRosError(f'{args.episode}: is a rosbag2 bag already; `react-ros info` and '
                            '`react-ros play` read it')
    given = [(opt.flag, getattr(args, opt.name, opt.default), opt.default)
             for _, opt in kind_options()]
    for flag, value, default in (('--episode', args.episode_id, None),
                                 ('--image-scale', args.image_scale, 1.0), *given):
        if value != default:
            raise ReactRosError(f'{flag}: applies to dataset episodes, not to the bag '
                                f'{args.episode} (its messages are played as recorded)')
    episode = open_bag(args.episode)
    if warn:
        for warning in episode.warnings:
            print(f'warning: {warning}', file=sys.stderr)
    return episode


def check_images(episode, streams, images: str, where: str = 'in the episode') -> None:
    """Refuse --images jpeg/png/h264 when no stream of `streams` is an Image.

    It would write or publish exactly what raw does: the user asked for something
    this episode cannot give (a kind without cameras such as objects, or --topics
    leaving the cameras out) and is told so, as an unknown --topics name is.
    """
    if images == 'raw' or any(s.msg_type == IMAGE_TYPE for s in streams):
        return
    raise ReactRosError(f'{episode.path}: --images {images}: no {IMAGE_TYPE} stream {where}, '
                        f'so nothing to encode (leave --images out)')
