"""`react-ros play --foxglove [PORT]`: an episode served over the Foxglove WebSocket protocol.

The same streams as the live player, walked by the same Timeline (timeline.py),
go out as channels of a foxglove-sdk WebSocket server instead of DDS topics:
each topic is one channel carrying its ROS 2 messages as CDR with the
`ros2msg` schema (the type's full .msg text with its dependencies, as rosbag2
and Foxglove's own ROS 2 bridge send it), so Foxglove and Lichtblick decode
them natively and their 3D, Image and Plot panels work as on a ROS system.

Foxglove replaces DDS here, it does not add to it: the point is a Foxglove view
on a machine without ROS, and a user who only wants that gains nothing from a
DDS participant announcing itself on the network, a robot_state_publisher
process or the discovery wait. So nothing touches DDS (no rclpy context, no
node): the robot-state streams (/robot_description and the URDF's transforms)
go out from the episode itself as a bag has them, and the Foxglove server's
time (`broadcast_time`) stands in for /clock. Who wants both runs `play` and
connects Foxglove through its ROS 2 bridge.

Viewers: a person opens the viewer after starting `play`, so by default nothing
plays until a viewer subscribes, however long that takes (the terminal says
where to connect); `--foxglove-no-wait` gives the DDS player's bounded
`--wait-for-subscribers` instead, for a viewer that is already connected or a
script. A viewer that joins later gets the latched topics at once and the stream
from where the timeline is.

Controls: Foxglove's playback controls (play, pause, speed, seek bar over the
episode's range) reach the Timeline as the rosbag2 services do in the DDS
player; the keyboard works as there. A topic latched in ROS (/tf_static,
/robot_description) has no latching over WebSocket: its last message (for
/tf_static, every static transform so far merged into one) is sent again when
a client subscribes, and after every seek and loop. The server buffers at most
BACKLOG messages per client and drops the oldest beyond that (the SDK's
policy): unlike DDS there is no acknowledgement to wait for, so a slow client
loses frames instead of slowing the timeline. At the end the server stays up,
so that Foxglove's seek bar and play button still work, until Ctrl-C.

Playback state (binary opcode 5 of the SDK's protocol) is a message only clients
that offer playback control know (the Foxglove app); the SDK sends it to every
client, with no way to choose. Lichtblick's client library (@foxglove/ws-protocol)
reports it as an unrecognized opcode, drops that one message and goes on, so its
view is whole; test_foxglove_viewers.py shows it with that library. The state is
sent only when it changes (playing, paused, ended) and in reply to a request.

A loop or a seek back sends the server's time back just before the new pass's
first message (_jump_back), then the latched topics again: a viewer takes the
jump for a seek, clears its panels and draws what follows.

The server binds 127.0.0.1 unless `--foxglove-host` says otherwise: the
protocol has no authentication, and an episode is nobody else's business.
"""
from __future__ import annotations

import math
import socket
import threading
import time
from typing import Any, Callable

from react_ros.adapters.base import Episode  # noqa: TC001 (runtime use in annotations only)
from react_ros.errors import ReactRosError
from react_ros.ros.msgs import definition_text, message_class
from react_ros.ros.serialization import cdr_payload
from react_ros.ros.stop_signals import StopSignals
from react_ros.sinks import timeline as tl
from react_ros.sinks.keyboard import start_keyboard
from react_ros.sinks.live import MAX_LAG_S, TF_MESSAGE, PlayerRuntime, pass_events
from react_ros.sinks.live import resolved_remap, timeline_for, topic_filter
from react_ros.sinks.report import Report
from react_ros.sinks.readahead import Cancelled
from react_ros.sinks.selection import fold_topics, player_conflict, published_names
from react_ros.sinks.selection import select_for_play
from react_ros.streams import Stream
from react_ros.play_options import FOXGLOVE_HOST, FOXGLOVE_PORT, PlayOptions

# Messages buffered per client before the oldest is dropped (the SDK's default is
# 1024: a gigabyte and more of full-size images for a client that stalls).
BACKLOG = 256
# After the first subscription, how long to let a client's other subscriptions come in.
SETTLE_S = 0.3
# Between a jump back in time and the first message after it (_jump_back says why).
JUMP_GAP_S = 0.02
INSTALL_HINT = "pip install 'react_ros[foxglove]' (requirements/foxglove.txt)"


def require_sdk() -> Any:
    """The foxglove-sdk package, or a one-line refusal naming how to install it."""
    try:
        import foxglove
        import foxglove.websocket  # noqa: F401 (the server's types)
    except ImportError:
        raise ReactRosError('--foxglove needs the optional foxglove-sdk package, which is not '
                            f'installed: {INSTALL_HINT}') from None
    return foxglove


