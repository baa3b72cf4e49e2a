"""convert-all's closing line on what limited it (release/usage.py)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from react_ros.release import usage
from react_ros.release.usage import CpuTimes, RunUsage


def _stat(path: Path, user: int, system: int, idle: int, iowait: int) -> Path:
    path.write_text(f'cpu  {user} 0 {system} {idle} {iowait} 0 0 0 0 0\n'
                    f'cpu0 {user} 0 {system} {idle} {iowait} 0 0 0 0 0\nintr 1 2 3\n')
    return path


def test_cpu_times_from_proc_stat(tmp_path: Path) -> None:
    times = CpuTimes.now(_stat(tmp_path / 'stat', 100, 50, 800, 50))
    assert times == CpuTimes(busy=150, iowait=50, total=1000)
    assert CpuTimes.now(tmp_path / 'missing') is None
    (tmp_path / 'odd').write_text('intr 1 2\n')
    assert CpuTimes.now(tmp_path / 'odd') is None


def test_this_machine_has_proc_stat() -> None:
    times = CpuTimes.now()
    assert times is not None and 0 < times.busy < times.total


@pytest.mark.parametrize('user, idle, iowait, verdict', [
    (900, 50, 50, 'CPU-bound'),
    (300, 400, 300, 'disk-bound'),
    (300, 690, 10, 'neither CPU nor disk'),
])
def test_the_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, user: int, idle: int,
                     iowait: int, verdict: str) -> None:
    before = CpuTimes.now(_stat(tmp_path / 'a', 1000, 0, 1000, 0))
    after = CpuTimes.now(_stat(tmp_path / 'b', 1000 + user, 0, 1000 + idle, iowait))
    readings = iter([before, after])
    monkeypatch.setattr(usage.CpuTimes, 'now', staticmethod(lambda: next(readings)))
    run = RunUsage(2)
    run.start -= 4.0  # the run took 4 s, and its 2 workers were busy 7.8 of the 8
    line = run.line(6, 7.8, 1_200_000_000)
    assert re.match(r"convert-all: 6 episodes in 4\.0 s on 2 workers, busy 9[6-8]% of the "
                    r"time; the machine's CPU ", line), line
    assert verdict in line
    assert re.search(r'1\.2 GB written \((29\d|300)\.\d MB/s\)$', line), line


def test_idle_workers_are_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(usage.CpuTimes, 'now', staticmethod(lambda: None))
    run = RunUsage(2)
    run.start -= 4.0
    line = run.line(1, 4.0, 0)
    assert 'busy 50% of the time' in line and "machine's CPU" not in line
    assert usage._verdict(0.5, 0.0, 0.5).startswith('workers idle')
