"""numpy .npz archives read lazily: headers first, bulk arrays a chunk of frames at a time.

An .npz is a zip of .npy members. An (n, T, ...) array is read in frame order a
chunk of frames at a time with positioned reads: from the archive itself where
the member is stored (np.savez), from a temporary file inflated once where it is
deflated (np.savez_compressed). Memory holds one chunk, whatever the length. Pickled (object)
arrays are refused: nothing in a dataset file is ever unpickled. Every fault
of the archive (truncated, not a zip, bad header) is a DatasetFormatError
naming the file and the key.
"""
from __future__ import annotations

import os
import shutil
import struct
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

import numpy as np

from react_ros.errors import DatasetFormatError

_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, struct.error)


@dataclass(frozen=True)
class Member:
    key: str
    shape: tuple[int, ...]
    dtype: np.dtype
    fortran: bool
    info: zipfile.ZipInfo
    data_start: int  # offset of the array data inside the member's uncompressed bytes

    @property
    def stored(self) -> bool:
        return self.info.compress_type == zipfile.ZIP_STORED


class NpzArchive:
    """The members of one .npz, by key (the member name without `.npy`)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise DatasetFormatError(self.path, 'file is missing')
        try:
            self._zip = zipfile.ZipFile(self.path)
            infos = self._zip.infolist()
        except _ZIP_ERRORS as exc:
            raise DatasetFormatError(self.path, f'not a readable .npz archive ({exc})') from None
        self.members: dict[str, Member] = {}
        self._spilled: dict[str, IO[bytes]] = {}
        for info in infos:
            if not info.filename.endswith('.npy'):
                continue
            key = info.filename[:-4]
            self.members[key] = self._header(key, info)

    def close(self) -> None:
        for f in self._spilled.values():
            f.close()
        self._spilled.clear()
        self._zip.close()

    def __contains__(self, key: str) -> bool:
        return key in self.members

    def keys(self) -> list[str]:
        return list(self.members)

    def _fail(self, key: str, detail: str) -> DatasetFormatError:
        return DatasetFormatError(self.path, f'key {key!r}: {detail}')

    def _header(self, key: str, info: zipfile.ZipInfo) -> Member:
        try:
            with self._zip.open(info) as f:
                version = np.lib.format.read_magic(f)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
                else:
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
                start = f.tell()
        except _ZIP_ERRORS as exc:
            raise self._fail(key, f'not a readable .npy member ({exc})') from None
        if dtype.hasobject:
            raise self._fail(key, 'holds pickled Python objects; react_ros never unpickles '
                             'dataset files (store strings as fixed-width unicode)')
        member = Member(key, tuple(int(s) for s in shape), dtype, bool(fortran), info, start)
        need = member.data_start + int(np.prod(member.shape)) * dtype.itemsize
        if info.file_size < need:
            raise self._fail(key, f'truncated: {info.file_size} bytes, its header needs {need}')
        return member

    def member(self, key: str) -> Member:
        if key not in self.members:
            raise DatasetFormatError(self.path, f'key {key!r} is missing (it has: '
                                     f'{", ".join(sorted(self.members)) or "none"})')
        return self.members[key]

    def load(self, key: str) -> np.ndarray:
        """The whole array: for the small keys (per instance, per frame)."""
        m = self.member(key)
        try:
            with self._zip.open(m.info) as f:
                f.seek(m.data_start)
                data = f.read(int(np.prod(m.shape)) * m.dtype.itemsize)
        except _ZIP_ERRORS as exc:
            raise self._fail(key, f'cannot be read ({exc})') from None
        arr = np.frombuffer(data, dtype=m.dtype)
        return arr.reshape(m.shape, order='F' if m.fortran else 'C')

    def _data_offset(self, m: Member) -> int:
        """Where a stored member's array data starts in the zip file."""
        with open(self.path, 'rb') as f:
            f.seek(m.info.header_offset)
            local = f.read(30)
        if len(local) < 30 or local[:4] != b'PK\x03\x04':
            raise self._fail(m.key, 'zip local header is damaged')
        name_len, extra_len = struct.unpack('<HH', local[26:30])
        return m.info.header_offset + 30 + name_len + extra_len + m.data_start

    def _source(self, m: Member) -> tuple[IO[bytes], int]:
        """A file holding the member's array bytes contiguously, and where they start.

        A stored member is read in place; a deflated one is inflated once, in one
        sequential pass, into a temporary file kept for this archive (a frame-order
        walk of a deflated (n, T, ...) array would otherwise re-inflate from the
        start for every leading index).
        """
        if m.stored:
            return open(self.path, 'rb'), self._data_offset(m)
        spilled = self._spilled.get(m.key)
        if spilled is None:
            spilled = tempfile.TemporaryFile(prefix='react_ros_npz_')
            with self._zip.open(m.info) as f:
                shutil.copyfileobj(f, spilled, 1 << 20)
            spilled.flush()  # read back with os.pread, under the file object's buffer
            self._spilled[m.key] = spilled
        return os.fdopen(os.dup(spilled.fileno()), 'rb'), m.data_start

    def chunks(self, key: str, chunk: int) -> Iterator[tuple[int, np.ndarray]]:
        """(first frame, array[:, first:first + chunk]) of an (n, T, ...) array, in order.

        Read with positioned reads, a chunk at a time: memory stays one chunk whatever
        the session length (a memory map would keep every page it touched resident).
        """
        m = self.member(key)
        if len(m.shape) < 2:
            raise self._fail(key, f'expected (n, T, ...), found shape {m.shape}')
        n, frames = m.shape[0], m.shape[1]
        inner = m.shape[2:]
        if m.fortran:  # rare: no frame-order layout to stream; read it whole
            whole = self.load(key)
            for a in range(0, frames, chunk):
                yield a, np.ascontiguousarray(whole[:, a:a + chunk])
            return
        row = int(np.prod(inner, dtype=np.int64)) * m.dtype.itemsize
        try:
            f, base = self._source(m)
        except _ZIP_ERRORS as exc:
            raise self._fail(key, f'cannot be read ({exc})') from None
        with f:
            fd = f.fileno()
            for a in range(0, frames, chunk):
                b = min(frames, a + chunk)
                size = (b - a) * row
                out = np.empty((n, b - a, *inner), dtype=m.dtype)
                flat = out.reshape(n, -1).view(np.uint8) if n else out
                for i in range(n):
                    data = os.pread(fd, size, base + (i * frames + a) * row)
                    if len(data) != size:
                        raise self._fail(key, 'truncated')
                    flat[i] = np.frombuffer(data, dtype=np.uint8)
                yield a, out


__all__ = ['Member', 'NpzArchive']
