"""`react-ros play` takes `ros2 bag play`'s flags with their meaning (issue 28).

The flags are parsed to the same options as before (the old spellings stay); topic
names resolve as ROS resolves them; --images h264 topics are named the same way by
play and convert; a player run with -e, -x, --exclude-topics, -m and
--playback-until-sec publishes, omits and stops as asked (a real subscriber counts
what arrives); the keyboard's keys are printed once when stdin is a terminal. Every
player is a subprocess over real rclpy, waited for with a bound, never timed.
"""
from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from react_ros import cli
from react_ros.registry import open_episode
from react_ros.errors import ReactRosError, SinkError
from react_ros.launch_args import episode_and_parameters, launch_arguments
from react_ros.play_options import PlayOptions
from react_ros.sinks.compressed_video import episode_with_images
from react_ros.sinks.selection import TopicFilter, select_for_play, select_streams
from live_support import Listener, play_through, spawn, spawn_player

pytestmark = pytest.mark.timeout(300)

BOUND_S = 120  # a run that must end: this long at most (a busy machine, rclpy's start-up)
CLI = [sys.executable, '-m', 'react_ros.cli']
CAMERA_INFO = 'sensor_msgs/msg/CameraInfo'
KEYS_LINE = 'Press SPACE for Pause/Resume'


def _parse(*argv: str):
    return cli.build_parser().parse_args(['play', 'episode', *argv])


# --- the flags, as ros2 bag play spells them -----------------------------------------

@pytest.mark.parametrize('argv, dest, value', [
    (['-p'], 'start_paused', True),
    (['--start-paused'], 'start_paused', True),
    (['-d', '1.5'], 'delay', 1.5),  # seconds, a float, as ros2 bag's
    (['--delay', '0.25'], 'delay', 0.25),
    (['-e', '/a.*'], 'regex', '/a.*'),
    (['--regex', '/a.*'], 'regex', '/a.*'),
    (['-x', '/b.*'], 'exclude_regex', '/b.*'),
    (['--exclude-regex', '/b.*'], 'exclude_regex', '/b.*'),
    (['--exclude-topics', '/a', 'b'], 'exclude_topics', ('/a', 'b')),
    (['--exclude', '/a'], 'exclude_topics', ('/a',)),  # the name it had
    (['--disable-keyboard-controls'], 'disable_keyboard_controls', True),
    (['--playback-until-sec', '12.5'], 'playback_until_sec', 12.5),
    (['--playback-until-nsec', '12500000000'], 'playback_until_nsec', 12500000000),
    (['--log-level', 'warn'], 'log_level', 'warn'),
    (['-m', '/a:=/b'], 'remap', ('/a:=/b',)),
    (['--remap', 'a:=b', '/c:=/d'], 'remap', ('a:=b', '/c:=/d')),
    (['-l'], 'loop', True),
    (['--loop'], 'loop', True),
    (['-r', '2'], 'rate', 2.0),
    (['--rate', '0.5'], 'rate', 0.5),
    (['--topics', '/a', 'b'], 'topics', ('/a', 'b')),
    (['--clock'], 'clock', 100.0),
    (['--clock', '40'], 'clock', 40.0),
    (['--start-offset', '0.5'], 'start_offset', 0.5),
    (['--playback-duration', '1'], 'playback_duration', 1.0),
])
def test_a_ros2_bag_play_flag_sets_its_option(argv: list[str], dest: str, value: object) -> None:
    assert getattr(_parse(*argv), dest) == value


