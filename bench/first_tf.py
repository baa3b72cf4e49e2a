"""Does the robot's TF start with the episode? The player run N times on a loaded machine.

    scripts/ros_env.sh python bench/first_tf.py [--runs 20] [--load 2] [--mode own|launch|both]

(Not a bench_*.py: `make bench` measures speed; this counts failures. Run it by hand.)

A probe (reliable, KEEP_ALL, as a recorder or RViz subscribes) listens on
/joint_states and /tf before each player starts. For every moving joint of the
URDF (mimics included) the first /tf naming its child frame must carry the stamp
of the first JointState that moves it: otherwise the state publisher lost the
episode's start, and a viewer or a perception node has no robot for that while.

Two ways of starting, as users do: `own`, `react-ros play EP` starting its own
state publisher; `launch`, the state publisher and the player node started at the
same moment as separate processes, as play.launch.py does. `--load` busy
processes keep the cores loaded throughout (the failure needs a busy machine).
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

from react_ros.registry import open_episode
from react_ros.ros.msgs import to_ns
from react_ros.ros.robot_state import RobotModel

MODES = ('own', 'launch')
PROBE = QoSProfile(depth=10, history=HistoryPolicy.KEEP_ALL,
                   reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
# How long one run may take before it counts as hung (the player waits on a
# slow state publisher without a bound of its own while that one lives).
RUN_BOUND_S = 240.0


@dataclass
class Outcome:
    mode: str
    exit_code: int | None
    missing: dict[str, str] = field(default_factory=dict)  # joint -> what went wrong
    late_s: float = 0.0  # the largest gap, first JointState to first /tf
    unused: int = 0  # JointStates before the last joint's first /tf
    tracebacks: int = 0
    log: str = ''

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.missing and not self.tracebacks


class Probe:
    """/joint_states and /tf as they arrive, in a node of its own context."""

    def __init__(self) -> None:
        self.context = Context()
        rclpy.init(args=[], context=self.context, signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node('first_tf_probe', context=self.context)
        self.joint_states: list[JointState] = []
        self.tf: list[TFMessage] = []
        self.node.create_subscription(JointState, '/joint_states', self.joint_states.append, PROBE)
        self.node.create_subscription(TFMessage, '/tf', self.tf.append, PROBE)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while not self._stop.is_set():
            self.executor.spin_once(timeout_sec=0.05)

    def clear(self) -> None:
        self.joint_states.clear()
        self.tf.clear()

    def quiet_for(self, seconds: float, bound: float) -> None:
        """Until nothing new arrived for `seconds` (the state publisher's last /tf), bounded."""
        deadline = time.monotonic() + bound
        last = (-1, -1)
        since = time.monotonic()
        while time.monotonic() < deadline:
            now = (len(self.joint_states), len(self.tf))
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= seconds:
                return
            time.sleep(0.05)

    def close(self) -> None:
        # Wait for the spinning thread itself (each spin_once ends within 0.05 s): shutting
        # the executor down under a spin_once still running hung a loaded run for minutes.
        self._stop.set()
        self._thread.join()
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def judge(model: RobotModel, joint_states: list[JointState], tf: list[TFMessage]) -> dict:
    """Per moving joint: its first JointState's stamp against its first /tf's."""
    moved_by = {name: ({name} | ({j.mimic.joint} if j.mimic is not None else set()))
                for name, j in model.movable.items()}
    first_tf: dict[str, int] = {}
    for msg in tf:
        for ts in msg.transforms:
            first_tf.setdefault(ts.child_frame_id, to_ns(ts.header.stamp))
    missing, late, unused = {}, 0.0, 0
    for name, joint in model.movable.items():
        firsts = [i for i, js in enumerate(joint_states) if moved_by[name] & set(js.name)
                  and (name in js.name or joint.mimic is not None)]
        if not firsts:
            continue  # the episode never moves it
        want = to_ns(joint_states[firsts[0]].header.stamp)
        got = first_tf.get(joint.child)
        if got is None:
            missing[name] = 'no /tf at all'
        elif got != want:
            missing[name] = f'first /tf {(got - want) / 1e9:+.3f} s after the first JointState'
            late = max(late, (got - want) / 1e9)
            unused = max(unused, sum(1 for js in joint_states[firsts[0]:]
                                     if to_ns(js.header.stamp) < got))
    return {'missing': missing, 'late_s': late, 'unused': unused}


PROBE_WAIT = '10.0'  # s: --wait-for-subscribers, an upper bound (discovery settles sooner)


def _start(mode: str, episode: Path, urdf: Path, log: Path,
           env: dict[str, str] | None) -> list[subprocess.Popen]:
    with log.open('ab') as out:
        def spawn(*args: str) -> subprocess.Popen:
            return subprocess.Popen([sys.executable, '-m', *args], stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        # The probe runs before either starts: the player may wait longer than its default
        # 2 s for discovery to match it, so that a very busy machine (the probe missing
        # the first JointState, seen at load 5+) is not taken for the state publisher's
        # fault. The state publisher is waited for apart from this (expect_state_publisher).
        if mode == 'own':
            return [spawn('react_ros.cli', 'play', str(episode), '-q',
                          '--disable-keyboard-controls', '--wait-for-subscribers', PROBE_WAIT)]
        # as play.launch.py: both at once, the player told to expect the state publisher
        rsp = spawn('react_ros.ros.state_publisher', '--urdf', str(urdf), '--ros-args',
                    '-p', 'use_sim_time:=true')
        player = spawn('react_ros.node', '--ros-args', '-p', f'episode:={episode}',
                       '-p', 'quiet:=true', '-p', 'expect_state_publisher:=true',
                       '-p', f'wait_for_subscribers:={PROBE_WAIT}')
        return [player, rsp]


def run_once(probe: Probe, mode: str, episode: Path, model: RobotModel, urdf: Path,
             log: Path, env: dict[str, str] | None = None) -> Outcome:
    """One start of `mode`, judged (`env`: the processes' environment, default ours)."""
    probe.clear()
    log.write_bytes(b'')
    procs = _start(mode, episode, urdf, log, env)
    player = procs[0]
    try:
        code = player.wait(RUN_BOUND_S)
    except subprocess.TimeoutExpired:
        code = None
    for p in procs[1:]:  # launch stops the state publisher when the player ends
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    probe.quiet_for(0.3, 5.0)
    text = log.read_text(errors='replace')
    verdict = judge(model, list(probe.joint_states), list(probe.tf))
    return Outcome(mode, code, verdict['missing'], verdict['late_s'], verdict['unused'],
                   text.count('Traceback'), text)


# Busy until its parent is gone: a load that outlives a crashed or interrupted run would
# slow everything after it.
BUSY = 'import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass\n'


def busy(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, '-c', BUSY]) for _ in range(n)]


