"""The kind kit is installed and works from outside this repository (issue 41).

A kind folder copied from react_ros/kit/template/ into a temporary folder (no repository
around it), registered by REACT_ROS_KINDS_PATH alone, runs the installed KindContract
through the few lines of test docs/kinds.md shows, in a pytest of its own: every generic
check passes, and the same lines fail on a kind that breaks the contract. The old test
module names still give the kit's objects.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import react_ros.kit
from react_ros.kinds import PATH_VARIABLE

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = Path(react_ros.kit.__file__).parent / 'template'
NAME = 'mykind'


def few_lines() -> str:
    """The python block of docs/kinds.md that starts with '# test_mykind.py'."""
    text = (ROOT / 'docs' / 'kinds.md').read_text()
    blocks = re.findall(r'^```python\n(.*?)^```', text, re.S | re.M)
    found = [b for b in blocks if b.startswith('# test_mykind.py')]
    assert len(found) == 1, 'docs/kinds.md shows the few lines once'
    return found[0]


def copy_template(kinds: Path) -> Path:
    """What docs/kinds.md tells a contributor to do: copy, rename the RViz file."""
    folder = kinds / NAME
    shutil.copytree(TEMPLATE, folder, ignore=shutil.ignore_patterns('__pycache__'))
    (folder / 'template.rviz').rename(folder / f'{NAME}.rviz')
    return folder


def run_contract(where: Path) -> subprocess.CompletedProcess[str]:
    (where / 'test_mykind.py').write_text(few_lines())
    env = dict(os.environ, **{PATH_VARIABLE: str(where / 'kinds')})
    return subprocess.run([sys.executable, '-m', 'pytest', '-p', 'no:cacheprovider',
                           '-rs', '-v', 'test_mykind.py'], cwd=where, env=env, text=True,
                          capture_output=True, timeout=540)


def _counts(summary: str) -> dict[str, int]:
    return {word: int(n) for n, word in re.findall(r'(\d+) (passed|failed|skipped|error)',
                                                    summary)}


@pytest.mark.timeout(600)
def test_a_kind_folder_outside_the_repository_runs_the_contract(tmp_path: Path) -> None:
    copy_template(tmp_path / 'kinds')
    run = run_contract(tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert _counts(run.stdout.splitlines()[-1]) == {'passed': 10, 'skipped': 1}, \
        run.stdout[-2000:]
    # every generic check ran, the live run and the release round trip among them
    for check in ('test_live_run_delivers_every_topic', 'test_release_round_trip',
                  'test_bad_input_is_refused[empty track]',
                  'test_the_bag_reads_the_same_through_two_readers'):
        assert f'TestMyKind::{check} PASSED' in run.stdout, (check, run.stdout[-2000:])
    assert 'lists no ACCEPTED cases' in run.stdout  # the one skip, with its reason


@pytest.mark.timeout(600)
def test_the_same_lines_fail_a_kind_that_breaks_the_contract(tmp_path: Path) -> None:
    """Negative control: the template with its /tf stamps going back fails the contract."""
    folder = copy_template(tmp_path / 'kinds')
    adapter = folder / 'adapter.py'
    source = adapter.read_text()
    broken = source.replace('for t, pose in stamped:\n                yield t, tf_message(',
                            'for t, pose in reversed(stamped):\n                yield t, '
                            'tf_message(')
    assert broken != source
    adapter.write_text(broken)
    run = run_contract(tmp_path)
    assert run.returncode == 1, run.stdout[-3000:]
    assert 'TestMyKind::test_streams_are_sorted_on_one_time_base FAILED' in run.stdout, \
        run.stdout[-3000:]


def test_the_old_module_names_give_the_kits_objects() -> None:
    import bad_input_support
    import kind_contract
    import live_support
    import release_support

    from react_ros.kit import bad_input, contract, live, release
    assert kind_contract.KindContract is contract.KindContract
    for old, new in ((bad_input_support, bad_input), (release_support, release),
                     (live_support, live)):
        assert old.__all__ == new.__all__
        for name in new.__all__:
            assert getattr(old, name) is getattr(new, name), (old.__name__, name)
    assert react_ros.kit.KindContract is contract.KindContract
