"""Two SIGINTs a few milliseconds apart, as every node gets them under `ros2 launch` in a
terminal (the terminal's Ctrl-C reaches the whole process group, and launch forwards one):
the player node and the state publisher exit cleanly, with 0 as a ROS node stopped by
Ctrl-C does (launch reports any other status as "process has died"), no traceback and
no abort. A signal long after the first still ends a node that does not stop."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from react_ros.ros import qos

from live_support import Listener, spawn, spawn_player, stop
from react_support import EPISODE, react_release

pytestmark = pytest.mark.timeout(600)

# back to back, a few ms apart, and as late as a loaded launch may forward its copy
GAPS_S = (0.0, 0.003, 0.03)


def _two_sigints(proc: subprocess.Popen[bytes], gap_s: float) -> None:
    proc.send_signal(signal.SIGINT)
    if gap_s:
        time.sleep(gap_s)  # the point of the test: the interval between the two signals
    proc.send_signal(signal.SIGINT)


def _assert_clean(proc: subprocess.Popen[bytes], log: Path, timeout: float = 60.0) -> None:
    try:
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        stop(proc)
        pytest.fail(f'did not exit within {timeout} s of two SIGINTs:\n{log.read_text()}')
    text = log.read_text()
    assert code == 0, f'exit status {code}:\n{text}'
    assert 'Traceback' not in text, text
    assert 'terminate called' not in text, text


@pytest.fixture(scope='module')
def listener() -> Listener:
    lis = Listener('signals_listener')
    lis.subscribe('/clock', 'rosgraph_msgs/msg/Clock', qos.CLOCK)
    yield lis
    lis.close()


def _while_playing(listener: Listener, proc: subprocess.Popen[bytes], log: Path,
                   gap_s: float) -> None:
    """Once the player's /clock arrives (it is playing), two SIGINTs `gap_s` apart."""
    listener.clear()
    try:
        assert listener.spin_until(lambda: listener.count(['/clock']) > 0
                                   or proc.poll() is not None, 120), log.read_text()
        assert proc.poll() is None, f'ended before the signals:\n{log.read_text()}'
    except BaseException:
        stop(proc)
        raise
    _two_sigints(proc, gap_s)
    _assert_clean(proc, log)


@pytest.mark.parametrize('gap_s', GAPS_S)
def test_player_node_exits_cleanly_on_two_sigints(listener: Listener, umi_episode: Path,
                                                   tmp_path: Path, gap_s: float) -> None:
    log = tmp_path / 'player.log'
    for _ in range(2):
        proc = spawn_player(umi_episode, log, loop=True, wait_for_subscribers=0)
        _while_playing(listener, proc, log, gap_s)


@pytest.mark.parametrize('gap_s', GAPS_S)
def test_react_player_node_exits_cleanly_on_two_sigints(
        listener: Listener, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path,
        gap_s: float) -> None:
    root = react_release(tmp_path_factory)
    log = tmp_path / 'player.log'
    for _ in range(2):
        proc = spawn_player(root, log, episode_id=EPISODE, loop=True, wait_for_subscribers=0)
        _while_playing(listener, proc, log, gap_s)


@pytest.mark.parametrize('gap_s', GAPS_S)
def test_state_publisher_exits_cleanly_on_two_sigints(tmp_path: Path, gap_s: float) -> None:
    from test_state_publisher import URDF
    urdf = tmp_path / 'robot.urdf'
    urdf.write_text(URDF)
    log = tmp_path / 'rsp.log'
    for i in range(3):
        ready = tmp_path / f'ready{i}'
        proc = spawn(['-m', 'react_ros.ros.state_publisher', '--urdf', str(urdf),
                      '--ready-file', str(ready), '--ros-args', '-p', 'use_sim_time:=true'], log)
        deadline = time.monotonic() + 60
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)  # polling for the file, bounded
        assert ready.exists(), log.read_text()
        _two_sigints(proc, gap_s)
        _assert_clean(proc, log)


STUCK = """
import sys, threading
from react_ros.ros.stop_signals import StopSignals
asked = threading.Event()
StopSignals('stuck', asked.set)
print('ready', flush=True)
asked.wait(60)
print('asked to stop; not stopping', flush=True)
threading.Event().wait(60)  # a node that does not stop
"""


def test_a_signal_after_the_repeat_window_ends_a_node_that_does_not_stop() -> None:
    from react_ros.ros.stop_signals import REPEAT_S
    proc = subprocess.Popen([sys.executable, '-c', STUCK], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=os.environ.copy())
    try:
        assert proc.stdout.readline() == b'ready\n'
        proc.send_signal(signal.SIGINT)
        first = time.monotonic()
        proc.send_signal(signal.SIGINT)  # the same Ctrl-C: ignored
        assert proc.stdout.readline() == b'asked to stop; not stopping\n'
        time.sleep(max(0.0, first + REPEAT_S + 0.2 - time.monotonic()))  # past the window
        assert proc.poll() is None, 'the repeat ended it'
        proc.send_signal(signal.SIGINT)  # the user insists
        assert proc.wait(30) == 128 + signal.SIGINT
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read().decode()
    assert 'stuck: SIGINT again: exiting at once' in err
    assert 'Traceback' not in err, err
