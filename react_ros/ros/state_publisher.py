"""A drop-in robot_state_publisher for machines where ROS 2 does not provide one.

Same node name, parameters, topics and QoS as ros/robot_state_publisher:
/robot_description (reliable, transient local, depth 1), all fixed joints in
one message on /tf_static (transient local), movable joints and the mimics of
present joints on /tf stamped with the JointState's stamp. Like the real node
it throttles /tf per joint to `publish_frequency` (20 Hz by default) by header
stamp unless `ignore_timestamp` is set, and when its clock (sim time with
use_sim_time) jumps back it forgets the last publish times, so a looping or
seeking player keeps moving the fingers. Unlike the real node, it also
re-publishes /robot_description and /tf_static (stamped at the new time) when
its clock jumps back, so that "every latched topic is re-published after a
loop or a backward seek" holds for these two as well.

Starting so that nothing of the episode's first second is lost (issue 36):
- it subscribes /joint_states only once its own discovery settled
  (ros/discovery.py: its /tf writer matched every subscriber its graph shows,
  after one announcement period), so a viewer or recorder already running gets
  the first /tf; a player that waits for this node's subscription to appear in
  its graph (`react-ros play`, play.launch.py) therefore waits for all of that;
- besides the best-effort sensor-data subscription of the real node, which any
  publisher matches, it holds a reliable KEEP_ALL one, and hears a reliable
  publisher (the player) through that one only: its JointStates sent before
  this side of the match completed are repaired instead of lost, none is
  dropped from a queue of 5 while the node is busy, and they come in order.
  (Through both, the best-effort queue handed over newer JointStates first
  while the reliable one still held the episode's first: measured, the fingers'
  first /tf came 9 to 134 ms late in 2 of 6 starts on a loaded machine.)

    python -m react_ros.ros.state_publisher --urdf robot.urdf [--ros-args -p use_sim_time:=true]
    ros2 run react_ros state_publisher --ros-args -p robot_description:="$(cat robot.urdf)"
"""
from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import rclpy
from rclpy.clock import JumpThreshold, TimeJump
from rclpy.duration import Duration
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from react_ros.errors import ReactRosError
from react_ros.ros import discovery, qos
from react_ros.ros.msgs import to_ns
from react_ros.ros.robot_state import RobotModel
from react_ros.ros.stop_signals import StopSignals
from react_ros.ros.tf import tf_message
from react_ros.ros.dds import clear_dead_ports

if TYPE_CHECKING:
    from rclpy.subscription import MessageInfo

NODE_NAME = 'robot_state_publisher'
JOINT_STATES = '/joint_states'
SPIN_S = 0.1
# At most this long for its own discovery to settle before it subscribes.
SETTLE_BOUND_S = 10.0
# The second /joint_states subscription: reliable publishers repair what it missed.
JOINT_STATES_RELIABLE = QoSProfile(depth=1, history=HistoryPolicy.KEEP_ALL,
                                   reliability=ReliabilityPolicy.RELIABLE,
                                   durability=DurabilityPolicy.VOLATILE)


