"""The live player over real DDS: a player subprocess, a state publisher, and this test's node.

Never asserts wall-clock durations: every wait is a generous upper bound.
"""
from __future__ import annotations

import signal
from pathlib import Path

import pytest
from rclpy.serialization import deserialize_message
from rosbag2_interfaces import srv

from live_support import PLAYER, Listener, spawn, spawn_player, stop
from react_ros.registry import open_episode
from react_ros.ros import qos
from react_ros.ros.msgs import message_class, stamp, to_ns
from react_ros.streams import Role, merge

# A hang (a lost DDS match, a stuck player) fails the test instead of the whole run.
pytestmark = pytest.mark.timeout(240)

RECORDED = [f'/{side}/perception_interface/{kind}/state'
            for side in ('left', 'center', 'right') for kind in ('pose', 'camera')] + \
    ['/left/perception_interface/gripper/state', '/right/perception_interface/gripper/state',
     '/tracking/meta_interface/tracking_status/state']
CAMERAS = [f'/{cam}/{kind}' for cam in ('left', 'center', 'right')
           for kind in ('image_raw', 'camera_info')]


@pytest.fixture(scope='module')
def episode(umi_episode: Path):
    return open_episode(umi_episode)


@pytest.fixture(scope='module')
def expected(episode) -> dict[str, list]:
    """Stamps (or messages, where they have none) per data topic, in the player's order."""
    out: dict[str, list[int]] = {}
    for s in episode.streams:
        if s.role is Role.DATA:
            out.setdefault(s.topic, []).extend(_key(_message(s, m)) for _, m in s.open())
    return out


@pytest.fixture(scope='module')
def first_events(episode) -> list[tuple]:
    """(t_ns, key, topic) of every data message in merged order."""
    # all data streams in the episode's order: the player's order, ties included
    data = [s for s in episode.streams if s.role is Role.DATA]
    evs = []
    for ev in merge([s.open() for s in data]):
        evs.append((ev.t_ns, _key(_message(data[ev.stream_idx], ev.msg)),
                    data[ev.stream_idx].topic))
    return evs


def _subscribe_data(listener: Listener, episode) -> list[str]:
    topics = {}
    for s in episode.streams:
        if s.role is Role.DATA:
            topics[s.topic] = s.msg_type
    for topic, msg_type in topics.items():
        listener.subscribe(topic, msg_type)
    return list(topics)


def _stamp_of(msg) -> int:
    if hasattr(msg, 'header'):
        return to_ns(msg.header.stamp)
    if hasattr(msg, 'transforms'):
        return to_ns(msg.transforms[0].header.stamp)
    raise AssertionError(f'no stamp on {type(msg).__name__}')


def _message(stream, msg):
    """The message object, where a stream yields recorded CDR bytes."""
    if isinstance(msg, bytes):
        return deserialize_message(msg, message_class(stream.msg_type))
    return msg


def _key(msg):
    """What identifies a message: its stamp, or the whole message where it has none."""
    try:
        return _stamp_of(msg)
    except AssertionError:
        return msg


@pytest.fixture
def listener():
    node = Listener()
    yield node
    node.close()


