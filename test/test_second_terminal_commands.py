"""`react-ros topic` and `react-ros control` against a real running player.

One player (`react-ros play SAMPLE -p --loop`, a subprocess) serves the module;
each command runs as its own process, in the test run's domain, as a second
terminal would. What they do is checked from this process: /clock through a
Listener, the graph, and what the commands print.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from live_support import Listener, spawn, stop
from react_ros.ros import qos
from react_ros.ros.msgs import to_ns

pytestmark = pytest.mark.timeout(600)
POSE = '/left/perception_interface/pose/state'  # a light topic, about 70 Hz in the sample


def cli(*args: str, env: dict[str, str] | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, '-m', 'react_ros.cli', *args], capture_output=True,
                          text=True, timeout=timeout, env=env or os.environ.copy())


def ok(*args: str) -> str:
    result = cli(*args)
    assert result.returncode == 0, f'{args}: {result.returncode}\n{result.stdout}{result.stderr}'
    return result.stdout


def refused(result: subprocess.CompletedProcess[str], start: str) -> None:
    """Exit 2, one line, no traceback."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count('\n') == 1 and result.stderr.startswith(start), result.stderr


@pytest.fixture(scope='module')
def info(umi_episode: Path) -> dict:
    return json.loads(ok('info', str(umi_episode), '--json'))


@pytest.fixture(scope='module')
def player(umi_episode: Path, tmp_path_factory) -> Iterator[Path]:
    log = tmp_path_factory.mktemp('second_terminal') / 'player.log'
    proc = spawn(['-m', 'react_ros.cli', 'play', str(umi_episode), '-p', '--loop',
                  '--disable-keyboard-controls', '-q'], log)
    try:
        # its line naming the domain: set up, paused at the start (a stop before that is
        # a stop of its start-up, 130)
        deadline = time.monotonic() + 120
        while 'react-ros play: DDS on' not in log.read_text() and proc.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.05)  # polling the log for the line, bounded
        assert 'react-ros play: DDS on' in log.read_text(), log.read_text()
        yield log
    finally:
        assert stop(proc) == 0, log.read_text()


@pytest.fixture(scope='module')
def clock(player: Path) -> Iterator['Clock']:
    listener = Listener('second_terminal_clock')
    listener.subscribe('/clock', 'rosgraph_msgs/msg/Clock', qos.CLOCK)
    try:
        yield Clock(listener, player)
    finally:
        listener.close()


class Clock:
    """The player's /clock as this process receives it."""

    def __init__(self, listener: Listener, log: Path) -> None:
        self.listener, self.log = listener, log

    def ticks(self, n: int) -> list[int]:
        """The next `n` ticks (ns), all received after this call."""
        self.listener.clear()
        assert self.listener.spin_until(lambda: self.listener.count(['/clock']) >= n, 60), \
            f'fewer than {n} /clock ticks\n{self.log.read_text()}'
        return [to_ns(m.clock) for m in self.listener.msgs['/clock'][:n]]

    def held(self) -> int:
        """The time /clock holds once it stopped moving (the last tick of a still run)."""
        def still() -> bool:
            return len(set(self.ticks(10))) == 1
        assert self.listener.spin_until(still, 60), 'the clock never stood still'
        ticks = self.ticks(10)
        assert len(set(ticks)) == 1, ticks
        return ticks[0]

    def moving(self) -> bool:
        ticks = self.ticks(20)
        return ticks[-1] != ticks[0]

    def reaches(self, t_ns: int) -> bool:
        return self.listener.spin_until(
            lambda: bool(self.listener.msgs['/clock']) and
            to_ns(self.listener.msgs['/clock'][-1].clock) == t_ns, 60)


def test_list_shows_the_players_topics_with_types_and_counts(player, info) -> None:
    out = ok('topic', 'list')
    lines = out.splitlines()
    assert re.fullmatch(r'topic +type +publishers +subscribers', lines[0]), lines[0]
    rows = {}
    for line in lines[1:]:
        name, msg_type, pubs, subs = line.split()
        rows[name] = (msg_type, int(pubs), int(subs))
    assert rows['/clock'][:2] == ('rosgraph_msgs/msg/Clock', 1)
    for stream in info['streams']:
        assert stream['topic'] in rows, f'{stream["topic"]} not listed:\n{out}'
        assert rows[stream['topic']][0] == stream['type']
        assert rows[stream['topic']][1] >= 1
    # /tf: the episode's and the state publisher's; the command's own node is not counted
    assert rows['/tf'][1] == 2, out
    assert rows['/parameter_events'][1] == 2, out  # the player and the state publisher


