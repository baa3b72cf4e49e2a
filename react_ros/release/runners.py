"""Where the episodes run: processes on this machine, or tasks on a Ray cluster.

Both take the same Tasks and yield one Outcome per task as each finishes; what a
task does is release/task.py, so a bag is byte for byte the same either way.
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Iterator, Sequence

from react_ros.errors import ReactRosError
from react_ros.release.index import FAILED
from react_ros.release.task import Outcome, Task, convert_episode, init_worker

# A task whose worker died this many times is given up on (failed, tried next run):
# one death may be another task's fault (the pool breaks as a whole), two are its own.
MAX_WORKER_DEATHS = 2


def run_local(tasks: Sequence[Task], workers: int) -> Iterator[Outcome]:
    """Run `tasks` on `workers` processes, yielding outcomes as they finish."""
    deaths = {t.ref.id: 0 for t in tasks}
    pending = list(tasks)
    while pending:
        # spawn, not fork: the driver may hold threads and rclpy state a fork would copy
        # half-made; and a spawned worker is the driver's own child (PDEATHSIG holds).
        pool = ProcessPoolExecutor(max_workers=min(workers, len(pending)),
                                   mp_context=multiprocessing.get_context('spawn'),
                                   initializer=init_worker, initargs=(os.getpid(),))
        futures: dict[Future[Outcome], Task] = {pool.submit(convert_episode, t): t
                                                for t in pending}
        pending = []
        try:
            while futures:
                done, _ = wait(futures, return_when=FIRST_COMPLETED)
                for fut in done:
                    task = futures.pop(fut)
                    try:
                        yield fut.result()
                    except BrokenProcessPool:
                        deaths[task.ref.id] += 1
                        if deaths[task.ref.id] >= MAX_WORKER_DEATHS:
                            yield Outcome(task.ref.id, FAILED,
                                          reason='its worker process died (killed, or out '
                                                 'of memory); tried twice')
                        else:
                            pending.append(task)
        except BaseException:
            _stop_workers(pool)
            raise
        pool.shutdown(wait=True)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Stop now: queued tasks are dropped, running ones get SIGTERM and clean up after."""
    pool.shutdown(wait=False, cancel_futures=True)
    # The executor has no public way to stop a running task; its processes are ours.
    procs = list(getattr(pool, '_processes', {}).values())
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=30)


def run_ray(tasks: Sequence[Task], address: str | None, workers: int) -> Iterator[Outcome]:
    """Run `tasks` as Ray tasks: on the cluster at `address`, or a local Ray of `workers` CPUs."""
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
    try:
        remote = ray.remote(num_cpus=1, max_retries=1)(convert_episode)
        running = {remote.remote(t): t for t in tasks}
        try:
            while running:
                done, _ = ray.wait(list(running), num_returns=1)
                for ref in done:
                    task = running.pop(ref)
                    try:
                        yield ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        yield Outcome(task.ref.id, FAILED,
                                      reason=' '.join(f'Ray: {type(exc).__name__}: {exc}'
                                                      .split())[:500])
        finally:
            for ref in running:
                ray.cancel(ref, force=True)
    finally:
        ray.shutdown()


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


__all__ = ['default_workers', 'run_local', 'run_ray']
