"""The player's timeline: which dataset time plays when, and rosbag2's controls over it.

No DDS here. The publishing thread asks `wait_for(t)` before each message and
gets back what to do with it; services and keyboard call pause/resume/
set_rate/seek/play_next from other threads. All state sits behind one
condition variable, and `now` (a monotonic clock in seconds) is injectable so
that tests drive time themselves.

Time arithmetic: dataset time `anchor_ns` was current at wall time
`anchor_wall`; from there dataset time runs at `rate`, so a message stamped t
is due at anchor_wall + (t - anchor_ns) / rate. Every control that changes the
mapping (pause, rate, seek, a step) re-anchors at the current dataset time, so
the timeline never jumps except where asked to.
"""
from __future__ import annotations

import math
import threading
import time
from collections import deque
from typing import Callable, NamedTuple

# What the publishing thread does with the message it waits to send.
GO = 'go'  # its time has come
STEP = 'step'  # paused, but a play_next/burst asks for it
SEEK = 'seek'  # drop it: a seek is pending, start a new pass (next_pass)
STOP = 'stop'
# How a pass ended (next_pass's argument): STOP, SEEK, or
END = 'end'  # past the last message or the playback duration


def nothing_to_play(t0: int, t_end: int, start_offset_s: float,
                    playback_duration_s: float | None,
                    until_ns: int | None = None) -> str | None:
    """Why a start offset, playback duration and until-stamp play nothing of [t0, t_end];
    None: they play.

    An offset at or past the end (of an episode longer than an instant), a
    duration of 0 or less and a stamp to play until before the first one played
    are mistakes to refuse, not a run that plays nothing.
    """
    if playback_duration_s is not None and not playback_duration_s > 0:
        return f'a playback duration of {playback_duration_s:g} s plays nothing'
    if start_offset_s > 0 and t0 + int(start_offset_s * 1e9) >= t_end:
        return (f'start offset {start_offset_s:g} s is at or past the end of the episode '
                f'({(t_end - t0) / 1e9:.3f} s long): nothing to play')
    first = min(t_end, t0 + int(start_offset_s * 1e9))
    if until_ns is not None and until_ns < first:
        return (f'--playback-until {_seconds(until_ns)} s is before the start of playback, '
                f'the stamp {_seconds(first)} s: nothing to play')
    return None


def _seconds(ns: int) -> str:
    """A stamp in seconds, every nanosecond digit exact (a float has not enough)."""
    sign = '-' if ns < 0 else ''
    return f'{sign}{abs(ns) // 10**9}.{abs(ns) % 10**9:09d}'


class Poll(NamedTuple):
    action: str | None  # GO, STEP, SEEK, STOP, or None: not yet
    clock_ns: int | None  # a /clock tick is due: publish this dataset time
    timeout: float  # seconds until it is worth asking again (unless a control changes)


class _Steps:
    """A play_next/burst request the publishing thread fulfils while paused."""

    def __init__(self, count: int | None) -> None:
        self.remaining = count  # None: everything left
        self.done_count = 0
        self.done = threading.Event()


