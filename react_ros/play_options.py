"""The player's options, declared once: `react-ros play`'s flags, the player node's
parameters and play.launch.py's arguments are all made from `PlayOptions`.

A field's name is the node parameter and the launch argument, and `--name-with-dashes`
the flag (react_ros/options.py: `option()`). What belongs to one entry point only
stays there: which episode (the path, --kind, --episode / episode_id), the CLI's
--node-name, --no-state-publisher and --foxglove, the launch file's rviz.

No ROS import here: the CLI builds its parser without rclpy.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from react_ros.errors import ReactRosError
from react_ros.options import (Option, Options, above, at_least, option, options_of,
                               regular_expression)

IMAGE_MODES = ('raw', 'h264')
# the real-time slack of `--drop-late` alone
DROP_LATE_S = 0.05
H264_HELP = ('each camera video as foxglove_msgs/CompressedVideo on '
             '<camera>/image_raw/compressed_video (Foxglove\'s Image panel shows it): the '
             'recorded packets, or re-encoded without B-frames where they cannot pass; other '
             'images stay sensor_msgs/Image')


def _remap_rules(rules: tuple[str, ...] | None) -> str | None:
    for rule in rules or ():
        src, sep, dst = rule.partition(':=')
        if not sep or not src or not dst:
            return f'expected FROM:=TO, got {rule!r}'
    return None


LOG_LEVELS = ('debug', 'info', 'warn', 'error', 'fatal')
TOPIC_NAMES = ('; relative names are resolved as ROS does (left/x is /left/x; ~/x, in play, '
               'the player node\'s private name); with --images, an image is named by its '
               'published topic (.../compressed_video) or its source Image topic')


# `--foxglove [PORT]`: the Foxglove WebSocket server's (sinks/foxglove.py) defaults
FOXGLOVE_PORT = 8765
FOXGLOVE_HOST = '127.0.0.1'


@dataclass(frozen=True)
class PlayOptions(Options):
    """Each field is `ros2 bag play`'s option of that name where it has one (the flag, its
    short form, its meaning); the names react_ros had before stay as aliases."""

    rate: float = option(1.0, 'playback rate, a factor of the recorded speed (default 1)',
                         short='-r', metavar='X', check=above(0))
    loop: bool = option(False, 'play again from the start at the end', short='-l')
    start_offset: float = option(0.0, 'start this many seconds into the episode (default 0; '
                                 'at or past its end is refused)', metavar='S',
                                 check=at_least(0))
    playback_duration: float | None = option(
        None, 'play this many seconds of the episode per pass (default: to the end; as a '
        'parameter or launch argument -1, and any negative, means that); with '
        '--playback-until-*, the later of the two ends playback, as in ros2 bag',
        metavar='S', check=above(0), unset=-1.0)
    playback_until_sec: float | None = option(
        None, 'stop after the messages stamped at or before SEC, in seconds of the stamps '
        'the topics carry (`react-ros info` shows them); before the start is refused; '
        'default: no such limit (-1, and any negative, as a parameter); not with '
        '--playback-until-nsec', metavar='SEC', check=at_least(0), unset=-1.0)
    playback_until_nsec: int | None = option(
        None, 'as --playback-until-sec, in integer nanoseconds (exact)', metavar='NSEC',
        check=at_least(0), unset=-1)
    start_paused: bool = option(False, 'start paused (resume with the ~/resume service or '
                                'the space bar)', short='-p')
    clock: float = option(100.0, '/clock rate in Hz (default 100 Hz; 0 turns it off)',
                          metavar='HZ', check=at_least(0), const=100.0)
    topics: tuple[str, ...] | None = option(
        None, 'only these topics (default: all)' + TOPIC_NAMES, metavar='T')
    regex: str = option('', 'only topics whose whole name matches this regular expression '
                        '(with --topics: those listed and those matching; default: none)',
                        short='-e',
                        metavar='REGEX', check=regular_expression)
    exclude_topics: tuple[str, ...] = option((), 'not these topics (named as --topics)',
                                             metavar='T', aliases=('--exclude',))
    exclude_regex: str = option('', 'not the topics whose whole name matches this regular '
                                'expression (default: none)', short='-x', metavar='REGEX',
                                check=regular_expression)
    remap: tuple[str, ...] = option((), 'publish topic FROM as TO (names resolved as '
                                    '--topics\'s)', short='-m', metavar='FROM:=TO',
                                    check=_remap_rules)
    image_scale: float = option(1.0, 'scale images (and K, P of camera_info) by F (default 1)',
                                metavar='F', check=above(0))
    delay: float = option(0.0, 'wait this many seconds before playing, and before each pass '
                          'again with --loop (default 0)', short='-d', metavar='S',
                          check=at_least(0))
    publish_robot_state: bool = option(False, 'publish /robot_description and the joints\' '
                                       'TF from the player itself, instead of a '
                                       'robot_state_publisher')
    wait_for_subscribers: float = option(
        2.0, 'before playing, wait at most S s for DDS discovery to match the subscribers '
        'already running (default 2; 0 turns it off)', metavar='S', check=at_least(0))
    drop_late: float | None = option(
        None, f'keep real time: drop an image later than S s (alone: {DROP_LATE_S:g}) or '
        'whose readers lag a window behind, counted and reported; by default nothing is '
        'dropped and playback slows down to what reliable subscribers take',
        metavar='S', check=at_least(0), const=DROP_LATE_S, unset=-1.0)
    images: str = option('raw', 'raw: sensor_msgs/Image (default); h264: ' + H264_HELP,
                         choices=IMAGE_MODES)
    no_reencode: bool = option(False, 'with images h264: refuse (exit 2) a video that would '
                               'have to be re-encoded (B-frames, an image scale, a partial '
                               'or unordered run of frames) instead of re-encoding it')
    log_level: str = option('info', 'the player node\'s logger level, and what react-ros '
                            'prints: info lines (the start, the keyboard, the summary) at '
                            'debug and info, warnings up to warn, errors always (default '
                            'info)', choices=LOG_LEVELS)
    quiet: bool = option(False, 'no progress line', short='-q')

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.playback_until_sec is not None and self.playback_until_nsec is not None:
            raise ReactRosError('--playback-until-sec and --playback-until-nsec '
                                '(playback_until_sec, playback_until_nsec) are mutually '
                                'exclusive: give one')

    @property
    def remap_rules(self) -> dict[str, str]:
        """--remap's FROM:=TO rules as FROM -> TO (checked when made: _remap_rules)."""
        return {src: dst for src, _, dst in (rule.partition(':=') for rule in self.remap)}

    @property
    def playback_until_ns(self) -> int | None:
        """The stamp playback stops after (--playback-until-sec/-nsec), or None."""
        if self.playback_until_nsec is not None:
            return self.playback_until_nsec
        if self.playback_until_sec is not None:
            return round(self.playback_until_sec * 1e9)
        return None

    @classmethod
    def read(cls, raw: Mapping[str, Any], refusal: Callable[[Option, Any], str]) -> PlayOptions:
        """From node parameters or launch arguments by name (what is missing keeps its
        default); `refusal(option, value)` words a value of the wrong type."""
        values = {}
        for opt in PLAY_OPTIONS:
            if opt.name in raw:
                try:
                    values[opt.name] = opt.read(raw[opt.name])
                except (TypeError, ValueError):
                    raise ReactRosError(refusal(opt, raw[opt.name])) from None
        return cls(**values)


PLAY_OPTIONS: tuple[Option, ...] = options_of(PlayOptions)
BY_NAME: dict[str, Option] = {opt.name: opt for opt in PLAY_OPTIONS}

__all__ = ['BY_NAME', 'DROP_LATE_S', 'FOXGLOVE_HOST', 'FOXGLOVE_PORT', 'H264_HELP', 'IMAGE_MODES',
           'LOG_LEVELS', 'PLAY_OPTIONS', 'PlayOptions']
