"""`react-ros play BAG` and `info BAG`: bags through the same player, live on DDS.

A bag written by rosbags' Writer (not react_ros's), in one file and split over two, and
one of react_ros's own: a subscriber gets every message of every playable topic, in the
bag's order, with the bag's own stamps; a latched topic comes again after a seek.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from live_support import PLAYER, Listener, play_through, spawn, stop
from rosbag_support import foreign_bag, typestore
from rosbag_support import expected as foreign_messages

from react_ros import cli
from react_ros.ros import qos
from react_ros.ros.msgs import stamp, to_ns

TOPICS = {'/chatter': 'std_msgs/msg/String', '/tf': 'tf2_msgs/msg/TFMessage',
          '/camera/image_raw': 'sensor_msgs/msg/Image'}


def _player(bag: Path, log: Path, *args: str):
    return spawn(['-m', 'react_ros.cli', 'play', str(bag), '--start-paused', *args], log)


def _played_through(bag: Path, topics: dict[str, str], log: Path) -> Listener:
    """`play BAG --start-paused` to its end (exit 0) with a subscriber on `topics`."""
    listener = Listener()
    try:
        for topic, msg_type in topics.items():
            listener.subscribe(topic, msg_type)
        play_through(listener, _player(bag, log), log, topics)
    finally:
        listener.close()
    return listener


@pytest.mark.parametrize('files,metadata', [(1, True), (2, True), (2, False)],
                         ids=['one file', 'two files', 'two files without metadata.yaml'])
def test_a_foreign_bag_plays_every_message_in_order_with_its_stamps(tmp_path: Path,
                                                                    files: int,
                                                                    metadata: bool) -> None:
    """Without metadata.yaml (issue 39) the MCAP summaries say what it said."""
    bag = foreign_bag(tmp_path / 'bag', files=files)
    if not metadata:
        (bag / 'metadata.yaml').unlink()
    want = [(topic, msg) for topic, _, _, msg in foreign_messages(typestore())
            if topic in TOPICS]
    log = tmp_path / 'player.log'
    listener = _played_through(bag, TOPICS, log)
    text = log.read_text()
    assert '/gizmo' in text and 'not installed' in text, text
    assert ('no metadata.yaml' in text) == (not metadata), text
    for topic in TOPICS:
        sent = [m for t, m in want if t == topic]
        got = listener.msgs[topic]
        assert len(got) == len(sent), (topic, len(got), len(sent))
        if topic == '/chatter':
            assert [m.data for m in got] == [m.data for m in sent]
        elif topic == '/tf':
            assert [to_ns(m.transforms[0].header.stamp) for m in got] == \
                [m.transforms[0].header.stamp.sec * 10**9 + m.transforms[0].header.stamp.nanosec
                 for m in sent]
            assert [m.transforms[0].transform.translation.x for m in got] == \
                [m.transforms[0].transform.translation.x for m in sent]
        else:
            assert [to_ns(m.header.stamp) for m in got] == \
                [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in sent]
            assert [bytes(m.data) for m in got] == [bytes(m.data) for m in sent]


def test_our_own_bag_plays_every_message_in_order_with_its_stamps(tmp_path: Path,
                                                                  umi_episode: Path) -> None:
    """A bag react_ros wrote (lz4 chunks, metadata version 8) through the same player."""

    from react_ros.registry import open_episode
    from react_ros.rosbag2.reader import Rosbag2
    from react_ros.rosbag2.writer import write_bag
    bag = tmp_path / 'bag'
    write_bag(open_episode(umi_episode), bag)
    topics = {'/left/image_raw': 'sensor_msgs/msg/Image',
              '/left/perception_interface/pose/state': 'geometry_msgs/msg/PoseStamped',
              '/joint_states': 'sensor_msgs/msg/JointState'}
    recorded = {t: [m.log_time_ns for m in Rosbag2(bag).messages([t])] for t in topics}
    listener = _played_through(bag, topics, tmp_path / 'player.log')
    for topic in topics:
        # react_ros stamps each message's header with the time it logs it at
        assert [to_ns(m.header.stamp) for m in listener.msgs[topic]] == recorded[topic], topic


def test_a_latched_topic_comes_again_after_a_seek(tmp_path: Path) -> None:
    from rosbag2_interfaces import srv
    bag = foreign_bag(tmp_path / 'bag')
    log = tmp_path / 'player.log'
    player = _player(bag, log, '--rate', '0.5')  # no --loop: only the seek re-sends it
    listener = Listener()
    try:
        listener.subscribe('/chatter', TOPICS['/chatter'])
        assert listener.wait_for_publishers(['/chatter', '/tf_static']), log.read_text()
        listener.subscribe('/tf_static', 'tf2_msgs/msg/TFMessage', qos.LATCHED)
        listener.call(f'/{PLAYER}/resume', srv.Resume)
        assert listener.spin_until(lambda: len(listener.msgs['/tf_static']) >= 1, 20), \
            'the latched /tf_static never came'
        listener.call(f'/{PLAYER}/pause', srv.Pause)
        listener.spin_for(0.3)  # what was under way before the pause
        before = len(listener.msgs['/tf_static'])
        middle = 1_700_000_000_000_000_000 + 12 * 100_000_000
        assert listener.call(f'/{PLAYER}/seek', srv.Seek, time=stamp(middle)).success
        listener.clear()
        listener.call(f'/{PLAYER}/resume', srv.Resume)
        assert listener.spin_until(lambda: len(listener.msgs['/tf_static']) > 0, 20), \
            f'no /tf_static after the seek ({before} before it)'
        assert listener.spin_until(lambda: len(listener.msgs['/chatter']) > 0, 20)
        assert listener.msgs['/chatter'][0].data == 'hello 12'
        (tf,) = listener.msgs['/tf_static'][-1].transforms
        assert tf.child_frame_id == 'camera_optical_frame'
    finally:
        assert stop(player) == 0, log.read_text()
        listener.close()


def test_info_of_a_bag_prints_what_ros2_bag_info_does_and_more(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bag = foreign_bag(tmp_path / 'bag', files=2)
    assert cli.main(['info', str(bag)]) == 0
    out = capsys.readouterr().out
    for words in ('Files:             bag.mcap, bag_1.mcap', 'Messages:          ',
                  'Topic: /camera/image_raw | Type: sensor_msgs/msg/Image | Count: 10 | '
                  'Rate: 5 Hz', 'image: 8x6 rgb8', 'frame_id: camera_optical_frame',
                  'TF tree:', '  world\n    base_link\n      camera_optical_frame (static)'):
        assert words in out, out


@pytest.mark.parametrize('args,words', [
    (['convert', '{bag}', '-o', '{tmp}/out'], 'is a rosbag2 bag already'),
    (['play', '{bag}', '--image-scale', '0.5'], '--image-scale'),
    (['info', '{bag}', '--segment', '1'], '--segment'),
])
def test_what_does_not_apply_to_a_bag_is_refused_in_one_line(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], args: list[str],
        words: str) -> None:
    bag = foreign_bag(tmp_path / 'bag')
    capfd.readouterr()
    code = cli.main([a.format(bag=bag, tmp=tmp_path) for a in args])
    out, err = capfd.readouterr()
    assert code == 2 and len((out + err).splitlines()) == 1 and words in err, out + err
    assert not (tmp_path / 'out').exists()
