"""What limited a convert-all run: its workers' idle time, the machine's CPU, the disk.

Read from /proc/stat (Linux: the machine's CPU time by state since boot), before and
after the run, so it covers the worker processes and a local Ray alike, and other
work on the machine too: the line says the machine's, not ours. Where /proc/stat is
missing the line says what it can (the workers' busy share and the bytes written).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from react_ros.progress import size_text

# The machine is taken as CPU-bound above this share of its cores busy, disk-bound
# above this share of its time waiting on I/O with a task runnable.
CPU_BOUND = 0.85
DISK_BOUND = 0.15


@dataclass(frozen=True)
class CpuTimes:
    busy: int  # jiffies in user, nice, system, irq, softirq, steal
    iowait: int
    total: int

    @staticmethod
    def now(stat: Path = Path('/proc/stat')) -> CpuTimes | None:
        try:
            first = stat.read_text().split('\n', 1)[0].split()
        except OSError:
            return None
        if not first or first[0] != 'cpu' or len(first) < 6:
            return None
        values = [int(v) for v in first[1:9]]
        idle, iowait = values[3], values[4]
        total = sum(values)
        return CpuTimes(total - idle - iowait, iowait, total)


class RunUsage:
    """Started with the run; `line()` at its end."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.start = time.monotonic()
        self.cpu = CpuTimes.now()

    def line(self, episodes: int, task_seconds: float, written: int) -> str:
        """`convert-all: 6 episodes in 4.1 s on 2 workers, busy 96 % of the time; the
        machine's CPU 94 % busy, 0 % waiting on the disk: CPU-bound; 1.2 GB written
        (290 MB/s)`."""
        wall = max(time.monotonic() - self.start, 1e-9)
        busy = min(task_seconds / (self.workers * wall), 1.0)
        parts = [f'convert-all: {episodes} episodes in {wall:.1f} s on {self.workers} '
                 f'worker{"s" if self.workers != 1 else ""}, busy {busy:.0%} of the time']
        end = CpuTimes.now()
        if self.cpu is not None and end is not None and end.total > self.cpu.total:
            span = end.total - self.cpu.total
            cpu = (end.busy - self.cpu.busy) / span
            disk = (end.iowait - self.cpu.iowait) / span
            parts.append(f"the machine's CPU {cpu:.0%} busy, {disk:.0%} waiting on the disk: "
                         + _verdict(cpu, disk, busy))
        parts.append(f'{size_text(written)} written ({size_text(written / wall)}/s)')
        return '; '.join(parts)


def _verdict(cpu: float, disk: float, busy: float) -> str:
    if cpu >= CPU_BOUND:
        return 'CPU-bound (more cores, not more workers, would go faster)'
    if disk >= DISK_BOUND:
        return 'disk-bound (a faster disk, or smaller bags: --images h264 or jpeg)'
    if busy < CPU_BOUND:
        return 'workers idle part of the time (fewer episodes than workers at the end)'
    return 'neither CPU nor disk saturated (more --workers may help)'


__all__ = ['CpuTimes', 'RunUsage']
