"""Stop signals mid-write: every kind exits 128 + the signal's number, at once, leaving nothing.

Through the real CLI, on a sample of each kind big enough that the signal lands
while the bag is being written (the hidden partial holds MCAP bytes and the
process still runs): SIGINT, SIGTERM, and two signals a few milliseconds apart
(a terminal's Ctrl-C plus the one `ros2 launch` or a shell forwards), where the
first one's status wins. Each run must end within STOP_BOUND_S with no
traceback and the output's parent folder as it was. RoboTwin, whose read-ahead
threads once hung the interpreter's exit on h5py's lock (7 of 12 SIGINTs), is
tried ROBOTWIN_TRIES times; --images jpeg (the encoder's thread pool) and h264
(PyAV's encoder on the writing thread) once each. The flag behind it
(react_ros/output.py) is checked in-process too.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from std_msgs.msg import String

from react_ros.registry import KINDS
from react_ros.adapters.base import Episode
from react_ros.kinds.robotwin.sample import EMBODIMENT, TASK
from react_ros import output
from react_ros.rosbag2.writer import write_bag
from react_ros.output import Interrupted, staged
from react_ros.streams import Stream

CLI = [sys.executable, '-m', 'react_ros.cli']
STOP_BOUND_S = 20.0  # from the signal to the exit; measured 0.1-0.4 s (README)
START_BOUND_S = 60.0  # from the start to the middle of the write, on a loaded machine
# Each kind's sample: a bag takes a second or more to write on the 2-core machine,
# so the signal lands mid-write however late the poll sees the partial.
SAMPLES: dict[str, dict[str, Any]] = {
    'umi': {'duration_s': 3.0, 'width': 320, 'height': 240},
    'react': {'duration_s': 4.0, 'width': 320, 'height': 240},
    'truetrace': {'duration_s': 6.0, 'width': 320, 'height': 180},
    'objects': {'duration_s': 180.0},
    # 100 frames of 320x240: the hang was 60 frames; more leaves more time to land.
    'robotwin': {'duration_s': 10.0, 'width': 320, 'height': 240},
}
EPISODE_ARGS = {'robotwin': ['--episode', f'{EMBODIMENT}/{TASK}/episode0']}
# What is sent: one signal, or two a few milliseconds apart (the first one's status wins).
HOW = {'SIGINT': (signal.SIGINT,), 'SIGTERM': (signal.SIGTERM,),
       'SIGINT+SIGINT': (signal.SIGINT, signal.SIGINT),
       'SIGTERM+SIGINT': (signal.SIGTERM, signal.SIGINT)}
ROBOTWIN_TRIES = 12
CASES = [pytest.param(kind, how, [], id=f'{kind}-{how}')
         for kind in ('umi', 'react', 'truetrace', 'objects') for how in HOW]
CASES += [pytest.param('robotwin', how, [], id=f'robotwin-{how}-{k}')
          for k in range(ROBOTWIN_TRIES // len(HOW)) for how in HOW]
CASES += [pytest.param('umi', 'SIGINT', ['--images', 'jpeg'], id='umi-jpeg-SIGINT'),
          pytest.param('robotwin', 'SIGTERM+SIGINT', ['--images', 'jpeg'],
                       id='robotwin-jpeg-SIGTERM+SIGINT'),
          pytest.param('umi', 'SIGTERM', ['--images', 'h264'], id='umi-h264-SIGTERM')]


@pytest.fixture(scope='module')
def samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each kind's sample, written on first use (read-only)."""
    return _Samples(tmp_path_factory.mktemp('interrupt_samples'))


class _Samples(dict):  # type: ignore[type-arg]
    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root

    def __missing__(self, kind: str) -> Path:
        writer = KINDS[kind].sample_writer()
        assert writer is not None, kind
        self[kind] = path = writer(self.root / kind, seed=3, **SAMPLES[kind])
        return path