class StatePublisher:
    """The node's behaviour, attached to a node the caller owns."""

    def __init__(self, node: Node, model: RobotModel, *, publish_frequency: float = 20.0,
                 ignore_timestamp: bool = False, frame_prefix: str = '',
                 listen: bool = True) -> None:
        if not 0.0 < publish_frequency <= 1000.0:
            raise ValueError('publish_frequency must be between 0 (exclusive) and 1000')
        self.node = node
        self.model = model
        self.interval_ns = int(1e9 / publish_frequency)
        self.ignore_timestamp = ignore_timestamp
        self.prefix = frame_prefix
        self._last_publish: dict[str, int] = {}
        self._last_callback_ns = 0
        self.description_pub = node.create_publisher(String, 'robot_description', qos.LATCHED)
        self.static_pub = node.create_publisher(TFMessage, '/tf_static', qos.LATCHED)
        self.tf_pub = node.create_publisher(TFMessage, '/tf', qos.TF)
        self.subs: list = []
        self._writers: dict[bytes, bool] = {}  # /joint_states writers' gids: reliable?
        # A jump callback runs inside the clock update: it only wakes the executor,
        # which re-publishes.
        self.jumps_back = 0
        self._republish = node.create_guard_condition(self._on_jumped_back)
        self._jump_handle = node.get_clock().create_jump_callback(
            JumpThreshold(min_forward=None, min_backward=Duration(nanoseconds=-1),
                          on_clock_change=False),
            post_callback=self._on_jump)
        self._publish_latched()
        if listen:
            self.listen()

    def listen(self) -> None:
        """Subscribe /joint_states (`listen=False` defers this until the caller is ready)."""
        if not self.subs:
            self.subs = [
                self.node.create_subscription(JointState, 'joint_states', self._on_best_effort,
                                              qos.JOINT_STATES_IN),
                self.node.create_subscription(JointState, 'joint_states', self._on_reliable,
                                              JOINT_STATES_RELIABLE)]

    def settle(self, born: float, timeout: float = SETTLE_BOUND_S,
               stopped: Callable[[], bool] = lambda: False) -> discovery.Settled:
        """Wait, bounded, until /tf reaches every subscriber already running (discovery.py)."""
        probe = discovery.GraphProbe(self.node, [
            (self.tf_pub, 'tf2_msgs/msg/TFMessage', qos.TF),
            (self.static_pub, 'tf2_msgs/msg/TFMessage', qos.LATCHED),
            (self.description_pub, 'std_msgs/msg/String', qos.LATCHED)])

        def sleep(s: float) -> bool:
            time.sleep(s)
            return stopped()

        return discovery.settle(probe, timeout, born=born, sleep=sleep)

    def _publish_latched(self) -> None:
        self.description_pub.publish(String(data=self.model.urdf_text))
        self._publish_static()

    def _on_jump(self, jump: TimeJump) -> None:
        if jump.delta.nanoseconds < 0:
            self._republish.trigger()

    def _on_jumped_back(self) -> None:
        self.jumps_back += 1
        self.node.get_logger().info('/clock jumped back: re-publishing robot_description and '
                                    'the static transforms')
        self._last_publish.clear()
        self._publish_latched()

    def _prefixed(self, msg: TFMessage) -> TFMessage:
        if self.prefix:
            for ts in msg.transforms:
                ts.header.frame_id = self.prefix + ts.header.frame_id
                ts.child_frame_id = self.prefix + ts.child_frame_id
        return msg

    def _publish_static(self) -> None:
        now = self.node.get_clock().now().nanoseconds
        self.static_pub.publish(self._prefixed(tf_message(self.model.static_transforms(now))))

    # (two parameters: rclpy then passes the sample's MessageInfo)
    def _on_reliable(self, msg: JointState, info: MessageInfo) -> None:
        self._on_joint_state(msg)

    def _on_best_effort(self, msg: JointState, info: MessageInfo) -> None:
        if not self._reliable_writer(info):
            self._on_joint_state(msg)

    def _reliable_writer(self, info: MessageInfo) -> bool:
        """Whether the sample's writer is reliable, so the reliable subscription has it too."""
        gid = bytes((info.get('publisher_gid') or {}).get('data', b''))
        if gid not in self._writers:
            topic = self.subs[0].topic_name
            for pub in self.node.get_publishers_info_by_topic(topic):
                self._writers[bytes(pub.endpoint_gid)] = \
                    pub.qos_profile.reliability == ReliabilityPolicy.RELIABLE
        # not in the graph yet: heard here, rather than perhaps not at all
        return self._writers.get(gid, False)

    def _on_joint_state(self, msg: JointState) -> None:
        if len(msg.name) != len(msg.position):
            self.node.get_logger().warning(
                'ignored a JointState whose name and position lengths differ')
            return
        now = self.node.get_clock().now().nanoseconds
        if now < self._last_callback_ns:
            # A bag or react_ros player looped or sought back: /clock went backwards.
            self.node.get_logger().warning('Moved backwards in time, re-publishing joint '
                                           'transforms!')
            self._last_publish.clear()
        self._last_callback_ns = now
        stamp_ns = to_ns(msg.header.stamp)
        oldest = min([self._last_publish.get(n, 0) for n in msg.name], default=now)
        if not self.ignore_timestamp and stamp_ns < oldest + self.interval_ns:
            return
        transforms = self.model.joint_transforms(msg.name, msg.position, stamp_ns)
        if transforms:
            self.tf_pub.publish(self._prefixed(tf_message(transforms)))
        for name in msg.name:
            self._last_publish[name] = stamp_ns


def _parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    argv = list(argv)
    ros_args: list[str] = []
    if '--ros-args' in argv:
        i = argv.index('--ros-args')
        argv, ros_args = argv[:i], argv[i:]
    parser = argparse.ArgumentParser(prog='state_publisher', description=__doc__.split('\n')[0])
    parser.add_argument('--urdf', type=Path, help='read robot_description from this file')
    parser.add_argument('--ready-file', type=Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv), ros_args


