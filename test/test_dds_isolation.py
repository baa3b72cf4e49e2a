"""DDS stays on the machine without scripts/ros_env.sh: the demo and the test suite
isolate themselves. Each run happens in a network namespace of its own (see
netns_capture.py) with the ROS variables unset, and counts the RTPS packets that
leave through its one network interface."""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from react_ros.ros.isolation import DOMAIN_IDS, hold_domain, lock_dir

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
ROS_VARS = ('ROS_AUTOMATIC_DISCOVERY_RANGE', 'ROS_LOCALHOST_ONLY', 'ROS_DOMAIN_ID',
            'REACT_ROS_DOMAIN_HELD')


def _namespaces_reason() -> str | None:
    if shutil.which('unshare') is None or shutil.which('ip') is None:
        return 'needs unshare and ip (util-linux, iproute2)'
    probe = subprocess.run(['unshare', '-n', 'ip', 'link', 'add', 'rr0', 'type', 'veth',
                            'peer', 'name', 'rr1'], capture_output=True, text=True)
    if probe.returncode != 0:
        return f'cannot make a network namespace with a veth pair here: {probe.stderr.strip()}'
    return None


NO_NAMESPACES = _namespaces_reason()
needs_netns = pytest.mark.skipif(NO_NAMESPACES is not None, reason=NO_NAMESPACES or '')


def run_isolated(cmd: list[str], *, set_vars: dict[str, str] | None = None,
                 timeout: float = 240.0) -> dict[str, int]:
    args = ['unshare', '-n', sys.executable, str(ROOT / 'test' / 'netns_capture.py')]
    for name in ROS_VARS:
        args += ['--unset', name]
    for name, value in (set_vars or {}).items():
        args += ['--set', f'{name}={value}']
    out = subprocess.run(args + ['--timeout', str(timeout), '--', *cmd], cwd=ROOT,
                         capture_output=True, text=True, timeout=timeout + 30)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result['log'] = out.stderr  # type: ignore[assignment]
    return result


@pytest.fixture(scope='module')
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from react_ros.cli import demo_episode_dir
    from react_ros.kinds.umi.sample import write_umi_sample
    root = tmp_path_factory.mktemp('demo')
    write_umi_sample(demo_episode_dir(root, 'umi'), seed=1, duration_s=1.0, width=320,
                     height=200)
    return root


def _demo(demo_dir: Path) -> list[str]:
    return [str(VENV_BIN / 'react-ros'), 'demo', '--dir', str(demo_dir),
            '--playback-duration', '1']


@needs_netns
def test_the_capture_sees_dds_when_discovery_may_leave(demo_dir: Path) -> None:
    # The negative control: with discovery allowed onto the subnet the same demo
    # does send RTPS out of the interface, so a count of 0 below means something.
    result = run_isolated(_demo(demo_dir), set_vars={'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET'})
    assert result['rc'] == 0, result['log']
    assert result['rtps'] > 0


@needs_netns
def test_demo_sends_nothing_out_of_the_machine(demo_dir: Path) -> None:
    result = run_isolated(_demo(demo_dir))
    assert result['rc'] == 0, result['log']
    assert 'DDS discovery stays on this machine' in result['log']  # type: ignore[operator]
    assert result['rtps'] == 0


@needs_netns
@pytest.mark.skipif(os.environ.get('REACT_ROS_INNER_SUITE') == '1',
                    reason='already the suite inside a namespace')
def test_live_suite_sends_nothing_out_of_the_machine() -> None:
    cmd = [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
           str(ROOT / 'test' / 'test_live.py')]
    result = run_isolated(cmd, set_vars={'REACT_ROS_INNER_SUITE': '1'})
    assert result['rc'] == 0, result['log']
    assert result['rtps'] == 0


def test_domain_ids_are_held_one_run_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('TMPDIR', str(tmp_path))
    leases = []
    try:
        envs = [{'ROS_DOMAIN_ID': '42'} for _ in range(3)]  # a guess of ros_env.sh's old kind
        leases = [hold_domain(env) for env in envs]
        ids = [lease.domain_id for lease in leases]
        assert len(set(ids)) == 3
        assert all(env['ROS_DOMAIN_ID'] == str(i) for env, i in zip(envs, ids))
        assert all(i in DOMAIN_IDS and i != 0 for i in ids)
        # Held in another process too (flock): a child cannot take any of them.
        child = subprocess.run(
            [sys.executable, '-c', 'import os; from react_ros.ros.isolation import hold_domain; '
             'print(hold_domain({}).domain_id)'],
            capture_output=True, text=True, check=True, env=dict(os.environ, TMPDIR=str(tmp_path)))
        assert int(child.stdout) not in ids
        # Released, an id can be taken again; an id ros_env.sh says it holds is kept.
        leases[0].release()
        with open(lock_dir() / f'{ids[0]}.lock', 'ab') as free:
            fcntl.flock(free, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with open(lock_dir() / f'{ids[1]}.lock', 'ab') as held, \
                pytest.raises(BlockingIOError):
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        kept = hold_domain({'ROS_DOMAIN_ID': '7', 'REACT_ROS_DOMAIN_HELD': '7'})
        assert kept.inherited and kept.domain_id == 7
    finally:
        for lease in leases:
            lease.release()
    assert lock_dir() == tmp_path / 'react_ros_domains'
