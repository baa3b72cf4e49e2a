"""A second terminal sees the player: the README's two-terminal session, run as written.

Terminal 1 starts the player through scripts/ros_env.sh with no ROS_DOMAIN_ID (as a new
shell has), so the script picks a domain of its own; the player's first line names it and
how to join. Terminal 2 runs the README's `react-ros topic` and `react-ros control` lines
through `scripts/ros_env.sh --join` and must show the player's topics, its /clock, a rate,
and pause, seek and resume it.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README_EPISODE = 'samples/umi_ep'

pytestmark = pytest.mark.timeout(300)


def _blocks() -> list[str]:
    return re.findall(r'```sh\n(.*?)```', (ROOT / 'README.md').read_text(), re.S)


def _terminal(n: int) -> str:
    """The README's `# terminal n` block, without its comment line."""
    for block in _blocks():
        first, _, rest = block.partition('\n')
        if first.startswith(f'# terminal {n}'):
            return rest
    raise AssertionError(f'README.md has no "# terminal {n}" block')


def _new_shell_env() -> dict[str, str]:
    """Our environment as a new terminal has it: no ROS domain chosen, DDS kept local."""
    env = {k: v for k, v in os.environ.items()
           if k not in ('ROS_DOMAIN_ID', 'REACT_ROS_DOMAIN_HELD')}
    env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    return env


def _domain_line(log: Path, proc: subprocess.Popen[bytes], timeout: float) -> str:
    """The player's line naming its domain: its first, but for notes that a busy machine
    is slow to start the state publisher ("waiting for the state publisher"), which
    play.py prints before it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = log.read_text().split('\n')[:-1]  # whole lines only
        for line in lines:
            if not line.startswith('react-ros play: waiting for the state publisher'):
                return line
        if proc.poll() is not None:
            break
        time.sleep(0.05)  # polling the log for the line, bounded
    raise AssertionError(f'no first line from the player:\n{log.read_text()}')


def _run(commands: str) -> subprocess.CompletedProcess[bytes]:
    """Terminal 2's lines, one after the other, stopping at the first that fails."""
    return subprocess.run(['bash', '-e', '-c', commands], cwd=ROOT, env=_new_shell_env(),
                          capture_output=True, timeout=300)


def test_a_second_terminal_joins_the_players_domain(umi_episode: Path, tmp_path: Path) -> None:
    player_cmd = _terminal(1).strip().replace(README_EPISODE, str(umi_episode))
    assert player_cmd.startswith('scripts/ros_env.sh react-ros play ')
    log = tmp_path / 'terminal1.log'
    with log.open('wb') as out:
        player = subprocess.Popen(['bash', '-c', f'exec {player_cmd}'], cwd=ROOT,
                                  env=_new_shell_env(), stdout=out, stderr=subprocess.STDOUT)
    try:
        line = _domain_line(log, player, 120)
        m = re.fullmatch(r'react-ros play: DDS on ROS_DOMAIN_ID=(\d+), '
                         r'ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST; from another terminal: '
                         r'scripts/ros_env.sh --join COMMAND \(or ROS_DOMAIN_ID=(\d+) '
                         r'scripts/ros_env.sh COMMAND\)', line)
        assert m, line
        domain = m.group(1)
        # ros_env.sh chose it: not this test run's own domain
        assert domain != os.environ['ROS_DOMAIN_ID']

        commands = _terminal(2)
        lines = commands.strip().splitlines()
        assert lines and all(line.startswith('scripts/ros_env.sh --join react-ros ')
                             for line in lines), commands
        second = _run(commands)
        err = second.stderr.decode()
        if 'players are running' in err:
            # Another player started through ros_env.sh runs on this machine (a `make demo`
            # beside this test): --join rightly refuses to guess; the first line's other
            # form names the domain.
            assert f'ROS_DOMAIN_ID={domain}:' in err, err
            second = _run(commands.replace('scripts/ros_env.sh --join',
                                           f'ROS_DOMAIN_ID={domain} scripts/ros_env.sh'))
        out = second.stdout.decode()
        assert second.returncode == 0, out + second.stderr.decode()
        assert re.search(r'^topic +type +publishers +subscribers$', out, re.M), out
        assert re.search(r'^/clock +rosgraph_msgs/msg/Clock +1 +\d+$', out, re.M), out
        assert re.search(r'^/left/image_raw +sensor_msgs/msg/Image +1 +\d+$', out, re.M), out
        stamps = re.findall(r'^clock:\n  sec: (\d+)\n  nanosec: (\d+)\n---$', out, re.M)
        assert len(stamps) == 5 and any(int(sec) > 0 for sec, _ in stamps), out
        assert re.search(r'^average rate: \d+\.\d{3}$', out, re.M), out
        assert out.splitlines()[-3:] == ['paused', 'seek to 0.000000000 s', 'playing'], out
    finally:
        if player.poll() is None:
            player.send_signal(signal.SIGINT)
            try:
                player.wait(60)
            except subprocess.TimeoutExpired:
                player.kill()
                player.wait()
    assert player.returncode == 0, log.read_text()


def test_join_without_a_player_says_so(tmp_path: Path) -> None:
    env = _new_shell_env()
    env['TMPDIR'] = str(tmp_path)  # a lock folder of its own: no player there
    result = subprocess.run([str(ROOT / 'scripts' / 'ros_env.sh'), '--join', 'true'],
                            env=env, capture_output=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.decode().startswith(
        'ros_env.sh --join: no player started through scripts/ros_env.sh is running')
