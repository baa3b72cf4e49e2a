"""The run's guard against crashed subprocesses (test/conftest.py) does see a crash.

Issue 39: no player run in the suite may end by a signal it did not receive. Every
Python process the suite starts writes its crash stacks into the run's report folder,
which the run checks at its end; here a child crashes on purpose and its report is
found (and then removed, so that this crash does not fail the run).
"""
from __future__ import annotations

import signal
import subprocess
import sys

from conftest import crash_reports

CRASH = 'import ctypes; ctypes.string_at(0)'  # a read of address 0: SIGSEGV


def test_a_crashed_child_leaves_a_report_the_run_checks() -> None:
    child = subprocess.Popen([sys.executable, '-c', CRASH], stderr=subprocess.DEVNULL)
    assert child.wait(120) == -signal.SIGSEGV
    mine = {f: text for f, text in crash_reports().items() if f.stem == str(child.pid)}
    assert len(mine) == 1, crash_reports()
    (report, text), = mine.items()
    assert 'Segmentation fault' in text
    report.unlink()


def test_a_child_that_ends_normally_leaves_no_report() -> None:
    before = set(crash_reports())
    subprocess.run([sys.executable, '-c', 'pass'], check=True)
    assert set(crash_reports()) == before
