"""Flow control: a reliable subscriber gets every image at any rate, or the drops are counted.

The subscriber is bench/image_subscriber.py in its own process: reliable KEEP_ALL,
20 ms of work per image, counting what its callback takes. The player is
`react-ros play` in another, as a user runs it, at --rate 10: six times more
images a second than that subscriber takes, and more than the player decodes.
"""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOPIC = '/center/image_raw'


@pytest.fixture(scope='module')
def episode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from react_ros.samples.umi import write_umi_sample
    # 640x400 (768 kB an image): large enough that the player outruns the transport.
    return write_umi_sample(tmp_path_factory.mktemp('flow') / 'episode0000', seed=3,
                            duration_s=2.0, width=640, height=400)


@pytest.fixture(scope='module')
def frames(episode: Path) -> int:
    from react_ros.adapters import open_episode
    (stream,) = [s for s in open_episode(episode, 'umi').streams if s.topic == TOPIC]
    assert stream.count and stream.count > 100
    return stream.count


def _play(episode: Path, *extra: str) -> tuple[int, str]:
    """(images the slow subscriber took, the player's stderr)."""
    sub = subprocess.Popen([sys.executable, str(ROOT / 'bench' / 'image_subscriber.py'), TOPIC,
                            '--keep-all', '--work-ms', '20', '--idle', '5'],
                           stdout=subprocess.PIPE, text=True)
    try:
        assert sub.stdout is not None and sub.stdout.readline().strip() == 'ready'
        # The player waits (bounded) for discovery to match the subscriber before it plays.
        player = subprocess.run([sys.executable, '-m', 'react_ros.cli', 'play', str(episode),
                                 '--rate', '10', '--no-state-publisher',
                                 '--wait-for-subscribers', '10', *extra],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                timeout=300)
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
    # the player says what it reached: below the 10 asked for, as it waited for the reader
    assert 0 < _rtf(stderr) < 10


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