def check_foxglove_options(options: PlayOptions) -> None:
    """Refuse what has no meaning without DDS instead of ignoring it."""
    if options.drop_late is not None:
        raise ReactRosError('--drop-late applies to DDS subscribers; with --foxglove the server '
                            f'drops the oldest of {BACKLOG} messages a slow client has not taken')


class FoxgloveServer:
    """Plays `episode` to Foxglove clients on host:port; `run()` blocks until Ctrl-C or stop().

    Port 0 takes a free one (`port` says which once constructed).
    """

    def __init__(self, episode: Episode, options: PlayOptions | None = None,
                 runtime: PlayerRuntime | None = None, *, host: str = FOXGLOVE_HOST,
                 port: int = FOXGLOVE_PORT, wait_for_viewer: bool = True) -> None:
        fox = require_sdk()
        from foxglove.websocket import Capability
        self.episode = episode
        self.options = opts = options or PlayOptions()
        self.runtime = run = runtime or PlayerRuntime()
        check_foxglove_options(opts)
        self.report = Report(opts.log_level)
        self.streams = _select(episode, opts, run.node_name)
        # no ROS node here: names resolve as the player node's would (--node-name)
        self._remap = resolved_remap(opts.remap_rules, run.node_name)
        try:
            self.timeline = timeline_for(episode, opts)
        except ValueError as err:
            raise ReactRosError(f'{episode.path}: {err}') from None
        self._lock = threading.Lock()
        self._subscribed = threading.Event()
        # True: hold the start until a viewer subscribes, unbounded (module docstring)
        self.wait_for_viewer = wait_for_viewer
        self._replay = threading.Event()  # "play" after the end: from the start again
        self._ended = False
        self._last_status: Any = None
        self._time_ns: int | None = None  # the server's time as last sent
        self.counts: dict[str, int] = {}
        self._latched: dict[str, bytes] = {}  # last message of a latched topic, as sent
        self._latched_ns: dict[str, int] = {}
        self._latched_tf: dict[str, dict[str, Any]] = {}
        self._context = fox.Context()
        self._channels = self._make_channels(fox)
        try:
            self.server = fox.start_server(
                name=f'react_ros: {episode.path}', host=host, port=port,
                capabilities=[Capability.Time, Capability.PlaybackControl],
                server_listener=_listener(self), context=self._context,
                playback_time_range=(self.timeline.first_ns, self.timeline.limit_ns),
                message_backlog_size=BACKLOG)
        except Exception as err:  # the SDK raises RuntimeError (address in use, bad host)
            raise ReactRosError(f'--foxglove: cannot serve on {host}:{port}: {err}') from None
        self.host = host
        self.port: int = self.server.port

    # --- setup -------------------------------------------------------------

    def _make_channels(self, fox: Any) -> dict[str, Any]:
        topics = fold_topics(self.streams, player_conflict(self.episode.path))
        # one type per channel name, as on DDS: a remap onto a name of another type is refused
        published_names(topics, self._remap, {},
                        lambda text: ReactRosError(f'{self.episode.path}: {text}'))
        channels = {}
        for topic, t in topics.items():
            msg_type = t.msg_type
            try:
                schema = definition_text(msg_type).encode()
            except (FileNotFoundError, ValueError) as err:
                raise ReactRosError(f'{topic}: no message definition for {msg_type}: {err}') \
                    from None
            channels[topic] = fox.Channel(
                self._remap.get(topic, topic), message_encoding='cdr',
                schema=fox.Schema(name=msg_type, encoding='ros2msg', data=schema),
                context=self._context)
            self.counts[topic] = 0
            if t.latched:
                self._latched[topic] = b''
                if msg_type == TF_MESSAGE:
                    self._latched_tf[topic] = {}
        self._by_out_topic = {self._remap.get(t, t): t for t in topics}
        return channels

    @property
    def url(self) -> str:
        """The address a viewer opens: a wildcard bind is reached by this machine's name."""
        host = socket.gethostname() if self.host in ('0.0.0.0', '::', '') else self.host
        return f'ws://[{host}]:{self.port}' if ':' in host else f'ws://{host}:{self.port}'

    # --- controls (the SDK's threads, the keyboard) ------------------------

    def status(self) -> Any:
        from foxglove.websocket import PlaybackStatus
        if self._ended:
            return PlaybackStatus.Ended
        return PlaybackStatus.Paused if self.timeline.paused else PlaybackStatus.Playing

    def state(self, *, did_seek: bool = False, request_id: str | None = None,
              current_ns: int | None = None) -> Any:
        from foxglove.websocket import PlaybackState
        t = self.timeline
        now = min(t.now_ns(), t.limit_ns) if current_ns is None else current_ns
        return PlaybackState(status=self.status(), current_time=now, playback_speed=t.rate,
                             did_seek=did_seek, request_id=request_id)

    def control(self, request: Any) -> Any:
        """A PlaybackControlRequest from a client, applied to the timeline; the new state."""
        from foxglove.websocket import PlaybackCommand
        t = self.timeline
        seek_ns = request.seek_time
        did_seek = False
        if seek_ns is not None:
            seek_ns = max(t.t0, min(int(seek_ns), t.limit_ns))
            # not waited for: the publishing thread takes it at its next look (or the
            # idle loop after the end does); the state reports the target meanwhile
            t.seek(seek_ns, timeout=0.0)
            did_seek = True
        if request.playback_speed > 0:
            t.set_rate(float(request.playback_speed))
        if request.playback_command == PlaybackCommand.Play:
            if self._ended and seek_ns is None:
                self._replay.set()
            t.resume()
        elif request.playback_command == PlaybackCommand.Pause:
            t.pause()
        return self.state(did_seek=did_seek, request_id=request.request_id, current_ns=seek_ns)

    def subscribed(self, out_topic: str) -> None:
        """A client subscribed: a latched topic's last message goes out again for it."""
        self._subscribed.set()
        topic = self._by_out_topic.get(out_topic)
        with self._lock:
            data = self._latched.get(topic or '')
            last_ns = self._latched_ns.get(topic or '') if data else None
        if data and topic is not None:
            self._channels[topic].log(data, log_time=last_ns)

    def stop(self) -> None:
        self.timeline.stop()

    # --- the publishing thread ---------------------------------------------

    def run(self) -> int:
        """Serve until stopped (Ctrl-C); the end of the episode keeps the server up."""
        # as the DDS player: the first SIGINT/SIGTERM stops, the same Ctrl-C delivered twice
        # is one stop, a later one ends the process at once (stop_signals.py)
        restore = StopSignals('react-ros play', self.stop).restore
        keyboard = start_keyboard(self.runtime.keyboard, self.timeline, self.report.info)
        try:
            self._wait_for_client()
            self._serve()
        finally:
            self.stop()
            self.timeline.finish_steps()
            if keyboard is not None:
                keyboard.stop()
            self.server.stop()
            restore()
        return 0

    def _say(self, text: str) -> None:
        if not self.options.quiet:
            self.report.info(f'react-ros play: {text}')

    def _wait_for_client(self) -> None:
        """Hold the timeline at its first stamp until a client subscribes: unbounded when
        waiting for a viewer, else at most --wait-for-subscribers."""
        bound = math.inf if self.wait_for_viewer else self.options.wait_for_subscribers
        first = self.timeline.first_ns
        deadline = time.monotonic() + bound
        while bound > 0 and not self._subscribed.is_set() and not self.timeline.stopped:
            self._time(first)
            self._subscribed.wait(min(0.1, max(0.0, deadline - time.monotonic())))
            if time.monotonic() >= deadline:
                break
        if self._subscribed.is_set() and not self.timeline.stopped:
            if self.wait_for_viewer:
                self._say('a viewer subscribed: playing')
            self.timeline.sleep(SETTLE_S)

    def _serve(self) -> None:
        t = self.timeline
        start: int | None = t.first_ns
        while not t.stopped:
            if start is not None:
                self._ended = False
                start = t.next_pass(self._play_pass(start))
                continue
            self._ended = True
            self._broadcast_state()
            self._say('end of the episode; still serving (seek or play in Foxglove to play '
                      'again, Ctrl-C to quit)')
            while not (t.interrupted or self._replay.is_set()):
                t.sleep(0.05)
            if t.stopped:
                break
            start = t.next_pass(tl.SEEK) if not self._replay.is_set() else t.first_ns
            self._replay.clear()

    def _play_pass(self, from_ns: int) -> str:
        t = self.timeline
        back: list[int] = []  # a jump back in time, held until the pass's first message

        def clock(t_ns: int) -> None:
            if self._time_ns is not None and t_ns < self._time_ns:
                back.append(t_ns)
            else:
                self._tick(t_ns)
        try:
            with pass_events(self.streams, from_ns, self.runtime.read_ahead_bytes, t,
                             clock) as events:
                for ev in events:
                    if ev.t_ns > t.limit_ns:
                        return tl.END
                    if back:
                        self._jump_back(back.pop())
                    action = t.wait_for(ev.t_ns, self._tick)
                    if action in (tl.STOP, tl.SEEK):
                        return action
                    self._send(self.streams[ev.stream_idx], ev.msg, ev.t_ns)
                    if action == tl.GO:
                        t.slip(ev.t_ns, MAX_LAG_S)
                    elif action == tl.STEP:
                        t.step_done(ev.t_ns)
                        self._tick(ev.t_ns)
                return tl.END
        except Cancelled:
            return tl.STOP if t.stopped else tl.SEEK

    def _send(self, stream: Stream, msg: Any, t_ns: int) -> None:
        topic = stream.topic
        if topic in self._latched_tf:
            # one message with every static transform so far, as the DDS player sends
            acc = self._latched_tf[topic]
            if isinstance(msg, (bytes, bytearray, memoryview)):
                from rclpy.serialization import deserialize_message
                msg = deserialize_message(bytes(msg), message_class(TF_MESSAGE))
            for ts in msg.transforms:
                acc[ts.child_frame_id] = ts
            msg = message_class(TF_MESSAGE)(transforms=list(acc.values()))
        data = bytes(msg) if isinstance(msg, (bytes, bytearray, memoryview)) \
            else bytes(cdr_payload(msg))
        if topic in self._latched:
            with self._lock:
                self._latched[topic] = data
                self._latched_ns[topic] = t_ns
        self._channels[topic].log(data, log_time=t_ns)
        self.counts[topic] += 1

    def _jump_back(self, t_ns: int) -> None:
        """A loop or a seek back: the time goes back just before the pass's first message.

        Not when the pass starts: a viewer clears its panels on the jump, and opening the
        readers again takes a while (0.15-0.4 s for the UMI sample's three videos), blank
        panels all along. And not with the message: the SDK sends time and messages from
        separate queues in no set order, and a viewer drops what came before the jump
        (Lichtblick clears the messages it has not drawn yet), so the time gets a moment
        to leave first.
        """
        self._time(t_ns)
        if not self.timeline.sleep(JUMP_GAP_S):
            self.timeline.start_pass(t_ns)

    def _time(self, t_ns: int) -> None:
        self._time_ns = t_ns
        self.server.broadcast_time(t_ns)

    def _tick(self, t_ns: int) -> None:
        """The server's time (Foxglove's /clock), and the playback state when it changed."""
        self._time(t_ns)
        if self.status() != self._last_status:
            self._broadcast_state()

    def _broadcast_state(self) -> None:
        self._last_status = self.status()
        self.server.broadcast_playback_state(self.state())


