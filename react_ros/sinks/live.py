"""Live playback of an episode on ROS 2 topics, with /clock and rosbag2's controls.

One publishing thread walks the merged streams in stamp order and publishes each
message when the timeline (timeline.py) says its time has come. Heavy (video)
streams are decoded ahead on one worker thread each, bounded in bytes
(readahead.py). A second thread spins the node so the rosbag2 player services
(services.py) answer while messages go out; they, and the keyboard, change the
timeline only.

Process-wide tuning (tuning.py) is the caller's: tune_for_playback() before
rclpy.init, freeze_heap() once the episode is open.

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

Seeking re-opens every stream at the target (streams.open_at): a video stream
decodes from the keyframe before it (Stream.open_from), so a seek costs at most
one GOP of decoding wherever the target is, on the reader threads, in parallel
per camera. Other streams are read from their start and what comes before the
target is dropped (a latched one re-sends its last message before it).

Delivery. Before the first message the player waits, bounded, for DDS
discovery to settle (discovery.py), with /clock held at the first stamp; at the
end, and after Ctrl-C, it waits, bounded, until reliable subscribers have
acknowledged what was published. In between, flow control (flow.py): no writer
has more than a window of messages its reliable readers have not acknowledged,
so nothing is overwritten before it arrives. When readers (or the player) cannot
keep the rate, the player waits for them and the timeline slips (Timeline.slip):
dataset time and /clock run slower, and the progress line shows the real-time
factor reached. `drop_late_s` chooses the other way for sensor-style consumers:
the timeline keeps real time and a heavy message that is later than that, or
whose writer's window is full, is not sent; the drops are counted and reported.
"""
from __future__ import annotations

import itertools
import math
import sys
import threading
import time
from collections import deque
from contextlib import contextmanager
from functools import partial
from dataclasses import dataclass, replace
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
from rosgraph_msgs.msg import Clock

from react_ros.adapters.base import Episode  # noqa: TC001 (runtime use in annotations only)
from react_ros.errors import ReactRosError
from react_ros.progress import Progress
from react_ros.ros import qos
from react_ros.ros.cdr_publish import publish_cdr
from react_ros.ros.msgs import message_class, stamp
from react_ros.ros.names import resolve_topic
from react_ros.ros.stop_signals import StopSignals
from react_ros.ros import discovery
from react_ros.sinks.flow import POLL_S, AckWindow
from react_ros.sinks import timeline as tl
from react_ros.sinks.keyboard import start_keyboard
from react_ros.sinks.report import Report, ros_severity
from react_ros.sinks.readahead import Cancelled, ReadAhead, serialised
from react_ros.sinks.selection import CLOCK, Topic, TopicFilter, fold_topics, player_conflict
from react_ros.sinks.selection import published_names, select_for_play
from react_ros.sinks.services import make_services
from react_ros.streams import Event, Pieces, Stream, merge
from react_ros.play_options import PlayOptions
from react_ros.sinks.image_encoding import decodable, image_cdr_frames
from react_ros.ros.dds import clear_dead_ports

TF_MESSAGE = 'tf2_msgs/msg/TFMessage'
CLOCK_TYPE = 'rosgraph_msgs/msg/Clock'
# How late a message may go out before the timeline slips instead of catching up.
MAX_LAG_S = 0.1
# How long a player that expects a state publisher waits for it before playing anyway.
STATE_PUBLISHER_WAIT_S = 120.0
STATE_PUBLISHER = 'robot_state_publisher'
JOINT_STATES = '/joint_states'


