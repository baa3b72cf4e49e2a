"""The discovery wait's rule (ros/discovery.py), on a fake clock: no DDS, no real time."""
from __future__ import annotations

from react_ros.ros.discovery import Settled, Snapshot, settle


class Graph:
    """A scripted graph: (from time t on, signature, unmatched topics)."""

    def __init__(self, clock: 'Clock', script: list[tuple[float, str, tuple[str, ...]]]) -> None:
        self.clock = clock
        self.script = script

    def __call__(self) -> Snapshot:
        current = [s for s in self.script if s[0] <= self.clock.t][-1]
        return Snapshot(current[1], current[2])


class Clock:
    def __init__(self) -> None:
        self.t = 0.0
        self.stop_at = float('inf')

    def now(self) -> float:
        return self.t

    def sleep(self, s: float) -> bool:
        self.t += s
        return self.t >= self.stop_at


def _settle(script, timeout=2.0, born=None, min_age_s=0.0, stop_at=float('inf')):
    clock = Clock()
    clock.stop_at = stop_at
    polls = []
    result = settle(Graph(clock, script), timeout, 0.3, born=born, min_age_s=min_age_s,
                    poll_s=0.01, on_poll=lambda: polls.append(clock.t), sleep=clock.sleep,
                    now=clock.now)
    return result, polls


def test_settles_once_matched_and_quiet() -> None:
    # a subscription appears at 0.2 s, the publisher matches it at 0.4 s
    result, polls = _settle([(0.0, 'a', ()), (0.2, 'b', ('/tf',)), (0.4, 'c', ())])
    assert result.ok and not result.unmatched
    assert 0.7 - 1e-6 <= result.waited_s < 0.72  # 0.3 s of quiet after the match
    assert polls  # /clock was held meanwhile


def test_an_unmatched_subscription_holds_until_the_bound() -> None:
    result, _ = _settle([(0.0, 'a', ('/left/image_raw',))], timeout=2.0)
    assert result == Settled(False, result.waited_s, ('/left/image_raw',))
    assert 2.0 <= result.waited_s < 2.02


def test_a_young_participant_waits_for_the_others_announcements() -> None:
    # nothing to match in sight, but the participant came up only 1 s ago
    result, _ = _settle([(0.0, 'a', ())], timeout=5.0, born=-1.0, min_age_s=3.3)
    assert result.ok and 2.3 - 1e-6 <= result.waited_s < 2.32
    # with a bound shorter than that, the bound wins
    result, _ = _settle([(0.0, 'a', ())], timeout=2.0, born=-1.0, min_age_s=3.3)
    assert not result.ok and not result.unmatched and result.waited_s < 2.02
    # an old participant only needs the quiet moment
    result, _ = _settle([(0.0, 'a', ())], timeout=2.0, born=-10.0, min_age_s=3.3)
    assert result.ok and result.waited_s < 0.32


def test_a_stop_ends_the_wait() -> None:
    result, _ = _settle([(0.0, 'a', ('/tf',))], timeout=2.0, stop_at=0.5)
    assert not result.ok and result.waited_s < 0.52
