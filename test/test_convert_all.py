"""`react-ros convert-all`: every kind's sample release, resumed, killed, and on Ray.

The scenario per kind (one broken episode of three): the good ones convert, the
broken one is listed with its one-line reason and the run exits 1; a second run
converts nothing; a deleted bag or a touched source converts exactly that episode
again. The CLI runs in this process; its workers are real processes.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import tree_digest
from release_support import (
    alive,
    break_episode,
    converted_ids,
    index_of,
    leftovers,
    run,
    wait_for,
    workers_of,
    write_release,
)

from react_ros.registry import KINDS
from react_ros.rosbag2.writer import is_react_ros_bag

KIND_NAMES = sorted(KINDS)


def bag_stamps(out: Path) -> dict[str, int]:
    """Each bag's MCAP inode and mtime: a bag written again gets a new one."""
    stamps = {}
    for meta in out.rglob('metadata.yaml'):
        mcap = next(meta.parent.glob('*.mcap'))
        st = mcap.stat()
        stamps[meta.parent.relative_to(out).as_posix()] = (st.st_ino, st.st_mtime_ns)
    return stamps


@pytest.mark.parametrize('kind', KIND_NAMES)
def test_release_converts_resumes_and_lists_the_broken_episode(
        kind: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    _, refs = write_release(kind, tmp_path / 'release', n=3)
    broken = refs[1]
    damaged = break_episode(kind, broken)
    root, out = tmp_path / 'release', tmp_path / 'bags'
    source_digest = tree_digest(root)

    code, stdout, err = run(capfd, 'convert-all', root, '-o', out, '--workers', 2)
    assert code == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err  # the one refused episode, nothing else
    assert lines[0].startswith(f'refused: {broken.id}: '), err
    assert Path(damaged).name in lines[0], err
    # after the summary, what limited the run (release/usage.py)
    assert re.fullmatch(r"convert-all: 3 episodes in [\d.]+ s on 2 workers, busy \d+% of the "
                        r"time; the machine's CPU \d+% busy, \d+% waiting on the disk: .+; "
                        r"[\d.]+ [kMG]?B written \([\d.]+ [kMG]?B/s\)",
                        stdout.splitlines()[1]), stdout
    index = index_of(out)
    assert sorted(index) == sorted(r.id for r in refs)
    for ref in refs:
        entry = index[ref.id]
        bag = out / entry['bag']
        if ref is broken:
            assert entry['status'] == 'refused' and Path(damaged).name in entry['reason']
            assert not bag.exists()
            continue
        assert entry['status'] == 'converted', entry
        assert is_react_ros_bag(bag)
        assert entry['messages'] > 0 and entry['duration_s'] > 0
        assert entry['bytes'] == sum(p.stat().st_size for p in bag.rglob('*') if p.is_file())
    assert tree_digest(root) == source_digest  # nothing of the user's changed
    assert leftovers(out) == []

    first = bag_stamps(out)
    code, stdout, err = run(capfd, 'convert-all', root, '-o', out)
    assert code == 1 and converted_ids(stdout) == 0, stdout + err
    assert bag_stamps(out) == first

    gone = refs[0]
    shutil.rmtree(out / index[gone.id]['bag'])
    code, stdout, err = run(capfd, 'convert-all', root, '-o', out, '--workers', 1)
    assert code == 1 and converted_ids(stdout) == 1, stdout + err
    again = bag_stamps(out)
    assert set(again) == set(first)
    assert {b for b in first if again[b] != first[b]} == {index[gone.id]['bag']}

    touched = refs[2]
    own = sorted(set(touched.sources) - set(refs[0].sources))
    assert own, f'{touched.id}: no source of its own to touch'
    st = own[0].stat()
    os.utime(own[0], ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    code, stdout, err = run(capfd, 'convert-all', root, '-o', out, '--workers', 1)
    assert code == 1 and converted_ids(stdout) == 1, stdout + err
    last = bag_stamps(out)
    assert {b for b in again if last[b] != again[b]} == {index[touched.id]['bag']}


def test_verify_fingerprints_contents_not_mtimes(tmp_path: Path,
                                                 capfd: pytest.CaptureFixture[str]) -> None:
    _, refs = write_release('umi', tmp_path / 'release', n=2)
    root, out = tmp_path / 'release', tmp_path / 'bags'
    assert run(capfd, 'convert-all', root, '-o', out, '--verify')[0] == 0
    first = bag_stamps(out)
    own = sorted(set(refs[0].sources) - set(refs[1].sources))[0]
    st = own.stat()
    os.utime(own, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    code, stdout, err = run(capfd, 'convert-all', root, '-o', out, '--verify')
    assert code == 0 and converted_ids(stdout) == 0, stdout + err
    assert bag_stamps(out) == first
    # A content change is one, even with the mtime put back as it was.
    yaml_file = sorted(p for p in set(refs[0].sources) - set(refs[1].sources)
                       if p.suffix == '.yaml')[0]
    st = yaml_file.stat()
    yaml_file.write_text(yaml_file.read_text() + '\n')
    os.utime(yaml_file, ns=(st.st_atime_ns, st.st_mtime_ns))
    code, stdout, err = run(capfd, 'convert-all', root, '-o', out, '--verify')
    assert code == 0 and converted_ids(stdout) == 1, stdout + err
    # (The verified run recorded the touched file's new mtime.) Without --verify a touch
    # alone is a change: the size-and-mtime fingerprint moved.
    st = own.stat()
    os.utime(own, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    code, stdout, err = run(capfd, 'convert-all', root, '-o', out)
    assert code == 0 and converted_ids(stdout) == 1, stdout + err


def test_changed_settings_convert_again(tmp_path: Path,
                                        capfd: pytest.CaptureFixture[str]) -> None:
    write_release('umi', tmp_path / 'release', n=2)
    root, out = tmp_path / 'release', tmp_path / 'bags'
    assert run(capfd, 'convert-all', root, '-o', out)[0] == 0
    code, stdout, err = run(capfd, 'convert-all', root, '-o', out, '--compression', 'zstd')
    assert code == 0 and converted_ids(stdout) == 2, stdout + err


def test_sigkill_half_way_then_rerun_completes_with_no_partial(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # Long enough that the kill lands while bags are being written.
    _, refs = write_release('umi', tmp_path / 'release', n=4, duration=4.0)
    root, out = tmp_path / 'release', tmp_path / 'bags'
    proc = subprocess.Popen([sys.executable, '-m', 'react_ros.cli', 'convert-all', str(root),
                             '-o', str(out), '--workers', '2', '-q'],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for('a bag being written', lambda: any(out.glob('.*.partial'))
                  or proc.poll() is not None)
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ''
        workers = workers_of(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    # The workers die with the driver (they would otherwise race the re-run).
    wait_for('the workers to end', lambda: not any(alive(w) for w in workers), 30)
    assert any(out.glob('.*.partial')), 'the kill left nothing to clean up: not half-way'
    index = index_of(out)
    assert any(e['status'] != 'converted' for e in index.values())

    code, stdout, err = run(capfd, 'convert-all', root, '-o', out, '--workers', 2)
    assert code == 0, stdout + err
    assert leftovers(out) == []
    index = index_of(out)
    assert sorted(index) == sorted(r.id for r in refs)
    for entry in index.values():
        assert entry['status'] == 'converted' and is_react_ros_bag(out / entry['bag'])


def _bag_bytes(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob('*'))
            if p.is_file() and p.name not in ('index.json', '.convert-all.lock')}


# React: parquet + video; RoboTwin: HDF5 serialised on worker threads.
@pytest.mark.parametrize('kind', ['react', 'robotwin'])
def test_ray_gives_the_bags_of_the_local_pool(kind: str, tmp_path: Path,
                                              capfd: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip('ray', reason='Ray is an optional extra; the .venv set-up installs it')
    _, refs = write_release(kind, tmp_path / 'release', n=3)
    root = tmp_path / 'release'
    code, _, err = run(capfd, 'convert-all', root, '-o', tmp_path / 'local', '--workers', 2)
    assert code == 0, err
    code, stdout, err = run(capfd, 'convert-all', root, '-o', tmp_path / 'ray', '--ray',
                            '--workers', 2)
    assert code == 0, stdout + err
    assert converted_ids(stdout) == len(refs)
    local, on_ray = _bag_bytes(tmp_path / 'local'), _bag_bytes(tmp_path / 'ray')
    assert len(local) >= 2 * len(refs)  # a metadata.yaml and an MCAP per bag
    assert sorted(local) == sorted(on_ray)
    assert [k for k in local if local[k] != on_ray[k]] == []
    strip = ('seconds',)
    assert ({i: {k: v for k, v in e.items() if k not in strip}
             for i, e in index_of(tmp_path / 'local').items()}
            == {i: {k: v for k, v in e.items() if k not in strip}
                for i, e in index_of(tmp_path / 'ray').items()})


def test_unusable_root_or_outdir_exits_2_with_one_line(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    write_release('umi', tmp_path / 'release', n=2)
    root = tmp_path / 'release'
    (tmp_path / 'a_file').write_text('x')
    (tmp_path / 'empty').mkdir()
    foreign = tmp_path / 'foreign'
    foreign.mkdir()
    (foreign / 'notes.txt').write_text('mine')
    cases = [
        ((tmp_path / 'missing', tmp_path / 'o1'), 'missing'),
        ((tmp_path / 'a_file', tmp_path / 'o2'), 'a_file'),
        ((tmp_path / 'empty', tmp_path / 'o3'), 'empty'),
        ((root, root / 'bags'), 'release'),
        ((root, foreign), 'foreign'),
    ]
    for (src, dst), named in cases:
        code, stdout, err = run(capfd, 'convert-all', src, '-o', dst)
        assert code == 2, (src, dst, stdout, err)
        assert len(err.strip().splitlines()) == 1 and named in err and 'Traceback' not in err
    assert (foreign / 'notes.txt').read_text() == 'mine'
    assert sorted(p.name for p in foreign.iterdir()) == ['notes.txt']
    code, _, err = run(capfd, 'convert-all', root, '-o', tmp_path / 'o4', '--segment', '1')
    assert code == 2 and '--segment' in err and 'umi' in err, err
    assert not (tmp_path / 'o4').exists()


def test_a_second_run_into_the_same_outdir_is_refused(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    import fcntl
    write_release('umi', tmp_path / 'release', n=2)
    out = tmp_path / 'bags'
    assert run(capfd, 'convert-all', tmp_path / 'release', '-o', out)[0] == 0
    with open(out / '.convert-all.lock') as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        code, _, err = run(capfd, 'convert-all', tmp_path / 'release', '-o', out)
    assert code == 2 and 'another convert-all' in err, err
