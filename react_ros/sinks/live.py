"""Live playback of an episode on ROS 2 topics, with /clock and rosbag2's controls.

One publishing thread walks the merged streams in stamp order and publishes each
message at wall time = start_wall + (t - t0) / rate. Heavy (video) streams are
decoded ahead on one worker thread each, bounded in bytes (readahead.py).
A second thread spins the node so the rosbag2 player services (~/pause,
~/resume, ~/toggle_paused, ~/is_paused, ~/set_rate, ~/get_rate, ~/seek,
~/play_next, ~/burst) answer while messages go out; the control state they
change is guarded by one condition variable.

Time jumps. After a loop or a backward seek /clock jumps back to the dataset
time played next; message stamps stay the dataset's own. That is a jump tf2 and
robot_state_publisher recognise: tf2_ros's Buffer registers a jump handler on
its node's clock and on any backward jump of ROS time logs "Detected jump back
in time. Clearing TF buffer." and clears its dynamic transforms (the static
cache survives a clear), RViz resets its displays the same way, and
robot_state_publisher sees now() < its last callback time, logs "Moved
backwards in time, re-publishing joint transforms!" and forgets its per-joint
publish times. All of them only notice if they run with use_sim_time, so /clock
is published (at the new time) before any message of the new pass, and latched
topics are re-published after every loop, seek and start offset (rosbag2 skips
them).

Seeking re-opens every stream and drops what comes before the target. For video
that means decoding the frames in between (on the reader threads, in parallel
per camera, interruptible by a newer seek or a stop): a seek costs up to the
decode time of the skipped part. Keyframe seeking would need a seekable stream
interface, which streams.Stream does not offer yet.
"""
from __future__ import annotations

import itertools
import gc
import math
import signal
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

import rclpy
from rclpy.context import Context
from rclpy.duration import Duration
from rclpy.exceptions import InvalidNodeNameException
from rclpy.executors import SingleThreadedExecutor
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.node import Node
from rclpy.serialization import deserialize_message
from rclpy.signals import SignalHandlerOptions
from rosbag2_interfaces import srv
from rosgraph_msgs.msg import Clock

from react_ros.adapters.base import Episode  # noqa: TC001 (runtime use in annotations only)
from react_ros.errors import ReactRosError
from react_ros.ros import qos
from react_ros.ros.dds import prefer_async_publishing
from react_ros.sinks.allocator import reuse_freed_frames
from react_ros.ros.msgs import message_class, stamp, to_ns
from react_ros.sinks.keyboard import DOWN, RIGHT, SPACE, UP, Keyboard
from react_ros.sinks.readahead import Cancelled, ReadAhead
from react_ros.streams import Role, Stream, merge

TF_MESSAGE = 'tf2_msgs/msg/TFMessage'


@dataclass
class PlayOptions:
    rate: float = 1.0
    loop: bool = False
    start_offset_s: float = 0.0
    playback_duration_s: float | None = None  # dataset seconds per pass; None = to the end
    start_paused: bool = False
    clock_hz: float = 100.0  # 0 disables /clock
    topics: Sequence[str] | None = None  # data topics to play (None = all)
    exclude: Sequence[str] = ()
    remap: Mapping[str, str] = field(default_factory=dict)
    node_name: str = 'react_ros_player'
    quiet: bool = False
    keyboard: bool = True
    read_ahead_bytes: int = 256 * 2**20
    # Keep each message's lateness against its scheduled wall time (for the
    # benchmark); off by default so memory stays flat however long the episode.
    record_lateness: bool = False
    # True: the player also publishes the Role.ROBOT_STATE streams itself
    # (/robot_description, /tf_static of fixed joints, /tf of movable joints);
    # by default a (real or drop-in) robot_state_publisher does that.
    publish_robot_state: bool = False
    delay_s: float = 0.0  # wait before playing, like `ros2 bag play --delay`
    on_stats: Callable[['PlaybackStats'], None] | None = None  # called about once a second


@dataclass(frozen=True)
class TopicStats:
    count: int
    failed: int
    rate_hz: float