def main(argv: Sequence[str] | None = None) -> int:
    args, ros_args = _parse_args(sys.argv[1:] if argv is None else argv)
    urdf_text = None
    source = Path('robot_description')
    if args.urdf is not None:
        try:
            urdf_text = args.urdf.read_text()
        except OSError as err:
            print(f'{args.urdf}: cannot read URDF: {err.strerror}', file=sys.stderr)
            return 2
        source = args.urdf
    # Only our own --ros-args section: rclpy would otherwise apply any --remap it
    # finds in sys.argv by itself. Our own signal handling, not rclpy's: under
    # `ros2 launch` a terminal's Ctrl-C arrives twice, and rclpy's handler turned the
    # second into a KeyboardInterrupt in the shutdown (a traceback; launch said
    # "process has died"). The first stop signal ends the spin; repeats are ignored.
    stopped = threading.Event()
    signals = StopSignals('state_publisher', stopped.set)
    clear_dead_ports()  # a port a killed process left half-made would hang Node()
    rclpy.init(args=['state_publisher', *ros_args],
               signal_handler_options=SignalHandlerOptions.NO)
    node = None
    parent = os.getppid()
    try:
        born = time.monotonic()  # the DDS participant comes up with the node
        node = Node(NODE_NAME)
        declared = node.declare_parameter('robot_description', urdf_text or '').value
        urdf_text = urdf_text or declared
        if not urdf_text:
            print('state_publisher: robot_description parameter must not be empty',
                  file=sys.stderr)
            return 2
        publisher = StatePublisher(
            node, RobotModel.from_urdf(urdf_text, source),
            publish_frequency=node.declare_parameter('publish_frequency', 20.0).value,
            ignore_timestamp=node.declare_parameter('ignore_timestamp', False).value,
            frame_prefix=node.declare_parameter('frame_prefix', '').value, listen=False)
        publisher.settle(born, stopped=stopped.is_set)
        publisher.listen()
        if args.ready_file is not None:
            args.ready_file.write_text('ready\n')
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        # Python runs a signal handler between bytecodes, not inside rclpy's wait:
        # wake up at least every SPIN_S to notice a stop. A player that started this
        # process in a session of its own and died (SIGKILL) leaves it to init: stop.
        while not stopped.is_set() and os.getppid() == parent:
            executor.spin_once(timeout_sec=SPIN_S)
    except (ReactRosError, ValueError) as err:
        print(f'state_publisher: {err}', file=sys.stderr)
        return 2
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        signals.on_stop = None
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        signals.finish()  # a repeat may still be on its way: ignored
    return 0


class StatePublisherProcess:
    """Our state publisher in a subprocess; `stop()` ends it (SIGTERM, then kill).

    It runs in a process group of its own: a terminal's Ctrl-C reaches only the
    player, which stops it. (Caught by the state publisher while Python was still
    importing, the terminal's SIGINT printed a KeyboardInterrupt traceback.) It
    stops by itself when its parent dies.
    """

    def __init__(self, urdf_text: str, ros_args: Sequence[str] = (),
                 env: Mapping[str, str] | None = None) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix='react_ros_rsp_')
        urdf = Path(self._dir.name) / 'robot_description.urdf'
        urdf.write_text(urdf_text)
        self.ready_file = Path(self._dir.name) / 'ready'
        cmd = [sys.executable, '-m', 'react_ros.ros.state_publisher', '--urdf', str(urdf),
               '--ready-file', str(self.ready_file)]
        if ros_args:
            cmd += ['--ros-args', *ros_args]
        self.proc = subprocess.Popen(cmd, env=dict(os.environ if env is None else env),
                                     process_group=0)

    def wait_ready(self, timeout: float | None = None,
                   on_slow: Callable[[float], None] | None = None) -> bool:
        """True once the node listens; False if it died first (or `timeout` s passed).

        No bound by default: a busy machine takes its time to start a Python
        process, and that is no error. `on_slow(waited_s)` tells the user after a
        few seconds, and every ten after that.
        """
        return discovery.wait_until(
            lambda: self.ready_file.exists() or self.proc.poll() is not None,
            math.inf if timeout is None else timeout, on_slow=on_slow,
            poll_s=0.05) and self.ready_file.exists()

    def stop(self, timeout: float = 5.0) -> int | None:
        if self.proc.poll() is None:
            # SIGTERM, not SIGINT: before its handlers are installed it ends the
            # process quietly, where SIGINT raised KeyboardInterrupt in an import.
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._dir.cleanup()
        return self.proc.returncode


def start_state_publisher(urdf_text: str, *, use_sim_time: bool = True,
                          source: Path = Path('robot_description'),
                          env: Mapping[str, str] | None = None) -> StatePublisherProcess:
    """Launch `python -m react_ros.ros.state_publisher` with this URDF and our environment;
    `wait_started` waits until it listens.

    The URDF is parsed here first so a bad one raises DatasetFormatError naming
    `source` instead of failing in the child. use_sim_time follows the player's
    /clock, which is what lets the node notice a loop (clock jumps back).
    """
    RobotModel.from_urdf(urdf_text, source)
    return StatePublisherProcess(urdf_text, ['-p', f'use_sim_time:={str(use_sim_time).lower()}'],
                                 env)


def wait_started(handle: StatePublisherProcess, source: Path,
                 on_slow: Callable[[float], None] | None = None) -> None:
    """Wait until `handle`'s node listens, however long that takes; refuse if it died."""
    if not handle.wait_ready(on_slow=on_slow):
        code = handle.stop()
        raise ReactRosError(f'{source}: the state publisher ended before it started '
                            f'(exit status {code}; what it printed is above)')


if __name__ == '__main__':
    sys.exit(main())
