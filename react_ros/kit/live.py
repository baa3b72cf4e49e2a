"""Helpers for the live tests: a subscriber node in the test process and player subprocesses.

Every test process runs with ROS_DOMAIN_ID and ROS_AUTOMATIC_DISCOVERY_RANGE set by
scripts/ros_env.sh; the subprocesses inherit them.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterable

import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.signals import SignalHandlerOptions

from react_ros.ros import qos
from react_ros.ros.msgs import message_class
from react_ros.ros.dds import clear_dead_ports

PLAYER = 'react_ros_player'


class Listener:
    """A node with its own context that records what it receives, by topic."""

    def __init__(self, name: str = 'test_listener') -> None:
        self.context = Context()
        clear_dead_ports()  # a port a killed process left half-made would hang Node()
        rclpy.init(args=[], context=self.context, signal_handler_options=SignalHandlerOptions.NO)
        self.node = Node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.msgs: dict[str, list[Any]] = defaultdict(list)
        self._subs: list[Any] = []
        self._clients: dict[str, Any] = {}

    def subscribe(self, topic: str, msg_type: str, profile: QoSProfile | None = None) -> None:
        if profile is None:
            profile = QoSProfile(depth=10000, reliability=qos.DEFAULT.reliability,
                                 durability=qos.DEFAULT.durability)
        self._subs.append(self.node.create_subscription(
            message_class(msg_type), topic, self.msgs[topic].append, profile))

    def spin_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.02)

    def spin_until(self, pred: Callable[[], bool], timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pred():
                return True
            self.executor.spin_once(timeout_sec=0.02)
        return pred()

    def wait_for_publishers(self, topics: Iterable[str], timeout: float = 30.0) -> bool:
        """True once this node sees a publisher on every topic.

        Discovery is not symmetric: the publisher may match this node's readers a
        little later than this node sees it, and a volatile writer sends nothing
        to a reader it has not matched yet. So wait one more second after seeing.
        """
        topics = list(topics)
        seen = self.spin_until(
            lambda: all(self.node.count_publishers(t) > 0 for t in topics), timeout)
        if seen:
            self.spin_for(1.0)
        return seen

    def call(self, srv_name: str, srv_type: Any, timeout: float = 20.0, **fields: Any) -> Any:
        """Call a service; one client per service, kept for the next calls.

        A client is ready once it has matched the server, but the server may match
        the client's response reader a little later, and a response sent before
        that is lost (rmw_fastrtps waits 100 ms for it; a busy machine took longer).
        So a new client waits half a second more before its first request.
        """
        # srv_type: a generated service class; rosidl declares no type for its Request
        client = self._clients.get(srv_name)
        if client is None:
            client = self._clients[srv_name] = self.node.create_client(srv_type, srv_name)
        if not client.service_is_ready():  # a new client, or a new server
            assert self.spin_until(client.service_is_ready, timeout), f'{srv_name} not offered'
            self.spin_for(0.5)
        future = client.call_async(srv_type.Request(**fields))
        assert self.spin_until(future.done, timeout), f'{srv_name} did not answer'
        return future.result()

    def clear(self) -> None:
        for msgs in self.msgs.values():
            msgs.clear()  # in place: the subscriptions append to these lists

    def count(self, topics: Iterable[str] | None = None) -> int:
        keys = self.msgs.keys() if topics is None else topics
        return sum(len(self.msgs[t]) for t in keys)

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def spawn(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    """A Python subprocess with our environment, stdout+stderr into `log`."""
    with log.open('ab') as out:
        return subprocess.Popen([sys.executable, *args], stdout=out, stderr=subprocess.STDOUT,
                                env=os.environ.copy())


def spawn_player(episode: Path, log: Path, **params: Any) -> subprocess.Popen[bytes]:
    """`python -m react_ros.node --ros-args -p episode:=... -p quiet:=true -p k:=v ...`."""
    ros = ['-p', f'episode:={episode}', '-p', 'quiet:=true']
    for key, value in params.items():
        if isinstance(value, bool):
            value = str(value).lower()
        ros += ['-p', f'{key}:={value}']
    return spawn(['-m', 'react_ros.node', '--ros-args', *ros], log)


def stop(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> int:
    """SIGINT, then wait; kill only if it hangs (and return its status either way)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def play_through(listener: 'Listener', player: subprocess.Popen[bytes], log: Path,
                 topics: Iterable[str]) -> None:
    """Play a paused player to its end once `listener` sees its topics, then stop it.

    /tf_static is subscribed late, as a joiner after the start would be.
    """
    from rosbag2_interfaces import srv
    try:
        assert listener.wait_for_publishers(topics), log.read_text()
        listener.subscribe('/tf_static', 'tf2_msgs/msg/TFMessage', qos.LATCHED)
        listener.call(f'/{PLAYER}/resume', srv.Resume)
        assert listener.spin_until(lambda: player.poll() is not None, 120), 'player never ended'
        listener.spin_for(0.5)
    finally:
        assert stop(player) == 0, log.read_text()


def receive_a_play(name: str, topics: dict[str, str], log: Path,
                   start: Callable[[Path], subprocess.Popen[bytes]],
                   profiles: dict[str, QoSProfile] | None = None) -> dict[str, list[Any]]:
    """What a subscriber on `topics` ({topic: type}, and /tf_static joined late) receives
    from a paused player that `start(log)` spawns, played to its end; by topic.

    `profiles`: a reader QoS for some topics (default: reliable, volatile, deep).
    """
    listener = Listener(name)
    try:
        for topic, msg_type in topics.items():
            listener.subscribe(topic, msg_type, (profiles or {}).get(topic))
        play_through(listener, start(log), log, topics)
        return defaultdict(list, {topic: list(msgs) for topic, msgs in listener.msgs.items()})
    finally:
        listener.close()


__all__ = ['PLAYER', 'Listener', 'play_through', 'receive_a_play', 'spawn', 'spawn_player',
           'stop']