def test_plays_every_topic_with_the_episode_stamps(episode, expected, listener, tmp_path):
    topics = _subscribe_data(listener, episode)
    listener.subscribe('/clock', 'rosgraph_msgs/msg/Clock', qos.CLOCK)
    log = tmp_path / 'player.log'
    # through the CLI, which also starts react_ros's robot_state_publisher
    player = spawn(['-m', 'react_ros.cli', 'play', str(episode.path), '--start-paused',
                    '--rate', '0.5', '--quiet'], log)
    try:
        assert listener.wait_for_publishers(topics + ['/clock']), 'player topics not discovered'
        # Late joiners of the latched topics the state publisher offers:
        listener.subscribe('/tf_static', 'tf2_msgs/msg/TFMessage', qos.LATCHED)
        listener.subscribe('/robot_description', 'std_msgs/msg/String', qos.LATCHED)
        listener.call(f'/{PLAYER}/resume', srv.Resume)
        assert listener.spin_until(lambda: player.poll() is not None, 120), 'player never ended'
        listener.spin_for(1.0)
        # the CLI took its state publisher down with it
        assert listener.spin_until(
            lambda: 'robot_state_publisher' not in listener.node.get_node_names(), 30)
    finally:
        assert stop(player) == 0, log.read_text()

    for topic in RECORDED + CAMERAS + ['/tf', '/joint_states', '/annotations']:
        assert topic in expected, topic
    for topic, stamps in expected.items():
        got = [_key(m) for m in listener.msgs[topic]
               if not (topic == '/tf' and m.transforms[0].child_frame_id.endswith('finger'))]
        missing = next((i for i, (a, b) in enumerate(zip(got, stamps)) if a != b), len(got))
        assert got == stamps, (f'{topic}: {len(got)} received, {len(stamps)} expected, '
                               f'first difference at #{missing}; player log: {log.read_text()}')
    for cam in ('left', 'center', 'right'):
        img = listener.msgs[f'/{cam}/image_raw'][0]
        info = listener.msgs[f'/{cam}/camera_info'][0]
        assert img.header.frame_id == info.header.frame_id == f'{cam}_color_optical_frame'
        assert (img.width, img.height, img.encoding) == (320, 200, 'rgb8')

    frames = {ts.child_frame_id for m in listener.msgs['/tf'] for ts in m.transforms}
    assert {'quest_hmd', 'quest_left_aim', 'quest_right_aim'} <= frames
    assert {'left_left_finger', 'left_right_finger', 'right_left_finger',
            'right_right_finger'} <= frames  # from the state publisher (mimics included)
    statics = {ts.child_frame_id for m in listener.msgs['/tf_static'] for ts in m.transforms}
    assert {'quest_origin', 'left_color_optical_frame', 'left_base_link'} <= statics
    assert listener.msgs['/robot_description'][-1].data == episode.urdf

    clock = [to_ns(m.clock) for m in listener.msgs['/clock']]
    assert clock and clock == sorted(clock)
    assert episode.start_ns <= clock[0] and clock[-1] <= episode.end_ns


