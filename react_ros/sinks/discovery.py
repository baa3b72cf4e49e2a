"""Letting DDS discovery settle before the player's timeline starts.

A volatile writer sends nothing to a reader it has not matched yet, and
matching takes a while after the player's publishers are created: its
participant must first find the subscriber's participant, then that
participant's readers (on a busy machine this took up to a second, and the
first second of the episode was lost to a subscriber that was already running).
So before its first message the player waits until

- every publisher has matched every subscription the ROS graph shows on its
  topic (of its type, with a QoS it can match), and
- the graph (the nodes, those subscriptions, the matches) has not changed
  for `quiet_s`,

or at most `timeout` seconds. `settle` is the rule, with no DDS in it;
`GraphProbe` reads the ROS graph of a node.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Hashable, NamedTuple, Sequence

QUIET_S = 0.3  # the graph unchanged this long counts as settled
POLL_S = 0.02


class Snapshot(NamedTuple):
    signature: Hashable  # anything that changes when the graph does
    unmatched: tuple[str, ...]  # topics with a subscription in the graph not matched yet


@dataclass(frozen=True)
class Settled:
    ok: bool  # False: the bound ran out (or a stop came) first
    waited_s: float
    unmatched: tuple[str, ...] = ()  # when the bound ran out


def settle(snapshot: Callable[[], Snapshot], timeout: float, quiet_s: float = QUIET_S, *,
           poll_s: float = POLL_S, on_poll: Callable[[], None] | None = None,
           sleep: Callable[[float], bool] | None = None,
           now: Callable[[], float] = time.monotonic) -> Settled:
    """Poll `snapshot()` until nothing is unmatched and the signature held for `quiet_s`.

    `sleep(s)` waits and returns True when the wait should end (a stop);
    `on_poll()` runs once per poll (the player holds /clock with it).
    """
    sleep = sleep or (lambda s: bool(time.sleep(s)))
    start = now()
    last_sig: Hashable = object()
    since = start
    while True:
        snap = snapshot()
        t = now()
        if snap.signature != last_sig:
            last_sig, since = snap.signature, t
        if not snap.unmatched and t - since >= quiet_s:
            return Settled(True, t - start)
        if t - start >= timeout:
            return Settled(False, t - start, snap.unmatched)
        if on_poll is not None:
            on_poll()
        if sleep(min(poll_s, max(0.0, start + timeout - t))):
            return Settled(False, now() - start, snap.unmatched)


class GraphProbe:
    """Snapshots of what `node` sees of the subscriptions on its publishers' topics.

    `publishers` holds (publisher, message type 'pkg/msg/Type', offered QoS).
    """

    def __init__(self, node: Any, publishers: Sequence[tuple[Any, str, Any]]) -> None:
        from rclpy.qos import QoSCompatibility, qos_check_compatible
        self._node = node
        self._publishers = list(publishers)
        self._incompatible = QoSCompatibility.ERROR
        self._check = qos_check_compatible

    def _matchable(self, info: Any, msg_type: str, offered: Any) -> bool:
        if info.topic_type != msg_type:
            return False
        try:
            compat, _ = self._check(offered, info.qos_profile)
        except Exception:  # a profile rclpy cannot judge: expect a match
            return True
        return compat != self._incompatible

    def __call__(self) -> Snapshot:
        sig: list[Hashable] = [tuple(sorted(self._node.get_node_names_and_namespaces()))]
        unmatched = []
        for pub, msg_type, offered in self._publishers:
            topic = pub.topic_name
            subs = self._node.get_subscriptions_info_by_topic(topic)
            wanted = sum(1 for s in subs if self._matchable(s, msg_type, offered))
            matched = pub.get_subscription_count()
            sig.append((topic, len(subs), matched))
            if matched < wanted:
                unmatched.append(topic)
        return Snapshot(tuple(sig), tuple(unmatched))


__all__ = ['GraphProbe', 'QUIET_S', 'Settled', 'Snapshot', 'settle']