@pytest.mark.parametrize('argv, words', [
    (['--playback-until-sec', '1', '--playback-until-nsec', '5'], 'not allowed with'),
    (['--log-level', 'verbose'], 'must be one of debug, info, warn, error, fatal'),
    (['-e', '('], 'not a regular expression'),
    (['--playback-until-nsec', '1.5'], '--playback-until-nsec'),
])
def test_bad_flag_values_are_one_line_exit_2(argv: list[str], words: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        _parse(*argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err


def test_the_until_pair_is_refused_together_from_every_entry_point() -> None:
    # refused when the options are made (node parameters, launch arguments, a test alike)
    with pytest.raises(ReactRosError, match='mutually exclusive'):
        PlayOptions.read({'playback_until_sec': 1.0, 'playback_until_nsec': 5},
                         lambda opt, v: opt.name)
    # as parameters and launch arguments, -1 (any negative) is "no such limit"
    unset = PlayOptions.read({'playback_until_sec': -1.0, 'playback_until_nsec': '-1'},
                             lambda opt, v: opt.name)
    assert unset.playback_until_ns is None
    assert PlayOptions(playback_until_sec=1.5).playback_until_ns == 1_500_000_000


def test_the_new_options_are_launch_arguments(umi_episode: Path) -> None:
    values = {name: text for name, (text, _) in launch_arguments().items()}
    values.update(episode=str(umi_episode), regex='/left/.*', exclude_regex='.*info',
                  exclude_topics='/a,b', playback_until_nsec='42', log_level='error')
    _, _, params = episode_and_parameters(values)
    read = PlayOptions.read(params, lambda opt, v: opt.name)
    assert (read.regex, read.exclude_regex, read.exclude_topics, read.playback_until_ns,
            read.log_level) == ('/left/.*', '.*info', ('/a', 'b'), 42, 'error')


# --- which topics: rosbag2's filter, names as ROS resolves them ------------------------

@pytest.fixture(scope='module')
def streams(umi_episode: Path):
    return open_episode(umi_episode).streams


def _played(streams, **wanted) -> set[str]:
    return {s.topic for s in select_for_play(Path('ep'), streams, TopicFilter(**wanted),
                                             robot_state=True)}


def test_topic_selection_follows_rosbag2(streams) -> None:
    # --topics and --regex add up; whole-name matches only
    assert _played(streams, topics=('/annotations',), regex='/left/camera_info') == \
        {'/annotations', '/left/camera_info'}
    with pytest.raises(ReactRosError, match='leave no topic'):
        _played(streams, regex='camera_info')  # not the whole name of any topic
    # an exclusion (by name or by regex) wins over an inclusion
    assert _played(streams, regex='/(left|right|center)/camera_info',
                   exclude_topics=('/right/camera_info',), exclude_regex='/center/.*') == \
        {'/left/camera_info'}


def test_relative_names_resolve_from_the_root_namespace(streams) -> None:
    assert _played(streams, topics=('left/camera_info', '/annotations')) == \
        {'/left/camera_info', '/annotations'}
    everything = _played(streams)
    assert _played(streams, exclude_topics=('left/camera_info',)) == \
        everything - {'/left/camera_info'}
    # ~ is the player node's private namespace: /react_ros_player/x, which it lacks
    with pytest.raises(ReactRosError, match='/react_ros_player/camera_info'):
        _played(streams, topics=('~/camera_info',))
    with pytest.raises(ReactRosError, match=r"not a valid ROS topic name.*repeated '/'"):
        _played(streams, topics=('left//camera_info',))
    with pytest.raises(ReactRosError, match='not a valid ROS topic name.*number'):
        _played(streams, exclude_topics=('2d/points',))
    # convert resolves the same way; it has no node, so no private names
    chosen = select_streams(streams, TopicFilter(topics=('left/camera_info',)))
    assert [s.topic for s in chosen] == ['/left/camera_info']
    with pytest.raises(ReactRosError, match='private'):
        select_streams(streams, TopicFilter(topics=('~/x',)))


def test_play_and_convert_take_the_same_names_with_h264(umi_episode: Path, streams) -> None:
    """The published name (what `ros2 topic list` shows) and the source Image topic both
    name a camera, for the player (after --images) and for convert (before it)."""
    published = episode_with_images(open_episode(umi_episode), 'h264',
                                    notes=lambda _: None).streams
    for name in ('/left/image_raw/compressed_video', 'left/image_raw/compressed_video',
                 '/left/image_raw'):
        assert _played(published, topics=(name,)) == {'/left/image_raw/compressed_video'}
        assert [s.topic for s in select_streams(streams, TopicFilter(topics=(name,)),
                                                'h264')] == ['/left/image_raw']
    # the regexes too, against either name
    assert _played(published, regex='.*/compressed_video', exclude_regex='/right/.*') == \
        {'/left/image_raw/compressed_video', '/center/image_raw/compressed_video'}
    assert {s.topic for s in select_streams(
        streams, TopicFilter(regex='.*/compressed_video', exclude_regex='/right/.*'),
        'h264')} == {'/left/image_raw', '/center/image_raw'}
    # without --images h264 the published name is no topic of the episode
    with pytest.raises(SinkError, match='no such topic'):
        select_streams(streams, TopicFilter(topics=('/left/image_raw/compressed_video',)))


def test_convert_writes_what_play_publishes_for_the_same_names(umi_episode: Path,
                                                               tmp_path: Path) -> None:
    from react_ros.formats.mcap_bag import McapBag
    out = tmp_path / 'bag'
    proc = subprocess.run([*CLI, 'convert', str(umi_episode), '-o', str(out), '-q',
                           '--images', 'h264', '--topics', 'left/image_raw/compressed_video',
                           '/center/image_raw', '-x', '/center/.*'],
                          capture_output=True, text=True, timeout=BOUND_S)
    assert proc.returncode == 0, proc.stderr
    bag = McapBag(next(out.glob('*.mcap')))
    assert {c.topic for c in bag.channels()} == {'/left/image_raw/compressed_video'}


@pytest.mark.parametrize('argv, words', [
    (['--topics', 'a//b'], "--topics 'a//b': not a valid ROS topic name"),
    (['--exclude', '~/x'], 'private (~) name'),
])
def test_convert_refuses_a_bad_name_in_one_line(umi_episode: Path, tmp_path: Path,
                                                argv: list[str], words: str) -> None:
    proc = subprocess.run([*CLI, 'convert', str(umi_episode), '-o', str(tmp_path / 'b'),
                           *argv], capture_output=True, text=True, timeout=BOUND_S)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and words in lines[0], proc.stderr
    assert not (tmp_path / 'b').exists()


# --- a player run with the flags -----------------------------------------------------

def _stamps(episode_path: Path, topic: str) -> list[int]:
    stream = next(s for s in open_episode(episode_path).streams if s.topic == topic)
    return [t for t, _ in stream.open()]


def _receive(start, log: Path, expected: list[str], absent: list[str]) -> dict[str, list]:
    """What a subscriber on `expected` and `absent` topics receives from a paused player
    played to its end."""
    listener = Listener('flags_listener')
    try:
        for topic in expected + absent:
            listener.subscribe(topic, CAMERA_INFO)
        play_through(listener, start(), log, expected)
        return {t: list(listener.msgs[t]) for t in expected + absent}
    finally:
        listener.close()


def _check_run(got: dict[str, list], stamps: list[int], until_ns: int) -> None:
    wanted = [t for t in stamps if t <= until_ns]
    assert 0 < len(wanted) < len(stamps)  # the limit falls inside the episode
    assert len(got['/cam_info']) == len(wanted)
    assert [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in got['/cam_info']] \
        == wanted
    for topic in ('/left/camera_info', '/right/camera_info', '/center/camera_info'):
        assert got[topic] == [], topic  # remapped away, or excluded


def test_play_publishes_omits_and_stops_as_the_flags_say(umi_episode: Path,
                                                         tmp_path: Path) -> None:
    stamps = _stamps(umi_episode, '/left/camera_info')
    # between two stamps: a float of seconds since 1970 is exact to a few hundred ns only
    k = len(stamps) // 3
    until_ns = (stamps[k] + stamps[k + 1]) // 2
    log = tmp_path / 'play.log'

    def start():
        return spawn(['-m', 'react_ros.cli', 'play', str(umi_episode), '-p', '-q',
                      '--wait-for-subscribers', '0', '--log-level', 'info',
                      '-e', '/(left|right|center)/camera_info', '-x', '/right/.*',
                      '--exclude-topics', 'center/camera_info', '--topics', 'tracking/input/joy',
                      '-m', 'left/camera_info:=cam_info',
                      '--playback-until-sec', f'{until_ns / 1e9:.9f}'], log)
    got = _receive(start, log, ['/cam_info'],
                   ['/left/camera_info', '/right/camera_info', '/center/camera_info'])
    _check_run(got, stamps, until_ns)
    assert 'react-ros play: DDS on' in log.read_text()  # an info line, at info


def test_the_node_takes_the_same_options_as_parameters(umi_episode: Path,
                                                       tmp_path: Path) -> None:
    stamps = _stamps(umi_episode, '/left/camera_info')
    until_ns = stamps[len(stamps) // 2]
    log = tmp_path / 'node.log'

    def start():
        return spawn_player(umi_episode, log, start_paused=True, wait_for_subscribers=0,
                            regex='/(left|right|center)/camera_info', exclude_regex='/right/.*',
                            exclude_topics='center/camera_info',
                            remap='left/camera_info:=cam_info', playback_until_nsec=until_ns)
    got = _receive(start, log, ['/cam_info'],
                   ['/left/camera_info', '/right/camera_info', '/center/camera_info'])
    _check_run(got, stamps, until_ns)


def test_a_stamp_before_the_start_is_refused(umi_episode: Path) -> None:
    start = _stamps(umi_episode, '/left/camera_info')[0]
    for argv in (['play', str(umi_episode), '--playback-until-nsec', '1'],):
        proc = subprocess.run([*CLI, *argv, '--wait-for-subscribers', '0'],
                              capture_output=True, text=True, timeout=BOUND_S)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, proc.stderr
        assert 'before the start of playback' in lines[0] and str(start // 10**9) in lines[0]
    proc = subprocess.run([sys.executable, '-m', 'react_ros.node', '--ros-args', '-p',
                           f'episode:={umi_episode}', '-p', 'playback_until_sec:=3.0'],
                          capture_output=True, text=True, timeout=BOUND_S)
    assert proc.returncode == 2 and 'before the start of playback' in proc.stderr, proc.stderr


def test_log_level_warn_hides_the_info_lines(umi_episode: Path) -> None:
    def run(level: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*CLI, 'play', str(umi_episode), '--wait-for-subscribers',
                               '0', '--playback-duration', '0.2', '--topics', '/annotations',
                               '/left/camera_info', '--log-level', level],
                              capture_output=True, text=True, timeout=BOUND_S)
    summary = re.compile(r'^played .* real-time factor', re.M)
    info, warn = run('info'), run('warn')
    assert info.returncode == warn.returncode == 0, (info.stderr, warn.stderr)
    assert 'react-ros play: DDS on' in info.stderr and summary.search(info.stderr)
    assert 'react-ros play: DDS on' not in warn.stderr and not summary.search(warn.stderr)
    debug = run('debug')  # the node's logger: its debug line names what it plays
    assert 'playing /annotations, /left/camera_info' in debug.stderr, debug.stderr


# --- the keyboard ------------------------------------------------------------------------

def _play_on_a_terminal(episode: Path, *flags: str) -> str:
    """Everything a short play writes to its terminal: a pseudo-terminal is its stdin,
    stdout and stderr, and its controlling terminal, as in a shell."""
    argv = [*CLI, 'play', str(episode), '-q', '--wait-for-subscribers', '0',
            '--playback-duration', '0.2', '--topics', '/annotations', *flags]
    pid, fd = pty.fork()
    if pid == 0:  # the child: the terminal is set up; become the player
        os.execve(sys.executable, argv, os.environ.copy())
    out = b''
    deadline = time.monotonic() + BOUND_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 1.0)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal: it ended
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(fd)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, out.decode(errors='replace')
    return out.decode(errors='replace')


def test_the_keys_are_printed_once_on_a_terminal(umi_episode: Path) -> None:
    text = _play_on_a_terminal(umi_episode)
    assert text.count(KEYS_LINE) == 1, text
    for line in ('Press CURSOR_RIGHT for Play Next Message', 'Press CURSOR_UP for Increase Rate',
                 'Press CURSOR_DOWN for Decrease Rate'):
        assert line in text, text
    assert KEYS_LINE not in _play_on_a_terminal(umi_episode, '--disable-keyboard-controls')


def test_no_keys_without_a_terminal(umi_episode: Path) -> None:
    proc = subprocess.run([*CLI, 'play', str(umi_episode), '-q', '--wait-for-subscribers', '0',
                           '--playback-duration', '0.2', '--topics', '/annotations'],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=BOUND_S)
    assert proc.returncode == 0, proc.stderr
    assert KEYS_LINE not in proc.stderr + proc.stdout


@pytest.mark.parametrize('flags, why', [
    (['--read-ahead-queue-size', '1000'], 'bounded in bytes'),
    (['-s', 'mcap'], 'storage is read from the bag'),
    (['--storage', 'mcap'], 'storage is read from the bag'),
    (['--qos-profile-overrides-path', 'qos.yaml'], "each topic's QoS"),
    (['--storage-preset-profile=fastwrite'], 'recording option')])
def test_a_ros2_bag_flag_left_out_says_so_and_why(umi_episode: Path, flags: list[str],
                                                  why: str) -> None:
    """Not "unrecognized arguments": which flag, that it is ros2 bag play's, why, where to look."""
    proc = subprocess.run([*CLI, 'play', str(umi_episode), *flags], capture_output=True,
                          text=True, timeout=BOUND_S)
    assert proc.returncode == 2 and proc.stdout == ''
    (line,) = proc.stderr.splitlines()
    flag = flags[0].split('=')[0]
    assert line.startswith(f'error: react-ros does not take {flag} (ros2 bag play\'s): ')
    assert why in line and 'react-ros play --help' in line


def test_a_list_flag_repeated_adds_its_words() -> None:
    """`-m a:=b -m c:=d` is `-m a:=b c:=d` (the repeat kept only the last before), and a
    list option left alone still equals its default (another kind's is not "set")."""
    from react_ros.play_options import PlayOptions
    args = _parse('-m', '/a:=/b', '-m', '/c:=/d', '--topics', '/x', '--topics', '/y', '/z',
                  '--flow-step', '1', '--flow-step', '4')
    options = PlayOptions.from_args(args)
    assert options.remap_rules == {'/a': '/b', '/c': '/d'}
    assert options.topics == ('/x', '/y', '/z')
    assert args.flow_step == ('1', '4')
    alone = _parse()
    assert alone.flow_step == () and alone.exclude_topics == () and alone.topics is None