@dataclass(frozen=True)
class PlaybackStats:
    topics: dict[str, TopicStats]
    played_ns: int  # dataset time since the episode's start
    total_ns: int
    rate: float
    paused: bool
    published: int
    failed: int
    loops: int
    span_s: float = 0.0  # wall time from the first to the last data message published


class _Steps:
    """A play_next/burst request the publishing thread fulfils while paused."""

    def __init__(self, count: int | None) -> None:
        self.remaining = count  # None: everything left
        self.done_count = 0
        self.done = threading.Event()


class Player:
    """Plays an episode; `run()` blocks until the end, a stop or Ctrl-C.

    Pass a node to publish through it (the player spins it itself), or a
    context (or neither: the player then makes and shuts down its own).
    """

    def __init__(self, episode: Episode, options: PlayOptions | None = None, *,
                 node: Node | None = None, context: Context | None = None) -> None:
        self.episode = episode
        self.options = opts = options or PlayOptions()
        _check_options(opts)
        reuse_freed_frames()
        self.streams = self._select(episode.streams)
        self.t0 = episode.start_ns
        self.t_end = episode.end_ns
        self.first_ns = min(self.t_end, self.t0 + int(opts.start_offset_s * 1e9))
        self.limit_ns = self.t_end if opts.playback_duration_s is None else \
            min(self.t_end, self.first_ns + int(opts.playback_duration_s * 1e9))

        self._own_context = node is None and context is None
        if self._own_context:
            prefer_async_publishing()
            context = Context()
            rclpy.init(args=[], context=context, signal_handler_options=SignalHandlerOptions.NO)
        self._own_node = node is None
        try:
            self.node = node if node is not None else Node(opts.node_name, context=context)
        except InvalidNodeNameException:
            if self._own_context:
                rclpy.try_shutdown(context=context)
            raise ReactRosError(f'--node-name {opts.node_name!r} is not a valid ROS node name') \
                from None

        self._cv = threading.Condition()
        self._gen = 0  # bumped on every control change, so waiters never miss one
        self._stop = threading.Event()
        self._paused = opts.start_paused
        self._rate = opts.rate
        self._anchor_ns = self.first_ns
        self._anchor_wall = time.monotonic()
        self._next_t: int | None = None
        self._seek_to: int | None = None
        self._seeks_taken = 0
        self._steps: deque[_Steps] = deque()
        self._loops = 0
        self._last_tick = 0.0
        self._last_progress = 0.0
        self._last_on_stats = 0.0
        self._last_line = 0.0
        self._stderr_tty = sys.stderr.isatty()

        self._stats_lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._failed: dict[str, int] = {}
        self._history: deque[tuple[float, dict[str, int]]] = deque(maxlen=5)
        self._played_ns = 0
        self._due = 0.0
        self._first_pub: float | None = None  # wall times of the first and last data message
        self._last_pub = 0.0
        self._lateness: list[float] | None = [] if opts.record_lateness else None

        self._publishers: dict[str, Any] = {}
        self._latched_tf: dict[str, dict[str, Any]] = {}
        try:
            self._make_publishers()
            self._clock_pub = self.node.create_publisher(Clock, '/clock', qos.CLOCK) \
                if opts.clock_hz > 0 else None
            self._make_services()
        except BaseException:
            self.close()
            raise

    # --- setup -------------------------------------------------------------

    def _select(self, streams: Sequence[Stream]) -> list[Stream]:
        opts = self.options
        chosen = []
        for s in streams:
            if s.role is Role.ROBOT_STATE and not opts.publish_robot_state:
                continue
            if opts.topics is not None and s.topic not in opts.topics:
                continue
            if s.topic in opts.exclude:
                continue
            chosen.append(s)
        if streams and not chosen and (opts.topics is not None or opts.exclude):
            raise ReactRosError(f'{self.episode.path}: --topics/--exclude leave no topic to play')
        return chosen

    def _out_topic(self, topic: str) -> str:
        return self.options.remap.get(topic, topic)

    def _make_publishers(self) -> None:
        types: dict[str, str] = {}
        latched: dict[str, bool] = {}
        heavy: dict[str, bool] = {}
        for s in self.streams:
            if types.setdefault(s.topic, s.msg_type) != s.msg_type:
                raise ReactRosError(f'{self.episode.path}: topic {s.topic} carries both '
                                    f'{types[s.topic]} and {s.msg_type}')
            latched[s.topic] = latched.get(s.topic, False) or s.latched
            heavy[s.topic] = heavy.get(s.topic, False) or s.heavy
        for topic, msg_type in types.items():
            self._publishers[topic] = self.node.create_publisher(
                message_class(msg_type), self._out_topic(topic),
                qos.live_writer(latched[topic], heavy[topic]))
            self._counts[topic] = 0
            self._failed[topic] = 0
            if latched[topic] and msg_type == TF_MESSAGE:
                self._latched_tf[topic] = {}

    def _make_services(self) -> None:
        n = self.node
        self._services = [
            n.create_service(srv.Pause, '~/pause', self._srv_pause),
            n.create_service(srv.Resume, '~/resume', self._srv_resume),
            n.create_service(srv.TogglePaused, '~/toggle_paused', self._srv_toggle),
            n.create_service(srv.IsPaused, '~/is_paused', self._srv_is_paused),
            n.create_service(srv.SetRate, '~/set_rate', self._srv_set_rate),
            n.create_service(srv.GetRate, '~/get_rate', self._srv_get_rate),
            n.create_service(srv.Seek, '~/seek', self._srv_seek),
            n.create_service(srv.PlayNext, '~/play_next', self._srv_play_next),
            n.create_service(srv.Burst, '~/burst', self._srv_burst),
        ]

    # --- control (thread-safe; services and keyboard call these) ------------

    def _changed(self) -> None:
        self._gen += 1
        self._cv.notify_all()

    def _now_ns(self) -> int:
        """Dataset time now; never ahead of the message waiting to go out."""
        if self._paused:
            return self._anchor_ns
        t = self._anchor_ns + int((time.monotonic() - self._anchor_wall) * self._rate * 1e9)
        return t if self._next_t is None else min(t, self._next_t)

    def _reanchor(self, t_ns: int) -> None:
        self._anchor_ns = t_ns
        self._anchor_wall = time.monotonic()

    def pause(self) -> None:
        with self._cv:
            if not self._paused:
                self._reanchor(self._now_ns())
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
            paused = self._paused
        self.resume() if paused else self.pause()

    def is_paused(self) -> bool:
        with self._cv:
            return self._paused

    def set_rate(self, rate: float) -> bool:
        if not (rate > 0 and math.isfinite(rate)):
            return False
        with self._cv:
            self._reanchor(self._now_ns())
            self._rate = rate
            self._changed()
        return True

    def get_rate(self) -> float:
        with self._cv:
            return self._rate

    def seek(self, t_ns: int, timeout: float = 10.0) -> bool:
        """Jump to dataset time `t_ns` (clamped to the first playable time).

        False past the end of what this run plays. Returns once the publishing
        thread has taken the request: nothing older goes out after that.
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
        """Publish the next `count` messages (None: all left) while paused; returns how many."""
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

    def lateness_ns(self) -> list[int]:
        """Publish time minus scheduled wall time of every message played on schedule."""
        return [int(x * 1e9) for x in self._lateness or []]

    def stats(self) -> PlaybackStats:
        with self._stats_lock:
            now = time.monotonic()
            counts = dict(self._counts)
            rates = {t: 0.0 for t in counts}
            if self._history:
                then, old = self._history[0]
                if now - then > 0.2:
                    rates = {t: (counts[t] - old.get(t, 0)) / (now - then) for t in counts}
            topics = {t: TopicStats(counts[t], self._failed[t], rates[t]) for t in counts}
            played = self._played_ns
            span = self._last_pub - self._first_pub if self._first_pub is not None else 0.0
        with self._cv:
            rate, paused, loops = self._rate, self._paused, self._loops
        return PlaybackStats(topics, played, self.t_end - self.t0, rate, paused,
                             sum(counts.values()), sum(t.failed for t in topics.values()), loops,
                             span)

    # --- services ------------------------------------------------------------

    def _srv_pause(self, req: Any, res: Any) -> Any:
        self.pause()
        return res

    def _srv_resume(self, req: Any, res: Any) -> Any:
        self.resume()
        return res

    def _srv_toggle(self, req: Any, res: Any) -> Any:
        self.toggle_paused()
        return res

    def _srv_is_paused(self, req: Any, res: Any) -> Any:
        res.paused = self.is_paused()
        return res

    def _srv_set_rate(self, req: Any, res: Any) -> Any:
        res.success = self.set_rate(req.rate)
        return res

    def _srv_get_rate(self, req: Any, res: Any) -> Any:
        res.rate = self.get_rate()
        return res

    def _srv_seek(self, req: Any, res: Any) -> Any:
        res.success = self.seek(to_ns(req.time))
        return res

    def _srv_play_next(self, req: Any, res: Any) -> Any:
        res.success = self.play_next(1) == 1
        return res

    def _srv_burst(self, req: Any, res: Any) -> Any:
        res.actually_burst = self.play_next(req.num_messages or None)
        return res

    # --- the publishing thread -------------------------------------------------

    def run(self) -> int:
        """Play until the end (or forever with loop); Ctrl-C stops cleanly with 0."""
        restore = self._install_signal_handlers()
        # Everything alive now (modules, the episode's index) lives as long as the
        # player: keep it out of the cyclic GC, whose full passes over those
        # objects took a fifth of the publishing thread's time.
        gc.freeze()
        executor = SingleThreadedExecutor(context=self.node.context)
        executor.add_node(self.node)
        spinner = threading.Thread(target=self._spin, args=(executor,), daemon=True,
                                   name='player services')
        spinner.start()
        keyboard = None
        if self.options.keyboard and Keyboard.available():
            keyboard = Keyboard({SPACE: self.toggle_paused, RIGHT: self._key_next,
                                 UP: lambda: self._step_rate(+0.1),
                                 DOWN: lambda: self._step_rate(-0.1)})
        try:
            if self.options.delay_s > 0:
                self._stop.wait(self.options.delay_s)
            self._play()
            if not self._stop.is_set():
                self._flush()
        finally:
            self.stop()
            with self._cv:
                self._finish_steps()
            if keyboard is not None:
                keyboard.stop()
            spinner.join(2.0)
            executor.shutdown(timeout_sec=1.0)
            self._progress(force=True, final=True)
            self._report_drops()
            self.close()
            restore()
        return 0

    def close(self) -> None:
        if self._own_node:
            self.node.destroy_node()
        if self._own_context:
            rclpy.try_shutdown(context=self.node.context)

    def _spin(self, executor: SingleThreadedExecutor) -> None:
        while not self._stop.is_set() and self.node.context.ok():
            try:
                executor.spin_once(timeout_sec=0.1)
            except Exception:  # a shutdown racing spin_once; nothing to serve any more
                if self._stop.is_set() or not self.node.context.ok():
                    return
                raise

    def _step_rate(self, delta: float) -> None:
        # rounded, so that ten presses of "up" give 2.0 and not 2.0000000000000004
        self.set_rate(max(0.1, round(self.get_rate() + delta, 6)))

    def _key_next(self) -> None:
        self.play_next(1, wait=None)

    def _install_signal_handlers(self) -> Callable[[], None]:
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        def handler(signum: int, frame: Any) -> None:
            if self._stop.is_set():
                raise KeyboardInterrupt  # a second Ctrl-C: the user really means it
            self.stop()

        old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}

        def restore() -> None:
            for s, h in old.items():
                signal.signal(s, h)
        return restore

    def _play(self) -> None:
        start = self.first_ns
        while not self._stop.is_set():
            outcome = self._play_pass(start)
            with self._cv:
                if self._seek_to is not None:
                    start, self._seek_to = self._seek_to, None
                    self._seeks_taken += 1
                    self._changed()
                    continue
                if self._stop.is_set():
                    return
                self._finish_steps()
                if outcome == 'end' and self.options.loop:
                    self._loops += 1
                    start = self.first_ns
                    continue
                return

    def _iterators(self, from_ns: int) -> tuple[list[Iterator[tuple[int, Any]]], list[ReadAhead]]:
        heavy = [s for s in self.streams if s.heavy]
        budget = self.options.read_ahead_bytes // max(1, len(heavy))
        readers: list[ReadAhead] = []
        its: list[Iterator[tuple[int, Any]]] = []
        for s in self.streams:
            if s.heavy:
                # A reader still decoding frames to drop (after a seek) must
                # not hold off a stop or a newer seek.
                r = ReadAhead(s, from_ns, budget,
                              lambda: self._stop.is_set() or self._seek_to is not None)
                readers.append(r)
                its.append(iter(r))
            else:
                its.append(_skip_to(s, from_ns))
        return its, readers

    def _play_pass(self, from_ns: int) -> str:
        with self._cv:
            self._reanchor(from_ns)
            self._next_t = None
        self._publish_clock(from_ns)
        its, readers = self._iterators(from_ns)
        try:
            merged = merge(its)
            # The merge needs every stream's first message: wait for the video
            # readers to open and decode theirs before the clock starts, or the
            # first frames of every pass would go out late.
            first = next(merged, None)
            with self._cv:
                self._reanchor(from_ns)
            for ev in itertools.chain([] if first is None else [first], merged):
                if ev.t_ns > self.limit_ns:
                    return 'end'
                action = self._wait_for(ev.t_ns)
                if action in ('stop', 'seek'):
                    return action
                self._publish(self.streams[ev.stream_idx], ev.msg)
                if action == 'go' and self._lateness is not None:
                    self._lateness.append(time.monotonic() - self._due)
                self._played_ns = ev.t_ns - self.t0
                if action == 'step':
                    self._step_done(ev.t_ns)
                self._progress()
            return 'end'
        except Cancelled:
            return 'seek' if self._seek_to is not None else 'stop'
        finally:
            for r in readers:
                r.close()

    def _wait_for(self, t_ns: int) -> str:
        period = 1.0 / self.options.clock_hz if self._clock_pub is not None else 0.1
        while True:
            clock_value = None
            with self._cv:
                self._next_t = t_ns
                if self._stop.is_set():
                    return 'stop'
                if self._seek_to is not None:
                    return 'seek'
                now = time.monotonic()
                action = None
                if self._paused:
                    if self._steps:
                        return 'step'
                    timeout = period
                else:
                    due = self._anchor_wall + (t_ns - self._anchor_ns) / self._rate / 1e9
                    if now >= due:
                        action = 'go'
                        self._due = due
                    timeout = min(due - now, period)
                if self._tick(now, period):
                    clock_value = self._now_ns()
                gen = self._gen
            if clock_value is not None:
                self._publish_clock(clock_value)
            if action is not None:
                return action
            self._progress()
            with self._cv:
                self._cv.wait_for(lambda: self._gen != gen, timeout)

    def _tick(self, now: float, period: float) -> bool:
        """Whether a /clock tick is due; keeps ticks on a fixed grid."""
        last = self._last_tick
        if now - last < period:
            return False
        self._last_tick = now if now - last > 2 * period else last + period
        return True

    def _step_done(self, t_ns: int) -> None:
        with self._cv:
            self._reanchor(t_ns)
            req = self._steps[0]
            req.done_count += 1
            if req.remaining is not None:
                req.remaining -= 1
                if req.remaining <= 0:
                    self._steps.popleft()
                    req.done.set()
        self._publish_clock(t_ns)

    def _finish_steps(self) -> None:
        while self._steps:
            self._steps.popleft().done.set()

    def _publish(self, stream: Stream, msg: Any) -> None:
        topic = stream.topic
        if topic in self._latched_tf:
            # A transient-local depth-1 topic keeps only its last message: merge
            # every static transform into one, as tf2_ros's static broadcaster does.
            acc = self._latched_tf[topic]
            if isinstance(msg, bytes):
                msg = deserialize_message(msg, message_class(TF_MESSAGE))
            for ts in msg.transforms:
                acc[ts.child_frame_id] = ts
            msg = message_class(TF_MESSAGE)(transforms=list(acc.values()))
        try:
            self._publishers[topic].publish(msg)
        except _rclpy.RCLError:
            # Fast DDS may refuse a publish when a reliable reader lags far
            # behind ("cannot publish data"); drop this one and keep the timeline.
            with self._stats_lock:
                self._failed[topic] += 1
            return
        now = time.monotonic()
        with self._stats_lock:
            self._counts[topic] += 1
            if self._first_pub is None:
                self._first_pub = now
            self._last_pub = now

    def _publish_clock(self, t_ns: int) -> None:
        if self._clock_pub is None:
            return
        try:
            self._clock_pub.publish(Clock(clock=stamp(t_ns)))
        except _rclpy.RCLError:
            pass  # best effort by design; the next tick carries the time again

    def _flush(self) -> None:
        # Reliable messages still in flight are lost when the node goes away.
        deadline = time.monotonic() + 2.0
        for pub in self._publishers.values():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                pub.wait_for_all_acked(Duration(nanoseconds=int(left * 1e9)))
            except Exception:  # an rmw without acks: nothing to wait for
                pass

    # --- progress --------------------------------------------------------------

    def _report_drops(self) -> None:
        failed = {t: n for t, n in self.stats().topics.items() if n.failed}
        if failed:  # even when quiet: the user should know data did not go out
            detail = ', '.join(f'{t} {s.failed}' for t, s in failed.items())
            sys.stderr.write(f'warning: publish failed for {detail} message(s)\n')

    def _progress(self, force: bool = False, final: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_progress < 0.25:
            return
        self._last_progress = now
        with self._stats_lock:
            if not self._history or now - self._history[-1][0] >= 0.5:
                self._history.append((now, dict(self._counts)))
        stats = self.stats()
        if self.options.on_stats is not None and (final or now - self._last_on_stats >= 1.0):
            self._last_on_stats = now
            self.options.on_stats(stats)
        if self.options.quiet:
            return
        if not self._stderr_tty and not final and now - self._last_line < 5.0:
            return  # a log file gets a line every 5 s, not a \r-joined stream
        self._last_line = now
        state = 'paused ' if stats.paused else 'playing'
        line = (f'\r[{state}] {stats.played_ns / 1e9:8.3f} / {stats.total_ns / 1e9:.3f} s'
                f'  rate {stats.rate:.2f}  msgs {stats.published}')
        if stats.failed:
            line += f'  dropped {stats.failed}'
        if not self._stderr_tty:
            line = line[1:] + '\n'
        elif final:
            line += '\n'
        sys.stderr.write(line)
        sys.stderr.flush()


def _skip_to(stream: Stream, from_ns: int) -> Iterator[tuple[int, Any]]:
    """The stream from `from_ns`; a latched stream first re-sends its last earlier message."""
    last = None
    for t_ns, msg in stream.open():
        if t_ns < from_ns:
            if stream.latched:
                last = msg
            continue
        if last is not None:
            yield from_ns, last
            last = None
        yield t_ns, msg
    if last is not None:
        yield from_ns, last


def _check_options(opts: PlayOptions) -> None:
    if not (opts.rate > 0 and math.isfinite(opts.rate)):
        raise ReactRosError(f'--rate must be a positive number, not {opts.rate}')
    if opts.start_offset_s < 0:
        raise ReactRosError(f'--start-offset must not be negative, not {opts.start_offset_s}')
    if opts.playback_duration_s is not None and opts.playback_duration_s <= 0:
        raise ReactRosError('--playback-duration must be positive')
    if opts.clock_hz < 0:
        raise ReactRosError(f'--clock must not be negative, not {opts.clock_hz}')
    for src, dst in opts.remap.items():
        if not src.startswith('/') or not dst.startswith('/'):
            raise ReactRosError(f'--remap {src}:={dst}: both topics must be absolute')


__all__ = ['PlayOptions', 'PlaybackStats', 'Player', 'TopicStats']