class Timeline:
    """Dataset time [t0, t_end] played from `first_ns` to `limit_ns`, optionally in a loop.

    `tick_s` is the /clock period: `poll` asks for a tick on a fixed grid of it.
    `until_ns`: a pass ends after the messages stamped at or before it (ros2 bag's
    --playback-until-*).
    A start offset or duration that plays nothing (nothing_to_play) is a ValueError.
    """

    def __init__(self, t0: int, t_end: int, *, rate: float = 1.0, start_offset_s: float = 0.0,
                 playback_duration_s: float | None = None, start_paused: bool = False,
                 loop: bool = False, tick_s: float = 0.01,
                 now: Callable[[], float] = time.monotonic,
                 until_ns: int | None = None) -> None:
        if not (rate > 0 and math.isfinite(rate)):
            raise ValueError(f'rate must be a positive number, not {rate}')
        problem = nothing_to_play(t0, t_end, start_offset_s, playback_duration_s, until_ns)
        if problem is not None:
            raise ValueError(problem)
        self.t0 = t0
        self.t_end = t_end
        self.first_ns = min(t_end, t0 + int(start_offset_s * 1e9))
        # As rosbag2: with a duration and an until-stamp both, the later end wins.
        ends = ([] if playback_duration_s is None
                else [self.first_ns + int(playback_duration_s * 1e9)]) + \
            ([] if until_ns is None else [until_ns])
        self.limit_ns = min(t_end, max(ends)) if ends else t_end
        self.loop = loop
        self.tick_s = tick_s
        self._clock = now
        # Condition's lock is reentrant: poll() runs alone and inside wait_for's lock.
        self._cv = threading.Condition()
        self._gen = 0  # bumped on every control change, so waiters never miss one
        self._stop = threading.Event()
        self._paused = start_paused
        self._rate = rate
        self._anchor_ns = self.first_ns
        self._anchor_wall = now()
        self._next_t: int | None = None
        self._seek_to: int | None = None
        self._seeks_taken = 0
        self._steps: deque[_Steps] = deque()
        self._loops = 0
        self._last_tick = -math.inf
        self.last_due = 0.0  # wall time the last GO message was due (for lateness)

    # --- controls (any thread) ---------------------------------------------------

    def _changed(self) -> None:
        self._gen += 1
        self._cv.notify_all()

    def now_ns(self) -> int:
        """Dataset time now; never ahead of the message waiting to go out."""
        with self._cv:
            if self._paused:
                return self._anchor_ns
            t = self._anchor_ns + int((self._clock() - self._anchor_wall) * self._rate * 1e9)
            return t if self._next_t is None else min(t, self._next_t)

    def _reanchor(self, t_ns: int) -> None:
        self._anchor_ns = t_ns
        self._anchor_wall = self._clock()

    def pause(self) -> None:
        with self._cv:
            if not self._paused:
                self._reanchor(self.now_ns())
                self._paused = True
                self._changed()

    def resume(self) -> None:
        with self._cv:
            if self._paused:
                self._reanchor(self._anchor_ns)
                self._paused = False
                self._changed()

    def toggle_paused(self) -> None:
        with self._cv:
            self.resume() if self._paused else self.pause()

    @property
    def paused(self) -> bool:
        with self._cv:
            return self._paused

    def set_rate(self, rate: float) -> bool:
        """False (and no change) unless rate is a positive finite number."""
        if not (rate > 0 and math.isfinite(rate)):
            return False
        with self._cv:
            self._reanchor(self.now_ns())
            self._rate = rate
            self._changed()
        return True

    def step_rate(self, delta: float) -> None:
        """The keyboard's up/down: rate + delta, never below 0.1."""
        with self._cv:
            # rounded, so that ten presses of "up" give 2.0 and not 2.0000000000000004
            self.set_rate(max(0.1, round(self._rate + delta, 6)))

    @property
    def rate(self) -> float:
        with self._cv:
            return self._rate

    @property
    def loops(self) -> int:
        with self._cv:
            return self._loops

    def seek(self, t_ns: int, timeout: float = 10.0) -> bool:
        """Jump to dataset time `t_ns` (clamped to the episode's start).

        False past the end of what this run plays. Returns once the publishing
        thread has taken the request (next_pass): nothing older goes out after that.
        """
        if t_ns > self.limit_ns:
            return False
        with self._cv:
            self._seek_to = max(t_ns, self.t0)
            self._changed()
            taken = self._seeks_taken
            return self._cv.wait_for(
                lambda: self._seeks_taken != taken or self._stop.is_set(), timeout)

    def play_next(self, count: int | None = 1, wait: float | None = 10.0) -> int:
        """Play the next `count` messages (None: all left) while paused; returns how many.

        0 while playing. With wait=None returns 0 at once and the steps happen later.
        """
        with self._cv:
            if not self._paused or self._stop.is_set():
                return 0
            req = _Steps(count)
            self._steps.append(req)
            self._changed()
        if wait is None:
            return 0
        req.done.wait(wait)
        return req.done_count

    def stop(self) -> None:
        self._stop.set()
        with self._cv:
            self._changed()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    @property
    def interrupted(self) -> bool:
        """A stop or a seek is pending: work on the current pass is wasted."""
        return self._stop.is_set() or self._seek_to is not None

    def sleep(self, seconds: float) -> bool:
        """Wait `seconds` of real time or until stopped; True if stopped."""
        return self._stop.wait(seconds)

    # --- the publishing thread -------------------------------------------------

    def start_pass(self, from_ns: int) -> None:
        """Dataset time `from_ns` is now (a pass starts, or its first message is ready)."""
        with self._cv:
            self._reanchor(from_ns)
            self._next_t = None

    def due(self, t_ns: int) -> float | None:
        """The wall time (on `now`'s clock) dataset time t_ns is due; None while paused."""
        with self._cv:
            if self._paused:
                return None
            return self._anchor_wall + (t_ns - self._anchor_ns) / self._rate / 1e9

    def slip(self, t_ns: int, max_lag_s: float) -> bool:
        """The message stamped t_ns went out more than `max_lag_s` late: make it on time.

        Re-anchors at t_ns, so that what follows keeps its spacing instead of
        going out in a burst to catch up: when readers or the player cannot keep
        the rate, dataset time (and /clock) runs slower. True if it slipped.
        """
        with self._cv:
            due = self.due(t_ns)
            if due is None or self._clock() - due <= max_lag_s:
                return False
            self._reanchor(t_ns)
            return True

    def late_s(self, t_ns: int) -> float:
        """How long ago dataset time t_ns was due (negative: not yet; 0 while paused)."""
        with self._cv:
            due = self.due(t_ns)
            return 0.0 if due is None else self._clock() - due

    def poll(self, t_ns: int) -> Poll:
        """What to do with the message stamped `t_ns`, without waiting."""
        with self._cv:
            self._next_t = t_ns
            if self._stop.is_set():
                return Poll(STOP, None, 0.0)
            if self._seek_to is not None:
                return Poll(SEEK, None, 0.0)
            now = self._clock()
            action = None
            due = self.due(t_ns)
            if due is None:
                if self._steps:
                    return Poll(STEP, None, 0.0)
                timeout = self.tick_s
            else:
                if now >= due:
                    action = GO
                    self.last_due = due
                timeout = min(due - now, self.tick_s)
            clock_ns = self.now_ns() if self._tick(now) else None
            return Poll(action, clock_ns, timeout)

    def wait_for(self, t_ns: int, on_tick: Callable[[int], None] | None = None,
                 on_idle: Callable[[], None] | None = None) -> str:
        """Block until the message stamped `t_ns` may go out (or must not); returns the action.

        on_tick(clock_ns) publishes /clock and on_idle() reports progress while
        waiting; both run outside the lock.
        """
        while True:
            with self._cv:
                action, clock_ns, timeout = self.poll(t_ns)
                gen = self._gen
            if clock_ns is not None and on_tick is not None:
                on_tick(clock_ns)
            if action is not None:
                return action
            if on_idle is not None:
                on_idle()
            with self._cv:
                self._cv.wait_for(lambda: self._gen != gen, timeout)

    def _tick(self, now: float) -> bool:
        """Whether a /clock tick is due; keeps ticks on a fixed grid."""
        last = self._last_tick
        if now - last < self.tick_s:
            return False
        self._last_tick = now if now - last > 2 * self.tick_s else last + self.tick_s
        return True

    def step_done(self, t_ns: int) -> None:
        """The STEP message stamped t_ns went out."""
        with self._cv:
            self._reanchor(t_ns)
            req = self._steps[0]
            req.done_count += 1
            if req.remaining is not None:
                req.remaining -= 1
                if req.remaining <= 0:
                    self._steps.popleft()
                    req.done.set()

    def finish_steps(self) -> None:
        """Release every play_next/burst waiting: nothing more is coming for them."""
        with self._cv:
            while self._steps:
                self._steps.popleft().done.set()

    def next_pass(self, outcome: str) -> int | None:
        """Where the next pass starts after one ended with `outcome`; None: playing is over."""
        with self._cv:
            if self._seek_to is not None:
                start, self._seek_to = self._seek_to, None
                self._seeks_taken += 1
                self._changed()
                return start
            if self._stop.is_set():
                return None
            self.finish_steps()
            if outcome == END and self.loop:
                self._loops += 1
                return self.first_ns
            return None


__all__ = ['END', 'GO', 'Poll', 'SEEK', 'STEP', 'STOP', 'Timeline', 'nothing_to_play']
