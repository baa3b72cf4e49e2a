"""`react-ros convert-all` stopped, starved and repaired: a re-run converts what is missing.

- SIGINT (Ctrl-C, to the process group) or SIGTERM (to the driver) mid-run with
  local workers: the run ends within seconds with 128 + the signal, what finished
  is recorded as converted, what was being converted leaves nothing and stays
  pending, no episode starts after the signal, and a re-run converts the rest.
- The output disk full mid-run (a small tmpfs): the episodes it could not write are
  failed (tried again), not refused; once space is freed a re-run converts them.
- --verify and one damaged file of a TrueTrace package refuse every episode; once
  it is repaired the next run converts them all (the verified files are part of
  each episode's fingerprint).
- A worker killed twice under its episode (the OOM killer): failed, nothing left.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest
from release_support import (
    alive,
    converted_ids,
    index_of,
    leftovers,
    run,
    wait_for,
    workers_of,
    write_release,
)

from react_ros.rosbag2.writer import is_react_ros_bag

# The issue asks for about a second (it measured 23.6 s before); the bound is wider
# so that a loaded 2-core machine passes, and still far below what the old run took
# to convert the episodes it had queued (about 3 s each here).
STOP_BOUND_S = 5.0


def _in_progress(out: Path) -> set[str]:
    """The episodes whose bag is being written: their .ID.<token>.partial folders."""
    ids = set()
    for p in out.rglob('.*.partial'):
        name = p.name[1:].rsplit('.', 2)[0]
        ids.add((p.parent / name).relative_to(out).as_posix())
    return ids


def _converted(out: Path) -> set[str]:
    try:
        return {i for i, e in index_of(out).items() if e['status'] == 'converted'}
    except (OSError, ValueError):  # not written yet
        return set()


@pytest.mark.parametrize('kind, signum, to_group', [
    ('umi', signal.SIGINT, True),  # Ctrl-C: the terminal signals the whole process group
    ('react', signal.SIGTERM, False),  # kill PID: the driver alone
])
def test_a_stop_signal_ends_the_run_and_keeps_what_finished(
        kind: str, signum: int, to_group: bool, tmp_path: Path,
        capfd: pytest.CaptureFixture[str]) -> None:
    # Four episodes on two workers, each long enough to be mid-write at the signal.
    _, refs = write_release(kind, tmp_path / 'release', n=4, duration=4.0)
    root, out = tmp_path / 'release', tmp_path / 'bags'
    with open(tmp_path / 'stderr', 'wb') as err_file:
        proc = subprocess.Popen([sys.executable, '-m', 'react_ros.cli', 'convert-all',
                                 str(root), '-o', str(out), '--workers', '2'],
                                stdout=subprocess.DEVNULL, stderr=err_file,
                                start_new_session=True)
    stderr = tmp_path / 'stderr'
    try:
        # One episode finished and another being written: the signal lands mid-run.
        wait_for('one episode converted and another under way',
                 lambda: (_converted(out) and _in_progress(out)) or proc.poll() is not None)
        assert proc.poll() is None, stderr.read_text()
        workers = workers_of(proc.pid)
        done_before, started_before = _converted(out), _in_progress(out)
        sent = time.monotonic()
        if to_group:
            os.killpg(proc.pid, signum)
        else:
            os.kill(proc.pid, signum)
        code = proc.wait(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    print(f'{kind}: {signal.Signals(signum).name} -> exit {code} in {took:.3f} s')
    assert code == 128 + signum, stderr.read_text()
    assert took < STOP_BOUND_S, f'stopped {took:.1f} s after the signal'
    wait_for('the workers to end', lambda: not any(alive(w) for w in workers), 30)

    index = index_of(out)
    assert sorted(index) == sorted(r.id for r in refs)
    converted = {i for i, e in index.items() if e['status'] == 'converted'}
    # Finished before the signal: recorded. Started after it: none (an episode under way
    # at the signal may have finished in the moment before it reached the driver).
    assert done_before <= converted <= done_before | started_before, (converted, index)
    for i, e in index.items():
        if i in converted:
            assert is_react_ros_bag(out / e['bag'])
        else:  # interrupted or never started: to be converted by the next run
            assert e['status'] == 'pending', e
            assert not (out / e['bag']).exists()
    assert len(converted) < len(refs)  # at least the fourth never started
    assert leftovers(out) == []  # no partial bag, lock or old bag
    said = stderr.read_text()
    assert f'stopped by {signal.Signals(signum).name}' in said and 'Traceback' not in said, said

    code, stdout, err = run(capfd, 'convert-all', root, '-o', out, '--workers', 2)
    assert code == 0, stdout + err
    assert converted_ids(stdout) == len(refs) - len(converted)
    index = index_of(out)
    assert all(e['status'] == 'converted' and is_react_ros_bag(out / e['bag'])
               for e in index.values()), index
    assert leftovers(out) == []


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of 16 MiB at tmp_path/disk, unmounted after the test."""
    disk = tmp_path / 'disk'
    disk.mkdir()
    done = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=16m,mode=0755', 'tmpfs',
                           str(disk)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f'cannot mount a tmpfs here to fill up (root needed): '
                    f'{done.stderr.strip()}')
    try:
        yield disk
    finally:
        if subprocess.run(['umount', str(disk)], capture_output=True).returncode != 0:
            subprocess.run(['umount', '-l', str(disk)], capture_output=True)


