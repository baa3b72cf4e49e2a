"""Sizes a file declares are checked before anything is allocated for them.

HDF5 stores a dataset of fill values in a few bytes, so a small file can declare
millions of entities or 10^11 frames. Each case converts in a process of its own
and reports that process's peak memory: the refusal is one line, exit 2, and the
peak stays far below what the declaration would have taken.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import pytest
from robotwin_support import EPISODE, EXTRA0, robotwin_release
from truetrace_support import EXPORT, truetrace_package

PEAK_LIMIT_KB = 1_500_000  # 1.5 GB: the bound
# The CLI in a process of its own, printing its own peak RSS (kB) as the last stdout line.
RUN = ('import resource, sys\n'
       'from react_ros import cli\n'
       'code = cli.main(sys.argv[1:])\n'
       'print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, flush=True)\n'
       'sys.exit(code)\n')


def _convert(args: list[str], out: Path) -> tuple[int, str, int]:
    proc = subprocess.run([sys.executable, '-c', RUN, 'convert', *args, '-o', str(out)],
                          capture_output=True, text=True, timeout=300)
    peak = int(proc.stdout.split()[-1]) if proc.stdout.split() else -1
    return proc.returncode, proc.stderr, peak


def _empty_dataset(f: h5py.File, key: str, shape: tuple[int, ...], dtype: str) -> None:
    """`key` declared at `shape`, chunked and never written: a few bytes on disk."""
    del f[key]
    chunks = tuple(min(n, 1024) for n in shape)
    f.create_dataset(key, shape=shape, dtype=dtype, chunks=chunks, compression='gzip')


def _refused(code: int, err: str, path: Path, words: tuple[str, ...]) -> None:
    lines = err.splitlines()
    assert code == 2, err[-2000:]
    assert len(lines) == 1 and 'Traceback' not in err, err[-2000:]
    assert lines[0].startswith(f'error: {path}:'), lines[0]
    for word in words:
        assert word in lines[0], lines[0]


def test_an_extra_file_declaring_ten_million_entities(tmp_path: Path,
                                                      tmp_path_factory: pytest.TempPathFactory
                                                      ) -> None:
    root = Path(shutil.copytree(robotwin_release(tmp_path_factory), tmp_path / 'release'))
    extra = root / EXTRA0
    with h5py.File(extra, 'r+') as f:
        t = f['entities/pose'].shape[0]
        _empty_dataset(f, 'entities/entity_id', (10_000_000,), 'i8')
        _empty_dataset(f, 'entities/pose', (t, 10_000_000, 7), 'f8')
    assert extra.stat().st_size < 5_000_000  # what it declares: t x 560 MB of poses
    code, err, peak = _convert([str(root), '--episode', EPISODE], tmp_path / 'bag')
    _refused(code, err, extra, ('entities/entity_id', '10000000 entities'))
    assert 0 < peak < PEAK_LIMIT_KB, f'peak {peak} kB'
    assert not (tmp_path / 'bag').exists()


def test_an_export_declaring_ten_to_the_eleven_frames(tmp_path: Path,
                                                      tmp_path_factory: pytest.TempPathFactory
                                                      ) -> None:
    root = Path(shutil.copytree(truetrace_package(tmp_path_factory), tmp_path / 'package'))
    export = root / EXPORT
    with h5py.File(export, 'r+') as f:
        _empty_dataset(f, 'time/t_s', (10**11,), 'f8')
    code, err, peak = _convert([str(export)], tmp_path / 'bag')
    _refused(code, err, export, ('/time/t_s declares 100000000000 frames', 'cam0.mp4'))
    assert 0 < peak < PEAK_LIMIT_KB, f'peak {peak} kB'


def test_an_export_declaring_more_imu_samples_than_the_clip_could_hold(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    root = Path(shutil.copytree(truetrace_package(tmp_path_factory), tmp_path / 'package'))
    export = root / EXPORT
    with h5py.File(export, 'r+') as f:
        _empty_dataset(f, 'imu/t_s', (10**10,), 'f8')
    code, err, peak = _convert([str(export)], tmp_path / 'bag')
    _refused(code, err, export, ('/imu/t_s declares 10000000000 samples',))
    assert 0 < peak < PEAK_LIMIT_KB, f'peak {peak} kB'
