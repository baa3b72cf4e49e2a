"""The package's annotations are checked (issue 40): mypy over react_ros/ passes, and the same
check does fail on a wrong annotation (an attribute a module does not have, as `for_player`
once promised a `live.PlayOptions` that did not exist then; the player's second settings
type, `live.PlayerSettings`, is gone since)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(900)


def _mypy(*args: str) -> subprocess.CompletedProcess[str]:
    # the configuration is setup.cfg's [mypy]; the cache is the run's own
    return subprocess.run([sys.executable, '-m', 'mypy', *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=840)


def test_the_package_type_checks(tmp_path: Path) -> None:
    run = _mypy('--cache-dir', str(tmp_path / 'cache'), 'react_ros')
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def test_a_wrong_annotation_fails_the_check(tmp_path: Path) -> None:
    wrong = tmp_path / 'wrong.py'
    wrong.write_text('from react_ros.sinks import live\n\n\n'
                     'def for_player() -> live.PlayerSettings:\n    raise NotImplementedError\n')
    run = _mypy('--cache-dir', str(tmp_path / 'cache'), str(wrong))
    assert run.returncode == 1, run.stdout
    assert 'Name "live.PlayerSettings" is not defined' in run.stdout, run.stdout
