"""`react-ros play` / `demo`: the live player plus, where the episode has a robot,
react_ros's drop-in robot_state_publisher in its own process."""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Callable, Iterator

import rclpy
from rclpy.context import Context
from rclpy.signals import SignalHandlerOptions

from react_ros.adapters.base import Episode
from react_ros.play_options import PlayOptions
from react_ros.progress import Progress
from react_ros.ros.isolation import announce
from react_ros.ros.state_publisher import start_state_publisher, wait_started
from react_ros.sinks.compressed_video import episode_with_images
from react_ros.sinks.live import PlaybackStats, Player, PlayerRuntime, check_playable, player_node
from react_ros.sinks.report import Report
from react_ros.sinks.tuning import freeze_heap, tune_for_playback
from react_ros.ros.dds import clear_dead_ports


class RateTable:
    """Live per-topic rates: redrawn in place on a terminal, a block every few s otherwise."""

    def __init__(self, out=None) -> None:
        # interval 0: the player already calls this only about once a second
        self.progress = Progress(sys.stdout if out is None else out, interval=0.0,
                                 log_interval=3.0)

    def __call__(self, stats: PlaybackStats) -> None:
        width = max((len(t) for t in stats.topics), default=5)
        state = 'paused' if stats.paused else f'rate x{stats.rate:.2f}'
        # dataset seconds per wall second: what the rate asks for when the player keeps up
        rtf = '' if stats.rtf is None else f'  real-time factor {stats.rtf:.2f}'
        lines = [f'{stats.played_ns / 1e9:7.2f} / {stats.total_ns / 1e9:.2f} s  {state}{rtf}  '
                 f'{stats.published} messages  loops {stats.loops}',
                 f'  {"topic".ljust(width)}  {"rate":>9}  {"count":>7}']
        for topic in sorted(stats.topics):
            ts = stats.topics[topic]
            lines.append(f'  {topic.ljust(width)}  {ts.rate_hz:7.1f}Hz  {ts.count:7d}')
        self.progress.show('\n'.join(lines), force=stats.played_ns >= stats.total_ns)

    def close(self) -> None:
        self.progress.close()


@dataclass(frozen=True)
class FoxgloveServing:
    """`--foxglove [PORT]`, --foxglove-host, --foxglove-no-wait: serve instead of DDS."""

    port: int
    host: str
    wait_for_viewer: bool = True


def play_episode(episode: Episode | Callable[[], Episode], options: PlayOptions,
                 runtime: PlayerRuntime | None = None, *, state_publisher: bool = True,
                 foxglove: FoxgloveServing | None = None, show_rates: bool = False) -> int:
    """Play `episode`, or the one `episode()` opens, as `options` ask (the user's);
    `runtime` is what the entry point decides (node name, keyboard); `state_publisher`
    False: one runs already (--no-state-publisher).

    Everything that can refuse comes first (the episode opened, the options and the
    topic selection checked: live.check_playable), before any DDS entity exists: a
    refusal then tears down no participant (one torn down young crashed Fast DDS once,
    issue 39). Then the state publisher's process starts, so that it comes up while
    the player's participant does, then the player's node and publishers; the first
    line goes out, and the player waits for the state publisher (ros/discovery.py).
    """
    run = runtime or PlayerRuntime()
    report = Report(options.log_level)
    if foxglove is not None:  # no DDS at all: sinks/foxglove.py says why
        from react_ros.sinks.foxglove import serve_episode
        return serve_episode(episode, options, run, host=foxglove.host, port=foxglove.port,
                             wait_for_viewer=foxglove.wait_for_viewer)
    table = RateTable() if show_rates else None
    if table is not None:  # the rate table takes the progress line's place
        options, run = replace(options, quiet=True), replace(run, on_stats=table)
    state_publisher_env = dict(os.environ)  # it keeps its own DDS and allocator defaults
    context = node = rsp = None
    try:
        if callable(episode):
            episode = episode()
        episode = episode_with_images(episode, options.images,
                                      reencode=not options.no_reencode, notes=report.info)
        check_playable(episode, options, run.node_name)
        # (--publish-robot-state: the player publishes the robot itself)
        if episode.urdf and state_publisher and not options.publish_robot_state:
            rsp = start_state_publisher(episode.urdf, source=episode.path,
                                        env=state_publisher_env)
            run = replace(run, expect_state_publisher=True)
        tune_for_playback()
        context = Context()
        clear_dead_ports()  # a port a killed process left half-made would hang Node()
        rclpy.init(args=[], context=context, signal_handler_options=SignalHandlerOptions.NO)
        since = time.monotonic()
        node = player_node(run.node_name, context)
        player = Player(episode, options, run, node=node, since=since)
        # The first line once the episode and options are known to play: bad input
        # stays one line. (The demo printed its own.)
        if report.shows('info'):
            announce('react-ros play')
        if rsp is not None:
            wait_started(rsp, episode.path, on_slow=lambda waited: report.info(
                f'react-ros play: waiting for the state publisher to start ({waited:.0f} s; '
                'a busy machine is slow to start a process)'))
        freeze_heap()
        return player.run()
    finally:
        # A Ctrl-C (or a launcher's SIGINT) now must not cut the shutdown of DDS
        # short: that aborted the process ("terminate called without an active
        # exception"). What is left is bounded (the state publisher's stop).
        with _signals_ignored():
            if table is not None:
                table.close()
            if rsp is not None:
                rsp.stop()
            if node is not None:
                node.destroy_node()
            if context is not None:
                rclpy.try_shutdown(context=context)


@contextmanager
def _signals_ignored() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