def runs(episode: Path, modes: tuple[str, ...], count: int, load: int,
         env: dict[str, str] | None = None) -> Iterator[Outcome]:
    """`count` runs of each mode, alternating, with `load` busy processes meanwhile."""
    ep = open_episode(episode)
    model = RobotModel.from_urdf(ep.urdf, episode)
    loaders: list[subprocess.Popen] = []
    probe: Probe | None = None
    with tempfile.TemporaryDirectory(prefix='first_tf_') as tmp:
        urdf = Path(tmp) / 'robot.urdf'
        urdf.write_text(ep.urdf)
        try:
            loaders = busy(load)
            probe = Probe()
            for i in range(count):
                for mode in modes:
                    yield run_once(probe, mode, episode, model, urdf, Path(tmp) / 'log', env)
        finally:
            if probe is not None:
                probe.close()
            for p in loaders:
                p.kill()
                p.wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--runs', type=int, default=20, help='runs of each mode (default 20)')
    ap.add_argument('--load', type=int, default=2, help='busy processes (default 2)')
    ap.add_argument('--mode', choices=(*MODES, 'both'), default='both')
    ap.add_argument('--episode', type=Path, help='default: the sample each kind\'s bench.yaml '
                    'names under first_tf (a moving robot)')
    args = ap.parse_args(argv)
    modes = MODES if args.mode == 'both' else (args.mode,)
    with tempfile.TemporaryDirectory(prefix='first_tf_ep_') as tmp:
        episodes = [args.episode] if args.episode else default_episodes(Path(tmp))
        ok = all(check(episode, modes, args.runs, args.load) for episode in episodes)
    return 0 if ok else 1


def default_episodes(folder: Path) -> list[Path]:
    """The samples the kinds' bench.yaml name under `first_tf`."""
    from react_ros.registry import KINDS
    from support import bench_settings
    found = []
    for kind, spec in bench_settings('first_tf').items():
        writer = KINDS[kind].sample_writer()
        found.append(writer(folder / kind, seed=7, **spec['sample']))
    return found


def check(episode: Path, modes: tuple[str, ...], count: int, load: int) -> bool:
    """`count` runs of each mode on `episode`, a line each and a summary; all good?"""
    good = {m: 0 for m in modes}
    for n, outcome in enumerate(runs(episode, modes, count, load), 1):
        good[outcome.mode] += outcome.ok
        detail = 'ok' if outcome.ok else (
            f'exit {outcome.exit_code}, {outcome.tracebacks} traceback(s), '
            + '; '.join(f'{j}: {w}' for j, w in outcome.missing.items())
            + (f' ({outcome.unused} JointStates unused)' if outcome.unused else ''))
        print(f'run {n:3d} {outcome.mode:6s} {detail}', flush=True)
        if not outcome.ok:
            print(outcome.log[-2000:], flush=True)
    for m in modes:
        print(f'{episode}: {m}: first /tf at the first JointState in {good[m]} of {count} '
              f'runs (load {load}, {os.cpu_count()} cores)')
    return all(good[m] == count for m in modes)


if __name__ == '__main__':
    sys.exit(main())
