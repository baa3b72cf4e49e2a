"""The bag's file written past the page cache (react_ros/rosbag2/direct_file.py): the same
bytes as plain writes, none of its pages left cached, the page cache where a filesystem
refuses direct writes, and a failed write raised, not lost.

The staging buffers are made small (monkeypatched) so that a few megabytes cross many of
them, in pieces of every size, both copy paths and an unaligned end.
"""
from __future__ import annotations

import errno
import fcntl
import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from react_ros.convert_options import ConvertOptions
from react_ros.registry import open_episode
from react_ros.rosbag2 import direct_file
from react_ros.rosbag2.direct_file import open_bag_file
from react_ros.rosbag2.writer import write_bag
from test_write_behind import _on_tmpfs, resident

STAGE = 256 * 1024
_O_DIRECT = getattr(os, 'O_DIRECT', 0)
needs_direct = pytest.mark.skipif(not _O_DIRECT, reason='O_DIRECT is Linux only')


@pytest.fixture
def disk_dir(tmp_path: Path) -> Path:
    if _on_tmpfs(tmp_path):
        pytest.skip(f'{tmp_path} is on tmpfs: its pages are the file')
    return tmp_path


@pytest.fixture
def small_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(direct_file, 'STAGE', STAGE)


def _pieces(seed: int) -> list[Any]:
    """Buffers as the chunk writer hands them over: bytes, memoryviews and arrays (an
    Image's pixels), from empty to several stages long."""
    rnd = random.Random(seed)
    sizes = [0, 1, 7, 100, 4095, 4096, 65_535, 65_536, 70_001, STAGE, STAGE + 3, 3 * STAGE + 11]
    out: list[Any] = []
    for i in range(120):
        data = rnd.randbytes(rnd.choice(sizes))
        out.append([data, memoryview(data), np.frombuffer(data, np.uint8).reshape(-1, 1)][i % 3])
    return out


def _write(path: Path, pieces: list[Any]) -> bool:
    """Writes the pieces with open_bag_file; whether the file was open O_DIRECT."""
    with open_bag_file(path) as f:
        flags = fcntl.fcntl(f.fileno(), fcntl.F_GETFL)
        total = 0
        for piece in pieces:
            assert f.write(piece) == memoryview(piece).nbytes
            total += memoryview(piece).nbytes
            assert f.tell() == total
    return bool(flags & _O_DIRECT)


def _direct_supported(folder: Path) -> bool:
    try:
        fd = os.open(folder / 'probe', os.O_WRONLY | os.O_CREAT | _O_DIRECT, 0o600)
    except OSError:
        return False
    os.close(fd)
    (folder / 'probe').unlink()
    return True


@needs_direct
@pytest.mark.usefixtures('small_stage')
def test_the_file_holds_the_bytes_given_and_none_stays_cached(disk_dir: Path) -> None:
    pieces = _pieces(1)
    expected = b''.join(bytes(memoryview(p)) for p in pieces)
    assert len(expected) % 4096, 'the end must be unaligned, to be cut back'
    path = disk_dir / 'direct.bin'
    direct = _write(path, pieces)
    assert direct == _direct_supported(disk_dir)
    if not direct:
        pytest.skip(f'{disk_dir} has no O_DIRECT')
    pages = resident(path)  # before reading it back, which caches it
    assert not any(pages), f'{sum(pages)} of {len(pages)} pages cached'
    assert path.read_bytes() == expected


@pytest.mark.usefixtures('small_stage')
def test_disabled_it_writes_the_same_bytes_through_the_page_cache(
        disk_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: the same writes as plain page-cache writes stay cached."""
    pieces = _pieces(2)
    monkeypatch.setattr(direct_file, 'ENABLED', False)
    path = disk_dir / 'plain.bin'
    assert not _write(path, pieces)
    assert all(resident(path))
    assert path.read_bytes() == b''.join(bytes(memoryview(p)) for p in pieces)


@needs_direct
@pytest.mark.usefixtures('small_stage')
def test_a_filesystem_that_refuses_direct_writes_gets_the_page_cache(
        disk_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opened O_DIRECT, but its writes refused (EINVAL, as a FUSE filesystem or a disk
    with larger blocks answers): the rest goes through the page cache, bytes unchanged."""
    real_write = os.write
    refused = []

    def write(fd: int, data: Any) -> int:
        if fcntl.fcntl(fd, fcntl.F_GETFL) & _O_DIRECT:
            refused.append(fd)
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        return real_write(fd, data)
    monkeypatch.setattr(os, 'write', write)
    pieces = _pieces(3)
    path = disk_dir / 'refused.bin'
    with open_bag_file(path) as f:
        for piece in pieces:
            f.write(piece)
    assert refused and not f.direct
    assert path.read_bytes() == b''.join(bytes(memoryview(p)) for p in pieces)


def test_a_filesystem_without_o_direct_gets_a_plain_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def open_(path: Any, flags: int, mode: int = 0o777) -> int:
        if flags & _O_DIRECT:
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        return real_open(path, flags, mode)
    monkeypatch.setattr(os, 'open', open_)
    path = tmp_path / 'plain.bin'
    with open_bag_file(path) as f:
        assert not f.direct
        f.write(b'x' * 5000)
    assert path.read_bytes() == b'x' * 5000


@pytest.mark.usefixtures('small_stage')
def test_a_failed_write_is_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A disk full while the write thread writes: the caller sees it (at a later write
    or at close), as a failed write() would have told it."""
    def write(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(os, 'write', write)
    with pytest.raises(OSError) as failed:
        with open_bag_file(tmp_path / 'full.bin') as f:
            for _ in range(4):
                f.write(bytes(STAGE))
    assert failed.value.errno == errno.ENOSPC


@needs_direct
def test_a_converted_bag_leaves_nothing_in_the_page_cache(umi_episode: Path,
                                                          disk_dir: Path) -> None:
    """What convert writes: the bag's MCAP goes past the page cache (under write-behind
    a bag this small stayed cached whole: its windows are 32 MiB)."""
    if not _direct_supported(disk_dir):
        pytest.skip(f'{disk_dir} has no O_DIRECT')
    out = disk_dir / 'bag'
    write_bag(open_episode(umi_episode, 'umi'), out, ConvertOptions(images='raw'))
    mcap = next(out.glob('*.mcap'))
    pages = resident(mcap)
    assert len(pages) > 100 and not any(pages), f'{sum(pages)} of {len(pages)} pages cached'
