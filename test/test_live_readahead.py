"""The byte-bounded read-ahead between decoding threads and the publishing thread."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from react_ros.errors import DatasetFormatError
from react_ros.sinks.readahead import ByteBoundedQueue, Cancelled, ReadAhead
from react_ros.streams import Stream


def test_queue_is_bounded_in_bytes() -> None:
    q = ByteBoundedQueue(100)
    q.put('a', 60)
    done = threading.Event()

    def second() -> None:
        q.put('b', 60)  # does not fit until 'a' is taken
        done.set()

    threading.Thread(target=second, daemon=True).start()
    assert not done.wait(0.3)
    assert q.nbytes == 60
    assert q.get(5) == 'a'
    assert done.wait(5)
    assert q.get(5) == 'b'


def test_queue_takes_one_oversized_item() -> None:
    q = ByteBoundedQueue(10)
    q.put('big', 1000)  # never deadlock on an item larger than the budget
    assert q.get(1) == 'big'


class _WatchedCondition(threading.Condition):
    """A Condition that says when someone first waits on it."""

    def __init__(self) -> None:
        super().__init__()
        self.waited = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waited.set()
        return super().wait(timeout)


def test_queue_cancel_unblocks_both_sides() -> None:
    q = ByteBoundedQueue(10)
    q._cv = watched = _WatchedCondition()  # to cancel only once the put is blocked
    q.put('a', 10)
    errors = []

    def put() -> None:
        try:
            q.put('b', 10)
        except Cancelled:
            errors.append('put')

    t = threading.Thread(target=put)
    t.start()
    assert watched.waited.wait(30), 'the second put never blocked on the full queue'
    assert t.is_alive() and errors == []
    q.cancel()
    t.join(5)
    assert errors == ['put']
    with pytest.raises(Cancelled):
        q.get(1)


def _stream(n: int, fail_at: int | None = None, decoded: list[int] | None = None) -> Stream:
    def gen():
        for i in range(n):
            if i == fail_at:
                raise DatasetFormatError(Path('video.mp4'), f'frame {i} does not decode')
            if decoded is not None:
                decoded.append(i)
            yield i * 10, f'frame {i}'
    return Stream('/img', 'sensor_msgs/msg/Image', gen, heavy=True, approx_bytes=100)


def test_readahead_skips_and_bounds() -> None:
    decoded: list[int] = []
    r = ReadAhead(_stream(50, decoded=decoded), from_ns=200, capacity=300, abort=lambda: False)
    # 20 frames dropped before 200 ns, then 3 of 100 bytes waiting and 1 in hand: the worker
    # cannot decode a 25th before the consumer takes one. Wait for the queue to fill, then
    # no more than those were decoded.
    deadline = time.monotonic() + 30
    while (r.queue.nbytes < 300 or len(decoded) < 24) and time.monotonic() < deadline:
        time.sleep(0.005)
    assert r.queue.nbytes == 300 and len(decoded) == 20 + 3 + 1, (r.queue.nbytes, decoded)
    items = list(r)
    assert [t for t, _ in items] == list(range(200, 500, 10))
    r.close()


def test_readahead_hands_errors_to_the_consumer() -> None:
    r = ReadAhead(_stream(10, fail_at=4), from_ns=0, capacity=10_000, abort=lambda: False)
    got = []
    with pytest.raises(DatasetFormatError, match='frame 4'):
        for item in r:
            got.append(item)
    assert len(got) == 4
    r.close()


def test_readahead_abort_while_waiting() -> None:
    release = threading.Event()

    def slow():
        yield 0, 'first'
        release.wait(10)
        yield 10, 'second'

    stop = threading.Event()
    r = ReadAhead(Stream('/img', 'x/msg/Y', slow, heavy=True), 0, 1000, stop.is_set)
    it = iter(r)
    assert next(it) == (0, 'first')
    stop.set()
    with pytest.raises(Cancelled):
        next(it)
    release.set()
    r.close()


def test_readahead_serialises_on_its_worker_and_stops_when_the_consumer_leaves() -> None:
    from std_msgs.msg import String

    from react_ros.ros.serialization import cdr_payload
    from react_ros.sinks.readahead import serialised
    on: set[str] = set()

    def endless():
        i = -3  # from_ns None (the bag writer) drops nothing, negative stamps neither
        while True:
            yield i, String(data=f'x{i}')
            i += 1

    def prepare(msg: String) -> bytes:
        on.add(threading.current_thread().name)
        return serialised(msg)
    r = ReadAhead(Stream('/s', 'std_msgs/msg/String', endless, heavy=True, approx_bytes=50),
                  None, 500, lambda: False, prepare)
    it = iter(r)
    first = [next(it) for _ in range(3)]
    assert first == [(t, bytes(cdr_payload(String(data=f'x{t}')))) for t in (-3, -2, -1)]
    assert on == {'readahead /s'}
    r.close()  # the consumer stops early (a --playback-duration, a stop): the worker is joined
    assert not [t for t in threading.enumerate() if t.name == 'readahead /s']


def test_a_player_dropping_late_frames_serialises_only_what_it_sends() -> None:
    """pass_iterators serialises heavy messages on the readers, except for a player that
    drops late frames (--drop-late): there most frames are dropped, and serialising every
    one ahead cost it its real time (RTF 0.55-0.80 against 0.99 before, UMI at 1920x1200 on
    2 cores); it gets the message objects and serialises at publish those it sends."""
    from std_msgs.msg import String

    from react_ros.ros.serialization import cdr_payload
    from react_ros.sinks.live import pass_iterators

    def strings():
        for i in range(5):
            yield i, String(data=f'x{i}')
    stream = Stream('/s', 'std_msgs/msg/String', strings, heavy=True, approx_bytes=50)
    for serialise in (True, False):
        its, readers = pass_iterators([stream], 0, 1 << 20, lambda: False, serialise)
        try:
            got = list(its[0])
        finally:
            for r in readers:
                r.close()
        want = [(i, bytes(cdr_payload(String(data=f'x{i}'))) if serialise
                 else String(data=f'x{i}')) for i in range(5)]
        assert got == want, serialise



def test_the_converter_reads_big_frames_two_ahead_and_small_ones_eight() -> None:
    """rosbag2/writer.py's budget: a decoded frame queued is memory the decoder cannot
    write its next frame into, so 1920x1200 frames (6.9 MB) wait two deep, small ones
    eight, and no stream less than two."""
    from react_ros.rosbag2.writer import read_ahead_bytes
    for size, deep in ((1920 * 1200 * 3, 2), (640 * 400 * 3, 8), (1 << 20, 8),
                       (3840 * 2160 * 3, 2)):
        budget = read_ahead_bytes(size)
        assert budget // size == deep, (size, budget)
