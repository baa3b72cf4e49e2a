"""The live player over real DDS: a player subprocess, a state publisher, and this test's node.

Never asserts wall-clock durations: every wait is a generous upper bound.
"""
from __future__ import annotations

import signal
from pathlib import Path

import pytest
from rosbag2_interfaces import srv

from live_support import PLAYER, Listener, spawn_player, stop
from react_ros.adapters import open_episode
from react_ros.ros import qos
from react_ros.ros.msgs import stamp, to_ns
from react_ros.ros.state_publisher import start_state_publisher
from react_ros.streams import Role, merge

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
            out.setdefault(s.topic, []).extend(_key(m) for _, m in s.open())
    return out


@pytest.fixture(scope='module')
def first_events(episode) -> list[tuple]:
    """(t_ns, key, topic) of every data message in merged order."""
    # all data streams in the episode's order: the player's order, ties included
    data = [s for s in episode.streams if s.role is Role.DATA]
    evs = []
    for ev in merge([s.open() for s in data]):
        evs.append((ev.t_ns, _key(ev.msg), data[ev.stream_idx].topic))
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
    rsp = start_state_publisher(episode.urdf)
    log = tmp_path / 'player.log'
    player = spawn_player(episode.path, log, start_paused=True, rate=0.5)
    try:
        assert listener.wait_for_publishers(topics + ['/clock']), 'player topics not discovered'
        # Late joiners of the latched topics the state publisher offers:
        listener.subscribe('/tf_static', 'tf2_msgs/msg/TFMessage', qos.LATCHED)
        listener.subscribe('/robot_description', 'std_msgs/msg/String', qos.LATCHED)
        listener.call(f'/{PLAYER}/resume', srv.Resume)
        assert listener.spin_until(lambda: player.poll() is not None, 120), 'player never ended'
        listener.spin_for(1.0)
    finally:
        assert stop(player) == 0, (tmp_path / 'player.log').read_text()
        rsp.stop()

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
    player = spawn_player(episode.path, tmp_path / 'player.log', start_paused=True)
    try:
        assert listener.wait_for_publishers(topics)
        assert listener.call(f'/{PLAYER}/is_paused', srv.IsPaused).paused

        # play_next publishes exactly the first message of the merged stream
        assert listener.call(f'/{PLAYER}/play_next', srv.PlayNext).success
        listener.spin_for(1.0)
        assert listener.count() == 1
        ((topic, msgs),) = [(t, m) for t, m in listener.msgs.items() if m]
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
        listener.spin_for(1.0)
        got = [(_key(m[0]), t) for t, m in listener.msgs.items() if m]
        assert got == [next(e for e in first_events if e[0] >= middle)[1:]]

        listener.clear()
        assert listener.call(f'/{PLAYER}/burst', srv.Burst, num_messages=5).actually_burst == 5
        listener.spin_for(1.0)
        assert listener.count() == 5

        listener.call(f'/{PLAYER}/resume', srv.Resume)
        assert not listener.call(f'/{PLAYER}/is_paused', srv.IsPaused).paused
        assert not listener.call(f'/{PLAYER}/play_next', srv.PlayNext).success  # not paused
        assert listener.spin_until(lambda: listener.count() > 50, 30)
        listener.call(f'/{PLAYER}/toggle_paused', srv.TogglePaused)
        assert listener.call(f'/{PLAYER}/is_paused', srv.IsPaused).paused
        listener.spin_for(0.5)
        before = listener.count()
        listener.spin_for(1.0)
        assert listener.count() == before  # paused means paused
    finally:
        assert stop(player) == 0, (tmp_path / 'player.log').read_text()


def test_loop_jumps_clock_back_and_republishes_latched(episode, listener, tmp_path):
    listener.subscribe('/clock', 'rosgraph_msgs/msg/Clock', qos.CLOCK)
    listener.subscribe('/annotations', 'std_msgs/msg/String')
    player = spawn_player(episode.path, tmp_path / 'player.log', loop=True, rate=4.0,
                          start_offset=0.5, topics='/annotations')
    try:
        def jumped_back() -> bool:
            clock = [to_ns(m.clock) for m in listener.msgs['/clock']]
            return any(b < a for a, b in zip(clock, clock[1:]))
        assert listener.spin_until(jumped_back, 60), 'no loop seen on /clock'
        clock = [to_ns(m.clock) for m in listener.msgs['/clock']]
        assert min(clock) >= episode.start_ns + 500_000_000  # the start offset holds
        # --topics left /clock in, and only the chosen data topic went out
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
