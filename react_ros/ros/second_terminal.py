"""One node in the running player's domain, for a second terminal's command.

`react-ros topic ...` and `react-ros control ...` start a node of their own
(hidden: its name starts with '_', as ros2cli's do), in the domain join.py
chooses, and wait for what they need with a bound: the player node, a
publisher of a topic, a service. What the graph shows of this node itself is
left out. The CLI imports this module only inside those commands: rclpy takes
a while to load.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable

import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions

from react_ros.errors import ReactRosError
from react_ros.ros.join import join_player
from react_ros.ros.msgs import message_class
from react_ros.ros.dds import clear_dead_ports

POLL_S = 0.05  # short: a Ctrl-C lands between two waits of rcl
# After the graph first shows the player, what else is running (its state
# publisher, a viewer) may still be on its way: a graph unchanged this long counts.
QUIET_S = 1.0


def where() -> str:
    domain = os.environ.get('ROS_DOMAIN_ID')
    return f'ROS_DOMAIN_ID={domain}' if domain else "ROS_DOMAIN_ID=0 (unset: ROS 2's default)"


class Session:
    """A hidden node in the player's domain; `close()` when done."""

    def __init__(self, prog: str, player: str, timeout: float) -> None:
        note = join_player(os.environ, prog)  # before rclpy reads the environment
        if note:
            print(note, file=sys.stderr, flush=True)
        self.prog, self.player, self.timeout = prog, player, timeout
        self.context = Context()
        # No rclpy signal handler: Ctrl-C stays Python's KeyboardInterrupt (the CLI's exit 130)
        clear_dead_ports()  # a port a killed process left half-made would hang Node()
        rclpy.init(args=[], context=self.context, signal_handler_options=SignalHandlerOptions.NO)
        self.node = Node(f'_react_ros_cli_{os.getpid()}', context=self.context,
                         enable_rosout=False, start_parameter_services=False)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)

    def spin_until(self, done: Callable[[], bool], timeout: float | None) -> bool:
        """Spin until `done()` (True) or `timeout` seconds (False); None: no bound."""
        end = None if timeout is None else time.monotonic() + timeout
        while not done():
            if end is not None and time.monotonic() >= end:
                return False
            self.executor.spin_once(timeout_sec=POLL_S)
        return True

    def spin_for(self, seconds: float) -> None:
        self.spin_until(lambda: False, seconds)

    # --- the graph, without this node

    def _others(self, infos: list[Any]) -> list[Any]:
        return [i for i in infos if i.node_name != self.node.get_name()]

    def player_seen(self) -> bool:
        return any(name == self.player for name, _ in self.node.get_node_names_and_namespaces())

    def no_player(self) -> ReactRosError:
        return ReactRosError(
            f'no player (node {self.player}) in {where()} after {self.timeout:g} s: start one '
            '(react-ros play EPISODE), or give this terminal the ROS_DOMAIN_ID and discovery '
            'range that its first line names (started through scripts/ros_env.sh: '
            f'scripts/ros_env.sh --join {self.prog} ...); another --node-name: --node-name NAME')

    def wait_for_player(self) -> None:
        """The player in the graph, and then the graph quiet for a moment (bounded)."""
        if not self.spin_until(self.player_seen, self.timeout):
            raise self.no_player()
        last: Any = None
        quiet_since = time.monotonic()

        def settled() -> bool:
            nonlocal last, quiet_since
            now = self.graph()
            if now != last:
                last, quiet_since = now, time.monotonic()
            return time.monotonic() - quiet_since >= QUIET_S
        self.spin_until(settled, self.timeout)

    def graph(self) -> dict[str, tuple[tuple[str, ...], int, int]]:
        """{topic: (types, publishers, subscribers)}, hidden topics left out."""
        out = {}
        for topic, types in self.node.get_topic_names_and_types():
            if any(part.startswith('_') for part in topic.split('/')):
                continue
            pubs = len(self._others(self.node.get_publishers_info_by_topic(topic)))
            subs = len(self._others(self.node.get_subscriptions_info_by_topic(topic)))
            if pubs or subs:
                out[topic] = (tuple(types), pubs, subs)
        return out

    def publishers(self, topic: str) -> list[Any]:
        return self._others(self.node.get_publishers_info_by_topic(topic))

    def wait_for_topic(self, topic: str) -> tuple[type, QoSProfile]:
        """The message class of `topic` and the QoS to read it with, once it has a publisher."""
        if not self.spin_until(lambda: bool(self.publishers(topic)), self.timeout):
            if not self.player_seen():
                raise self.no_player()
            raise ReactRosError(f'{topic}: nobody publishes it in {where()} after '
                                f'{self.timeout:g} s (`{self.prog} list` shows what is published)')
        infos = self.publishers(topic)
        types = sorted({i.topic_type for i in infos})
        if len(types) > 1:
            raise ReactRosError(f'{topic}: published with several types ({", ".join(types)})')
        try:
            cls = message_class(types[0])
        except (ImportError, AttributeError, ValueError):
            raise ReactRosError(f'{topic}: its type {types[0]} is not installed here') from None
        return cls, reader_qos(infos)


def reader_qos(publishers: list[Any], depth: int = 10) -> QoSProfile:
    """What `ros2 topic echo` asks for: reliable if every publisher offers it, transient
    local if every one does (a latched topic's last message then arrives), else the
    weaker policy, which matches them all."""
    def every(policy: str, value: Any) -> bool:
        return all(getattr(i.qos_profile, policy) == value for i in publishers)
    return QoSProfile(
        depth=depth, history=HistoryPolicy.KEEP_LAST,
        reliability=ReliabilityPolicy.RELIABLE if every('reliability', ReliabilityPolicy.RELIABLE)
        else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL
        if every('durability', DurabilityPolicy.TRANSIENT_LOCAL) else DurabilityPolicy.VOLATILE)


__all__ = ['Session', 'reader_qos', 'where']
