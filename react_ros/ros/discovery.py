"""Letting DDS discovery settle before the player's timeline starts.

A volatile writer sends nothing to a reader it has not matched yet, and
matching takes a while after the player's publishers are created: its
participant must first find the subscriber's participant, then that
participant's readers (on a busy machine this took up to a second, and the
first second of the episode was lost to a subscriber that was already running).
So before its first message the player waits until

- every publisher has matched every subscription the ROS graph shows on its
  topic (of its type, with a QoS it can match),
- the graph (the nodes, those subscriptions, the matches) has not changed
  for `quiet_s`, and
- its participant has been up for one announcement period of the others
  (`MIN_AGE_S`),

or at most `timeout` seconds. The last rule is there because the graph cannot
show what has not been discovered: a participant that was running before the
player's answers the player's first announcement at once, but that answer was
lost about half the time here (Fast DDS 3.2, localhost), and the player then
only learns of it at its next periodic announcement, every 3 s by Fast DDS's
default. Measured: a subscriber that was already running appeared in a new
participant's graph 0.28 to 2.7 s after that participant came up (20 runs;
with the subscriber announcing every 8 s instead, up to 7.9 s). So whoever
makes the participant (the CLI) makes it early, before opening the episode.

A participant that comes up after the player's, such as the state publisher
that `react-ros play` or play.launch.py starts beside it, is not covered by
those rules: the graph may well be quiet before it appears. Whoever expects one
waits for it by name first (`wait_until` + `subscribed_by`), for as long as a
busy machine takes to start a process, saying so.

`settle` and `wait_until` are the rules, with no DDS in them; `GraphProbe` and
`subscribed_by` read the ROS graph of a node.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Hashable, NamedTuple, Sequence

QUIET_S = 0.3  # the graph unchanged this long counts as settled
ANNOUNCE_S = 3.0  # Fast DDS's default participant announcement period
MIN_AGE_S = ANNOUNCE_S + 0.3
POLL_S = 0.02


class Snapshot(NamedTuple):
    signature: Hashable  # anything that changes when the graph does
    unmatched: tuple[str, ...]  # topics with a subscription in the graph not matched yet


@dataclass(frozen=True)
class Settled:
    ok: bool  # False: the bound ran out (or a stop came) first
    waited_s: float
    unmatched: tuple[str, ...] = ()  # when the bound ran out


def _sleep(s: float) -> bool:
    """The default `sleep`: waits, never reports a stop."""
    time.sleep(s)
    return False


def settle(snapshot: Callable[[], Snapshot], timeout: float, quiet_s: float = QUIET_S, *,
           born: float | None = None, min_age_s: float = MIN_AGE_S, poll_s: float = POLL_S,
           on_poll: Callable[[], None] | None = None,
           sleep: Callable[[float], bool] | None = None,
           now: Callable[[], float] = time.monotonic) -> Settled:
    """Poll `snapshot()` until nothing is unmatched, the signature held for `quiet_s`
    and `min_age_s` passed since `born` (when the participant came up; default: now).

    At most `timeout` seconds from the call. `sleep(s)` waits and returns True
    when the wait should end (a stop); `on_poll()` runs once per poll (the
    player holds /clock with it).
    """
    sleep = sleep or _sleep
    start = now()
    born = start if born is None else born
    last_sig: Hashable = object()
    since = start
    while True:
        snap = snapshot()
        t = now()
        if snap.signature != last_sig:
            last_sig, since = snap.signature, t
        if not snap.unmatched and t - since >= quiet_s and t - born >= min_age_s:
            return Settled(True, t - start)
        if t - start >= timeout:
            return Settled(False, t - start, snap.unmatched)
        if on_poll is not None:
            on_poll()
        if sleep(min(poll_s, max(0.0, start + timeout - t))):
            return Settled(False, now() - start, snap.unmatched)


def wait_until(done: Callable[[], bool], timeout: float, *,
               on_poll: Callable[[], None] | None = None,
               sleep: Callable[[float], bool] | None = None,
               on_slow: Callable[[float], None] | None = None, slow_s: float = 3.0,
               slow_every_s: float = 10.0, poll_s: float = POLL_S,
               now: Callable[[], float] = time.monotonic) -> bool:
    """Poll `done()` until it holds (True), `timeout` s pass or `sleep` reports a stop (False).

    `on_slow(waited_s)` runs once `slow_s` passed and then every `slow_every_s`: a
    slow machine is not an error, but the user should see why nothing happens.
    """
    sleep = sleep or _sleep
    start = now()
    next_slow = start + slow_s
    while not done():
        t = now()
        if t - start >= timeout:
            return False
        if on_slow is not None and t >= next_slow:
            on_slow(t - start)
            next_slow = t + slow_every_s
        if on_poll is not None:
            on_poll()
        if sleep(min(poll_s, max(0.0, start + timeout - t))):
            return False
    return True


def subscribed_by(node: Any, topic: str, node_name: str) -> bool:
    """Whether `node`'s graph shows a subscription of the node `node_name` on `topic`."""
    return any(info.node_name == node_name
               for info in node.get_subscriptions_info_by_topic(topic))


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


__all__ = ['ANNOUNCE_S', 'GraphProbe', 'MIN_AGE_S', 'QUIET_S', 'Settled', 'Snapshot', 'settle',
           'subscribed_by', 'wait_until']
