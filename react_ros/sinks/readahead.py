"""Read heavy streams ahead on worker threads, bounded in bytes.

Every sink reads a heavy stream (Stream.heavy: video, HDF5 images, point clouds)
this way, whatever its kind: video decoding (PyAV), zlib (HDF5's gzip), JPEG
decoding and CDR serialisation release the GIL, so one thread per heavy stream
builds its messages in parallel with the thread that publishes or writes them.
`serialise` makes that thread serialise them too, off the consumer's hot path.
A queue bounded in messages would hold anything from kilobytes to gigabytes
depending on the resolution; bounding it in bytes keeps memory predictable for
4K and thumbnails alike.
"""
from __future__ import annotations

import threading
from collections import deque
from typing import Any, Callable, Iterator

import numpy as np

from react_ros.formats.swscale import cdr_in_place
from react_ros.ros.serialization import cdr_payload
from react_ros.streams import Pieces, Stream, open_at

_END = object()


class Cancelled(Exception):
    """The consumer went away (seek, loop, stop)."""


class ByteBoundedQueue:
    """A FIFO holding at most `capacity` bytes, but always at least one item."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self._items: deque[tuple[Any, int]] = deque()
        self._bytes = 0
        self._cv = threading.Condition()
        self._cancelled = False

    def put(self, item: Any, nbytes: int) -> None:
        with self._cv:
            while self._items and self._bytes + nbytes > self.capacity:
                if self._cancelled:
                    raise Cancelled
                self._cv.wait(0.1)
            if self._cancelled:
                raise Cancelled
            self._items.append((item, nbytes))
            self._bytes += nbytes
            self._cv.notify_all()

    def get(self, timeout: float | None = None) -> Any:
        """Next item; raises TimeoutError when none came within `timeout`."""
        with self._cv:
            if not self._cv.wait_for(lambda: self._items or self._cancelled, timeout):
                raise TimeoutError
            if not self._items:
                raise Cancelled
            item, nbytes = self._items.popleft()
            self._bytes -= nbytes
            self._cv.notify_all()
            return item

    def cancel(self) -> None:
        with self._cv:
            self._cancelled = True
            self._items.clear()
            self._bytes = 0
            self._cv.notify_all()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def nbytes(self) -> int:
        with self._cv:
            return self._bytes


class ReadAhead:
    """One worker thread iterating `stream` from `from_ns` into a ByteBoundedQueue.

    The stream is opened at `from_ns` (streams.open_at: a video stream decodes
    from the keyframe before it), off the consumer's thread and in parallel per
    stream; `from_ns` None opens it whole, dropping nothing (a bag refuses bad
    stamps itself). `prepare`, where given, turns each message into what the
    consumer takes (serialise), on the worker. Worker exceptions surface in
    `__iter__`; once `abort()` is true the worker stops between two messages and
    the consumer raises Cancelled. `close()` stops and joins the worker.
    """

    def __init__(self, stream: Stream, from_ns: int | None, capacity: int,
                 abort: Callable[[], object], prepare: Callable[[Any], Any] | None = None
                 ) -> None:
        self.stream = stream
        self.from_ns = from_ns
        self.queue = ByteBoundedQueue(capacity)
        self._abort = abort
        self._prepare = prepare
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True,
                                         name=f'readahead {stream.topic}')
        self._thread.start()

    def _run(self) -> None:
        start = self.from_ns
        it = self.stream.open() if start is None else open_at(self.stream, start)
        size = message_bytes(self.stream)
        prepare = self._prepare
        try:
            for t_ns, msg in it:
                if self._abort() or self.queue.cancelled:
                    return
                if start is not None and t_ns < start:
                    continue
                self.queue.put((t_ns, msg if prepare is None else prepare(msg)), size)
            self.queue.put(_END, 0)
        except Cancelled:
            pass
        except BaseException as err:  # handed to the consumer, which re-raises it
            self._error = err
            try:
                self.queue.put(_END, 0)
            except Cancelled:
                pass
        finally:
            close = getattr(it, 'close', None)
            if close is not None:
                close()

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        """Messages in order; raises Cancelled when `abort()` turns true while waiting."""
        while True:
            try:
                item = self.queue.get(0.1)
            except TimeoutError:
                if self._abort():
                    raise Cancelled from None
                continue
            if item is _END:
                if self._error is not None:
                    raise self._error
                return
            yield item

    def close(self, timeout: float = 5.0) -> None:
        self.queue.cancel()
        self._thread.join(timeout)


def message_bytes(stream: Stream) -> int:
    """What one message of `stream` counts against a budget: unknown sizes count as 1 MiB,
    so a stream that does not say still stays bounded."""
    return stream.approx_bytes if stream.approx_bytes > 0 else 1 << 20


def serialised(msg: Any) -> Any:
    """`msg` as CDR bytes (as they are when already bytes): the same bytes a bag writes."""
    if isinstance(msg, (bytes, bytearray, memoryview)):
        return msg
    if isinstance(msg, Pieces):
        # A camera's Image: its head goes before the pool's pixels, or they are joined here.
        if len(msg) == 2 and isinstance(msg[1], np.ndarray):
            whole = cdr_in_place(msg[0], msg[1])
            if whole is not None:
                return whole
        return b''.join(msg)
    # cdr_payload, not serialize_message: rmw leaves process memory in the padding,
    # and a bag must be the same bytes every run.
    return bytes(cdr_payload(msg))


__all__ = ['ByteBoundedQueue', 'Cancelled', 'ReadAhead', 'message_bytes', 'serialised']
