"""JPEG encoding: of a video's decoded planes with libjpeg-turbo; of 8-bit pixels with
Pillow, in worker processes.

A frame decoded from a video is encoded from its own 4:2:0 planes (`encode_planes`,
simplejpeg's libjpeg-turbo): no RGB frame is made, converted back to YCbCr and subsampled
again, and the encoder releases the GIL, so threads encode side by side. On this
project's 2 cores, 1920x1200 at quality 95: ~2x Pillow from RGB (issue 43). The planes
of a video-range frame (16-235) are stretched to JPEG's 0-255 first, as swscale's rgb24
conversion stretches them, so the JPEG shows what the raw Image shows.

Everything else (Images not from a video: HDF5 frames, mono8) goes to Pillow, as follows.

Pillow holds the GIL while its JPEG encoder runs: on this project's 2 cores, two
threads encoded 1920x1200 frames at 103-109 a second, two processes at 158-200
(bench/bench_convert.py). So `--images jpeg` hands each frame's pixels to worker
processes; the bytes are the same as encoding in the caller (`encode` is the one
function both use, and Pillow's encoder is deterministic).

A worker is `python -m react_ros.formats.jpeg_encoder`, fed over its stdin and answering
on its stdout (below), rather than a multiprocessing pool: that would start each worker
by running the caller's `__main__` again (all of ROS for the CLI, anything at all for a
user's script). A worker imports Pillow only, ignores SIGINT (a terminal's Ctrl-C goes
to the whole process group; the caller stops cleanly and then closes the workers), and
ends when its stdin closes, so it cannot outlive the caller. No ROS here.

The protocol, little-endian: a request is REQUEST (width, height, mode index into
MODES, quality, byte count, where) and, where is INLINE, the pixel rows; where is SHARED,
the rows are at the start of the memory the worker shares with the caller (a memfd
passed to it at its start: one copy of each frame instead of a pipe's two, measured
below). A reply is REPLY (0 for a JPEG or 1 for an error, byte count) and the JPEG or
the error's text.
"""
from __future__ import annotations

import io
import mmap
import os
import queue
import signal
import struct
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Any

import numpy as np
import simplejpeg
from PIL import Image as PilImage

from react_ros.errors import OutputWriteError

# Pillow's (image mode, raw mode) of the encodings JPEG takes
MODES = (('RGB', 'RGB'), ('RGB', 'BGR'), ('L', 'L'))
REQUEST = struct.Struct('<IIBBQB')
REPLY = struct.Struct('<BQ')
INLINE, SHARED = 0, 1


def encode(pixels: Any, width: int, height: int, mode: str, raw_mode: str,
           quality: int) -> bytes:
    """A baseline JPEG of `pixels` (rows of `width` pixels in Pillow's `raw_mode`, no
    padding), as Pillow writes it at `quality`."""
    image = PilImage.frombuffer(mode, (width, height), pixels, 'raw', raw_mode, 0, 1)
    out = io.BytesIO()
    image.save(out, 'JPEG', quality=quality)
    return out.getvalue()


def _range_table(zero: int, scale: float, offset: int) -> np.ndarray:
    """Video range to JPEG's, rounded and clipped: swscale's stretch in its rgb24."""
    values = (np.arange(256) - zero) * scale + offset
    return np.clip(np.round(values), 0, 255).astype(np.uint8)


# luma 16..235 to 0..255; chroma 16..240 to 0..255 about 128, which stays 128
_LUMA, _CHROMA = _range_table(16, 255 / 219, 0), _range_table(128, 255 / 224, 128)


def encode_planes(frame: Any, quality: int) -> bytes:
    """A baseline 4:2:0 JPEG of a decoded frame (formats/video.py decode_yuv420: Yuv420,
    or an HxWx3 rgb24 array where the video's planes are not BT.601 4:2:0)."""
    if isinstance(frame, np.ndarray):
        return bytes(simplejpeg.encode_jpeg(np.ascontiguousarray(frame), quality, 'RGB',
                                            colorsubsampling='420'))
    y, u, v = frame.y, frame.u, frame.v
    if not frame.full_range:
        y, u, v = np.take(_LUMA, y), np.take(_CHROMA, u), np.take(_CHROMA, v)
    return bytes(simplejpeg.encode_jpeg_yuv_planes(y, u, v, quality))


class WorkerError(OutputWriteError):
    """A worker went away (killed, out of memory): the machine's trouble, not the
    episode's; one line and exit 2 like any output failure (errors.py)."""


