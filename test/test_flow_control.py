"""Flow control: a reliable subscriber gets every image at any rate, or the drops are counted.

The subscriber is bench/image_subscriber.py in its own process: reliable KEEP_ALL,
20 ms of work per image, counting what its callback takes. The player is
`react-ros play` in another, as a user runs it, at --rate 10: six times more
images a second than that subscriber takes, and more than the player decodes.
"""
from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOPIC = '/center/image_raw'


@pytest.fixture(scope='module')
def episode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from react_ros.kinds.umi.sample import write_umi_sample
    # 640x400 (768 kB an image): large enough that the player outruns the transport.
    return write_umi_sample(tmp_path_factory.mktemp('flow') / 'episode0000', seed=3,
                            duration_s=2.0, width=640, height=400)


def _image_stream(episode: Path) -> Any:
    from react_ros.registry import open_episode
    (stream,) = [s for s in open_episode(episode, 'umi').streams if s.topic == TOPIC]
    return stream


@pytest.fixture(scope='module')
def frames(episode: Path) -> int:
    count = _image_stream(episode).count
    assert count and count > 100
    return count


def _play_command(episode: Path, *extra: str) -> list[str]:
    # The player waits (bounded) for discovery to match the subscribers before it plays.
    return [sys.executable, '-m', 'react_ros.cli', 'play', str(episode), '--rate', '10',
            '--no-state-publisher', '--wait-for-subscribers', '10', *extra]


def _play(episode: Path, *extra: str) -> tuple[int, str]:
    """(images the slow subscriber took, the player's stderr)."""
    sub = subprocess.Popen([sys.executable, str(ROOT / 'bench' / 'image_subscriber.py'), TOPIC,
                            '--keep-all', '--work-ms', '20', '--idle', '5'],
                           stdout=subprocess.PIPE, text=True)
    try:
        assert sub.stdout is not None and sub.stdout.readline().strip() == 'ready'
        player = subprocess.run(_play_command(episode, *extra), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, timeout=300)
        assert player.returncode == 0, player.stderr
        # The player has exited once every image was acknowledged: what is missing now is
        # only what the subscriber has not taken from its queue yet. It stops 5 s after
        # its last image.
        sub.send_signal(signal.SIGUSR1)  # also when it got none at all
        out, _ = sub.communicate(timeout=300)
    finally:
        if sub.poll() is None:
            sub.kill()
            sub.wait()
    return json.loads(out.strip().splitlines()[-1])[TOPIC], player.stderr


def _rtf(stderr: str) -> float:
    m = re.search(r'real-time factor ([0-9.]+) \(rate 10\)', stderr)
    assert m, stderr
    return float(m.group(1))


def test_a_slow_keep_all_subscriber_receives_every_image_at_rate_10(episode: Path,
                                                                     frames: int) -> None:
    received, stderr = _play(episode)
    assert received == frames, stderr
    assert 'dropped' not in stderr
    # the player says what it reached. Not necessarily below the 10 asked for: the reader's
    # KEEP_ALL history takes (and acknowledges) images faster than its callback does, and
    # since the player's 32 MiB shared-memory segment (ros/dds.py) no fragment waits for a
    # repair, so the window rarely fills (RTF 9.98-10.43 measured; with 512 KiB 5.96-7.46).
    assert _rtf(stderr) > 0


def test_drop_late_keeps_time_and_counts_exactly_what_it_dropped(episode: Path,
                                                                 frames: int) -> None:
    received, stderr = _play(episode, '--drop-late', '0.02')
    m = re.search(r'dropped (\d+) of (\d+) messages to keep real time \(--drop-late 0.02 s\): '
                  r'(.*)$', stderr, re.M)
    assert m, stderr
    per_topic = dict((t, int(n)) for t, n in re.findall(r'(/\S+) (\d+)', m.group(3)))
    dropped = per_topic.get(TOPIC, 0)
    assert dropped > 0, stderr
    assert received == frames - dropped, stderr


@pytest.fixture(scope='module')
def long_episode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from react_ros.kinds.umi.sample import write_umi_sample
    return write_umi_sample(tmp_path_factory.mktemp('flow_long') / 'episode0000', seed=4,
                            duration_s=5.0, width=640, height=400)


