"""`react-ros`: info, play, convert, sample, demo.

Thin on purpose: parse options, open the episode, hand it to a sink. Anything
the user can fix arrives as a ReactRosError and is printed as one line with
exit status 2; anything else is a bug and keeps its traceback.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import NoReturn, Sequence

from react_ros.adapters import KINDS, EpisodeOptions, kind_options, open_episode, resolve_kind
from react_ros.adapters.base import DatasetKind
from react_ros.errors import ReactRosError, interrupt_behind
from react_ros.options import KindOptions, Option, own_values
from react_ros.play_options import BY_NAME, H264_HELP, PLAY_OPTIONS
from react_ros.ros.isolation import RANGE_VAR, announce, keep_discovery_local

EXIT_BAD_INPUT = 2
IMAGE_TYPE = 'sensor_msgs/msg/Image'  # what --images encodes
DEMO_SECONDS = 10.0


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


def _workers(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f'must be >= 1, got {text}')
    return value


def _bag_args(p: argparse.ArgumentParser) -> None:
    """What goes into a bag: shared by convert and convert-all."""
    from react_ros.sinks.bag import COMPRESSIONS, DEFAULT_COMPRESSION, IMAGE_MODES
    p.add_argument('--images', choices=IMAGE_MODES, default='raw',
                   help='raw: sensor_msgs/Image; jpeg, png: sensor_msgs/CompressedImage as '
                        'image_transport publishes it (labels and ids always lossless; depth: '
                        'lossless TIFF with png, compressedDepth with jpeg); h264: '
                        + H264_HELP)
    _add_option(p, BY_NAME['no_reencode'])
    p.add_argument('--jpeg-quality', type=_jpeg_quality, default=95, metavar='Q',
                   help='1-100 (default 95)')
    p.add_argument('--compression', choices=COMPRESSIONS, default=DEFAULT_COMPRESSION,
                   help=f'MCAP chunk compression (default {DEFAULT_COMPRESSION})')


def _jpeg_quality(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError(f'must be 1-100, got {text}')
    return value


def _option_type(opt: Option):
    def parse(text: str) -> object:
        try:  # a list option's words arrive one by one
            return opt.coerce((text,))[0] if opt.type is tuple else opt.coerce(text)
        except ReactRosError as err:
            raise argparse.ArgumentTypeError(str(err).removeprefix(f'{opt.flag}: ')) from None
    parse.__name__ = 'str' if opt.type is tuple else opt.type.__name__  # named in messages
    return parse


def _add_option(p: argparse.ArgumentParser | argparse._ArgumentGroup, opt: Option) -> None:
    """One declared option (a kind's or the player's) as a flag."""
    flags = (opt.short, opt.flag) if opt.short else (opt.flag,)
    if opt.type is bool:
        action = argparse.BooleanOptionalAction if opt.default else 'store_true'
        p.add_argument(*flags, dest=opt.name, action=action, default=opt.default, help=opt.help)
        return
    shape: dict[str, object] = {}
    if opt.type is tuple:
        shape['nargs'] = '+'
    elif opt.const is not None:  # the flag alone means `const`
        shape.update(nargs='?', const=opt.const)
    p.add_argument(*flags, dest=opt.name, type=_option_type(opt), default=opt.default,
                   choices=opt.choices, metavar=opt.metavar, help=opt.help, **shape)


def _kind_option_args(p: argparse.ArgumentParser, skip: frozenset[str] = frozenset()) -> None:
    """Every kind's own options, one group per kind, from its options dataclass."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for kind, opt in kind_options():
        if opt.name in skip:
            continue
        if kind.name not in groups:
            groups[kind.name] = p.add_argument_group(f'{kind.name} options ({kind.title})')
        _add_option(groups[kind.name], opt)


def _episode_args(p: argparse.ArgumentParser, image_scale: bool = True) -> None:
    """Which episode, and how it becomes messages (`play` adds --image-scale with the
    player's options)."""
    p.add_argument('episode', type=Path, help='episode folder or file')
    p.add_argument('--kind', choices=list(KINDS), help='dataset kind (detected from the layout)')
    p.add_argument('--episode', dest='episode_id', metavar='ID',
                   help='episode inside a release that holds many')
    if image_scale:
        _add_option(p, BY_NAME['image_scale'])
    _kind_option_args(p)


def _play_args(p: argparse.ArgumentParser) -> None:
    """The player's options (play_options.py), then what only the CLI has."""
    group = p.add_argument_group('playing')
    for opt in PLAY_OPTIONS:
        _add_option(group, opt)
    p.add_argument('--node-name', default='react_ros_player')
    p.add_argument('--no-state-publisher', action='store_true',
                   help='do not start react_ros\'s robot_state_publisher (one runs already)')
    _foxglove_args(p)


