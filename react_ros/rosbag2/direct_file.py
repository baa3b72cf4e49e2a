"""A bag file written past the page cache (Linux O_DIRECT), front to back, once.

A raw bag is gigabytes written at over a gigabyte a second. Through the page cache every
4 KiB page is copied in, given ext4's delayed-allocation bookkeeping, written back and
dropped again (write_behind.py): on this project's 2-core VM ~2.1 CPU ms per 6.9 MB
Image. Written direct from a page-aligned staging buffer the same bytes cost ~0.9 ms
(the copy into the buffer; the disk's DMA does the rest) and leave the machine's cache
alone. The file holds the same bytes either way.

Direct writes need aligned buffers, offsets and lengths: the bytes go through a staging
buffer of STAGE bytes (its own mmap, so page-aligned) written whole; the last one is
padded to ALIGN and the file cut back to its length. A filesystem that refuses O_DIRECT
(tmpfs, some network and FUSE filesystems), at open or at the first write, gets the
same staged writes through the page cache instead.
"""
from __future__ import annotations

import errno
import mmap
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

# Every block size a disk reports here or commonly elsewhere divides it.
ALIGN = 4096
# Bytes per write: few calls per chunk, and small beside the chunks in flight.
STAGE = 8 << 20
# Pieces at least this large are copied by numpy, which lets go of the GIL meanwhile.
_NUMPY_COPY = 64 << 10
# False: `open_bag_file` opens plain page-cache files (bench/bench_convert.py measures both).
ENABLED = True

_O_DIRECT = getattr(os, 'O_DIRECT', 0)


class DirectFile:
    """The write side of a binary file: write(), tell(), close(). `direct` says whether
    the page cache is bypassed (False once the filesystem refused it)."""

    def __init__(self, path: Path, fd: int, direct: bool) -> None:
        self.name = str(path)
        self.direct = direct
        self._fd = fd
        # Two staging buffers: one fills while a thread of its own writes the other, so
        # the copy and the disk overlap.
        self._maps = [mmap.mmap(-1, STAGE) for _ in range(2)]
        self._writes: list[Future[None] | None] = [None, None]
        self._pool = ThreadPoolExecutor(1, thread_name_prefix='bag-direct-write')
        self._k = 0  # the buffer filling
        self._use(0)
        self._fill = 0  # bytes staged
        self._pos = 0  # bytes written by the caller
        self.closed = False

    @property
    def bypasses_page_cache(self) -> bool:
        """What chunk_writer asks before putting write-behind on a file."""
        return self.direct

    def seekable(self) -> bool:
        return True  # for tell(), which the MCAP writer asks once at its start

    def tell(self) -> int:
        return self._pos

    def fileno(self) -> int:
        return self._fd

    def flush(self) -> None:
        """Nothing: staged bytes reach the file a whole buffer at a time, or at close."""

    def write(self, data: Any) -> int:
        src = np.frombuffer(data, np.uint8)
        n, done = len(src), 0
        while done < n:
            take = min(STAGE - self._fill, n - done)
            end = self._fill + take
            if take >= _NUMPY_COPY:
                np.copyto(self._stage[self._fill:end], src[done:done + take])
            else:
                self._view[self._fill:end] = src[done:done + take].data
            self._fill, done = end, done + take
            if self._fill == STAGE:
                self._hand_over(STAGE)
        self._pos += n
        return n

    def close(self) -> None:
        """Writes what is staged and closes the file (raising what a write raised)."""
        if self.closed:
            return
        self.closed = True
        try:
            if self._fill:
                # The last bytes padded to a block, the padding cut off again after.
                self._hand_over(-(-self._fill // ALIGN) * ALIGN)
            for k in (0, 1):
                self._wait(k)
            if self._pos % ALIGN:
                os.ftruncate(self._fd, self._pos)
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)
            os.close(self._fd)
            self._view.release()
            del self._stage
            for m in self._maps:
                m.close()

    def __enter__(self) -> DirectFile:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _use(self, k: int) -> None:
        self._stage = np.frombuffer(self._maps[k], np.uint8)
        self._view = memoryview(self._maps[k])

    def _wait(self, k: int) -> None:
        pending, self._writes[k] = self._writes[k], None
        if pending is not None:
            pending.result()

    def _hand_over(self, length: int) -> None:
        """The filling buffer's first `length` bytes to the write thread; the other
        buffer, once written, fills next."""
        self._view.release()
        self._writes[self._k] = self._pool.submit(self._write_all, self._maps[self._k],
                                                  length)
        self._k ^= 1
        self._wait(self._k)
        self._use(self._k)
        self._fill = 0

    def _write_all(self, buffer: mmap.mmap, length: int) -> None:
        view = memoryview(buffer)[:length]
        try:
            while len(view):
                try:
                    written = os.write(self._fd, view)
                except OSError as exc:
                    if not (self.direct and exc.errno == errno.EINVAL):
                        raise
                    # The filesystem opened the file direct but will not write it so (a
                    # block size above ALIGN, a FUSE filesystem): the page cache from here.
                    _drop_direct(self._fd)
                    self.direct = False
                    continue
                view = view[written:]
        finally:
            view.release()


def _drop_direct(fd: int) -> None:
    import fcntl
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_O_DIRECT)


def open_bag_file(path: Path) -> DirectFile:
    """`path` created (truncated) for writing, direct where the filesystem allows it."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, 'O_CLOEXEC', 0)
    if ENABLED and _O_DIRECT:
        try:
            return DirectFile(path, os.open(path, flags | _O_DIRECT, 0o666), True)
        except OSError as exc:
            if exc.errno != errno.EINVAL:  # EINVAL: this filesystem has no O_DIRECT
                raise
    return DirectFile(path, os.open(path, flags, 0o666), False)


__all__ = ['ALIGN', 'DirectFile', 'STAGE', 'open_bag_file']