@dataclass(frozen=True)
class PlayerRuntime:
    """What the entry point (play, the player node, a benchmark) decides about a run, not
    the user: the user's choices are PlayOptions (react_ros/play_options.py), passed to
    the player as they are. No field of PlayOptions is repeated here."""

    node_name: str = 'react_ros_player'
    keyboard: bool = True
    read_ahead_bytes: int = 256 * 2**20
    # Keep each message's lateness against its scheduled wall time (for the
    # benchmark); off by default so memory stays flat however long the episode.
    record_lateness: bool = False
    # A robot_state_publisher (ours or another's, by its node name) will subscribe
    # /joint_states: before the first message, wait until the graph shows it, however
    # long a busy machine takes to start it (up to STATE_PUBLISHER_WAIT_S), then
    # for discovery as above. Without it the robot's /tf missed the episode's start.
    expect_state_publisher: bool = False
    # At the end (also after a stop): wait at most this long for reliable
    # subscribers to acknowledge what was published (rosbag2's --wait-for-all-acked).
    # A subscriber starved of CPU took longer than 2 s here (2 cores kept busy).
    wait_for_acks_s: float = 5.0
    on_stats: Callable[['PlaybackStats'], None] | None = None  # called about once a second


@dataclass(frozen=True)
class TopicStats:
    count: int
    failed: int
    rate_hz: float
    dropped: int = 0  # late frames not sent (drop_late_s)


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
    # Dataset seconds played per wall second over the last seconds (1.0: real
    # time at --rate 1); None while paused or just after a start, loop or seek.
    rtf: float | None = None
    dropped: int = 0  # late frames not sent (drop_late_s), all topics
    waited_s: float = 0.0  # wall time spent waiting for readers to acknowledge (flow control)
    # dataset time from the first to the last data message published: what span_s played
    span_ns: int = 0

    @property
    def pace(self) -> float | None:
        """Dataset seconds played per wall second, first to last message; None: too few."""
        return self.span_ns / 1e9 / self.span_s if self.span_s > 0 else None