def test_echo_once_prints_one_message_as_yaml(player) -> None:
    out = ok('topic', 'echo', '/clock', '--once')
    assert out.endswith('---\n') and out.count('---\n') == 1, out
    doc = yaml.safe_load(out.removesuffix('---\n'))
    assert set(doc) == {'clock'} and set(doc['clock']) == {'sec', 'nanosec'}
    assert doc['clock']['sec'] > 0


def test_echo_gets_a_latched_topic_and_cuts_long_strings(player) -> None:
    """/robot_description went out once, before this command: only a transient local
    reader gets it (ros2 topic echo matches the publishers' durability)."""
    out = ok('topic', 'echo', 'robot_description', '-n', '1', '--timeout', '30')
    doc = yaml.safe_load(out.removesuffix('---\n'))
    assert doc['data'].startswith('<') and doc['data'].endswith('...')
    assert len(doc['data']) == 128 + 3
    full = yaml.safe_load(ok('topic', 'echo', '/robot_description', '--once',
                             '--full-length').removesuffix('---\n'))
    assert full['data'].rstrip().endswith('</robot>')


def test_hz_reports_about_the_recorded_rate(player, info, clock) -> None:
    ok('control', 'resume')
    try:
        out = ok('topic', 'hz', POSE, '--duration', '4')
    finally:
        ok('control', 'pause')
    reports = re.findall(r'average rate: (\d+\.\d{3})\n\tmin: \d+\.\d{3}s max: \d+\.\d{3}s '
                         r'std dev: \d+\.\d{5}s window: (\d+)\n', out)
    assert reports, out
    rate, window = float(reports[-1][0]), int(reports[-1][1])
    recorded = next(s['rate_hz'] for s in info['streams'] if s['topic'] == POSE)
    assert recorded / 2 < rate < recorded * 2, out
    assert window > 2 and [int(w) for _, w in reports] == sorted(int(w) for _, w in reports)


def test_pause_resume_toggle_and_status(player, clock) -> None:
    assert ok('control', 'pause') == 'paused\n'
    clock.held()  # stands still
    assert ok('control', 'status').startswith('paused, rate ')
    assert ok('control', 'resume') == 'playing\n'
    assert clock.moving()
    assert ok('control', 'toggle') == 'paused\n'
    clock.held()
    assert ok('control', 'toggle') == 'playing\n'
    assert clock.moving()
    assert ok('control', 'pause') == 'paused\n'
    clock.held()


def test_rate_is_set_and_reported_back(player) -> None:
    try:
        assert ok('control', 'rate', '2') == 'rate 2\n'
        assert ok('control', 'rate') == 'rate 2\n'
        assert ok('control', 'status') == 'paused, rate 2\n'
    finally:
        ok('control', 'rate', '1')
    assert ok('control', 'rate') == 'rate 1\n'


def test_seek_moves_the_clock(player, info, clock) -> None:
    ok('control', 'pause')
    start = info['start_ns']
    target = start + 1_250_000_000
    t = f'{target // 10**9}.{target % 10**9:09d}'
    assert ok('control', 'seek', t) == f'seek to {t} s\n'
    assert clock.reaches(target), clock.ticks(3)
    assert clock.held() == target
    back = target - 500_000_000  # relative, from where /clock is now
    assert ok('control', 'seek', '-0.5') == \
        f'seek to {back // 10**9}.{back % 10**9:09d} s\n'
    assert clock.held() == back
    ok('control', 'seek', '0')  # before the start: the start
    assert clock.held() == start


def test_next_plays_messages_while_paused(player, clock) -> None:
    ok('control', 'pause')
    ok('control', 'seek', '0')
    before = clock.held()
    assert ok('control', 'next') == 'played 1 message\n'
    one = clock.held()
    assert one >= before
    assert ok('control', 'next', '40') == 'played 40 messages\n'
    forty = clock.held()
    assert forty > one  # 40 messages of ~30 topics at 60-200 Hz span more than one stamp
    assert ok('control', 'status').startswith('paused')
    ok('control', 'resume')
    try:
        refused(cli('control', 'next'), 'error: nothing played: the player plays the next '
                                        'message only while paused')
    finally:
        ok('control', 'pause')


