"""A topic's rate from its messages' arrival times, as `ros2 topic hz` reports it."""
from __future__ import annotations

import math
from collections import deque


class RateWindow:
    """The last `window` intervals between arrivals (seconds of a monotonic clock)."""

    def __init__(self, window: int) -> None:
        self._intervals: deque[float] = deque(maxlen=window)
        self._last: float | None = None
        self.received = 0
        self._reported = 0

    def arrived(self, t: float) -> None:
        if self._last is not None:
            self._intervals.append(t - self._last)
        self._last = t
        self.received += 1

    def report(self) -> str | None:
        """ros2 topic hz's lines for what arrived so far; None when nothing new came since
        the last report (or too little for an interval)."""
        if self.received == self._reported or not self._intervals:
            return None
        self._reported = self.received
        n = len(self._intervals)
        mean = sum(self._intervals) / n
        std = math.sqrt(sum((x - mean) ** 2 for x in self._intervals) / n)
        rate = 1.0 / mean if mean > 0 else math.inf
        return (f'average rate: {rate:.3f}\n\tmin: {min(self._intervals):.3f}s '
                f'max: {max(self._intervals):.3f}s std dev: {std:.5f}s window: {n + 1}')


__all__ = ['RateWindow']
