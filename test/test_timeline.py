"""The player's timeline on its own: no DDS, no rclpy, time driven by a fake clock.

The test plays the publishing thread itself (poll / wait_for / step_done /
next_pass). Where a call blocks until the other side acts (seek, play_next,
wait_for), it runs on a thread and its result is awaited with a bound.
"""
from __future__ import annotations

import math
import re
import subprocess
import sys
import textwrap
import threading
from typing import Any, Callable

import pytest

from react_ros.sinks.timeline import END, GO, SEEK, STEP, STOP, Timeline, nothing_to_play

pytestmark = pytest.mark.timeout(60)

S = 10**9
T0 = 1_700_000_000 * S  # a dataset stamp of plausible size
T_END = T0 + 10 * S
TICK = 0.25  # exact in binary, so grid arithmetic compares exactly
# play_next's own bound: longer than Background's, so a request never released fails
# the test instead of returning what was done so far once this runs out.
WAIT = 30.0


class FakeClock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


class Background:
    """`fn(*args)` on a daemon thread; result() waits for it with a bound."""

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

        def run() -> None:
            try:
                self.value = fn(*args)
            except BaseException as err:  # handed to the test thread
                self.error = err
            finally:
                self.done.set()
        threading.Thread(target=run, daemon=True).start()

    def result(self, timeout: float = 5.0) -> Any:
        assert self.done.wait(timeout), 'the call did not return'
        if self.error is not None:
            raise self.error
        return self.value


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make(clock: FakeClock):
    made: list[Timeline] = []

    def make(**kw: Any) -> Timeline:
        kw.setdefault('tick_s', TICK)
        t = Timeline(T0, T_END, now=clock, **kw)
        made.append(t)
        return t
    yield make
    for t in made:
        t.stop()  # releases any thread a failed test left waiting


def test_imports_no_rclpy() -> None:
    script = textwrap.dedent('''
        import sys
        import react_ros.progress, react_ros.sinks.timeline, react_ros.sinks.tuning
        ros = ('rclpy', 'rosidl_', 'rosgraph_msgs', 'rosbag2_interfaces', 'builtin_interfaces')
        print(sorted(m for m in sys.modules if m.split('.')[0].startswith(ros)))
    ''')
    proc = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == '[]'


def test_start_offset_and_playback_duration(make) -> None:
    t = make(start_offset_s=1.5, playback_duration_s=2.0)
    assert (t.first_ns, t.limit_ns) == (T0 + 1_500_000_000, T0 + 3_500_000_000)
    assert t.now_ns() == t.first_ns  # the clock starts at the offset
    whole = make()
    assert (whole.first_ns, whole.limit_ns) == (T0, T_END)
    # a duration past the end stops at the end
    long = make(start_offset_s=8.0, playback_duration_s=5.0)
    assert long.limit_ns == T_END


@pytest.mark.parametrize('kw, problem', [
    ({'start_offset_s': 20.0}, 'start offset 20 s is at or past the end of the episode '
                               '(10.000 s long): nothing to play'),
    ({'start_offset_s': 10.0}, 'start offset 10 s is at or past the end of the episode '
                               '(10.000 s long): nothing to play'),
    ({'playback_duration_s': 0.0}, 'a playback duration of 0 s plays nothing'),
    ({'playback_duration_s': -1.0}, 'a playback duration of -1 s plays nothing'),
])
def test_what_plays_nothing_is_refused(make, kw: dict[str, float], problem: str) -> None:
    # Before, an offset past the end was clamped to it: a run that played nothing.
    assert nothing_to_play(T0, T_END, kw.get('start_offset_s', 0.0),
                           kw.get('playback_duration_s')) == problem
    with pytest.raises(ValueError, match=re.escape(problem)):
        make(**kw)


def test_an_instant_long_episode_plays_from_its_start(clock) -> None:
    assert nothing_to_play(T0, T0, 0.0, None) is None
    t = Timeline(T0, T0, now=clock)
    assert (t.first_ns, t.limit_ns) == (T0, T0)
    assert nothing_to_play(T0, T_END, 9.999, None) is None  # just before the end: plays


def test_pause_freezes_dataset_time_and_resume_continues(make, clock) -> None:
    t = make()
    clock.advance(2.0)
    assert t.now_ns() == T0 + 2 * S
    t.pause()
    assert t.paused
    clock.advance(5.0)
    assert t.now_ns() == T0 + 2 * S
    assert t.due(T0 + 3 * S) is None
    t.pause()  # twice: still where it was
    assert t.now_ns() == T0 + 2 * S
    t.resume()
    assert not t.paused
    clock.advance(1.0)
    assert t.now_ns() == T0 + 3 * S
    t.toggle_paused()
    assert t.paused and t.now_ns() == T0 + 3 * S
    t.toggle_paused()
    assert not t.paused