def _foxglove_args(p: argparse.ArgumentParser) -> None:
    """`--foxglove [PORT]`: serve over the Foxglove WebSocket protocol instead of DDS."""
    from react_ros.sinks.foxglove import DEFAULT_HOST, DEFAULT_PORT

    def port(text: str) -> int:
        if not text.isdigit() or int(text) > 65535:
            raise argparse.ArgumentTypeError(f'not a TCP port: {text!r}')
        return int(text)
    p.add_argument('--foxglove', type=port, nargs='?', const=DEFAULT_PORT, default=None,
                   metavar='PORT', help='serve the episode to Foxglove (WebSocket, default port '
                   f'{DEFAULT_PORT}; 0: a free one) instead of on DDS; needs the [foxglove] extra')
    p.add_argument('--foxglove-host', default=DEFAULT_HOST, metavar='HOST',
                   help=f'address the Foxglove server binds (default {DEFAULT_HOST}: this '
                   'machine only)')


class _Parser(argparse.ArgumentParser):
    """argparse with a usage error as one line, like every other refusal (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f'error: {message} (see {self.prog} --help)\n')


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog='react-ros', description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest='command', required=True, parser_class=_Parser)

    p = sub.add_parser('info', help='kind, duration and streams of an episode')
    _episode_args(p)

    p = sub.add_parser('play', help='publish an episode on ROS 2 topics with /clock')
    _episode_args(p, image_scale=False)
    _play_args(p)

    p = sub.add_parser('convert', help='write a rosbag2 MCAP bag')
    _episode_args(p)
    # A string, not a Path: Path('') is '.', and an empty -o must be refused, not the cwd.
    p.add_argument('-o', '--output', required=True, metavar='OUTDIR')
    p.add_argument('--overwrite', action='store_true',
                   help='replace OUTDIR if it is a bag react_ros wrote (nothing else)')
    _add_option(p, BY_NAME['topics'])
    _add_option(p, BY_NAME['exclude'])
    _bag_args(p)
    p.add_argument('-q', '--quiet', action='store_true')
    p.add_argument('--progress', action='store_true',
                   help='show progress even when stderr is not a terminal')

    p = sub.add_parser('convert-all', help='convert every episode of a release, resumably')
    p.add_argument('root', type=Path, help='the release folder')
    p.add_argument('-o', '--output', required=True, metavar='OUTDIR')
    p.add_argument('--kind', choices=list(KINDS), help='dataset kind (detected from the layout)')
    _add_option(p, BY_NAME['image_scale'])
    # convert-all's --verify covers TrueTrace's (checking MANIFEST.sha256): one flag, one meaning.
    _kind_option_args(p, skip=frozenset({'verify'}))
    _bag_args(p)
    p.add_argument('--workers', type=_workers, default=None, metavar='N',
                   help=f'episodes converted at once, in processes (default: the cores, '
                        f'{os.cpu_count()})')
    p.add_argument('--ray', nargs='?', const='', default=None, metavar='ADDRESS',
                   help='run the episodes as Ray tasks (a local Ray without ADDRESS); '
                        'ROOT and OUTDIR must be storage every Ray node sees')
    p.add_argument('--verify', action='store_true',
                   help='fingerprint sources by their contents (sha256), not size and mtime; '
                        'TrueTrace episodes are also checked against MANIFEST.sha256')
    p.add_argument('-q', '--quiet', action='store_true')
    p.add_argument('--progress', action='store_true',
                   help='show progress even when stderr is not a terminal')

    p = sub.add_parser('sample', help='write a synthetic episode faithful to a format document')
    p.add_argument('kind', choices=[k for k, d in KINDS.items() if d.sample])
    p.add_argument('dir')  # a string: an empty DIR is refused, not taken as the cwd
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--duration', type=_positive, default=None, metavar='S')
    p.add_argument('--resolution', default=None, metavar='WxH',
                   help='video size (default: the dataset\'s own)')
    p.add_argument('--episodes', type=_workers, default=None, metavar='N',
                   help='write a release of N episodes (default: the kind\'s usual sample)')

    p = sub.add_parser('demo', help='make (or reuse) a sample episode and play it')
    playable = [k for k, d in KINDS.items() if d.sample]
    p.add_argument('kind', nargs='?', default=playable[0], choices=playable,
                   help=f'the dataset kind to demonstrate (default {playable[0]}, the first '
                        'in the registry)')
    p.add_argument('--dir', type=Path, default=None,
                   help='where the sample lives (default: ~/.cache/react_ros/samples)')
    _play_args(p)

    p = sub.add_parser('preview', help='draw an episode or bag: a sheet (.png) or a clip (.mp4)')
    _episode_args(p)
    p.add_argument('-o', '--output', required=True, metavar='FILE',
                   help='sheet.png (every camera at a few moments, topic strip, TF tree) or '
                        'clip.mp4 (one camera, every frame)')
    p.add_argument('--at', type=_non_negative, nargs='+', metavar='T',
                   help='moments of a sheet, seconds from the start (default: 3 spread out)')
    p.add_argument('--camera', metavar='TOPIC', help='the image topic of a clip (default: the '
                   'first with a CameraInfo)')
    p.add_argument('--tile-height', type=int, default=360, metavar='PX',
                   help='pictures of a sheet at most this tall (default 360)')
    p.add_argument('--overwrite', action='store_true', help='replace an existing FILE')
    p.add_argument('-q', '--quiet', action='store_true')
    p.add_argument('--progress', action='store_true',
                   help='show progress even when stderr is not a terminal')
    return parser


def _own_options(kind: DatasetKind, args: argparse.Namespace) -> KindOptions:
    """The kind's options from the flags; a flag of another kind is refused, not ignored."""
    return kind.options.from_values(
        _kind_values(kind, args, f'{args.episode} is a {kind.name} episode'))


