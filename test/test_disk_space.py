"""A bag's size estimated early, refused when its disk is too small, and its progress line
(react_ros/rosbag2/disk_space.py, issue 29).

Real samples and real bags throughout; only the refusal tests fake os.statvfs, in the
module that calls it, since no filesystem here can be made small on purpose.
"""
from __future__ import annotations

import io
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import pytest
from conftest import written_once
from release_support import write_small_sample

from react_ros.convert_options import ConvertOptions
from react_ros import cli
from react_ros.registry import KINDS, EpisodeOptions, find_release, open_episode
from react_ros.progress import Counter
from react_ros.release.index import FAILED
from react_ros.convert_options import ConvertAllOptions
from react_ros.release.task import Task, convert_episode, tree_bytes
from react_ros.rosbag2 import disk_space
from react_ros.rosbag2.writer import write_bag
from react_ros.rosbag2.disk_space import SizeWatch, free_space, size_text

TOLERANCE = 0.20


@pytest.fixture(scope='module')
def sample(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """A kind's small sample, written once per session."""
    def get(kind: str) -> Path:
        return written_once(tmp_path_factory, f'disk_space_{kind}',
                            lambda root: write_small_sample(kind, root))
    return get


def _modes(kind: str, root: Path) -> list[str]:
    """The --images modes that change something in `kind`'s sample."""
    streams = _open(kind, root).streams
    modes = ['raw']
    if any(s.msg_type == 'sensor_msgs/msg/Image' for s in streams):
        modes += ['jpeg', 'png']
    if any(s.video is not None for s in streams):
        modes.append('h264')
    return modes


def _open(kind: str, root: Path):
    _, refs = find_release(root)
    return open_episode(refs[0].path, kind, EpisodeOptions(episode=refs[0].episode))


@pytest.mark.parametrize('kind', list(KINDS))
def test_estimate_is_within_20_percent_of_the_bag(kind: str, tmp_path: Path,
                                                  sample: Callable[[str], Path]) -> None:
    """Each kind's small sample, in each --images mode that changes it, with the default
    compression (chunks of several compressions) and with one for every chunk."""
    root = sample(kind)
    for images in _modes(kind, root):
        for compression in ('auto', 'lz4'):
            how = f'--images {images} --compression {compression}'
            watch = SizeWatch()
            summary = write_bag(_open(kind, root), tmp_path / f'{images}-{compression}',
                                ConvertOptions(images=images, compression=compression), size=watch)
            real = tree_bytes(summary.path)
            assert watch.estimate is not None, f'{how}: no estimate was made'
            error = watch.estimate.bytes / real - 1
            assert abs(error) <= TOLERANCE, \
                f'{how}: estimated {watch.estimate.bytes} B, wrote {real} B'
            mcap = summary.path / f'{summary.path.name}_0.mcap'
            assert watch.written == mcap.stat().st_size


def test_estimate_of_a_bag_of_many_chunks_with_the_hint(umi_episode: Path,
                                                        tmp_path: Path) -> None:
    """The fixture's raw bag is tens of MB: chunks are on disk when the estimate is made,
    and its rate (over 10 GB per hour of data) earns the hint; its h264 bag does not."""
    made = []
    watch = SizeWatch(on_estimate=made.append)
    write_bag(open_episode(umi_episode, 'umi', EpisodeOptions()), tmp_path / 'raw',
              size=watch)
    real = tree_bytes(tmp_path / 'raw')
    assert len(made) == 1 and made[0] is watch.estimate
    assert abs(made[0].bytes / real - 1) <= TOLERANCE, (made[0].bytes, real)
    assert real / 2.0 * 3600 > disk_space.HINT_BYTES_PER_HOUR  # the premise
    line = made[0].line()
    assert line.startswith(f'estimated bag size: {size_text(made[0].bytes)} for 2.0 s of '
                           'data (compression auto); ')
    assert '--images h264' in line and '--images jpeg' in line
    assert f' free on {tmp_path}; ' in line
    watch = SizeWatch()
    write_bag(open_episode(umi_episode, 'umi', EpisodeOptions()), tmp_path / 'h264',
              ConvertOptions(images='h264'), size=watch)
    assert watch.estimate is not None and '--images' not in watch.estimate.line()


def test_free_space_is_statvfs_of_the_nearest_folder(tmp_path: Path) -> None:
    st = os.statvfs(tmp_path)
    where, free = free_space(tmp_path / 'not' / 'yet' / 'bag')
    assert where == tmp_path
    assert free is not None and abs(free - st.f_bavail * st.f_frsize) < 64 << 20


def _fake_statvfs(monkeypatch: pytest.MonkeyPatch, free: int) -> list[str]:
    asked: list[str] = []

    def statvfs(path: str | os.PathLike[str]) -> SimpleNamespace:
        asked.append(os.fspath(path))
        return SimpleNamespace(f_bavail=free // 4096, f_frsize=4096)
    monkeypatch.setattr(disk_space.os, 'statvfs', statvfs)
    return asked


def _convert(capfd: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capfd.readouterr()
    try:
        code = cli.main(['convert', *args])
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 2
    return code, capfd.readouterr().err


def test_a_bag_bigger_than_the_free_space_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str], sample: Callable[[str], Path]) -> None:
    episode = sample('umi')
    out = tmp_path / 'out' / 'bag'
    asked = _fake_statvfs(monkeypatch, 64 * 1024)
    code, err = _convert(capfd, str(episode), '-o', str(out))
    assert asked, 'the fake statvfs was not used'
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(f'error: {out}: the bag would take about ')
    assert ' kB is free on ' in lines[0] and '--no-space-check' in lines[0]
    assert list(tmp_path.iterdir()) == [], 'something was left behind'


def test_a_bag_that_fits_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capfd: pytest.CaptureFixture[str],
                                    sample: Callable[[str], Path]) -> None:
    out = tmp_path / 'bag'
    _fake_statvfs(monkeypatch, 100 << 20)
    code, err = _convert(capfd, str(sample('umi')), '-o', str(out), '--progress')
    assert code == 0, err
    estimates = [line for line in err.splitlines() if line.startswith('estimated bag size')]
    assert len(estimates) == 1 and estimates[0].endswith(f'free on {tmp_path}'), err
    assert out.is_dir()
    # In a log or a pipe, as the progress line: an error found later is the only line.
    code, err = _convert(capfd, str(sample('umi')), '-o', str(tmp_path / 'piped'))
    assert code == 0 and 'estimated bag size' not in err, err
    code, err = _convert(capfd, str(sample('umi')), '-o', str(tmp_path / 'quiet'), '-q')
    assert code == 0 and err == ''