def test_a_full_disk_fails_the_episodes_and_a_rerun_converts_them(
        tmp_path: Path, small_disk: Path, capfd: pytest.CaptureFixture[str]) -> None:
    _, refs = write_release('umi', tmp_path / 'release', n=3)
    root = tmp_path / 'release'
    # How much one bag takes: the first episode on an ordinary disk.
    code, _, err = run(capfd, 'convert', refs[0].path, '-o', tmp_path / 'probe', '-q')
    assert code == 0, err
    bag = sum(p.stat().st_size for p in (tmp_path / 'probe').rglob('*') if p.is_file())
    # Room for the first bag and a half: the second runs out of space half-way.
    filler = small_disk / 'filler'
    vfs = os.statvfs(small_disk)
    free = vfs.f_bavail * vfs.f_frsize
    assert free > 2 * bag, (free, bag)
    with open(filler, 'wb') as f:
        os.posix_fallocate(f.fileno(), 0, free - int(1.5 * bag))
    out = small_disk / 'bags'

    # The estimate would refuse the second bag before it fills the disk (test_disk_space.py);
    # here the disk really runs full.
    code, stdout, err = run(capfd, 'convert-all', root, '-o', out, '--workers', 1,
                            '--no-space-check')
    assert code == 1, stdout + err
    index = index_of(out)
    first, *rest = [index[r.id] for r in refs]
    assert first['status'] == 'converted' and is_react_ros_bag(out / first['bag']), first
    for entry in rest:  # the machine's fault, not the episode's: tried again next run
        assert entry['status'] == 'failed', entry
        assert 'No space left on device' in entry['reason'], entry
        assert not (out / entry['bag']).exists()
    assert f'failed: {refs[1].id}: ' in err and 'refused:' not in err, err
    assert leftovers(out) == []

    filler.unlink()  # space freed
    code, stdout, err = run(capfd, 'convert-all', root, '-o', out, '--workers', 1)
    assert code == 0, stdout + err
    assert converted_ids(stdout) == len(rest)
    index = index_of(out)
    assert all(e['status'] == 'converted' and is_react_ros_bag(out / e['bag'])
               for e in index.values()), index
    assert leftovers(out) == []


def test_a_repaired_verify_file_lets_every_episode_convert(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    _, refs = write_release('truetrace', tmp_path / 'release', n=3)
    root, out = tmp_path / 'release', tmp_path / 'bags'
    # One byte of the middle episode's own file changes (size and all else kept):
    # --verify's MANIFEST check, run by every episode, refuses them all naming it.
    damaged = next(p for p in refs[1].sources if p.name == 'hands_3d.jsonl')
    good = damaged.read_bytes()
    damaged.write_bytes(good[:10] + bytes([good[10] ^ 1]) + good[11:])

    code, stdout, err = run(capfd, 'convert-all', root, '-o', out, '--verify', '--workers', 2)
    assert code == 1, stdout + err
    index = index_of(out)
    for ref in refs:
        entry = index[ref.id]
        assert entry['status'] == 'refused', entry
        assert 'episode_000001/hands_3d.jsonl' in entry['reason'], entry

    damaged.write_bytes(good)  # repaired (a new mtime; the contents as listed)
    code, stdout, err = run(capfd, 'convert-all', root, '-o', out, '--verify', '--workers', 2)
    assert code == 0, stdout + err
    assert converted_ids(stdout) == len(refs)
    index = index_of(out)
    assert all(e['status'] == 'converted' and is_react_ros_bag(out / e['bag'])
               for e in index.values()), index
    # And nothing changed since: nothing to do.
    code, stdout, err = run(capfd, 'convert-all', root, '-o', out, '--verify')
    assert code == 0 and converted_ids(stdout) == 0, stdout + err


def _partials(out: Path) -> set[Path]:
    return set(out.rglob('.*.partial'))


def _worker_of(driver: int) -> int:
    """The driver's one worker process (not multiprocessing's resource tracker)."""
    for pid in workers_of(driver):
        try:
            if b'spawn_main' in Path(f'/proc/{pid}/cmdline').read_bytes():
                return pid
        except OSError:
            continue
    raise AssertionError(f'convert-all {driver}: no worker process')


def test_a_worker_killed_twice_fails_its_episode_and_leaves_nothing(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    _, refs = write_release('umi', tmp_path / 'release', n=1, duration=4.0)
    root, out = tmp_path / 'release', tmp_path / 'bags'
    with open(tmp_path / 'stderr', 'wb') as err_file:
        proc = subprocess.Popen([sys.executable, '-m', 'react_ros.cli', 'convert-all',
                                 str(root), '-o', str(out), '--workers', '1', '-q'],
                                stdout=subprocess.DEVNULL, stderr=err_file,
                                start_new_session=True)
    try:
        seen: set[Path] = set()
        for _ in range(2):  # the OOM killer, twice: once may be the machine, twice is the episode
            wait_for('the episode being written',
                     lambda: _partials(out) - seen or proc.poll() is not None)
            assert proc.poll() is None, (tmp_path / 'stderr').read_text()
            seen |= _partials(out)
            worker = _worker_of(proc.pid)
            os.kill(worker, signal.SIGKILL)
            wait_for('the worker to die', lambda: not alive(worker), 30)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert code == 1, (tmp_path / 'stderr').read_text()
    entry = index_of(out)[refs[0].id]
    assert entry['status'] == 'failed' and 'worker process died' in entry['reason'], entry
    assert leftovers(out) == []  # the killed writer's partial bag removed by the driver

    code, stdout, err = run(capfd, 'convert-all', root, '-o', out)
    assert code == 0 and converted_ids(stdout) == 1, stdout + err
    assert is_react_ros_bag(out / entry['bag'])
