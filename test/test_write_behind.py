"""Write-behind (react_ros/rosbag2/write_behind.py): a large file written once leaves the
page cache a few windows behind its end, with its bytes unchanged; anything that is not
a regular file is written as before.

Residency is read with mincore(2) over a mapping of the file. The windows are made small
(monkeypatched) so that a few megabytes show what a raw bag does over gigabytes.
"""
from __future__ import annotations

import ctypes
import errno
import io
import mmap
import os
import random
from pathlib import Path
from typing import Any

import pytest
from mcap.reader import make_reader

from react_ros.rosbag2 import write_behind
from react_ros.rosbag2.chunk_writer import ChunkWriter
from react_ros.rosbag2.write_behind import WriteBehind

WINDOW = 256 * 1024
PAGE = mmap.PAGESIZE

needs_linux = pytest.mark.skipif(write_behind._SYNC_FILE_RANGE is None,
                                 reason='sync_file_range is Linux only')


def _on_tmpfs(path: Path) -> bool:
    """tmpfs pages are the file itself: nothing can drop them."""
    best, fstype = '', ''
    for line in Path('/proc/mounts').read_text().splitlines():
        _, mount, kind, *_ = line.split()
        if str(path.resolve()).startswith(mount) and len(mount) > len(best):
            best, fstype = mount, kind
    return fstype in ('tmpfs', 'ramfs')


def resident(path: Path) -> list[bool]:
    """For each page of the file: whether it is in the page cache."""
    size = path.stat().st_size
    libc = ctypes.CDLL(None, use_errno=True)
    pages = (size + PAGE - 1) // PAGE
    vec = (ctypes.c_ubyte * pages)()
    with open(path, 'rb') as f, mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY) as mm:
        view = ctypes.c_char.from_buffer(mm)
        try:
            addr = ctypes.addressof(view)
            if libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(size), vec) != 0:
                raise OSError(ctypes.get_errno(), 'mincore')
        finally:
            del view
    return [bool(b & 1) for b in vec]


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(write_behind, 'WINDOW', WINDOW)


@pytest.fixture
def disk_dir(tmp_path: Path) -> Path:
    if _on_tmpfs(tmp_path):
        pytest.skip(f'{tmp_path} is on tmpfs')
    return tmp_path


def _write(path: Path, data: bytes, piece: int) -> None:
    with open(path, 'wb') as f:
        behind = WriteBehind.of(f, 0)
        assert behind is not None
        for at in range(0, len(data), piece):
            f.write(data[at:at + piece])
            behind.written(f.tell())


@needs_linux
@pytest.mark.usefixtures('small_windows')
def test_windows_behind_the_end_leave_the_cache_and_the_bytes_stay(disk_dir: Path) -> None:
    data = random.Random(1).randbytes(8 * WINDOW + 12345)
    path = disk_dir / 'out.bin'
    _write(path, data, 100_000)
    pages = resident(path)  # before reading it back, which caches it again
    window_pages = WINDOW // PAGE
    # Every window but the last LAG + 1 (written, or being written back) was dropped.
    kept_from = (8 - write_behind.LAG - 1) * window_pages
    dropped = pages[:kept_from]
    assert not any(dropped), f'{sum(dropped)} of {len(dropped)} pages still cached'
    assert path.read_bytes() == data


@needs_linux
@pytest.mark.usefixtures('small_windows')
def test_without_it_the_pages_stay_cached(disk_dir: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: the same writes left to the page cache keep their pages (so the test
    above sees what write-behind does, not what the kernel would have done anyway)."""
    data = random.Random(1).randbytes(8 * WINDOW)
    path = disk_dir / 'plain.bin'
    with open(path, 'wb') as f:
        f.write(data)
    assert all(resident(path))
    monkeypatch.setattr(write_behind, 'ENABLED', False)
    with open(disk_dir / 'other.bin', 'wb') as f:
        assert WriteBehind.of(f, 0) is None


@needs_linux
@pytest.mark.usefixtures('small_windows')
def test_mcap_writer_drops_what_it_wrote_with_the_same_bytes(disk_dir: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    rnd = random.Random(2)
    payloads = [rnd.randbytes(rnd.choice([10, 5000, 90_000, 300_000])) for _ in range(60)]

    def write(path: Path) -> None:
        with open(path, 'wb') as f:
            writer = ChunkWriter(f, chunk_size=64 * 1024, compression='none')
            try:
                writer.start('ros2', 'test')
                sid = writer.register_schema('s', 'ros2msg', b'')
                cid = writer.register_channel('/a', 'cdr', sid)
                for i, p in enumerate(payloads):
                    writer.add_message(cid, 1000 + i, p, 1000 + i, i)
                writer.finish()
            finally:
                writer.close()

    ours, plain = disk_dir / 'behind.mcap', disk_dir / 'plain.mcap'
    write(ours)
    pages = resident(ours)  # before reading it back, which caches it again
    assert sum(pages) < len(pages) // 2, f'{sum(pages)} of {len(pages)} pages still cached'
    monkeypatch.setattr(write_behind, 'ENABLED', False)
    write(plain)
    assert all(resident(plain))
    assert ours.read_bytes() == plain.read_bytes()
    with open(ours, 'rb') as f:
        got = [m.data for _, _, m in make_reader(f, validate_crcs=True).iter_messages()]
    assert got == payloads


def test_not_for_memory_or_pipes(tmp_path: Path) -> None:
    assert WriteBehind.of(io.BytesIO(), 0) is None
    r, w = os.pipe()
    try:
        with os.fdopen(w, 'wb') as f:
            assert WriteBehind.of(f, 0) is None
    finally:
        os.close(r)


def _failing(code: int) -> Any:
    def sync_file_range(fd: int, offset: int, nbytes: int, flags: int) -> int:
        ctypes.set_errno(code)
        return -1
    return sync_file_range


@pytest.mark.usefixtures('small_windows')
def test_a_failed_writeback_is_the_writers_error_and_unsupported_is_plain_writes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel's answers stand in for a failing disk: EIO (or ENOSPC) is raised, as a
    failed write() would be; EINVAL (a filesystem without it) turns write-behind off."""
    with open(tmp_path / 'f.bin', 'wb') as f:
        monkeypatch.setattr(write_behind, '_SYNC_FILE_RANGE', _failing(errno.EIO))
        behind = WriteBehind.of(f, 0)
        assert behind is not None
        f.write(bytes(2 * WINDOW))
        f.flush()
        with pytest.raises(OSError) as failed:
            behind.written(f.tell())
        assert failed.value.errno == errno.EIO
        monkeypatch.setattr(write_behind, '_SYNC_FILE_RANGE', _failing(errno.EINVAL))
        behind = WriteBehind.of(f, 0)
        assert behind is not None
        behind.written(f.tell())
        assert not behind.active and not behind.due(f.tell())