class _Worker:
    def __init__(self) -> None:
        # Shared memory where the system has memfd (Linux); the pipe elsewhere.
        self.memfd = os.memfd_create('react_ros-jpeg') if hasattr(os, 'memfd_create') else -1
        self.shared: mmap.mmap | None = None
        fds = () if self.memfd < 0 else (self.memfd,)
        self.proc = subprocess.Popen(
            [sys.executable, '-m', __name__, str(self.memfd)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, pass_fds=fds)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin: IO[bytes] = self.proc.stdin
        self.stdout: IO[bytes] = self.proc.stdout

    def _share(self, view: memoryview) -> bool:
        """`view` copied into the shared memory (grown to fit); False without one."""
        if self.memfd < 0:
            return False
        if self.shared is None or len(self.shared) < view.nbytes:
            if self.shared is not None:
                self.shared.close()
            os.ftruncate(self.memfd, view.nbytes)
            self.shared = mmap.mmap(self.memfd, view.nbytes)
        self.shared[:view.nbytes] = view
        return True

    def encode(self, pixels: Any, width: int, height: int, mode: str, raw_mode: str,
               quality: int) -> bytes:
        view = memoryview(pixels).cast('B')
        try:
            where = SHARED if self._share(view) else INLINE
            self.stdin.write(REQUEST.pack(width, height, MODES.index((mode, raw_mode)),
                                          quality, view.nbytes, where))
            if where == INLINE:
                self.stdin.write(view)
            self.stdin.flush()
            head = self.stdout.read(REPLY.size)
            if len(head) != REPLY.size:
                raise self._gone()
            status, size = REPLY.unpack(head)
            data = self.stdout.read(size)
        except BrokenPipeError:
            raise self._gone() from None
        if len(data) != size:
            raise self._gone()
        if status:
            raise ValueError(data.decode(errors='replace'))
        return data

    def _gone(self) -> WorkerError:
        return WorkerError(f'the JPEG encoder process ended (exit {self.proc.poll()})')

    def close(self) -> None:
        try:
            self.stdin.close()  # its end of input: the worker exits
        except OSError:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stdout.close()
        if self.shared is not None:
            self.shared.close()
        if self.memfd >= 0:
            os.close(self.memfd)


class JpegProcesses:
    """`workers` worker processes, started at the first `submit`; `close` ends them."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._lock = threading.Lock()
        self._threads: ThreadPoolExecutor | None = None
        self._idle: queue.SimpleQueue[_Worker] = queue.SimpleQueue()
        self._all: list[_Worker] = []

    def submit(self, pixels: Any, width: int, height: int, mode: str, raw_mode: str,
               quality: int) -> Future[bytes]:
        with self._lock:
            if self._threads is None:
                for _ in range(self.workers):
                    worker = _Worker()
                    self._all.append(worker)
                    self._idle.put(worker)
                # one thread per worker: each waits on its worker's pipe, GIL released
                self._threads = ThreadPoolExecutor(self.workers,
                                                   thread_name_prefix='jpeg-encode')
            threads = self._threads
        return threads.submit(self._encode, pixels, width, height, mode, raw_mode, quality)

    def _encode(self, *args: Any) -> bytes:
        worker = self._idle.get()
        try:
            return worker.encode(*args)
        finally:
            self._idle.put(worker)

    def close(self) -> None:
        """Drops what is queued, waits for the frames being encoded, ends the workers."""
        with self._lock:
            threads, self._threads = self._threads, None
            workers, self._all = self._all, []
        if threads is not None:
            threads.shutdown(wait=True, cancel_futures=True)
        for worker in workers:
            worker.close()
        self._idle = queue.SimpleQueue()


def _serve(requests: IO[bytes], replies: IO[bytes], memfd: int) -> None:
    """The worker's loop: a request in, a reply out, until its input ends."""
    shared: mmap.mmap | None = None
    while len(head := requests.read(REQUEST.size)) == REQUEST.size:
        width, height, mode, quality, size, where = REQUEST.unpack(head)
        if where == SHARED:
            if shared is None or len(shared) < size:  # the caller grew it
                if shared is not None:
                    shared.close()
                shared = mmap.mmap(memfd, os.fstat(memfd).st_size)
            pixels: Any = memoryview(shared)[:size]
        else:
            pixels = requests.read(size)
            if len(pixels) != size:
                return
        try:
            data, status = encode(pixels, width, height, *MODES[mode], quality), 0
        except Exception as err:  # noqa: BLE001 - sent back, the caller raises it
            data, status = f'{type(err).__name__}: {err}'.encode(), 1
        finally:
            if where == SHARED:
                pixels.release()  # so that the map can be closed when it grows
        replies.write(REPLY.pack(status, len(data)))
        replies.write(data)
        replies.flush()


if __name__ == '__main__':
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _serve(sys.stdin.buffer, sys.stdout.buffer, int(sys.argv[1]))
    except BrokenPipeError:  # the caller went away
        os._exit(0)


__all__ = ['MODES', 'JpegProcesses', 'WorkerError', 'encode', 'encode_planes']
