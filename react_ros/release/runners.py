"""Where the episodes run: processes on this machine, or tasks on a Ray cluster.

Both take the same Tasks and yield one Outcome per task as each finishes; what a
task does is release/task.py, so a bag is byte for byte the same either way.

Both stop when the driver's stop flag is up (react_ros/output.py: stop_requested(),
set by its SIGINT/SIGTERM/SIGHUP handler): no task starts after it, the running
ones are ended (their partial output removed), and outcomes that arrive while
stopping are yielded only if they are converted bags, so an interrupted episode
stays as it was (pending) rather than being recorded as refused or failed.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from collections import deque
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_any
from pathlib import Path
from typing import Any, Iterator, Sequence

from react_ros.errors import ReactRosError
from react_ros.release.index import CONVERTED, FAILED
from react_ros.release.task import Outcome, Task, convert_episode, init_worker
from react_ros.output import Interrupted, remove_stale, stop_requested

# A task whose worker died this many times is given up on (failed, tried next run):
# one death may be the machine's doing (the OOM killer picks the biggest process),
# two are the episode's own.
MAX_WORKER_DEATHS = 2
# How often the driver looks at the stop flag while it waits for workers.
POLL_S = 0.05
# How long a stopped worker may take to remove its partial bag before it is killed
# (and its partial removed by the driver): a writer checks the flag per message.
STOP_GRACE_S = 10.0
# The message a worker sends instead of an Outcome when it was stopped mid-episode.
_STOPPED = 'stopped'


def run_local(tasks: Sequence[Task], workers: int) -> Iterator[Outcome]:
    """Run `tasks` on `workers` processes, yielding outcomes as they finish.

    Each worker holds one task at a time (nothing is queued inside a worker), so
    after a stop signal no episode starts: the driver sends no more, SIGTERMs the
    busy workers (staged() removes what they were writing) and waits for them.
    """
    pool = _Pool(min(workers, len(tasks)))
    todo = deque(tasks)
    deaths = {t.ref.id: 0 for t in tasks}
    try:
        while todo or pool.busy():
            if stop_requested():
                yield from pool.stop()
                return
            while todo and pool.idle() is not None and not stop_requested():
                pool.start(todo.popleft())
            for task, outcome in pool.finished(POLL_S):
                if outcome is not None:
                    yield outcome
                    continue
                deaths[task.ref.id] += 1  # its worker died under it (killed, out of memory)
                _remove_partial(task)
                if deaths[task.ref.id] >= MAX_WORKER_DEATHS:
                    yield Outcome(task.ref.id, FAILED,
                                  reason='its worker process died (killed, or out of '
                                         'memory); tried twice')
                else:
                    todo.appendleft(task)
            pool.replace_dead(len(todo))
    except BaseException:
        for _ in pool.stop():  # the consumer failed, or stopped reading: no more writes
            pass
        raise
    pool.close()


class _Worker:
    """One spawned process and the pipe it takes tasks from and sends outcomes back on."""

    def __init__(self) -> None:
        # spawn, not fork: the driver may hold threads and rclpy state a fork would copy
        # half-made; and a spawned worker is the driver's own child (PDEATHSIG holds).
        ctx = multiprocessing.get_context('spawn')
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, os.getpid()), daemon=True,
                                name='react-ros convert-all worker')
        self.proc.start()
        child.close()
        self.task: Task | None = None
        self.gone = False  # died, or said it ends: never given a task again

    def alive(self) -> bool:
        return not self.gone and self.proc.is_alive()

    def send_signal(self, signum: int) -> None:
        if self.proc.pid is not None and self.proc.exitcode is None:
            try:
                os.kill(self.proc.pid, signum)
            except ProcessLookupError:
                pass


class _Pool:
    """Workers that each run one task at a time; the driver polls them and the stop flag."""

    def __init__(self, size: int) -> None:
        self.workers = [_Worker() for _ in range(max(size, 1))]

    def busy(self) -> list[_Worker]:
        return [w for w in self.workers if w.task is not None]

    def idle(self) -> _Worker | None:
        return next((w for w in self.workers if w.task is None and w.alive()), None)

    def start(self, task: Task) -> None:
        worker = self.idle()
        assert worker is not None
        worker.task = task
        try:
            worker.conn.send(task)
        except OSError:  # died meanwhile: finished() reports it as a death
            pass

    def finished(self, timeout: float) -> list[tuple[Task, Outcome | None]]:
        """What busy workers sent within `timeout`: (task, outcome), or (task, None) for
        a worker that died under its task (or stopped it)."""
        busy = self.busy()
        if not busy:
            time.sleep(timeout)
            return []
        ready = set(wait_any([w.conn for w in busy] + [w.proc.sentinel for w in busy],
                             timeout))
        out: list[tuple[Task, Outcome | None]] = []
        for w in busy:
            if w.conn not in ready and w.proc.sentinel not in ready:
                continue
            task, w.task = w.task, None
            assert task is not None
            outcome = _receive(w)
            if outcome is None:
                # Reaped before anyone looks at its output: its pipe closes a moment
                # before its other files, the partial bag's lock among them.
                w.gone = True
                w.proc.join(timeout=5)
            out.append((task, outcome))
        return out

    def replace_dead(self, wanted: int) -> None:
        """Start new workers in place of dead ones, while tasks are left for them."""
        for i, w in enumerate(self.workers):
            if not w.alive() and w.task is None and wanted > 0:
                w.proc.join(timeout=5)
                w.conn.close()
                self.workers[i] = _Worker()
                wanted -= 1

    def stop(self) -> Iterator[Outcome]:
        """SIGTERM every worker; yield the converted outcomes still arriving; reap them.

        A worker still running after STOP_GRACE_S is killed and the partial bag it
        leaves removed here (its lock died with it).
        """
        busy = self.busy()
        for w in self.workers:  # idle ones too: SIGTERM ends a worker waiting for a task
            w.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        while self.busy() and time.monotonic() < deadline:
            for _task, outcome in self.finished(min(POLL_S, deadline - time.monotonic())):
                if outcome is not None and outcome.status == CONVERTED:
                    yield outcome  # it finished before the signal reached it
        for w in self.busy():
            w.send_signal(signal.SIGKILL)
        for w in self.workers:
            w.proc.join(timeout=max(deadline - time.monotonic(), 1.0))
            if w.proc.exitcode is None:
                w.send_signal(signal.SIGKILL)
                w.proc.join(timeout=5)
        for w in busy:
            if w.task is not None:  # killed: its partial output's lock is free now
                _remove_partial(w.task)
                w.task = None
        for w in self.workers:
            w.conn.close()

    def close(self) -> None:
        """Normal end: every worker is idle; ask each to exit and reap it."""
        for w in self.workers:
            try:
                w.conn.send(None)
            except OSError:
                pass
        for w in self.workers:
            w.proc.join(timeout=30)
            if w.proc.exitcode is None:
                w.send_signal(signal.SIGKILL)
                w.proc.join(timeout=5)
            w.conn.close()


def _remove_partial(task: Task) -> None:
    """What a worker killed while writing `task` left (staged() could not clean up)."""
    out = Path(task.out)
    if out.parent.is_dir():
        remove_stale(out.parent, out.name)


def _receive(worker: _Worker) -> Outcome | None:
    """The worker's answer: an Outcome, or None when it died or was stopped."""
    try:
        if worker.conn.poll():
            got: Any = worker.conn.recv()
            return got if isinstance(got, Outcome) else None
    except (EOFError, OSError):
        pass
    return None


