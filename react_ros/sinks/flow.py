"""Flow control for the live player: a writer never holds more than a window unacknowledged.

Why a window of our own rather than the writer history doing it. A reliable
KEEP_LAST writer overwrites samples its readers have not acknowledged once its
history is full, so a player that outruns its readers loses messages (issue 16
measured 45 of 300 full-size images arriving). A reliable KEEP_ALL writer never
overwrites, but rmw_fastrtps gives it no bound of its own (Fast DDS's default
resource limits: hundreds of 7 MB images), and a blocked publish() returns an
error after Fast DDS's max_blocking_time. So the writers are KEEP_ALL and the
player counts what it sent since every reader last caught up: at `window`
messages it waits until they all have, before it sends the next.

Waiting is polling, 1 ms apart: rclpy's wait_for_all_acked holds the GIL for
as long as it waits (measured: a thread spinning beside it got 0.2 % of its
turns), which would stop the video readers and the services with it. Asked with
a zero timeout it returns at once. Best-effort readers send no
acknowledgements and are never waited for.
"""
from __future__ import annotations

from typing import Any

from rclpy.duration import Duration

_NOW = Duration()  # a zero timeout: only ask whether everything was acknowledged
POLL_S = 0.001
NUDGE_S = 0.01  # waiting longer than this, a lost fragment is the likely cause


class AckWindow:
    """At most `window` messages of one publisher not known to be acknowledged."""

    def __init__(self, publisher: Any, window: int) -> None:
        if window < 1:
            raise ValueError(f'window must be >= 1, not {window}')
        self.publisher = publisher
        self.window = window
        self.unconfirmed = 0  # sent since every reliable reader last had everything

    def _all_acked(self) -> bool:
        try:
            ok = bool(self.publisher.wait_for_all_acked(_NOW))
        except Exception:  # an rmw without acknowledgements: nothing to wait for
            ok = True
        if ok:
            self.unconfirmed = 0
        return ok

    def has_room(self) -> bool:
        return self.unconfirmed < self.window or self._all_acked()

    def nudge(self) -> None:
        """Ask the readers now for what they miss (a heartbeat), instead of at the next period."""
        try:
            self.publisher.assert_liveliness()
        except Exception:  # an rmw without it: the periodic heartbeat will do
            pass

    def sent(self) -> None:
        self.unconfirmed += 1
        # From half the window on, look (cheaply) whether the readers caught up,
        # so a reader that keeps up never sees the writer stop at the edge.
        if self.unconfirmed >= max(1, self.window // 2):
            self._all_acked()


__all__ = ['AckWindow', 'POLL_S']
