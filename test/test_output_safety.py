"""Where writers may write, and that they leave nothing half-done (react_ros/output.py).

Through the real CLI on the session UMI sample: each refused output exits 2 with one
line and leaves every file as it was; --overwrite replaces only a react_ros bag; a
convert (or sample) killed mid-write leaves no output, and the next run succeeds and
leaves nothing stale. The lock rules that make "stale" safe are checked in-process.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import pytest
import yaml
from conftest import tree_digest

from react_ros.errors import SinkError
from react_ros import output
from react_ros.rosbag2.writer import is_react_ros_bag
from react_ros.output import MARKER, remove_stale, staged

CLI = [sys.executable, '-m', 'react_ros.cli']
QUICK = ['--topics', '/tf_static', '/robot_description']  # a bag in about a second


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ), cwd=cwd)


def _start(*args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
    # SIGINT as at a terminal, even when the suite runs where it is ignored (`cmd &`).
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    return subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ), cwd=cwd,
                            preexec_fn=_default_sigint if ignored else None)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob('*'))


def _wait_for(proc: subprocess.Popen[str], what: str, ready: Callable[[], bool],
              timeout: float = 60.0) -> None:
    """Poll until `ready()`, failing if the process ends first or the bound passes."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f'ended before {what}: {proc.communicate()}'
        assert time.monotonic() < deadline, f'no {what} within {timeout} s'
        time.sleep(0.005)


def _partials(folder: Path) -> list[Path]:
    return sorted(folder.glob('.*.partial')) if folder.is_dir() else []


def _mcap_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for p in _partials(folder) for f in p.glob('*.mcap'))