def _kind_values(kind: DatasetKind | None, args: argparse.Namespace,
                 what: str) -> dict[str, object]:
    """The flags the user set for `kind`'s own options (all of them for None: not known yet)."""
    if kind is None:
        return {opt.name: getattr(args, opt.name) for _, opt in kind_options()
                if getattr(args, opt.name, opt.default) != opt.default}
    own = own_values(kind, lambda opt: getattr(args, opt.name, opt.default),
                     lambda opt: opt.flag, what)
    return {name: value for name, value in own.items() if hasattr(args, name)}


def _open(args: argparse.Namespace, warn: bool = True):
    if args.kind is None and _is_bag(args.episode):
        return _open_bag(args, warn)
    kind = resolve_kind(args.episode, args.kind)
    options = EpisodeOptions(image_scale=args.image_scale, episode=args.episode_id,
                             own=_own_options(kind, args))
    episode = open_episode(args.episode, kind.name, options)
    if warn:  # odd but usable: said, never silent (`info` lists them itself)
        for warning in episode.warnings:
            print(f'warning: {warning}', file=sys.stderr)
    return episode


def _is_bag(path: Path) -> bool:
    from react_ros.formats.rosbag2 import is_rosbag2
    return is_rosbag2(path)


def _open_bag(args: argparse.Namespace, warn: bool):
    """A rosbag2 bag for info and play: its topics as recorded, through the same player."""
    from react_ros.adapters.rosbag2 import open_bag
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


def cmd_info(args: argparse.Namespace) -> int:
    from react_ros.info import describe
    if args.kind is None and _is_bag(args.episode):
        from react_ros.bag_info import describe_bag
        _open_bag(args, warn=False)  # refuses what does not apply to a bag
        print(describe_bag(args.episode))
        return 0
    episode = _open(args, warn=False)
    print(describe(episode))
    return 0


def _check_images(episode, streams, images: str, where: str = 'in the episode') -> None:
    """Refuse --images jpeg/png/h264 when no stream of `streams` is an Image.

    It would write or publish exactly what raw does: the user asked for something
    this episode cannot give (a kind without cameras such as objects, or --topics
    leaving the cameras out) and is told so, as an unknown --topics name is.
    """
    if images == 'raw' or any(s.msg_type == IMAGE_TYPE for s in streams):
        return
    raise ReactRosError(f'{episode.path}: --images {images}: no {IMAGE_TYPE} stream {where}, '
                        f'so nothing to encode (leave --images out)')


def cmd_convert(args: argparse.Namespace) -> int:
    from react_ros.sinks.bag import select_streams, write_bag
    episode = _open(args)
    chosen = select_streams(episode.streams, args.topics, args.exclude)
    _check_images(episode, chosen, args.images, 'among the topics chosen'
                  if args.topics is not None or args.exclude else 'in the episode')
    from react_ros.progress import Counter
    # A log or a pipe gets no progress unless asked: its last line must be the error, if any.
    show = not args.quiet and (args.progress or sys.stderr.isatty())
    progress = Counter('converting') if show else None
    try:
        summary = write_bag(episode, args.output, overwrite=args.overwrite, topics=args.topics,
                            exclude=args.exclude, progress=progress, inputs=[args.episode],
                            images=args.images, jpeg_quality=args.jpeg_quality,
                            compression=args.compression, reencode=not args.no_reencode)
    finally:
        if progress:
            progress.close()  # ends the progress line, so an error starts on its own
    if not args.quiet:
        print(f'wrote {summary.path} ({summary.message_count} messages)')
    return 0