def _start(*args: str) -> subprocess.Popen[str]:
    # SIGINT as at a terminal, even when the suite runs where it is ignored (`cmd &`);
    # faulthandler: a run that does not end is made to dump its threads' stacks.
    return subprocess.Popen([*CLI, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, 'PYTHONFAULTHANDLER': '1'},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _mcap_bytes(folder: Path) -> int:
    if not folder.is_dir():
        return 0
    total = 0
    for partial in folder.glob('.*.partial'):
        for f in partial.glob('*.mcap'):
            try:
                total += f.stat().st_size
            except FileNotFoundError:  # removed meanwhile
                pass
    return total


def _wait_for(proc: subprocess.Popen[str], what: str, ready: Any) -> None:
    """Poll until `ready()`, failing if the process ends first or the bound passes."""
    deadline = time.monotonic() + START_BOUND_S
    while not ready():
        assert proc.poll() is None, f'ended before {what}: {proc.communicate()}'
        assert time.monotonic() < deadline, f'no {what} within {START_BOUND_S} s'
        time.sleep(0.002)


def _stop(proc: subprocess.Popen[str], signals: tuple[int, ...]) -> tuple[int, str, float]:
    """Send `signals` a few ms apart; the exit status, stderr and seconds to the exit."""
    sent = time.monotonic()
    for k, sig in enumerate(signals):
        if k:
            time.sleep(0.005)
        proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=STOP_BOUND_S)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)  # faulthandler prints every thread's stack
        _, err = proc.communicate(timeout=30)
        pytest.fail(f'still running {STOP_BOUND_S} s after {signals}:\n{err}')
    return proc.returncode, err, time.monotonic() - sent


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob('*'))


@pytest.mark.parametrize('kind,how,extra', CASES)
def test_a_stop_signal_mid_convert_exits_at_once_leaving_nothing(
        kind: str, how: str, extra: list[str], samples: dict[str, Path],
        tmp_path: Path) -> None:
    episode = samples[kind]
    out = tmp_path / 'new' / 'bag'  # its parent is made by the writer, and must go too
    proc = _start('convert', str(episode), *EPISODE_ARGS.get(kind, []), *extra,
                  '-o', str(out))
    _wait_for(proc, 'MCAP bytes in the partial', lambda: _mcap_bytes(out.parent) > 0)
    status, err, seconds = _stop(proc, HOW[how])
    # The first signal decides the status when it is handled before the second arrives.
    # Two that are pending together (the main thread inside C code for 5 ms: a JPEG
    # encode) reach Python's handlers in signal-number order, SIGINT before SIGTERM, so
    # either is the run's: both mean "stop".
    assert status in {128 + s for s in HOW[how]}, (status, err)
    if len(set(HOW[how])) == 1:
        assert status == 128 + HOW[how][0], (status, err)
    assert 'Traceback' not in err and 'Exception ignored' not in err, err
    assert 'error' not in err, err
    assert _listing(tmp_path) == [], _listing(tmp_path)
    print(f'{kind} {" ".join(extra)} {how}: exit {status} {seconds:.2f} s after the signal')


@pytest.mark.parametrize('kind', ['robotwin', 'umi'])
def test_a_stop_signal_mid_sample_exits_at_once_leaving_nothing(kind: str,
                                                                  tmp_path: Path) -> None:
    out = tmp_path / 'new' / 'episode'
    size = SAMPLES[kind]
    proc = _start('sample', kind, str(out), '--duration', str(size['duration_s']),
                  '--resolution', f'{size["width"]}x{size["height"]}')
    _wait_for(proc, 'a file in the partial',
              lambda: out.parent.is_dir() and any(
                  f.is_file() for p in out.parent.glob('.*.partial') for f in p.rglob('*')))
    status, err, _ = _stop(proc, HOW['SIGINT+SIGINT'])
    assert status == 128 + signal.SIGINT, (status, err)
    assert 'Traceback' not in err and 'Exception ignored' not in err, err
    assert _listing(tmp_path) == []