def test_no_space_check_writes_it_anyway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capfd: pytest.CaptureFixture[str],
                                         sample: Callable[[str], Path]) -> None:
    out = tmp_path / 'bag'
    _fake_statvfs(monkeypatch, 64 * 1024)
    code, err = _convert(capfd, str(sample('umi')), '-o', str(out), '--no-space-check')
    assert code == 0, err
    assert out.is_dir() and tree_bytes(out) > 64 * 1024


def test_convert_all_records_a_bag_too_big_as_failed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        sample: Callable[[str], Path]) -> None:
    """The unit of work convert-all runs in its workers: the disk's fault, not the
    episode's (failed, tried again by the next run), and nothing left."""
    _, refs = find_release(sample('umi'))
    _fake_statvfs(monkeypatch, 64 * 1024)
    task = Task('umi', refs[0], str(sample('umi')), str(tmp_path / 'bags' / refs[0].id),
                ConvertAllOptions())
    outcome = convert_episode(task)
    assert outcome.status == FAILED and 'the bag would take about' in outcome.reason
    assert not (tmp_path / 'bags').exists()
    outcome = convert_episode(Task('umi', refs[0], str(sample('umi')),
                                   str(tmp_path / 'bags' / refs[0].id),
                                   ConvertAllOptions(no_space_check=True)))
    assert outcome.status != FAILED, outcome.reason


class _Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_progress_line_shows_bytes_rate_and_eta() -> None:
    out, clock = io.StringIO(), _Clock()
    watch = SizeWatch(span_ns=10_000_000_000)
    count = Counter('converting', out, watch=watch, now=clock)
    clock.t += 4.0
    watch.written, watch.done_ns = 80_000_000, 2_500_000_000
    count(25, 100)
    clock.t += 12.0
    watch.written, watch.done_ns = 300_000_000, 10_000_000_000
    count(100, 100)
    count.close()
    assert out.getvalue().splitlines() == [
        'converting:  25.0% 25/100 messages, 80.0 MB at 20.0 MB/s, ETA 0:00:12',
        'converting: 100.0% 100/100 messages, 300.0 MB at 18.8 MB/s']