def cmd_convert_all(args: argparse.Namespace) -> int:
    from react_ros.release import ConvertSettings, convert_all
    kind = KINDS[args.kind] if args.kind is not None else None
    # Without --kind, the flags set are checked against the kind found in ROOT.
    verify = args.__dict__.pop('verify')  # the run's flag, not only TrueTrace's (see above)
    own = _kind_values(kind, args, f'{args.root} is a {args.kind} release')
    settings = ConvertSettings(kind=args.kind, image_scale=args.image_scale,
                               images=args.images, jpeg_quality=args.jpeg_quality,
                               compression=args.compression, own=own,
                               no_reencode=args.no_reencode)
    show = not args.quiet and (args.progress or sys.stderr.isatty())
    return convert_all(args.root, args.output, settings, workers=args.workers, ray=args.ray,
                       verify=verify, progress=show, quiet=args.quiet)


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


def cmd_sample(args: argparse.Namespace) -> int:
    path = write_sample(args.kind, args.dir, args.seed, args.duration,
                        _resolution(args.resolution), args.episodes)
    what = 'release' if args.episodes is not None else 'episode'
    print(f'wrote {args.kind} sample {what} to {path}')
    return 0


def _play(episode, args: argparse.Namespace, show_rates: bool = False) -> int:
    from react_ros.play import play_episode
    return play_episode(episode, args, show_rates=show_rates)


def cmd_play(args: argparse.Namespace) -> int:
    def opened():
        episode = _open(args)
        _check_images(episode, episode.streams, args.images)
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


def cmd_demo(args: argparse.Namespace) -> int:
    # The demo plays to itself: unless the user chose a discovery range, keep it
    # on this machine (before anything creates a DDS participant; the state
    # publisher's process inherits it). `play` keeps ROS 2's default, so an
    # RViz on another machine sees it.
    # The first line: the domain and range, and how a second terminal joins.
    announce('react-ros demo', f'DDS discovery stays on this machine; set {RANGE_VAR}=SUBNET '
             'to watch from another one' if keep_discovery_local() else '')
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


def cmd_preview(args: argparse.Namespace) -> int:
    from react_ros.preview.run import run_command
    return run_command(args, lambda: _open(args))


COMMANDS = {'info': cmd_info, 'play': cmd_play, 'convert': cmd_convert,
            'convert-all': cmd_convert_all, 'sample': cmd_sample, 'demo': cmd_demo,
            'preview': cmd_preview}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit status (128 + the signal's number after a stop signal)."""
    from react_ros.adapters import BROKEN
    from react_ros.sinks.output import stop_requested
    if BROKEN:  # a kind folder of REACT_ROS_KINDS_PATH that does not load
        print(f'error: {BROKEN[0]}', file=sys.stderr)
        return EXIT_BAD_INPUT
    args = build_parser().parse_args(argv)
    try:
        status = COMMANDS[args.command](args)
    except ReactRosError as err:
        if stop_requested():  # a stop that came first, and a refusal it caused: the stop
            return _stopped(signal.SIGINT)
        print(f'error: {err}', file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as stop:  # Ctrl-C, or a stop signal while writing (Interrupted)
        return _stopped(getattr(stop, 'signum', signal.SIGINT))
    except Exception as err:
        stop = _interrupt_behind(err)
        if stop is None:
            raise
        return _stopped(getattr(stop, 'signum', signal.SIGINT))
    # A stop signal during the last rename: the output is whole, but the user asked to stop.
    return _stopped(signal.SIGINT) if stop_requested() else status


def _stopped(signum: int) -> int:
    """128 + the first stop signal's number; later ones are ignored while the process exits."""
    from react_ros.sinks.output import ignore_stop_signals, stop_requested
    ignore_stop_signals()
    return 128 + (stop_requested() or signum)


def _interrupt_behind(err: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt that `err` was raised from, if any.

    While writing, a stop signal only sets a flag (sinks/output.py), so nothing
    raises from inside a C extension's callback. Before the writer starts (opening
    the episode, `info`, `play`'s own set-up) Ctrl-C is still Python's default
    KeyboardInterrupt, raised wherever it lands: inside rclpy's deserialisation,
    which builds messages in Python, it comes back as a TypeError caused by the
    interrupt. Still a stop, not a bug.
    """
    return interrupt_behind(err)


if __name__ == '__main__':
    sys.exit(main())