# -- the flag, in-process ---------------------------------------------------------------------

@pytest.fixture
def flag() -> Iterator[None]:
    output.clear_stop()
    yield
    output.clear_stop()


def test_a_signal_in_staged_sets_the_flag_and_the_loop_stops_there(flag: None,
                                                                  tmp_path: Path) -> None:
    before = {s: signal.getsignal(s) for s in output.STOP_SIGNALS}
    out = tmp_path / 'new' / 'out'
    written = 0
    with pytest.raises(Interrupted) as stopped:
        with staged(out) as tmp:
            for written in range(100):
                (tmp / f'{written}.txt').write_text('x')
                if written == 3:
                    # Handled on this thread at once, and nothing raises here.
                    os.kill(os.getpid(), signal.SIGTERM)
                    os.kill(os.getpid(), signal.SIGHUP)  # (not SIGINT: ignored under `cmd &`)
                output.check_stop()
    assert stopped.value.signum == signal.SIGTERM and written == 3
    assert list(tmp_path.iterdir()) == []
    # After a stop the flag's handlers stay (a late signal is not a traceback) ...
    assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]
    os.kill(os.getpid(), signal.SIGTERM)
    assert output.stop_requested() == signal.SIGTERM
    # ... until the stop is forgotten; a stop requested before staged makes nothing.
    output.clear_stop()
    assert {s: signal.getsignal(s) for s in output.STOP_SIGNALS} == before
    output.request_stop(signal.SIGHUP)
    with pytest.raises(Interrupted):
        with staged(out):
            pass
    assert list(tmp_path.iterdir()) == []


def test_wait_for_stop_wakes_on_a_signal(flag: None) -> None:
    assert output.wait_for_stop(0.05) is False
    with output.stop_signals_flag():
        timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM))
        start = time.monotonic()
        timer.start()
        assert output.wait_for_stop(30) is True
        waited = time.monotonic() - start
    timer.join()
    assert 0.15 < waited < 0.2 + 4 * output.STOP_POLL_S + 0.5, waited


def _heavy_episode(tmp_path: Path, gen: Any) -> Episode:
    """An episode of one heavy stream: the bag writer reads it ahead on a worker thread."""
    stream = Stream('/slow', 'std_msgs/msg/String', gen, heavy=True, approx_bytes=100)
    return Episode('test', tmp_path / 'episode', 0, 10**9, [stream])


def _read_ahead_workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith('readahead ')]


def test_the_bags_read_ahead_stops_and_joins_its_worker_on_the_flag(flag: None,
                                                                   tmp_path: Path) -> None:
    def slow() -> Iterator[tuple[int, String]]:
        for k in range(100_000):
            time.sleep(0.01)  # a frame's read and decode
            yield k, String(data=str(k))
    timer = threading.Timer(0.2, output.request_stop, (signal.SIGINT,))
    start = time.monotonic()
    timer.start()
    with pytest.raises(Interrupted):
        write_bag(_heavy_episode(tmp_path, slow), tmp_path / 'bag')
    assert time.monotonic() - start < 2.0
    timer.join()
    assert not _read_ahead_workers()  # joined by the writer before it raised
    assert not (tmp_path / 'bag').exists()


def test_the_bag_writer_never_blocks_on_a_worker_that_stopped(flag: None,
                                                               tmp_path: Path) -> None:
    # The worker sees the flag first and ends without a last message: the writer,
    # waiting on an empty queue, must notice the flag rather than wait for ever.
    def stuck() -> Iterator[tuple[int, String]]:
        yield 0, String(data='first')
        output.request_stop(signal.SIGTERM)
        while True:
            yield 1, String(data='never sent')
    start = time.monotonic()
    with pytest.raises(Interrupted) as stopped:
        write_bag(_heavy_episode(tmp_path, stuck), tmp_path / 'bag')
    assert stopped.value.signum == signal.SIGTERM
    assert time.monotonic() - start < 2.0
    assert not _read_ahead_workers()