def test_start_paused_waits_for_resume(make, clock) -> None:
    t = make(start_paused=True)
    t.start_pass(T0)
    clock.advance(3.0)
    assert t.poll(T0).action is None  # paused: even the first message waits
    clock.advance(TICK)  # a /clock tick is due again
    ticks: list[int] = []
    waiting = Background(t.wait_for, T0, ticks.append)
    t.resume()
    assert waiting.result() == GO
    assert ticks and ticks[0] == T0  # /clock while paused stays at the paused time


def test_due_time_at_a_rate(make, clock) -> None:
    t = make(rate=2.0)
    t.start_pass(T0)
    assert t.due(T0 + 3 * S) == 1001.5  # 3 s of dataset at 2x: 1.5 s of wall time
    clock.advance(1.0)
    p = t.poll(T0 + 3 * S)
    assert p.action is None and p.timeout == TICK  # never sleeps past a /clock tick
    clock.advance(0.375)
    p = t.poll(T0 + 3 * S)
    assert p.action is None and p.timeout == 0.125  # woken right at the due time
    clock.advance(0.125)
    assert t.poll(T0 + 3 * S).action == GO
    assert t.last_due == 1001.5
    # a pass re-anchors: dataset time from_ns is due now
    t.start_pass(T0 + 7 * S)
    assert t.due(T0 + 8 * S) == clock.t + 0.5


def test_set_rate_reanchors_and_refuses_invalid_rates(make, clock) -> None:
    t = make()
    clock.advance(1.0)
    assert t.set_rate(4.0) and t.rate == 4.0
    clock.advance(0.5)
    assert t.now_ns() == T0 + 3 * S  # 1 s at 1x, then 0.5 s at 4x: no jump at the change
    for bad in (0.0, -1.0, math.nan, math.inf):
        assert not t.set_rate(bad)
        assert t.rate == 4.0
    assert t.now_ns() == T0 + 3 * S
    with pytest.raises(ValueError):
        Timeline(T0, T_END, rate=0.0)


def test_step_rate(make) -> None:
    t = make()
    for _ in range(10):
        t.step_rate(+0.1)
    assert t.rate == 2.0
    for _ in range(30):
        t.step_rate(-0.1)
    assert t.rate == 0.1


def test_now_is_never_ahead_of_the_next_message(make, clock) -> None:
    t = make()
    t.start_pass(T0)
    clock.advance(5.0)  # the publisher fell behind: the message at +1 s is late
    assert t.poll(T0 + 1 * S).action == GO
    assert t.now_ns() == T0 + 1 * S
    t.pause()  # pausing holds at the message, not at where the wall clock got to
    assert t.now_ns() == T0 + 1 * S


def test_clock_ticks_on_a_fixed_grid(make, clock) -> None:
    t = make(start_paused=True)
    t.start_pass(T0)

    def tick_at(wall: float) -> bool:
        clock.t = wall
        return t.poll(T0).clock_ns is not None
    assert tick_at(1000.0)  # the first poll ticks
    assert not tick_at(1000.1)
    assert tick_at(1000.25)
    assert tick_at(1000.6)  # late, but the next one stays on the grid
    assert tick_at(1000.75)
    assert not tick_at(1000.8)
    assert tick_at(1001.5)  # far behind: a fresh grid from here
    assert not tick_at(1001.7)
    assert tick_at(1001.75)


def test_seek_forward_and_back(make, clock) -> None:
    t = make(start_paused=True)
    t.start_pass(T0)
    for target, start in ((T0 + 5 * S, T0 + 5 * S), (T0 + 2 * S, T0 + 2 * S),
                          (T0 - 3 * S, T0)):  # before the start: clamped to it
        seek = Background(t.seek, target)
        assert Background(t.wait_for, T0 + S).result() == SEEK
        assert t.interrupted  # the read-ahead gives up on the old pass
        assert not seek.done.is_set()  # not taken yet: older messages may still go out
        assert t.next_pass(SEEK) == start
        assert seek.result() is True
        assert not t.interrupted
        t.start_pass(start)
        assert t.now_ns() == start


