"""Write-behind for a large file written once, front to back: its pages leave the page
cache a few windows after they were written, instead of when memory runs short.

A raw bag is written at gigabytes a minute. Left to the page cache, every byte takes a
page the kernel must find (on a VM, often one the host has to hand back first) and
later reclaim: on this project's 2-core VM plain writes of 1.2 GB ran at 0.47 GB/s
and took 2.6 CPU s, while the same writes with the window before last flushed and
dropped ran at 1.4-2.0 GB/s and took 0.4 CPU s (the freed pages are reused at once).
A tool that streams terabytes to disk should not evict the rest of the machine's cache
either. The bytes written are the same; only when they reach the disk changes.

Linux only (sync_file_range); elsewhere, or on a file that does not support it (a pipe,
some network filesystems), writes are left to the page cache as before.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import errno
import io
import os
import stat
import sys
from typing import Any

# Bytes per window: large enough that the flush and drop calls cost nothing beside the
# writes, small enough that the pages of a few windows stay within the CPU's reach.
WINDOW = 32 << 20
# Windows written but not yet dropped. The window before the last is waited for (its
# writeback was started one window earlier), so a disk slower than the converter holds
# the converter to the disk's speed: what happens anyway once the page cache is full.
LAG = 1

# False: every file left to the page cache (bench/bench_convert.py measures both).
ENABLED = True

_SYNC_WAIT_BEFORE, _SYNC_WRITE, _SYNC_WAIT_AFTER = 1, 2, 4
# What sync_file_range says where it cannot be used (a pipe, a filesystem without it).
_UNSUPPORTED = {errno.EINVAL, errno.ESPIPE, errno.ENOSYS, errno.EOPNOTSUPP}


def _sync_file_range() -> Any:
    if not sys.platform.startswith('linux') or not hasattr(os, 'posix_fadvise'):
        return None
    name = ctypes.util.find_library('c')
    if name is None:
        return None
    fn = getattr(ctypes.CDLL(name, use_errno=True), 'sync_file_range', None)
    if fn is not None:
        fn.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_uint]
        fn.restype = ctypes.c_int
    return fn


_SYNC_FILE_RANGE = _sync_file_range()


class WriteBehind:
    """Call `written(position)` after each write to the stream with the file's size so
    far; it flushes the stream's own buffer when a window is due."""

    def __init__(self, stream: Any, fd: int, start: int = 0) -> None:
        self._stream = stream
        self._fd = fd
        self._mark = start - start % WINDOW  # where the next window starts
        self._started: list[int] = []  # windows whose writeback was started
        self.active = _SYNC_FILE_RANGE is not None

    @classmethod
    def of(cls, stream: Any, start: int) -> WriteBehind | None:
        """For a stream on a regular file; None for anything else (memory, a pipe), for a
        file written past the page cache (direct_file.py: nothing to drop), where it is not
        supported, or when not ENABLED."""
        if _SYNC_FILE_RANGE is None or not ENABLED \
                or getattr(stream, 'bypasses_page_cache', False):
            return None
        try:
            fd = stream.fileno()
            regular = stat.S_ISREG(os.fstat(fd).st_mode)
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            return None
        return cls(stream, fd, start) if regular else None

    def due(self, position: int) -> bool:
        """Whether `written(position)` would do anything (to flush only when it would)."""
        return self.active and position >= self._mark + WINDOW

    def written(self, position: int) -> None:
        if not self.due(position):
            return
        self._stream.flush()  # the window's bytes must have reached the OS
        while self.active and position >= self._mark + WINDOW:
            if not self._call(self._mark, _SYNC_WRITE):
                return
            self._started.append(self._mark)
            self._mark += WINDOW
            if len(self._started) > LAG:
                old = self._started.pop(0)
                if not self._call(old, _SYNC_WAIT_BEFORE | _SYNC_WRITE | _SYNC_WAIT_AFTER):
                    return
                os.posix_fadvise(self._fd, old, WINDOW, os.POSIX_FADV_DONTNEED)

    def _call(self, offset: int, flags: int) -> bool:
        if _SYNC_FILE_RANGE(self._fd, offset, WINDOW, flags) == 0:
            return True
        code = ctypes.get_errno()
        if code in _UNSUPPORTED:  # plain writes from now on
            self.active = False
            return False
        # The disk failed the writeback (EIO, ENOSPC): the writer's error, as a failed
        # write() would be (plain writes would only have lost it, with no fsync).
        raise OSError(code, os.strerror(code))