class _Lines:
    """Counts the lines a subscriber prints (one per message, --each) as they come."""

    def __init__(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None and proc.stdout.readline().strip() == 'ready'
        self.proc = proc
        self.count = 0
        self.last = ''
        self._cv = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cv:
                self.last = line.strip()
                if line.startswith('/'):
                    self.count += 1
                self._cv.notify_all()

    def wait_for(self, n: int, timeout: float) -> int:
        """The count once it reaches n, or when `timeout` s pass."""
        with self._cv:
            self._cv.wait_for(lambda: self.count >= n, timeout)
            return self.count


def _subscriber(*flags: str) -> _Lines:
    # --idle 60: it ends when the test stops it, not when it has been stopped a while
    return _Lines(subprocess.Popen(
        [sys.executable, str(ROOT / 'bench' / 'image_subscriber.py'), TOPIC, '--each',
         '--idle', '60', *flags], stdout=subprocess.PIPE, text=True))


@contextlib.contextmanager
def _one_reader_stopped(episode: Path, flags: str, *play: str
                        ) -> Iterator[tuple[_Lines, _Lines, subprocess.Popen]]:
    """(reader, watcher, player): the reader (`flags`) SIGSTOPped after its first image.

    The watcher is reliable KEEP_ALL on the same topic; the player plays `episode` at
    --rate 10. Every process is ended (and the reader continued) on exit.
    """
    procs: list[subprocess.Popen] = []
    try:
        reader = _subscriber(flags)
        procs.append(reader.proc)
        watcher = _subscriber('--keep-all')
        procs.append(watcher.proc)
        procs.append(subprocess.Popen(_play_command(episode, *play), stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True))
        assert reader.wait_for(1, 60) >= 1
        reader.proc.send_signal(signal.SIGSTOP)
        yield reader, watcher, procs[-1]
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
                p.wait()


def test_a_stalled_reader_holds_the_player_within_its_window(long_episode: Path) -> None:
    """A reliable reader that stops taking anything (SIGSTOP) stops the player a window on.

    A second reliable KEEP_ALL reader on the same topic, which keeps up, sees what
    the player sends meanwhile: at most the topic's window past what it had sent
    when the reader stopped, and a few the watcher had not taken yet (KEEP_ALL
    alone sent the whole episode into the writer's history; a best-effort watcher
    cannot tell, it lost half of it). Once the reader goes on, it receives every
    image.
    """
    from react_ros.ros import qos
    stream = _image_stream(long_episode)
    total = stream.count
    window = qos.window(True, stream.approx_bytes)
    assert total and total > window + 100, (total, window)

    with _one_reader_stopped(long_episode, '--keep-all') as (slow, watcher, player):
        sent_at_stop = watcher.count
        # At --rate 10 the whole episode goes out in 0.5 s when nothing holds the
        # player; 5 s is well under the stopped reader's 20 s DDS lease.
        seen = watcher.wait_for(total, 5.0)
        assert seen <= sent_at_stop + window + 10, (sent_at_stop, seen, window, total)
        slow.proc.send_signal(signal.SIGCONT)
        _, stderr = player.communicate(timeout=300)
        assert player.returncode == 0, stderr
        # Every image was acknowledged, so it is in the reader's queue: the callback takes it.
        assert slow.wait_for(total, 120) == total, stderr


def test_a_stalled_best_effort_reader_holds_nothing(long_episode: Path) -> None:
    """A best-effort reader sends no acknowledgements: stopped, it does not stop the player.

    The reliable KEEP_ALL watcher gets a whole episode's worth of images while the
    best-effort reader is stopped. The player loops: a watcher that discovery matched
    late (a lost announcement: the player then learns of it up to 3 s on) still gets
    them, where an episode played once had gone out in 0.5 s before it matched (seen
    once in a fresh clone's run: 0 of 301).
    """
    total = _image_stream(long_episode).count
    with _one_reader_stopped(long_episode, '--best-effort', '--loop') as (_, watcher, player):
        before = watcher.count
        # bounded well under the stopped reader's 20 s DDS lease, after which even a
        # reliable reader would no longer be waited for
        got = watcher.wait_for(before + total, 15.0)
        ended = player.poll()
        why = '' if ended is None else player.communicate(timeout=15)[1]
        assert got >= before + total, (before, got, total, ended, why)
        assert ended is None, why  # still playing: nothing held it