def test_seek_past_the_end_is_refused(make) -> None:
    t = make(playback_duration_s=4.0)
    assert not t.seek(t.limit_ns + 1)
    assert not t.interrupted
    assert t.poll(T0).action != SEEK
    assert not t.seek(T_END)  # in the episode, but past what this run plays
    assert not t.seek(t.limit_ns, timeout=0.01)  # accepted, but nobody takes it in time
    assert t.interrupted


def test_stop_releases_everyone(make) -> None:
    t = make(start_paused=True)
    seek = Background(t.seek, T0 + S)
    waiting = Background(t.wait_for, T0)
    t.stop()
    assert seek.result() is True
    assert waiting.result() in (STOP, SEEK)  # both are pending; either ends the pass
    assert t.stopped and t.interrupted
    assert t.poll(T0).action == STOP
    assert t.play_next() == 0
    assert t.sleep(10.0)  # returns at once
    assert t.next_pass(STOP) == T0 + S  # a seek still taken, but playing is over:
    assert t.next_pass(END) is None  # the caller checks `stopped` between passes


def test_play_next_while_paused(make, clock) -> None:
    t = make(start_paused=True)
    t.start_pass(T0)
    stamps = [T0, T0 + S // 2, T0 + S]
    req = Background(t.play_next, 2, WAIT)
    for stamp in stamps[:2]:
        assert Background(t.wait_for, stamp).result() == STEP
        t.step_done(stamp)
    assert req.result() == 2
    assert t.paused
    assert t.now_ns() == stamps[1]  # the clock follows the steps
    assert t.poll(stamps[2]).action is None  # nothing more was asked for
    # the keyboard's request does not wait for the step
    assert t.play_next(1, wait=None) == 0
    assert t.poll(stamps[2]).action == STEP


def test_play_next_is_refused_while_playing(make, clock) -> None:
    t = make()
    assert t.play_next(1, wait=1.0) == 0
    assert t.play_next(None, wait=1.0) == 0
    assert t.poll(T0 + S).action is None  # not due yet
    t.pause()
    assert t.poll(T0 + S).action is None  # and nothing was queued for later


def test_burst_n_and_all(make) -> None:
    t = make(start_paused=True)
    t.start_pass(T0)
    stamps = [T0 + i * S // 10 for i in range(8)]
    burst = Background(t.play_next, 3, WAIT)
    for stamp in stamps[:3]:
        assert Background(t.wait_for, stamp).result() == STEP
        t.step_done(stamp)
    assert burst.result() == 3
    # None: everything left, until the pass ends
    everything = Background(t.play_next, None, WAIT)
    for stamp in stamps[3:]:
        assert Background(t.wait_for, stamp).result() == STEP
        t.step_done(stamp)
    assert not everything.done.is_set()
    assert t.next_pass(END) is None
    assert everything.result() == 5
    # more than is left: as many as there were
    t2 = make(start_paused=True)
    burst = Background(t2.play_next, 10, WAIT)
    assert Background(t2.wait_for, T0).result() == STEP
    t2.step_done(T0)
    t2.finish_steps()  # what the player does when it stops
    assert burst.result() == 1


def test_loop_wraps_to_the_first_playable_time(make) -> None:
    t = make(loop=True, start_offset_s=1.0)
    assert t.loops == 0
    assert t.next_pass(END) == T0 + S
    assert t.next_pass(END) == T0 + S
    assert t.loops == 2
    assert t.next_pass(STOP) is None  # a stop does not loop
    once = make()
    assert once.next_pass(END) is None and once.loops == 0


def test_loop_after_a_seek_takes_the_seek(make) -> None:
    t = make(loop=True)
    seek = Background(t.seek, T0 + 4 * S)
    assert Background(t.wait_for, T0 + 9 * S).result() == SEEK
    assert t.next_pass(SEEK) == T0 + 4 * S
    assert seek.result()
    assert t.loops == 0


def test_a_message_sent_too_late_slips_the_timeline_instead_of_a_burst(make, clock) -> None:
    t = make(rate=2.0)
    t.start_pass(T0)
    clock.advance(0.05)
    assert not t.slip(T0, 0.1)  # 50 ms late: within the bound, it catches up
    assert t.late_s(T0) == pytest.approx(0.05)
    clock.advance(1.0)  # the message at T0 went out 1.05 s late (a reader held the writer)
    assert t.slip(T0, 0.1)
    assert t.late_s(T0) == 0.0
    # what follows keeps its spacing from there: 1 s of dataset time is 0.5 s at rate 2
    assert t.due(T0 + S) == pytest.approx(clock.t + 0.5)
    t.pause()
    assert not t.slip(T0 + S, 0.0) and t.late_s(T0 + S) == 0.0