def test_bad_input_is_one_line(player) -> None:
    # --timeout bounds finding the player too: 2 s was once too short for discovery on a
    # fresh run's machine ("no player ... after 2 s" with the player up)
    refused(cli('topic', 'echo', '/not_published', '--timeout', '10'),
            'error: /not_published: nobody publishes it in ROS_DOMAIN_ID=')
    refused(cli('control', 'pause', '--node-name', 'someone_else', '--timeout', '2'),
            'error: no player (node someone_else) in ROS_DOMAIN_ID=')
    refused(cli('control', 'rate', '0'), 'error: control rate: the rate must be positive')
    refused(cli('control', 'seek'), 'error: control seek needs a value')
    refused(cli('control', 'next', '2.5'), 'error: control next: a count of messages')
    refused(cli('topic', 'hz'), 'error: topic hz needs a TOPIC')
    refused(cli('topic', 'list', '--once'), 'error: --once is an option of `topic echo`')
    refused(cli('topic', 'echo', '/a b'), "error: '/a b' is not a topic name")


def test_no_player_in_the_domain_is_one_line(tmp_path) -> None:
    from react_ros.ros.isolation import HELD_VAR, hold_domain
    env = {k: v for k, v in os.environ.items() if k not in ('ROS_DOMAIN_ID', HELD_VAR)}
    lease = hold_domain(env)  # a domain nobody else is in
    try:
        env.pop(HELD_VAR)  # chosen by the user, as --join chooses it
        for args in (['topic', 'list'], ['control', 'status'], ['topic', 'echo', '/clock']):
            refused(cli(*args, '--timeout', '2', env=env),
                    f'error: no player (node react_ros_player) in '
                    f'ROS_DOMAIN_ID={lease.domain_id} after 2 s')
    finally:
        lease.release()


def test_ctrl_c_ends_echo_cleanly(player, tmp_path) -> None:
    out = tmp_path / 'echo.out'
    with out.open('w') as f:
        proc = subprocess.Popen([sys.executable, '-m', 'react_ros.cli', 'topic', 'echo',
                                 '/clock'], stdout=f, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while '---' not in out.read_text() and proc.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.05)  # polling its output for the first message, bounded
        assert '---' in out.read_text()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGINT, err
    assert 'Traceback' not in err, err


def _hold(path: Path, command: str):
    """A lock file as scripts/ros_env.sh leaves it: the command in it, held while open."""
    import fcntl
    handle = path.open('w')
    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    handle.write(command + '\n')
    handle.flush()
    return handle


def test_a_new_shell_joins_the_player_started_through_ros_env(player, tmp_path) -> None:
    """The lock files ros_env.sh writes, in a folder of this test's own (TMPDIR), with the
    player of this module registered as running in this run's domain."""
    from react_ros.ros.isolation import HELD_VAR
    locks = tmp_path / 'react_ros_domains'
    locks.mkdir()
    domain = int(os.environ['ROS_DOMAIN_ID'])
    other, third = domain % 101 + 1, (domain + 1) % 101 + 1
    env = {k: v for k, v in os.environ.items() if k not in ('ROS_DOMAIN_ID', HELD_VAR)}
    env['TMPDIR'] = str(tmp_path)
    (locks / f'{other}.lock').write_text('react-ros play /gone --loop\n')  # ended: not held
    held = [_hold(locks / f'{domain}.lock', 'react-ros play /tmp/umi_ep --loop')]
    try:
        result = cli('control', 'status', env=env)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith('paused, rate ')
        assert result.stderr.startswith(f'react-ros control: joined the player in '
                                        f'ROS_DOMAIN_ID={domain} (react-ros play /tmp/umi_ep')
        # `scripts/ros_env.sh react-ros topic ...`: a domain of its own, empty: join too
        own = dict(env, ROS_DOMAIN_ID=str(third), **{HELD_VAR: str(third)})
        held.append(_hold(locks / f'{third}.lock', 'react-ros topic echo /clock --once'))
        result = cli('topic', 'echo', '/clock', '--once', env=own)
        assert result.returncode == 0 and result.stdout.endswith('---\n'), result.stderr
        assert f'joined the player in ROS_DOMAIN_ID={domain}' in result.stderr
        # a domain the user chose is kept, as ros2cli keeps it
        chosen = cli('control', 'status', '--timeout', '2',
                     env=dict(env, ROS_DOMAIN_ID=str(third)))
        refused(chosen, f'error: no player (node react_ros_player) in ROS_DOMAIN_ID={third}')
        held.append(_hold(locks / f'{other}.lock', 'react-ros demo'))
        refused(cli('topic', 'list', env=env),
                f'error: 2 players are running (ROS_DOMAIN_ID={min(domain, other)}: ')
    finally:
        for handle in held:
            handle.close()