class Player:
    """Plays an episode; `run()` blocks until the end, a stop or Ctrl-C.

    Pass a node to publish through it (the player spins it itself), or a
    context (or neither: the player then makes and shuts down its own).
    `since` is when that node's or context's DDS participant came up
    (time.monotonic(); default: now): the discovery wait counts from there.
    """

    def __init__(self, episode: Episode, options: PlayOptions | None = None,
                 runtime: PlayerRuntime | None = None, *, node: Node | None = None,
                 context: Context | None = None, since: float | None = None) -> None:
        self.episode = episode
        self.options = opts = options or PlayOptions()
        self.runtime = run = runtime or PlayerRuntime()
        self.report = Report(opts.log_level)
        # names resolve as the node publishing them does (its name, in the root namespace)
        name = node.get_name() if node is not None else run.node_name
        # every refusal before any DDS entity of ours exists (check_playable)
        self.streams, self._topics, self._remap = _plan(episode, opts, name)
        self.timeline = timeline_for(episode, opts)

        self._born = time.monotonic() if since is None else since
        self._own_context = node is None and context is None
        if self._own_context:
            context = Context()
            clear_dead_ports()  # a port a killed process left half-made would hang Node()
            rclpy.init(args=[], context=context, signal_handler_options=SignalHandlerOptions.NO)
        self._own_node = node is None
        try:
            self.node = node if node is not None else player_node(run.node_name, context)
        except ReactRosError:
            if self._own_context:
                rclpy.try_shutdown(context=context)
            raise
        self.node.get_logger().set_level(ros_severity(opts.log_level))

        self._last_progress = 0.0
        self._last_on_stats = 0.0
        # the progress line is for a person at a terminal; a log gets the summary lines
        self._line = Progress(sys.stderr) if sys.stderr.isatty() else None

        self._stats_lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._failed: dict[str, int] = {}
        self._dropped: dict[str, int] = {}
        self._waited_s = 0.0
        # (wall time, counts, dataset time played, pass): rates and the real-time factor
        self._history: deque[tuple[float, dict[str, int], int, int]] = deque(maxlen=5)
        self._played_ns = 0
        self._pass = 0  # bumped at every start of a pass (loop, seek)
        self._settled = False  # discovery waited for (once, before the first pass)
        self.discovery: discovery.Settled | None = None
        self._first_pub: float | None = None  # wall times of the first and last data message
        self._last_pub = 0.0
        self._first_pub_ns = self._last_pub_ns = 0  # and their dataset times
        self._lateness: list[float] | None = [] if run.record_lateness else None

        self._publishers: dict[str, Any] = {}
        self._windows: dict[str, AckWindow] = {}
        self._heavy_topics: set[str] = set()
        self._latched_tf: dict[str, dict[str, Any]] = {}
        try:
            self._make_publishers()
            self._clock_pub = self.node.create_publisher(Clock, '/clock', qos.CLOCK) \
                if opts.clock > 0 else None
            self._services = make_services(self.node, self.timeline)
        except BaseException:
            self.close()
            raise

    # --- setup -------------------------------------------------------------

    def _out_topic(self, topic: str) -> str:
        return self._remap.get(topic, topic)

    def _make_publishers(self) -> None:
        for topic, t in self._topics.items():
            pub = self._publishers[topic] = self.node.create_publisher(
                message_class(t.msg_type), self._out_topic(topic), qos.live_writer(t.latched))
            if not t.latched:
                self._windows[topic] = AckWindow(pub, qos.window(t.heavy, t.approx_bytes))
            if t.heavy:
                self._heavy_topics.add(topic)
            self._counts[topic] = 0
            self._failed[topic] = 0
            self._dropped[topic] = 0
            if t.latched and t.msg_type == TF_MESSAGE:
                self._latched_tf[topic] = {}

    # --- control (thread-safe; services and keyboard call these) ------------

    def pause(self) -> None:
        self.timeline.pause()

    def resume(self) -> None:
        self.timeline.resume()

    def toggle_paused(self) -> None:
        self.timeline.toggle_paused()

    def is_paused(self) -> bool:
        return self.timeline.paused

    def set_rate(self, rate: float) -> bool:
        return self.timeline.set_rate(rate)

    def get_rate(self) -> float:
        return self.timeline.rate

    def seek(self, t_ns: int, timeout: float = 10.0) -> bool:
        """Jump to dataset time `t_ns`; see Timeline.seek."""
        return self.timeline.seek(t_ns, timeout)

    def play_next(self, count: int | None = 1, wait: float | None = 10.0) -> int:
        """Publish the next `count` messages (None: all left) while paused; returns how many."""
        return self.timeline.play_next(count, wait)

    def stop(self) -> None:
        self.timeline.stop()

    def lateness_ns(self) -> list[int]:
        """Publish time minus scheduled wall time of every message played on schedule."""
        return [int(x * 1e9) for x in self._lateness or []]

    def stats(self) -> PlaybackStats:
        with self._stats_lock:
            now = time.monotonic()
            counts = dict(self._counts)
            rates = {t: 0.0 for t in counts}
            rtf = None
            if self._history:
                then, old, _, _ = self._history[0]
                if now - then > 0.2:
                    rates = {t: (counts[t] - old.get(t, 0)) / (now - then) for t in counts}
                # once over, up to the last message (not the wait for acknowledgements)
                until = self._last_pub if self.timeline.stopped and self._last_pub else now
                rtf = real_time_factor(self._history, until, self._played_ns, self._pass)
            topics = {t: TopicStats(counts[t], self._failed[t], rates[t], self._dropped[t])
                      for t in counts}
            played = self._played_ns
            span = self._last_pub - self._first_pub if self._first_pub is not None else 0.0
            span_ns = self._last_pub_ns - self._first_pub_ns
            waited = self._waited_s
        t = self.timeline
        paused = t.paused
        return PlaybackStats(topics, played, t.t_end - t.t0, t.rate, paused,
                             sum(counts.values()), sum(s.failed for s in topics.values()), t.loops,
                             span, None if paused else rtf,
                             sum(s.dropped for s in topics.values()), waited, span_ns)

    # --- the publishing thread -------------------------------------------------

    def run(self) -> int:
        """Play until the end (or forever with loop); Ctrl-C stops cleanly with 0."""
        restore = self._install_signal_handlers()
        executor = SingleThreadedExecutor(context=self.node.context)
        executor.add_node(self.node)
        spinner = threading.Thread(target=self._spin, args=(executor,), daemon=True,
                                   name='player services')
        spinner.start()
        self.node.get_logger().debug(
            'playing ' + ', '.join(sorted({self._out_topic(s.topic) for s in self.streams})))
        keyboard = start_keyboard(self.runtime.keyboard, self.timeline, self.report.info)
        flushed = False
        try:
            self._play()
            if not self.timeline.stopped:  # the end: the services still answer meanwhile
                self._flush()
                flushed = True
        finally:
            self.stop()
            self.timeline.finish_steps()
            if not flushed:  # after Ctrl-C too: what went out should arrive
                self._flush()
            if keyboard is not None:
                keyboard.stop()
            # Teardown order: nothing may use a writer (a service's response, a
            # publisher) while it is destroyed. The spinner leaves its loop once stopped:
            # spin_once returns at the wake, and every service callback returns once the
            # timeline is stopped and its steps finished (Timeline.seek, play_next). Only
            # then is the executor shut down, and the node (close, or our caller) after it.
            executor.wake()
            spinner.join()
            executor.shutdown()
            self._progress(force=True, final=True)
            self._report_pace()
            self._report_drops()
            self.close()
            restore()
        return 0

    def close(self) -> None:
        """Destroy this player's own node and context (a node given to it is the giver's
        to destroy, after run() returned: nothing of the player uses it any more)."""
        if self._own_node:
            self.node.destroy_node()
        if self._own_context:
            rclpy.try_shutdown(context=self.node.context)

    def _spin(self, executor: SingleThreadedExecutor) -> None:
        while not self.timeline.stopped and self.node.context.ok():
            try:
                executor.spin_once(timeout_sec=0.1)
            except Exception:  # a context shut down by someone else; nothing to serve
                if self.timeline.stopped or not self.node.context.ok():
                    return
                raise

    def _install_signal_handlers(self) -> Callable[[], None]:
        # SIGINT/SIGTERM stop the playback; the same Ctrl-C delivered twice (a
        # terminal's and ros2 launch's) is one stop, never a KeyboardInterrupt
        # raised into the flush or DDS's shutdown (a traceback, or an abort);
        # a signal well after the first ends the process at once (stop_signals.py).
        return StopSignals('player', self.stop).restore

    def _play(self) -> None:
        start: int | None = self.timeline.first_ns
        from_start = True  # the first pass, or a loop's: ros2 bag's --delay comes first
        while start is not None and not self.timeline.stopped:
            if from_start and self.options.delay > 0:
                self.timeline.sleep(self.options.delay)
            outcome = self._play_pass(start)
            start = self.timeline.next_pass(outcome)
            from_start = outcome == tl.END

    def _before_first(self, from_ns: int) -> None:
        if not self._settled:  # while the video readers open and decode ahead
            self._settled = True
            self._wait_for_discovery(from_ns)

    def _play_pass(self, from_ns: int) -> str:
        timeline = self.timeline
        try:
            with pass_events(self.streams, from_ns, self.runtime.read_ahead_bytes, timeline,
                             self._publish_clock, self._before_first,
                             serialise=self.options.drop_late is None) as events:
                with self._stats_lock:
                    self._pass += 1
                    self._played_ns = from_ns - timeline.t0
                return self._play_events(events)
        except Cancelled:
            return tl.STOP if timeline.stopped else tl.SEEK

    def _play_events(self, events: Iterator[Event]) -> str:
        timeline = self.timeline
        for ev in events:
            if ev.t_ns > timeline.limit_ns:
                return tl.END
            action = timeline.wait_for(ev.t_ns, self._publish_clock, self._progress)
            if action in (tl.STOP, tl.SEEK):
                return action
            topic = self.streams[ev.stream_idx].topic
            if action == tl.GO and self._drops(topic, ev.t_ns):
                with self._stats_lock:
                    self._dropped[topic] += 1
                self._played_ns = ev.t_ns - timeline.t0
                self._progress()
                continue
            if not self._wait_for_room(topic):
                return tl.STOP if timeline.stopped else tl.SEEK
            self._publish(self.streams[ev.stream_idx], ev.msg, ev.t_ns)
            if action == tl.GO:
                if self._lateness is not None:
                    self._lateness.append(time.monotonic() - timeline.last_due)
                if self.options.drop_late is None:
                    timeline.slip(ev.t_ns, MAX_LAG_S)
            self._played_ns = ev.t_ns - timeline.t0
            if action == tl.STEP:
                timeline.step_done(ev.t_ns)
                self._publish_clock(ev.t_ns)
            self._progress()
        return tl.END

    def _drops(self, topic: str, t_ns: int) -> bool:
        """With drop_late_s: whether this heavy message is dropped to keep real time."""
        bound = self.options.drop_late
        if bound is None or topic not in self._heavy_topics:
            return False
        window = self._windows.get(topic)
        return self.timeline.late_s(t_ns) > bound or (window is not None
                                                      and not window.has_room())

    def _wait_for_room(self, topic: str) -> bool:
        """Block until `topic`'s readers have acknowledged enough (flow.py); False: interrupted."""
        window = self._windows.get(topic)
        if window is None or window.has_room():
            return True
        start = time.monotonic()
        try:
            while not window.has_room():
                if self.timeline.interrupted:
                    return False
                self._progress()
                self.timeline.sleep(POLL_S)
            return True
        finally:
            with self._stats_lock:
                self._waited_s += time.monotonic() - start

    def _publish(self, stream: Stream, msg: Any, t_ns: int) -> None:
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
        elif isinstance(msg, Pieces):  # a camera's frame --drop-late sends: one buffer now
            msg = serialised(msg)
        try:
            # recorded CDR, a camera's frame (memoryview: its head before the pool's
            # pixels, readahead.serialised): the GIL let go
            if isinstance(msg, (bytes, memoryview)):
                publish_cdr(self._publishers[topic], msg)
            else:
                self._publishers[topic].publish(msg)
        except _rclpy.RCLError:
            # Fast DDS may refuse a publish when a reliable reader lags far
            # behind ("cannot publish data"); drop this one and keep the timeline.
            with self._stats_lock:
                self._failed[topic] += 1
            return
        window = self._windows.get(topic)
        if window is not None:
            window.sent()
        now = time.monotonic()
        with self._stats_lock:
            self._counts[topic] += 1
            if self._first_pub is None:
                self._first_pub, self._first_pub_ns = now, t_ns
            self._last_pub, self._last_pub_ns = now, t_ns

    def _publish_clock(self, t_ns: int) -> None:
        if self._clock_pub is None:
            return
        try:
            self._clock_pub.publish(Clock(clock=stamp(t_ns)))
        except _rclpy.RCLError:
            pass  # best effort by design; the next tick carries the time again

    def _wait_for_discovery(self, clock_ns: int) -> None:
        """Hold the timeline (and /clock at `clock_ns`) until discovery settles, bounded."""
        last_tick = -math.inf

        def hold_clock() -> None:
            nonlocal last_tick
            now = time.monotonic()
            if now - last_tick >= self.timeline.tick_s:
                last_tick = now
                self._publish_clock(clock_ns)
        self._wait_for_state_publisher(hold_clock)
        bound = self.options.wait_for_subscribers
        if bound <= 0:
            return
        pubs = [(pub, s.msg_type, pub.qos_profile) for s in self.streams
                for pub in [self._publishers[s.topic]]]
        pubs = list({id(p[0]): p for p in pubs}.values())
        if self._clock_pub is not None:
            pubs.append((self._clock_pub, 'rosgraph_msgs/msg/Clock', qos.CLOCK))
        self.discovery = discovery.settle(discovery.GraphProbe(self.node, pubs), bound,
                                          born=self._born,
                                          on_poll=hold_clock, sleep=self.timeline.sleep)
        if self.discovery.unmatched and not self.timeline.stopped:
            self.report.warn(f'warning: after {bound:g} s, not every subscription is matched '
                             f'yet on {", ".join(self.discovery.unmatched)}; playing anyway')

    def _wait_for_state_publisher(self, hold_clock: Callable[[], None]) -> None:
        """With expect_state_publisher: until the graph shows robot_state_publisher's
        /joint_states subscription (ours subscribes once it can deliver /tf to the
        subscribers already running: ros/state_publisher.py)."""
        joint_states = [t for t in self._publishers if self._out_topic(t) == JOINT_STATES]
        if not (self.runtime.expect_state_publisher and joint_states):
            return
        seen = discovery.wait_until(
            lambda: discovery.subscribed_by(self.node, JOINT_STATES, STATE_PUBLISHER),
            STATE_PUBLISHER_WAIT_S, on_poll=hold_clock, sleep=self.timeline.sleep,
            on_slow=lambda waited: self.report.info(
                f'waiting for {STATE_PUBLISHER} to subscribe to {JOINT_STATES} '
                f'({waited:.0f} s; a busy machine is slow to start a process)'))
        if not seen and not self.timeline.stopped:
            self.report.warn(f'warning: no {STATE_PUBLISHER} subscribed to {JOINT_STATES} '
                             f'within {STATE_PUBLISHER_WAIT_S:g} s; playing anyway (the '
                             'moving joints have no /tf until one does)')

    def _flush(self) -> None:
        """Wait, bounded, until reliable subscribers acknowledged what was published.

        With asynchronous publishing the last messages may still sit in the
        writer's queue; they are lost when the node goes away.
        """
        bound = self.runtime.wait_for_acks_s
        if bound <= 0 or not self.node.context.ok():
            return
        deadline = time.monotonic() + bound
        late = []
        for topic, pub in self._publishers.items():
            # past the deadline, still look (timeout 0) so the warning is right
            left = max(0.0, deadline - time.monotonic())
            try:
                if not pub.wait_for_all_acked(Duration(nanoseconds=int(left * 1e9))):
                    late.append(self._out_topic(topic))
            except Exception:  # an rmw without acknowledgements: nothing to wait for
                pass
        if late:
            self.report.warn(f'warning: not acknowledged by every reliable subscriber '
                             f'within {bound:g} s: {", ".join(late)}')

    # --- progress --------------------------------------------------------------

    def _report_pace(self) -> None:
        """Over the whole run: the real-time factor reached, and the wait for readers."""
        stats = self.stats()
        pace = stats.pace
        if self.options.quiet or pace is None or stats.loops or self._pass != 1:
            return  # after a loop or a seek, dataset time played is not wall time's
        # What went out, from the first message (at the start offset) to the last:
        # neither the offset skipped nor the discovery wait before it.
        line = (f'played {stats.span_ns / 1e9:.2f} s of the episode in {stats.span_s:.2f} s: '
                f'real-time factor {pace:.2f} (rate {stats.rate:g})')
        if stats.waited_s >= 0.01:
            line += f', {stats.waited_s:.2f} s of it waiting for subscribers to keep up'
        self.report.info(line)

    def _report_drops(self) -> None:
        stats = self.stats()
        failed = {t: n for t, n in stats.topics.items() if n.failed}
        if failed:  # even when quiet: the user should know data did not go out
            detail = ', '.join(f'{t} {s.failed}' for t, s in failed.items())
            self.report.warn(f'warning: publish failed for {detail} message(s)')
        if stats.dropped:  # asked for (drop_late_s), but the count is the user's to know
            detail = ', '.join(f'{self._out_topic(t)} {s.dropped}'
                               for t, s in stats.topics.items() if s.dropped)
            total = stats.dropped + stats.published
            self.report.warn(f'dropped {stats.dropped} of {total} messages to keep real time '
                             f'(--drop-late {self.options.drop_late:g} s): {detail}')

    def _progress(self, force: bool = False, final: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_progress < 0.25:
            return
        self._last_progress = now
        with self._stats_lock:
            if not self._history or now - self._history[-1][0] >= 0.5:
                self._history.append((now, dict(self._counts), self._played_ns, self._pass))
        stats = self.stats()
        if self.runtime.on_stats is not None and (final or now - self._last_on_stats >= 1.0):
            self._last_on_stats = now
            self.runtime.on_stats(stats)
        if self.options.quiet or self._line is None:
            return
        state = 'paused ' if stats.paused else 'playing'
        line = (f'[{state}] {stats.played_ns / 1e9:8.3f} / {stats.total_ns / 1e9:.3f} s'
                f'  rate {stats.rate:.2f}  msgs {stats.published}')
        if stats.rtf is not None:
            line += f'  real-time factor {stats.rtf:.2f}'
        if stats.failed:
            line += f'  failed {stats.failed}'
        if stats.dropped:
            line += f'  dropped late {stats.dropped}'
        self._line.show(line, force=final)
        if final:
            self._line.close()


def real_time_factor(history: Sequence[tuple[float, Any, int, int]], now: float, played_ns: int,
                     pass_id: int) -> float | None:
    """Dataset seconds played per wall second since the oldest `history` entry of this pass.

    Entries are (wall time, _, dataset time played, pass); only the current pass
    counts, since a loop or a seek moves the dataset time without playing it.
    None until that covers a fifth of a second.
    """
    same = [h for h in history if h[3] == pass_id]
    if not same or now - same[0][0] <= 0.2:
        return None
    return max(0.0, (played_ns - same[0][2]) / 1e9 / (now - same[0][0]))


def player_node(name: str, context: Context | None = None) -> Node:
    """The player's node; its DDS participant comes up with it (rmw makes it lazily)."""
    try:
        return Node(name, context=context)
    except InvalidNodeNameException:
        raise ReactRosError(f'--node-name {name!r} is not a valid ROS node name') from None


def pass_iterators(streams: Sequence[Stream], from_ns: int, read_ahead_bytes: int,
                   interrupted: Callable[[], bool], serialise: bool = True
                   ) -> tuple[list[Iterator[tuple[int, Any]]], list[ReadAhead]]:
    """One iterator per stream from `from_ns`: heavy ones read ahead, and serialised
    unless not `serialise`, on threads within `read_ahead_bytes` together, the rest in line
    (a latched one re-sends its last).

    `interrupted`: a reader still decoding frames to drop (after a seek) must not hold
    off a stop or a newer seek. Both sinks that play (DDS and Foxglove) start passes here.
    `serialise` False: a player that drops late frames serialises only those it sends
    (serialising every frame ahead cost --drop-late its real time: RTF 0.55-0.80 against
    0.99 on 3 UMI cameras at 1920x1200 on 2 cores, most frames being dropped).
    """
    heavy = [s for s in streams if s.heavy]
    budget = read_ahead_bytes // max(1, len(heavy))
    readers: list[ReadAhead] = []
    its: list[Iterator[tuple[int, Any]]] = []
    for s in streams:
        if s.heavy:
            if decodable(s):
                s = _as_cdr(s)
            r = ReadAhead(s, from_ns, budget, interrupted, serialised if serialise else None)
            readers.append(r)
            its.append(iter(r))
        else:
            its.append(_skip_to(s, from_ns))
    return its, readers


@contextmanager
def pass_events(streams: Sequence[Stream], from_ns: int, read_ahead_bytes: int,
                timeline: tl.Timeline, clock: Callable[[int], None],
                before_first: Callable[[int], None] = lambda _: None,
                serialise: bool = True) -> Iterator[Iterator[Event]]:
    """One pass's messages from `from_ns` in stamp order, for both sinks that play.

    The timeline starts the pass, `clock` tells the time, the readers open
    (pass_iterators), `before_first` runs while they do; the timeline starts again
    once the first message is ready, since the merge needs every stream's first:
    else the video readers' first frames of every pass would go out late. The
    readers stop and are joined when the block ends; a seek or stop while they
    read raises Cancelled. `serialise`: as pass_iterators'.
    """
    timeline.start_pass(from_ns)
    clock(from_ns)
    its, readers = pass_iterators(streams, from_ns, read_ahead_bytes,
                                  lambda: timeline.interrupted, serialise)
    try:
        before_first(from_ns)
        merged = merge(its)
        first = next(merged, None)
        timeline.start_pass(from_ns)
        yield itertools.chain([] if first is None else [first], merged)
    finally:
        for r in readers:
            r.close()


def _as_cdr(stream: Stream) -> Stream:
    """A video camera's Images as the CDR they serialise to, in two pieces: the Image's
    head and the decoder's buffer (image_encoding.image_cdr_frames), made one buffer when
    serialised (readahead.serialised: on the read-ahead thread, or at the publish of a
    frame --drop-late sends): the head written into the room the frame pool leaves before
    the pixels (swscale.cdr_in_place), or, for a scaled frame, the two joined. Building
    the Image and serialising it copied each frame three times (6.9 MB at 1920x1200)."""
    assert stream.video is not None  # decodable
    frames = partial(image_cdr_frames, stream.video)  # open(), and open_from(t_ns)
    return replace(stream, open=frames, open_from=frames)


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


def timeline_for(episode: Episode, opts: PlayOptions) -> tl.Timeline:
    """The timeline `opts` ask for over `episode`, for both sinks that play."""
    return tl.Timeline(
        episode.start_ns, episode.end_ns, rate=opts.rate, start_offset_s=opts.start_offset,
        playback_duration_s=opts.playback_duration, start_paused=opts.start_paused,
        loop=opts.loop, tick_s=1.0 / opts.clock if opts.clock > 0 else 0.1,
        until_ns=opts.playback_until_ns)


def topic_filter(opts: PlayOptions) -> TopicFilter:
    return TopicFilter(opts.topics, opts.exclude_topics, opts.regex, opts.exclude_regex)


def resolved_remap(remap: Mapping[str, str], node: str) -> dict[str, str]:
    """FROM:=TO rules with both names resolved as the node `node` resolves them."""
    out = {}
    for src, dst in remap.items():
        out[resolve_topic(src, node, flag='--remap')] = resolve_topic(dst, node, flag='--remap')
    return out


def check_playable(episode: Episode, opts: PlayOptions,
                   node: str = PlayerRuntime.node_name) -> None:
    """Refuse what would play nothing or could not be published, without any DDS entity:
    a start offset at or past the episode's end, a duration that plays nothing, a
    --playback-until stamp before the start, a topic selection that leaves no topic, two
    types on one topic (a remap onto a name of another type). `node`: the player node's
    name, which relative names resolve by.

    A caller that makes the player's node before opening the episode (to discover
    meanwhile) calls this as soon as the episode is open; Player checks it again.
    """
    _plan(episode, opts, node)


def _plan(episode: Episode, opts: PlayOptions, node: str
          ) -> tuple[list[Stream], dict[str, Topic], dict[str, str]]:
    """What plays: the streams chosen, their topics, and the remap rules resolved."""
    problem = tl.nothing_to_play(episode.start_ns, episode.end_ns, opts.start_offset,
                                 opts.playback_duration, opts.playback_until_ns)
    if problem is not None:
        raise ReactRosError(f'{episode.path}: {problem}')
    streams = select_for_play(episode.path, episode.streams, topic_filter(opts),
                              robot_state=opts.publish_robot_state, node=node)
    topics = fold_topics(streams, player_conflict(episode.path))
    remap = resolved_remap(opts.remap_rules, node)
    own = {CLOCK: CLOCK_TYPE} if opts.clock > 0 else {}
    published_names(topics, remap, own, lambda text: ReactRosError(f'{episode.path}: {text}'))
    return streams, topics, remap


__all__ = ['PlayerRuntime', 'PlaybackStats', 'Player', 'TopicStats', 'check_playable',
           'player_node']
