"""Delivery over real DDS on a busy machine: nothing lost to a subscriber that was there first.

A subscriber to every topic of the episode's bag starts before the player; while
every core is kept busy by CPU-burning processes (bounded in time, killed at the
end), `react-ros play` plays at 1.0x, and every data topic must arrive complete:
as many messages as the bag of the same episode holds. Without the discovery wait
(`--wait-for-subscribers 0`) the React sample lost its first 0.3-1.7 s in 3 of 4 runs.

The wait is given 4 s here, not the default 2: a participant that was running
before the player is found only at its next announcement when the answer to the
player's first one goes astray (ros/discovery.py), and Fast DDS announces every
3 s. With the default, the React sample (no state publisher to start, so the
player's participant is young when the wait begins) lost its first 0.3 s in 1 of
6 runs.

Never asserts wall-clock durations: every wait is for an event, with a bound.
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from rclpy.serialization import deserialize_message
from react_support import EPISODE, react_release

from live_support import Listener, spawn, stop
from react_ros.registry import EpisodeOptions, open_episode
from react_ros.formats.mcap_bag import McapBag
from react_ros.ros import qos
from react_ros.ros.msgs import message_class
from react_ros.rosbag2.writer import write_bag
from react_ros.streams import Role

pytestmark = pytest.mark.timeout(240)

WAIT_S = 4.0  # > discovery.MIN_AGE_S: settles as soon as the player's participant is that old
BURN_SECONDS = 90  # an upper bound; the burners are killed as soon as the test is done
BURN = 'import sys, time\nend = time.monotonic() + float(sys.argv[1])\n' \
       'while time.monotonic() < end:\n    pass\n'
TF = 'tf2_msgs/msg/TFMessage'


class Burners:
    """One busy-looping process per core, each ending by itself after `seconds`."""

    def __init__(self, seconds: float) -> None:
        self.procs = [subprocess.Popen([sys.executable, '-c', BURN, str(seconds)])
                      for _ in range(os.cpu_count() or 2)]

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            p.wait()


def _robot_state_frames(episode) -> set[str]:
    """Child frames of what robot_state_publisher sends on /tf (not the player)."""
    frames: set[str] = set()
    for s in episode.streams:
        if s.role is Role.ROBOT_STATE and s.msg_type == TF:
            for _, msg in s.open():
                frames |= {ts.child_frame_id for ts in msg.transforms}
    return frames


def _is_robot_state_tf(msg, frames: set[str]) -> bool:
    return bool(frames) and {ts.child_frame_id for ts in msg.transforms} <= frames


def _bag_counts(episode, out: Path) -> tuple[dict[str, int], dict[str, str]]:
    """Messages per data topic in the episode's converted bag, and every topic's type."""
    write_bag(episode, out)
    (mcap,) = out.glob('*.mcap')
    bag = McapBag(mcap)
    types = {c.topic: c.schema_name for c in bag.channels()}
    data = {s.topic for s in episode.streams if s.role is Role.DATA}
    frames = _robot_state_frames(episode)
    counts: Counter[str] = Counter()
    for raw in bag.messages():
        if raw.topic not in data:
            continue
        if raw.schema_name == TF and _is_robot_state_tf(
                deserialize_message(raw.data, message_class(TF)), frames):
            continue  # on /tf, but robot_state_publisher's part
        counts[raw.topic] += 1
    return dict(counts), types


def _play_everything_while_busy(episode, tmp_path: Path, extra: list[str]) -> None:
    expected, types = _bag_counts(episode, tmp_path / 'bag')
    assert expected and all(expected.values())
    frames = _robot_state_frames(episode)
    listener = Listener('delivery_listener')
    burners = None
    player = None
    log = tmp_path / 'player.log'
    try:
        for topic, msg_type in types.items():
            latched = topic in ('/tf_static', '/robot_description')
            listener.subscribe(topic, msg_type, qos.LATCHED if latched else None)
        burners = Burners(BURN_SECONDS)
        player = spawn(['-m', 'react_ros.cli', 'play', str(episode.path), '--rate', '1.0',
                        '--quiet', '--wait-for-subscribers', str(WAIT_S), *extra], log)

        def received() -> dict[str, int]:
            got = {t: len(listener.msgs[t]) for t in expected}
            if '/tf' in got and frames:
                got['/tf'] = sum(1 for m in listener.msgs['/tf']
                                 if not _is_robot_state_tf(m, frames))
            return got
        # The player ends by itself (after its subscribers acknowledged); then
        # whatever is still in this process's queues.
        listener.spin_until(lambda: player.poll() is not None, 120)
        listener.spin_until(lambda: received() == expected, 20)
        got = received()
    finally:
        if burners is not None:
            burners.stop()
        code = stop(player) if player is not None else 0
        listener.close()
    assert code == 0, log.read_text()
    short = {t: f'{got[t]} of {n}{_which(listener.msgs[t], episode, t)}'
             for t, n in expected.items() if got[t] != n}
    assert not short, f'lost messages: {short}; player log: {log.read_text()}'


def _which(received, episode, topic: str) -> str:
    """Where the received messages of `topic` start and end within the episode."""
    from react_ros.ros.msgs import to_ns
    stamps = [to_ns(m.header.stamp) for m in received if hasattr(m, 'header')]
    if not stamps:
        return ''
    return (f' (received {(min(stamps) - episode.start_ns) / 1e9:.3f} s to '
            f'{(max(stamps) - episode.start_ns) / 1e9:.3f} s of {episode.duration_ns / 1e9:.3f})')


def test_umi_every_message_arrives_on_a_busy_machine(umi_episode: Path, tmp_path: Path) -> None:
    _play_everything_while_busy(open_episode(umi_episode), tmp_path, [])


def test_react_every_message_arrives_on_a_busy_machine(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    root = react_release(tmp_path_factory)
    episode = open_episode(root, 'react', EpisodeOptions(episode=EPISODE))
    _play_everything_while_busy(episode, tmp_path, ['--episode', EPISODE])