def _refused(proc: subprocess.CompletedProcess[str], *words: str, case: str = '') -> str:
    assert proc.returncode == 2, (case, proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith('error: '), (case, proc.stderr)
    assert 'Traceback' not in proc.stderr
    for word in words:
        assert word in lines[0], (case, lines[0])
    return lines[0]


@pytest.fixture
def work(umi_copy: Path) -> Path:
    """The test's folder: the episode copy, a user's folder and file, a symlink to the episode."""
    root = umi_copy.parent
    (root / 'mine').mkdir()
    (root / 'mine' / 'notes.txt').write_text('the user\'s')
    (root / 'file.txt').write_text('the user\'s')
    (root / 'empty').mkdir()
    (root / 'nest' / 'cwd').mkdir(parents=True)
    (root / 'link').symlink_to(umi_copy)
    return root


# (arguments after `convert EPISODE`, run in, words of the line); {w} = the test's folder
CONVERT_REFUSALS = {
    'empty -o': (['-o', ''], '{w}', ['-o', 'empty']),
    'empty -o with --overwrite': (['-o', '', '--overwrite'], '{w}/mine', ['-o', 'empty']),
    '-o . (the cwd)': (['-o', '.'], '{w}/empty', ['current directory']),
    '-o . (the cwd) with --overwrite': (['-o', '.', '--overwrite'], '{w}/empty',
                                        ['current directory']),
    '-o .. holds the cwd': (['-o', '..', '--overwrite'], '{w}/nest/cwd', ['current directory']),
    'the input itself': (['-o', '{w}/episode', '--overwrite'], None, ['is the input']),
    'the input via a symlink': (['-o', '{w}/link', '--overwrite'], None, ['is the input']),
    'inside the input': (['-o', '{w}/episode/bag'], None, ['is inside']),
    'deep inside the input': (['-o', '{w}/episode/new/deeper/bag'], None, ['is inside']),
    'holds the input': (['-o', '{w}', '--overwrite'], None, ['holds']),
    '-o . holds the input': (['-o', '.', '--overwrite'], '{w}', ['holds']),
    'the root holds the input': (['-o', '/', '--overwrite'], None, ['holds']),
    'a foreign folder': (['-o', '{w}/mine'], None, ['is not a react_ros bag']),
    'a foreign folder with --overwrite': (['-o', '{w}/mine', '--overwrite'], None,
                                          ['is not a react_ros bag']),
    'a file with --overwrite': (['-o', '{w}/file.txt', '--overwrite'], None,
                                ['is not a react_ros bag']),
    'under a file': (['-o', '{w}/file.txt/bag'], None, ['cannot create it']),
}


def _run_cases(work: Path, cases: dict, command: list[str]) -> None:
    """Run every case at once (each is a process start, ~1 s), then check each."""
    before, listing = tree_digest(work), _listing(work)

    def run(case: str) -> subprocess.CompletedProcess[str]:
        args, cwd, _ = cases[case]
        return _cli(*command, *[a.format(w=work) for a in args],
                    cwd=Path(cwd.format(w=work)) if cwd else work)
    with ThreadPoolExecutor(max(4, os.cpu_count() or 1)) as pool:
        done = dict(zip(cases, pool.map(run, cases), strict=True))
    for case, proc in done.items():
        words = cases[case][2]
        line = _refused(proc, *words, case=case)
        if '-o' not in words and 'DIR' not in words:  # it names the input, or what is in the way
            assert str(work) in line, (case, line)
    assert _listing(work) == listing and tree_digest(work) == before


def test_convert_refuses_outputs_that_would_harm(work: Path) -> None:
    _run_cases(work, CONVERT_REFUSALS, ['convert', str(work / 'episode')])


def test_overwrite_replaces_a_react_ros_bag_only(work: Path, tmp_path_factory) -> None:
    import shutil

    from mcap.writer import Writer
    bag = work / 'empty'  # an empty folder is filled
    first = _cli('convert', str(work / 'episode'), '-o', str(bag), *QUICK)
    # stderr is a pipe: no progress, so nothing at all on success
    assert first.returncode == 0 and first.stderr == '', first.stderr
    assert first.stdout.startswith(f'wrote {bag} (')
    assert is_react_ros_bag(bag)
    _refused(_cli('convert', str(work / 'episode'), '-o', str(bag), *QUICK),
             'exists already', '--overwrite')
    done = _cli('convert', str(work / 'episode'), '-o', str(bag), '--overwrite',
                '--topics', '/tf_static', '-q')
    assert done.returncode == 0 and done.stderr == '', done.stderr
    meta = yaml.safe_load((bag / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    assert [t['topic_metadata']['name'] for t in meta['topics_with_message_count']] == \
        ['/tf_static']
    # What is no longer only react_ros's bag is not react_ros's to delete.
    other = tmp_path_factory.mktemp('not_ours')
    theirs = Path(shutil.copytree(bag, other / 'theirs'))
    with open(theirs / 'empty_0.mcap', 'wb') as f:  # as `ros2 bag record` would write it
        writer = Writer(f)
        writer.start(profile='ros2', library='rosbag2 0.26')
        writer.finish()
    no_meta = Path(shutil.copytree(bag, other / 'no_meta'))
    (no_meta / 'metadata.yaml').unlink()
    garbled = Path(shutil.copytree(bag, other / 'garbled'))
    (garbled / 'metadata.yaml').write_text('[')
    for path in (theirs, no_meta, garbled, work / 'mine', work / 'file.txt', work / 'episode'):
        assert not is_react_ros_bag(path), path
    (other / 'to_bag').symlink_to(bag)
    with pytest.raises(SinkError, match='is not a react_ros bag'):  # the link, not the bag
        output.check_replaceable(other / 'to_bag', overwrite=True, ours=is_react_ros_bag,
                                 noun='react_ros bag')
    (bag / 'notes.txt').write_text('x')
    before = tree_digest(work)
    _refused(_cli('convert', str(work / 'episode'), '-o', str(bag), '--overwrite', *QUICK),
             'is not a react_ros bag')
    assert tree_digest(work) == before
    assert sorted(p.name for p in work.iterdir()) == \
        ['empty', 'episode', 'file.txt', 'link', 'mine', 'nest']


@pytest.mark.parametrize('how', ['SIGTERM', 'SIGINT'])
def test_a_stop_signal_mid_write_leaves_nothing(how: str, work: Path) -> None:
    sig = signal.Signals[how]
    before, listing = tree_digest(work), _listing(work)
    out = work / 'new' / 'parents' / 'bag'
    proc = _start('convert', str(work / 'episode'), '-o', str(out))
    _wait_for(proc, 'MCAP bytes in the partial', lambda: _mcap_bytes(out.parent) > 0)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert 'Traceback' not in err and 'error' not in err, err
    # No bag, partial, lock or created parent.
    assert _listing(work) == listing and tree_digest(work) == before


def test_sigkill_mid_write_is_cleaned_by_the_next_run(work: Path) -> None:
    out = work / 'bag'
    proc = _start('convert', str(work / 'episode'), '-o', str(out))
    _wait_for(proc, 'MCAP bytes in the partial', lambda: _mcap_bytes(work) > 0)
    proc.kill()
    proc.communicate(timeout=60)
    assert not out.exists()
    left = sorted(p.name for p in work.iterdir() if p.name.startswith('.'))
    assert [n.rsplit('.', 1)[1] for n in left] == ['lock', 'partial'], left  # what no one cleaned
    proc2 = _cli('convert', str(work / 'episode'), '-o', str(out), *QUICK)
    assert proc2.returncode == 0, proc2.stderr
    assert sorted(p.name for p in work.iterdir()) == \
        ['bag', 'empty', 'episode', 'file.txt', 'link', 'mine', 'nest']
    assert is_react_ros_bag(out)


def test_an_output_appearing_meanwhile_is_kept_and_the_error_is_the_last_line(
        work: Path) -> None:
    out = work / 'bag'
    proc = _start('convert', str(work / 'episode'), '-o', str(out), '--progress')
    _wait_for(proc, 'MCAP bytes in the partial', lambda: _mcap_bytes(work) > 0)
    out.mkdir()
    (out / 'theirs.txt').write_text('another program wrote this')
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    lines = err.splitlines()
    assert lines[-1].startswith(f'error: {out}: exists already'), err
    assert any(line.startswith('converting:') for line in lines), err  # on a pipe too
    assert sorted(p.name for p in out.iterdir()) == ['theirs.txt']
    assert not _partials(work) and not list(work.glob('.*.lock'))


def test_on_a_terminal_the_error_starts_its_own_line(umi_episode: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from react_ros import cli

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    def fail(*args: object) -> None:
        raise SinkError('the disk: gone')
    monkeypatch.setattr('react_ros.rosbag2.writer.PROGRESS_EVERY', 1)
    monkeypatch.setattr(output, '_commit', fail)
    monkeypatch.setattr(sys, 'stderr', Tty())
    assert cli.main(['convert', str(umi_episode), '-o', str(tmp_path / 'bag'), *QUICK]) == 2
    text = sys.stderr.getvalue()
    assert 'converting:' in text and text.endswith('\nerror: the disk: gone\n'), repr(text)
    assert list(tmp_path.iterdir()) == []


# -- react-ros sample -----------------------------------------------------------------------

SAMPLE = ['--duration', '3', '--resolution', '320x200']
SAMPLE_REFUSALS = {
    'empty DIR': ([''], '{w}/mine', ['DIR', 'empty']),
    'DIR . (the cwd)': (['.'], '{w}/empty', ['current directory']),
    'a foreign folder': (['{w}/mine'], None, ['not empty']),
    'a file': (['{w}/file.txt'], None, ['not empty']),
    'under a file': (['{w}/file.txt/ep'], None, ['cannot create it']),
}


def test_sample_refuses_outputs_that_would_harm(work: Path) -> None:
    _run_cases(work, SAMPLE_REFUSALS, ['sample', 'umi', *SAMPLE])


@pytest.mark.parametrize('how', ['SIGTERM', 'SIGKILL'])
def test_sample_killed_mid_write(how: str, tmp_path: Path) -> None:
    out = tmp_path / 'new' / 'episode'
    proc = _start('sample', 'umi', str(out), *SAMPLE)
    _wait_for(proc, 'a video in the partial',
              lambda: any(any(p.glob('data/*.mp4')) for p in _partials(out.parent)))
    proc.send_signal(signal.Signals[how])
    proc.communicate(timeout=60)
    assert not out.exists()
    if how == 'SIGTERM':
        assert proc.returncode == 128 + signal.SIGTERM
        assert list(tmp_path.iterdir()) == []  # nor the parent it made
        return
    assert [p.suffix for p in sorted(out.parent.iterdir())] == ['.lock', '.partial']
    done = _cli('sample', 'umi', str(out), '--duration', '0.5', '--resolution', '64x48')
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.parent.iterdir()) == ['episode']


# -- the rules behind "stale", in-process ---------------------------------------------------

def _dead_lock(folder: Path, name: str, token: str) -> Path:
    """What a SIGKILLed writer leaves: its marked lock file, held by nobody."""
    lock = folder / f'.{name}.{token}.lock'
    lock.write_text(json.dumps({'marker': MARKER, 'pid': 1, 'host': 'x'}))
    return lock


def test_a_live_writers_partial_is_never_removed(tmp_path: Path) -> None:
    out = tmp_path / 'out'
    with staged(out) as tmp:
        (tmp / 'half').write_text('x')
        assert remove_stale(tmp_path) == [] and remove_stale(tmp_path, 'out') == []
        assert (tmp / 'half').exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ['out']


def test_only_provably_ours_leftovers_are_removed(tmp_path: Path) -> None:
    for token in ('0000000a', '0000000b', '0000000c'):
        (tmp_path / f'.out.{token}.partial').mkdir()
    _dead_lock(tmp_path, 'out', '0000000a')
    (tmp_path / '.out.0000000b.lock').write_text('')  # no marker: not provably ours
    (tmp_path / '.other.0000000d.partial').mkdir()
    _dead_lock(tmp_path, 'other', '0000000d')
    assert remove_stale(tmp_path, 'out') == [tmp_path / 'out']
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        '.other.0000000d.lock', '.other.0000000d.partial', '.out.0000000b.lock',
        '.out.0000000b.partial', '.out.0000000c.partial']
    assert remove_stale(tmp_path) == [tmp_path / 'other']


def test_a_writer_killed_mid_swap_gets_the_previous_output_back(tmp_path: Path) -> None:
    old = tmp_path / '.out.0000000a.old'
    old.mkdir()
    (old / 'previous').write_text('whole')
    (tmp_path / '.out.0000000a.partial').mkdir()
    _dead_lock(tmp_path, 'out', '0000000a')
    with pytest.raises(SinkError, match='exists already and is not empty'), \
            staged(tmp_path / 'out'):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ['out']
    assert (tmp_path / 'out' / 'previous').read_text() == 'whole'


def test_a_failure_removes_the_parents_it_made(tmp_path: Path) -> None:
    (tmp_path / 'a').mkdir()
    with pytest.raises(RuntimeError), staged(tmp_path / 'a' / 'b' / 'c' / 'out') as tmp:
        (tmp / 'half').write_text('x')
        raise RuntimeError('disk on fire')
    assert _listing(tmp_path) == ['a']


def test_a_full_disk_is_a_one_line_refusal(tmp_path: Path) -> None:
    import errno
    with pytest.raises(SinkError, match=r'out: cannot be written \(No space left on device\)'), \
            staged(tmp_path / 'new' / 'out') as tmp:
        (tmp / 'half').write_text('x')
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert list(tmp_path.iterdir()) == []