def _listener(owner: FoxgloveServer) -> Any:
    """The SDK's ServerListener (its defaults for the rest): subscriptions, playback control."""
    from foxglove.websocket import ServerListener

    class Listener(ServerListener):
        def on_subscribe(self, client: Any, channel: Any) -> None:
            owner.subscribed(channel.topic)

        def on_playback_control_request(self, request: Any) -> Any:
            return owner.control(request)

    return Listener()


def _select(episode: Episode, opts: PlayOptions, node: str) -> list[Stream]:
    """The streams to serve: robot state included (no robot_state_publisher runs here)."""
    return select_for_play(episode.path, episode.streams, topic_filter(opts),
                           robot_state=True, node=node)


def serve_episode(episode: Episode | Callable[[], Episode], options: PlayOptions,
                  runtime: PlayerRuntime | None = None, *, host: str, port: int,
                  wait_for_viewer: bool = True) -> int:
    """`react-ros play --foxglove`: open the episode (the SDK checked first), serve it.

    `wait_for_viewer` False is `--foxglove-no-wait`: the bounded wait for subscribers.
    """
    require_sdk()
    check_foxglove_options(options)
    from react_ros.sinks.compressed_video import episode_with_images
    if callable(episode):
        episode = episode()
    episode = episode_with_images(episode, options.images, reencode=not options.no_reencode,
                                  notes=Report(options.log_level).info)
    server = FoxgloveServer(episode, options, runtime, host=host, port=port,
                            wait_for_viewer=wait_for_viewer)
    line = serving_line(episode.path, server.url, wait_for_viewer, options.wait_for_subscribers)
    if wait_for_viewer:  # even with -q: a player that waits in silence looks hung
        server.report.info(f'react-ros play: {line}')
    else:
        server._say(line)
    return server.run()


def serving_line(path: Any, url: str, wait_for_viewer: bool, bound_s: float) -> str:
    """Where to connect and what the player waits for: the first thing a user reads."""
    if wait_for_viewer:
        wait = 'waiting for a viewer to subscribe before playing (--foxglove-no-wait: do not)'
    elif bound_s > 0:
        wait = f'waiting up to {bound_s:g} s for a client to subscribe'
    else:
        wait = 'playing at once'
    return (f'serving {path} on {url} for Foxglove: open it in Foxglove or Lichtblick with '
            f'Open connection > Foxglove WebSocket > {url}; {wait}')


__all__ = ['BACKLOG', 'FoxgloveServer', 'require_sdk',
           'serve_episode']