def _serve(conn: Connection, parent_pid: int) -> None:
    """A worker's life: take a task, send its Outcome; None ends it.

    A SIGTERM while converting ends the episode through staged() (its partial bag
    removed, the episode not recorded); the worker then says so and exits at once,
    without the interpreter's clean-up (nothing of it is left to clean, and threads
    of a decoder can hang an exit). A SIGTERM while waiting ends the process outright.
    """
    init_worker(parent_pid)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        try:
            outcome = convert_episode(task)
        except KeyboardInterrupt as stop:  # Interrupted: SIGTERM from the driver
            _exit_now(conn, _STOPPED, 128 + getattr(stop, 'signum', signal.SIGTERM))
        if stop_requested():  # the writer took the signal as a flag and finished anyway
            _exit_now(conn, outcome if outcome.status == CONVERTED else _STOPPED,
                      128 + stop_requested())
        conn.send(outcome)


def _exit_now(conn: Connection, message: object, code: int) -> None:
    try:
        conn.send(message)
    except OSError:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def run_ray(tasks: Sequence[Task], address: str | None, workers: int) -> Iterator[Outcome]:
    """Run `tasks` as Ray tasks: on the cluster at `address`, or a local Ray of `workers` CPUs.

    On a stop signal the tasks not finished are cancelled (a running one's worker is
    killed) and, once Ray is down, the partial bags they leave are removed.
    """
    try:
        import ray
    except ImportError:
        raise ReactRosError('--ray: Ray is not installed; install react_ros with its ray '
                            'extra (pip install "ray>=2.9")') from None
    # A local Ray needs no telemetry and no dashboard; a cluster is configured by its owner.
    os.environ.setdefault('RAY_USAGE_STATS_ENABLED', '0')
    try:
        if address:
            ray.init(address=address, log_to_driver=True)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=True,
                     _node_ip_address='127.0.0.1')
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ReactRosError(f'--ray {address or ""}: cannot start or reach Ray '
                            f'({" ".join(str(exc).split())[:200]})') from None
    running: dict[Any, Task] = {}
    try:
        remote = ray.remote(num_cpus=1, max_retries=1)(convert_episode)
        running = {remote.remote(t): t for t in tasks}
        try:
            while running and not stop_requested():
                done, _ = ray.wait(list(running), num_returns=1, timeout=POLL_S * 2)
                for ref in done:
                    task = running.pop(ref)
                    try:
                        yield ray.get(ref)
                    except ray.exceptions.TaskCancelledError:
                        continue
                    except ray.exceptions.RayError as exc:
                        yield Outcome(task.ref.id, FAILED,
                                      reason=' '.join(f'Ray: {type(exc).__name__}: {exc}'
                                                      .split())[:500])
        finally:
            for ref in running:
                ray.cancel(ref, force=True)
    finally:
        ray.shutdown()
        for task in running.values():  # killed mid-write: nothing of them stays
            _remove_partial(task)


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


__all__ = ['Interrupted', 'default_workers', 'run_local', 'run_ray']