def test_services(episode, first_events, listener, tmp_path):
    topics = _subscribe_data(listener, episode)
    listener.subscribe('/clock', 'rosgraph_msgs/msg/Clock', qos.CLOCK)

    def data() -> dict[str, list]:
        return {t: m for t, m in listener.msgs.items() if m and t != '/clock'}
    player = spawn_player(episode.path, tmp_path / 'player.log', start_paused=True)
    try:
        assert listener.wait_for_publishers(topics)
        assert listener.call(f'/{PLAYER}/is_paused', srv.IsPaused).paused

        # play_next publishes exactly the first message of the merged stream
        assert listener.call(f'/{PLAYER}/play_next', srv.PlayNext).success
        assert listener.spin_until(lambda: listener.count(topics) >= 1, timeout=20)
        listener.spin_for(0.5)  # and nothing after it
        assert listener.count(topics) == 1
        ((topic, msgs),) = data().items()
        assert (_key(msgs[0]), topic) == first_events[0][1:]

        assert listener.call(f'/{PLAYER}/set_rate', srv.SetRate, rate=2.5).success
        assert listener.call(f'/{PLAYER}/get_rate', srv.GetRate).rate == 2.5
        assert not listener.call(f'/{PLAYER}/set_rate', srv.SetRate, rate=0.0).success
        assert listener.call(f'/{PLAYER}/get_rate', srv.GetRate).rate == 2.5

        # seek to the middle, then the next message is the first at/after that time
        middle = first_events[len(first_events) // 2][0]
        assert listener.call(f'/{PLAYER}/seek', srv.Seek, time=stamp(middle)).success
        assert not listener.call(f'/{PLAYER}/seek', srv.Seek,
                                 time=stamp(episode.end_ns + 10**9)).success
        listener.spin_for(0.5)
        listener.clear()
        assert listener.call(f'/{PLAYER}/play_next', srv.PlayNext).success
        # paused: the one message, whenever a busy machine delivers it, and no other
        assert listener.spin_until(lambda: listener.count(topics) >= 1, timeout=20)
        listener.spin_for(0.5)
        got = [(_key(m[0]), t) for t, m in data().items()]
        assert got == [next(e for e in first_events if e[0] >= middle)[1:]]

        listener.clear()
        assert listener.call(f'/{PLAYER}/burst', srv.Burst, num_messages=5).actually_burst == 5
        assert listener.spin_until(lambda: listener.count(topics) >= 5, timeout=20)
        listener.spin_for(0.5)
        assert listener.count(topics) == 5

        # slowly from here, so that it still plays when it is paused again below
        assert listener.call(f'/{PLAYER}/set_rate', srv.SetRate, rate=0.25).success
        listener.call(f'/{PLAYER}/resume', srv.Resume)
        assert not listener.call(f'/{PLAYER}/is_paused', srv.IsPaused).paused
        assert not listener.call(f'/{PLAYER}/play_next', srv.PlayNext).success  # not paused
        assert listener.spin_until(lambda: listener.count(topics) > 50, 30)
        listener.call(f'/{PLAYER}/toggle_paused', srv.TogglePaused)
        assert listener.call(f'/{PLAYER}/is_paused', srv.IsPaused).paused
        assert player.poll() is None, 'the episode ended before the pause'

        # Paused means paused: /clock holds the time it paused at, and nothing stamped
        # later ever arrives (what went out before may still come late: reliable
        # repairs wait for a heartbeat on a busy machine).
        def held() -> bool:
            clock = [to_ns(m.clock) for m in listener.msgs['/clock'][-20:]]
            return len(clock) == 20 and len(set(clock)) == 1
        assert listener.spin_until(held, 30), '/clock does not hold still'
        paused_at = to_ns(listener.msgs['/clock'][-1].clock)
        assert middle < paused_at < episode.end_ns
        listener.spin_for(1.5)
        stamped = [_stamp_of(m) for t in topics for m in listener.msgs[t]
                   if hasattr(m, 'header') or hasattr(m, 'transforms')]
        assert stamped and max(stamped) <= paused_at
    finally:
        assert stop(player) == 0, (tmp_path / 'player.log').read_text()


def test_loop_jumps_clock_back_and_republishes_latched(episode, listener, tmp_path):
    listener.subscribe('/clock', 'rosgraph_msgs/msg/Clock', qos.CLOCK)
    listener.subscribe('/robot_description', 'std_msgs/msg/String', qos.LATCHED)
    listener.subscribe('/tf_static', 'tf2_msgs/msg/TFMessage', qos.LATCHED)
    # The player publishes the robot state itself here: its latched topics are
    # stamped at the episode start, before the start offset.
    player = spawn_player(episode.path, tmp_path / 'player.log', loop=True, rate=4.0,
                          start_offset=0.5, publish_robot_state=True,
                          topics='/annotations,/robot_description,/tf_static')
    try:
        def jumped_back() -> bool:
            clock = [to_ns(m.clock) for m in listener.msgs['/clock']]
            return any(b < a for a, b in zip(clock, clock[1:]))
        assert listener.spin_until(jumped_back, 60), 'no loop seen on /clock'
        listener.spin_for(1.0)
        clock = [to_ns(m.clock) for m in listener.msgs['/clock']]
        assert min(clock) >= episode.start_ns + 500_000_000  # the start offset holds
        # latched topics skipped by the offset went out anyway, and again after the loop
        assert len(listener.msgs['/robot_description']) >= 2
        assert listener.msgs['/robot_description'][0].data == episode.urdf
        assert len(listener.msgs['/tf_static']) >= 2
        assert {'quest_origin', 'left_base_link'} <= \
            {ts.child_frame_id for ts in listener.msgs['/tf_static'][-1].transforms}
        # --topics left /clock in, and only the chosen topics went out
        assert listener.node.count_publishers('/tf') == 0
    finally:
        assert stop(player) == 0, (tmp_path / 'player.log').read_text()


def test_sigint_stops_cleanly(episode, listener, tmp_path):
    listener.subscribe('/clock', 'rosgraph_msgs/msg/Clock', qos.CLOCK)
    player = spawn_player(episode.path, tmp_path / 'player.log', loop=True)
    try:
        assert listener.spin_until(lambda: listener.msgs['/clock'], 60)
    finally:
        player.send_signal(signal.SIGINT)
        assert player.wait(30) == 0, (tmp_path / 'player.log').read_text()


def test_bad_episode_exits_2(tmp_path):
    log = tmp_path / 'player.log'
    proc = spawn_player(tmp_path / 'missing', log)
    assert proc.wait(60) == 2
    lines = log.read_text().strip().splitlines()
    assert len(lines) == 1 and 'missing' in lines[0], lines


KEYBOARD_PLAYER = '''
import sys
from pathlib import Path
from react_ros.registry import open_episode
from react_ros.play_options import PlayOptions
from react_ros.sinks.live import Player
episode = open_episode(Path(sys.argv[1]))
sys.exit(Player(episode, PlayOptions(start_paused=True, loop=True, quiet=True)).run())
'''


def test_keyboard_controls(episode, listener, tmp_path):
    import fcntl
    import os
    import pty
    import subprocess
    import sys
    import termios

    master, slave = pty.openpty()

    def controlling_tty() -> None:  # runs in the child, after setsid
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    log = (tmp_path / 'player.log').open('wb')
    player = subprocess.Popen([sys.executable, '-c', KEYBOARD_PLAYER, str(episode.path)],
                              stdin=slave, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True, preexec_fn=controlling_tty)
    os.close(slave)
    try:
        topics = _subscribe_data(listener, episode)
        assert listener.wait_for_publishers(topics)
        assert listener.call(f'/{PLAYER}/is_paused', srv.IsPaused).paused
        os.write(master, b'\x1b[A')  # up: rate + 0.1
        assert listener.spin_until(
            lambda: abs(listener.call(f'/{PLAYER}/get_rate', srv.GetRate).rate - 1.1) < 1e-9, 20)
        os.write(master, b'\x1b[C')  # right: exactly one message
        assert listener.spin_until(lambda: listener.count() >= 1, 20)
        listener.spin_for(1.0)
        assert listener.count() == 1
        os.write(master, b' ')  # space: resume
        assert listener.spin_until(lambda: listener.count() > 20, 20)
        assert not listener.call(f'/{PLAYER}/is_paused', srv.IsPaused).paused
    finally:
        assert stop(player) == 0, (tmp_path / 'player.log').read_text()
        log.close()
    # the terminal is back in canonical mode
    assert termios.tcgetattr(master)[3] & termios.ICANON
    os.close(master)


def test_survives_a_subscriber_that_never_reads(episode, listener, tmp_path):
    """A reliable subscriber that never takes its messages must not stall or kill the player."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    topics = sorted({s.topic for s in episode.streams if s.role is Role.DATA})
    # A second node, never spun: its readers fill up and stay full. `listener`
    # (spun) only finds the player and resumes it.
    slow = Listener('slow_listener')
    for s in episode.streams:
        if s.role is Role.DATA:
            slow.subscribe(s.topic, s.msg_type,
                           QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE))
    log = tmp_path / 'player.log'
    player = spawn_player(episode.path, log, rate=5.0, start_paused=True)
    try:
        assert listener.wait_for_publishers(topics)
        listener.call(f'/{PLAYER}/resume', srv.Resume)
        player.wait(120)
    finally:
        slow.close()
        assert stop(player) == 0, log.read_text()


def test_duration_exclude_remap(episode, expected, listener, tmp_path):
    listener.subscribe('/js', 'sensor_msgs/msg/JointState')
    listener.subscribe('/joint_states', 'sensor_msgs/msg/JointState')
    listener.subscribe('/left/image_raw', 'sensor_msgs/msg/Image')
    log = tmp_path / 'player.log'
    player = spawn_player(episode.path, log, start_paused=True, playback_duration=0.5,
                          exclude_topics='/tf', remap='/joint_states:=/js')
    try:
        assert listener.wait_for_publishers(['/js', '/left/image_raw'])
        listener.spin_for(1.0)
        assert listener.node.count_publishers('/tf') == 0  # excluded
        assert listener.node.count_publishers('/joint_states') == 0  # remapped
        listener.call(f'/{PLAYER}/resume', srv.Resume)
        assert listener.spin_until(lambda: player.poll() is not None, 60)
        listener.spin_for(0.5)
    finally:
        assert stop(player) == 0, log.read_text()
    end = episode.start_ns + 500_000_000
    assert [_key(m) for m in listener.msgs['/js']] == \
        [t for t in expected['/joint_states'] if t <= end]
    assert [_key(m) for m in listener.msgs['/left/image_raw']] == \
        [t for t in expected['/left/image_raw'] if t <= end]
    assert listener.msgs['/joint_states'] == []


def test_state_publisher_republishes_latched_after_loop_and_backward_seek(
        episode, listener, tmp_path):
    """react_ros's robot_state_publisher: /robot_description and /tf_static again when /clock
    jumps back (a loop wrap, then a backward seek), to a subscriber that was there before.

    The state publisher stamps /tf_static with its clock, so each re-publication is
    told apart by its stamp: before any /clock 0, after a loop the episode's start
    (or a tick later), after the seek (paused) exactly the seek's target.
    """
    listener.subscribe('/clock', 'rosgraph_msgs/msg/Clock', qos.CLOCK)
    listener.subscribe('/robot_description', 'std_msgs/msg/String', qos.LATCHED)
    listener.subscribe('/tf_static', 'tf2_msgs/msg/TFMessage', qos.LATCHED)
    log = tmp_path / 'player.log'
    # through the CLI, which starts the state publisher; only /annotations as data
    player = spawn(['-m', 'react_ros.cli', 'play', str(episode.path), '--loop', '--rate', '4',
                    '--topics', '/annotations', '--quiet'], log)

    def descriptions() -> int:
        return len(listener.msgs['/robot_description'])

    def static_at(lo: int, hi: int) -> bool:
        """A complete /tf_static stamped within [lo, hi] arrived."""
        for m in listener.msgs['/tf_static']:
            frames = {ts.child_frame_id for ts in m.transforms}
            if {'quest_origin', 'left_base_link'} <= frames and \
                    all(lo <= to_ns(ts.header.stamp) <= hi for ts in m.transforms):
                return True
        return False

    def clock() -> list[int]:
        return [to_ns(m.clock) for m in listener.msgs['/clock']]
    start, end = episode.start_ns, episode.end_ns
    try:
        assert listener.spin_until(lambda: descriptions() and listener.msgs['/tf_static'], 60), \
            log.read_text()
        before = descriptions()
        # a loop wrap: /clock goes back to the start, and both come again
        assert listener.spin_until(lambda: any(b < a for a, b in zip(clock(), clock()[1:])),
                                   60), 'no loop seen on /clock'
        assert listener.spin_until(lambda: static_at(start, end) and descriptions() > before,
                                   30), log.read_text()
        assert listener.msgs['/robot_description'][-1].data == episode.urdf

        # paused; forward to the middle (no jump back), then back to a quarter
        listener.call(f'/{PLAYER}/pause', srv.Pause)
        middle, quarter = (start + end) // 2, start + (end - start) // 4
        assert listener.call(f'/{PLAYER}/seek', srv.Seek, time=stamp(middle)).success
        assert listener.spin_until(lambda: clock()[-1] == middle, 30)
        before = descriptions()
        assert not static_at(quarter, quarter)
        assert listener.call(f'/{PLAYER}/seek', srv.Seek, time=stamp(quarter)).success
        assert listener.spin_until(lambda: static_at(quarter, quarter) and descriptions() > before,
                                   30), log.read_text()
        assert listener.msgs['/robot_description'][-1].data == episode.urdf
    finally:
        assert stop(player) == 0, log.read_text()


def test_unknown_topic_exits_2_naming_it(episode, tmp_path):
    """As `convert` does: a --topics/--exclude name the episode lacks is a typo, not a wish."""
    log = tmp_path / 'player.log'
    proc = spawn(['-m', 'react_ros.cli', 'play', str(episode.path), '--quiet',
                  '--topics', '/tf', '/nope', '--exclude', '/nix'], log)
    assert proc.wait(60) == 2, log.read_text()
    lines = log.read_text().strip().splitlines()
    assert len(lines) == 1 and 'no such topic' in lines[0], lines
    assert 'no such topic in the episode: /nope, /nix (it has ' in lines[0], lines
    # the node the same way; and /clock is no mistake
    proc = spawn_player(episode.path, log, exclude_topics='/nope')
    assert proc.wait(60) == 2, log.read_text()
    assert '/nope' in log.read_text().strip().splitlines()[-1]
    proc = spawn_player(episode.path, log, topics='/annotations', exclude_topics='/clock',
                        playback_duration=0.1, wait_for_subscribers=0)
    assert proc.wait(60) == 0, log.read_text()
