"""ChunkWriter (react_ros/rosbag2/chunk_writer.py): the same bytes as mcap.Writer, lanes of
their own compression per channel, errors from its threads raised in the caller, and
bounded memory while the file does not keep up.

The byte comparison also pins the parts of mcap's private layout ChunkWriter rebuilds
(its chunking rule, record encodings, summary groups): a later mcap that changes them
fails here.
"""
from __future__ import annotations

import errno
import gc
import io
import os
import random
import threading
import weakref
from pathlib import Path
from typing import Any

import pytest
from mcap.reader import make_reader
from mcap.records import Channel, Chunk, Message, Schema
from mcap.stream_reader import StreamReader, breakup_chunk
from mcap.writer import CompressionType, Writer

from react_ros.formats.mcap_bag import McapBag
from react_ros.rosbag2.chunk_writer import SEPARATE_BYTES, ChunkWriter, Pieces

CHUNK = 4096
MCAP_COMPRESSION = {'none': CompressionType.NONE, 'lz4': CompressionType.LZ4,
                    'zstd': CompressionType.ZSTD}


def _calls(seed: int, n: int = 160) -> list[tuple[str, tuple[Any, ...]]]:
    """A random but repeatable sequence of writer calls: schemas and channels registered
    between messages, messages from empty to several chunks long, metadata."""
    rnd = random.Random(seed)
    calls: list[tuple[str, tuple[Any, ...]]] = [('start', ('ros2', 'test'))]
    schemas = channels = 0
    t = 1000
    sizes = [0, 1, 17, 200, CHUNK - 40, CHUNK + 1, 3 * CHUNK, SEPARATE_BYTES + 5]
    for i in range(n):
        roll = rnd.random()
        if schemas == 0 or roll < 0.05:
            schemas += 1
            calls.append(('register_schema', (f'pkg/msg/T{schemas}', 'ros2msg',
                                              rnd.randbytes(rnd.choice([0, 30, 5000])))))
        elif channels == 0 or roll < 0.12:
            channels += 1
            calls.append(('register_channel', (f'/topic{channels}', 'cdr',
                                               rnd.randint(1, schemas), {'k': str(i)})))
        elif roll < 0.15:
            calls.append(('add_metadata', (f'meta{i}', {'a': 'b' * rnd.randint(0, 50)})))
        else:
            size = rnd.choice(sizes)
            # compressible: few distinct byte values
            data = bytes(rnd.choices(b'abcd', k=size))
            t += rnd.randint(-50, 200)  # log times go back sometimes
            calls.append(('add_message', (rnd.randint(1, channels), t, data, t + 7, i)))
    return calls


def _replay(writer: Any, calls: list[tuple[str, tuple[Any, ...]]]) -> None:
    for name, args in calls:
        getattr(writer, name)(*args)
    writer.finish()


@pytest.mark.parametrize('compression', ['none', 'lz4', 'zstd'])
def test_same_bytes_as_mcap_writer(compression: str) -> None:
    for seed in range(4):
        calls = _calls(seed)
        theirs, ours = io.BytesIO(), io.BytesIO()
        _replay(Writer(theirs, chunk_size=CHUNK, compression=MCAP_COMPRESSION[compression]),
                calls)
        # 1 to 3 workers; every other run with a bound so small that each chunk waits
        writer = ChunkWriter(ours, chunk_size=CHUNK, compression=compression,
                             threads=1 + seed % 3, max_pending_bytes=(1, 64 << 20)[seed % 2])
        try:
            _replay(writer, calls)
        finally:
            writer.close()
        assert ours.getvalue() == theirs.getvalue(), f'seed {seed}'
        assert writer.bytes_written == len(ours.getvalue())
        # mcap's reader checks every chunk's CRC and reads all messages back.
        sent = [args for name, args in calls if name == 'add_message']
        ours.seek(0)
        got = [(m.channel_id, m.log_time, m.data, m.publish_time, m.sequence)
               for _, _, m in make_reader(ours, validate_crcs=True).iter_messages(
                                                     log_time_order=False)]
        assert got == sent


# A message record is 9 + 22 bytes of header, then its data.
_EXACTLY_ONE_CHUNK = CHUNK - 31
EDGE_CASES = {
    'empty file': [('start', ('', 'x'))],
    # a chunk of exactly chunk_size stays open: finalized only once over it
    'chunk of exactly chunk_size': [
        ('start', ('', 'x')), ('register_schema', ('s', 'ros2msg', b'')),
        ('register_channel', ('/a', 'cdr', 1, {})),
        ('add_message', (1, 5, bytes(2 * CHUNK), 5, 0)),
        ('add_message', (1, 6, bytes(_EXACTLY_ONE_CHUNK), 6, 1)),
        ('add_message', (1, 7, b'x', 7, 2))],
    # records over the size but no message: not written, carried into the next chunk
    'no message in a full chunk': [
        ('start', ('', 'x')), ('register_schema', ('s', 'ros2msg', bytes(3 * CHUNK))),
        ('register_channel', ('/a', 'cdr', 1, {})), ('add_metadata', ('m', {})),
        ('add_message', (1, 5, b'', 5, 0))],
    'only registrations': [
        ('start', ('', 'x')), ('register_schema', ('s', 'ros2msg', b'')),
        ('register_channel', ('/a', 'cdr', 1, {}))],
}


@pytest.mark.parametrize('case', EDGE_CASES)
def test_edge_cases_match_mcap_writer(case: str) -> None:
    for compression in ('none', 'lz4'):
        theirs, ours = io.BytesIO(), io.BytesIO()
        _replay(Writer(theirs, chunk_size=CHUNK, compression=MCAP_COMPRESSION[compression]),
                EDGE_CASES[case])
        writer = ChunkWriter(ours, chunk_size=CHUNK, compression=compression)
        try:
            _replay(writer, EDGE_CASES[case])
        finally:
            writer.close()
        assert ours.getvalue() == theirs.getvalue(), compression


def _lanes_file(path: Path) -> tuple[list[tuple[str, int, bytes]], dict[str, str]]:
    """A file whose channels ask for three compressions; returns what was sent (topic,
    log time, data) and each topic's chunk compression."""
    rnd = random.Random(7)
    asked = {'/images': 'none', '/state': None, '/points': 'zstd', '/raw2': 'none'}
    chunk_name = {'none': '', 'zstd': 'zstd', None: 'lz4'}
    sent: list[tuple[str, int, bytes]] = []
    with path.open('wb') as f:
        writer = ChunkWriter(f, chunk_size=CHUNK, compression='lz4', threads=2)
        try:
            writer.start('ros2', 'test')
            image = writer.register_schema('sensor_msgs/msg/Image', 'ros2msg', b'uint32 h')
            other = writer.register_schema('std_msgs/msg/String', 'ros2msg', b'string data')
            ids = {}
            for topic, compression in asked.items():
                schema = image if topic in ('/images', '/raw2') else other
                ids[topic] = writer.register_channel(topic, 'cdr', schema, {},
                                                     compression=compression)
            for i in range(300):
                topic = rnd.choice(list(asked))
                data = bytes(rnd.choices(b'xyz', k=rnd.choice([0, 10, 900, 2 * CHUNK])))
                t = 10 * i + rnd.randint(0, 25)  # neighbours overlap in time
                writer.add_message(ids[topic], t, data, t, i)
                sent.append((topic, t, data))
            writer.add_metadata('rosbag2', {'serialized_metadata': 'x'})
            writer.finish()
        finally:
            writer.close()
    return sent, {t: chunk_name[c] for t, c in asked.items()}


def test_lanes_per_channel_compression(tmp_path: Path) -> None:
    path = tmp_path / 'lanes.mcap'
    sent, expected = _lanes_file(path)
    by_time = sorted(sent, key=lambda m: (m[1], m[0], m[2]))

    with path.open('rb') as f:
        got = [(c.topic, m.log_time, m.data) for _, c, m in
               make_reader(f, validate_crcs=True).iter_messages(log_time_order=True)]
    assert [m[1] for m in got] == sorted(m[1] for m in got)
    assert sorted(got, key=lambda m: (m[1], m[0], m[2])) == by_time

    bag = [(m.topic, m.log_time_ns, bytes(m.data)) for m in McapBag(path).messages()]
    assert bag == got

    # A streaming reader meets each channel (and its schema) before its messages...
    seen_schemas: set[int] = set()
    channels: dict[int, Channel] = {}
    streamed: list[tuple[str, int, bytes]] = []
    for rec in StreamReader(str(path), validate_crcs=True).records:
        if isinstance(rec, Schema):
            seen_schemas.add(rec.id)
        elif isinstance(rec, Channel):
            assert rec.schema_id in seen_schemas, rec.topic
            channels[rec.id] = rec
        elif isinstance(rec, Message):
            streamed.append((channels[rec.channel_id].topic, rec.log_time, rec.data))
    assert sorted(streamed, key=lambda m: (m[1], m[0], m[2])) == by_time
    # ...and every message sits in a chunk of its channel's compression.
    compressions: dict[str, set[str]] = {}
    for rec in StreamReader(str(path), emit_chunks=True).records:
        if isinstance(rec, Chunk):
            for inner in breakup_chunk(rec, validate_crc=True):
                if isinstance(inner, Message):
                    topic = channels[inner.channel_id].topic
                    compressions.setdefault(topic, set()).add(rec.compression)
    assert compressions == {t: {c} for t, c in expected.items()}


def test_a_channel_registered_late_keeps_its_reserved_id(tmp_path: Path) -> None:
    """A channel whose compression is decided at its first message (the bag's 'auto')
    is registered after others' messages, with the id reserved for it in order; a
    streaming reader meets it before its messages, and the summary lists channels by id."""
    path = tmp_path / 'late.mcap'
    with path.open('wb') as f:
        writer = ChunkWriter(f, chunk_size=CHUNK, compression='lz4')
        try:
            writer.start('ros2', 'test')
            schema = writer.schema_id('std_msgs/msg/String', 'ros2msg', b'string data')
            assert writer.schema_id('std_msgs/msg/String', 'ros2msg', b'string data') == schema
            first = writer.register_channel('/first', 'cdr', schema)
            late = writer.reserve_channel_id()
            last = writer.register_channel('/last', 'cdr', schema)
            assert (first, late, last) == (1, 2, 3)
            with pytest.raises(ValueError, match='not reserved'):
                writer.register_channel('/other', 'cdr', schema, channel_id=9)
            writer.add_message(first, 1, b'a', 1)
            writer.add_message(last, 2, b'b', 2)
            assert writer.register_channel('/late', 'cdr', schema, compression='none',
                                           channel_id=late) == late
            with pytest.raises(ValueError, match='not reserved'):  # once only
                writer.register_channel('/again', 'cdr', schema, channel_id=late)
            writer.add_message(late, 3, b'c' * 100, 3)
            writer.finish()
        finally:
            writer.close()
    topics: dict[int, str] = {}
    streamed = []
    for rec in StreamReader(str(path), validate_crcs=True).records:
        if isinstance(rec, Channel):
            topics.setdefault(rec.id, rec.topic)
        elif isinstance(rec, Message):
            streamed.append((topics[rec.channel_id], rec.data))
    assert streamed == [('/first', b'a'), ('/last', b'b'), ('/late', b'c' * 100)]
    with path.open('rb') as f:
        summary = make_reader(f).get_summary()
    assert summary is not None
    assert [(i, c.topic) for i, c in summary.channels.items()] == [
        (1, '/first'), (2, '/late'), (3, '/last')]


class _WriteLog(io.BytesIO):
    """A real in-memory file that also keeps every buffer handed to write()."""

    def __init__(self) -> None:
        super().__init__()
        self.handed: list[Any] = []

    def write(self, data: Any) -> int:  # type: ignore[override]
        self.handed.append(data)
        return super().write(data)


def _write_one(stream: io.BytesIO, data: Any, file_compression: str, **channel: Any) -> bytes:
    """`data` as the only message of a file a ChunkWriter writes into `stream`; the message
    as a reader checking CRCs reads it back."""
    writer = ChunkWriter(stream, chunk_size=1 << 20, compression=file_compression)
    try:
        writer.start()
        schema = writer.register_schema('s', 'ros2msg', b'')
        writer.add_message(writer.register_channel('/big', 'cdr', schema, {}, **channel),
                           1, data, 1)
        writer.finish()
    finally:
        writer.close()
    stream.seek(0)
    (_, _, m), = make_reader(stream, validate_crcs=True).iter_messages()
    return m.data


def test_big_uncompressed_payload_is_written_as_it_came() -> None:
    stream = _WriteLog()
    payload = bytes(range(256)) * 1024  # 256 KiB: a separate buffer
    assert _write_one(stream, payload, 'lz4', compression='none') == payload
    assert any(piece is payload for piece in stream.handed)


def _in_pieces(calls: list[tuple[str, tuple[Any, ...]]], seed: int
               ) -> list[tuple[str, tuple[Any, ...]]]:
    """The same calls with every message's data cut into Pieces at random places (some of
    them memoryviews, as an array's buffer comes)."""
    rnd = random.Random(seed)
    out = []
    for name, args in calls:
        if name == 'add_message':
            data = args[2]
            cuts = sorted(rnd.randint(0, len(data)) for _ in range(rnd.randint(0, 3)))
            parts = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]
            args = (*args[:2], Pieces(memoryview(p) if i % 2 else p
                                      for i, p in enumerate(parts)), *args[3:])
        out.append((name, args))
    return out


@pytest.mark.parametrize('compression', ['none', 'lz4', 'zstd'])
def test_a_message_in_pieces_is_the_message_joined(compression: str) -> None:
    """Issue 43: an Image's CDR comes as its head and the decoder's pixels; the file is the
    one mcap.Writer makes of the joined bytes (record length, chunk size, CRC, lz4)."""
    for seed in range(3):
        calls = _calls(seed)
        theirs, ours = io.BytesIO(), io.BytesIO()
        _replay(Writer(theirs, chunk_size=CHUNK, compression=MCAP_COMPRESSION[compression]),
                calls)
        writer = ChunkWriter(ours, chunk_size=CHUNK, compression=compression)
        try:
            _replay(writer, _in_pieces(calls, seed))
        finally:
            writer.close()
        assert ours.getvalue() == theirs.getvalue(), f'seed {seed}'


def test_a_big_piece_is_written_as_it_came() -> None:
    """The pixels of an Image in Pieces reach the file's write() themselves, not a copy."""
    stream = _WriteLog()
    pixels = memoryview(bytes(range(256)) * 1024)
    assert _write_one(stream, Pieces((b'head', pixels)), 'none') == b'head' + bytes(pixels)
    assert any(piece is pixels for piece in stream.handed)


def _writer_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(('mcap-writer', 'mcap-chunk'))]


def test_disk_full_is_raised_in_the_caller() -> None:
    payload = b'p' * 50_000
    with open('/dev/full', 'wb') as f:
        writer = ChunkWriter(f, chunk_size=CHUNK, compression='none',
                             max_pending_bytes=256 * 1024)
        try:
            writer.start()
            channel = writer.register_channel('/x', 'cdr', 0)
            # The first chunk's write fails on the writer thread; the caller meets the
            # error at a later call, at the latest once the pending bytes reach the bound.
            with pytest.raises(OSError) as raised:
                for i in range(10_000):
                    writer.add_message(channel, i, payload, i)
            assert raised.value.errno == errno.ENOSPC
            assert i < 100
            with pytest.raises(OSError):
                writer.finish()
        finally:
            writer.close()
        writer.close()
        assert not _writer_threads()
        with pytest.raises(OSError):
            f.close()  # its buffer still holds the header


def test_disk_full_at_finish() -> None:
    with open('/dev/full', 'wb') as f:
        writer = ChunkWriter(f, chunk_size=1 << 20, compression='none')
        try:
            writer.start()
            channel = writer.register_channel('/x', 'cdr', 0)
            # Larger than the stream's buffer: the writer thread's write meets the full
            # disk, and finish (which finalizes this chunk) raises it.
            writer.add_message(channel, 1, bytes(100_000), 1)
            with pytest.raises(OSError) as raised:
                writer.finish()
            assert raised.value.errno == errno.ENOSPC
        finally:
            writer.close()
        assert not _writer_threads()
        with pytest.raises(OSError):
            f.close()


def test_close_without_finish_stops_the_threads() -> None:
    writer = ChunkWriter(io.BytesIO(), chunk_size=CHUNK, compression='zstd')
    writer.start()
    channel = writer.register_channel('/x', 'cdr', 0)
    for i in range(50):
        writer.add_message(channel, i, bytes(3000), i)
    writer.close()
    writer.close()
    assert not _writer_threads()
    with pytest.raises(ValueError):
        writer.add_message(channel, 99, b'', 99)


def test_caller_waits_while_the_file_does_not_keep_up() -> None:
    """The writer writes into a pipe that this test drains slowly: at every step, what the
    producer got accepted stays within the bound of what left through the pipe."""
    read_fd, write_fd = os.pipe()
    bound = 64 * 1024
    message = 8 * 1024
    total = 400
    accepted = [0]
    errors: list[BaseException] = []

    def produce() -> None:
        try:
            with open(write_fd, 'wb') as f:
                writer = ChunkWriter(f, chunk_size=CHUNK, compression='none',
                                     max_pending_bytes=bound)
                try:
                    writer.start()
                    channel = writer.register_channel('/x', 'cdr', 0)
                    for i in range(total):
                        writer.add_message(channel, i, bytes(message), i)
                        accepted[0] += message
                    writer.finish()
                finally:
                    writer.close()
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)

    producer = threading.Thread(target=produce)
    producer.start()
    # Held outside the writer: the pipe, the stream's buffer, the open chunk, the queued
    # chunks (bound plus the one that crossed it) and the one being written.
    slack = 64 * 1024 + 8192 + 2 * (CHUNK + message + 100) + bound
    received = bytearray()
    with open(read_fd, 'rb', buffering=0) as r:
        while chunk := r.read(4096):
            received += chunk
            assert accepted[0] <= len(received) + slack
    producer.join()
    assert not errors
    assert accepted[0] == total * message
    got = list(make_reader(io.BytesIO(bytes(received)), validate_crcs=True).iter_messages())
    assert len(got) == total


class _Payload(bytearray):
    """A message buffer that can be watched (bytearray itself takes no weak reference)."""


@pytest.mark.parametrize('compression', ['none', 'lz4'])
def test_written_buffers_are_let_go(compression: str) -> None:
    """Once its chunk is written the writer holds no message buffer: memory stays within
    the pending bound however long the file (a raw bag is gigabytes). Whether or not the
    caller ever asks finalized_bytes, which waits on the chunks' sizes."""
    for ask in (False, True):
        stream = io.BytesIO()
        writer = ChunkWriter(stream, chunk_size=CHUNK, compression=compression)
        watched: list[weakref.ref[_Payload]] = []
        try:
            writer.start()
            channel = writer.register_channel('/x', 'cdr', 0)
            for i in range(200):
                payload = _Payload(random.Random(i).randbytes(SEPARATE_BYTES + 100))
                watched.append(weakref.ref(payload))
                writer.add_message(channel, i, payload, i)
                if ask and i % 50 == 0:
                    writer.finalized_bytes()
                del payload
            writer.drain()
            gc.collect()
            alive = sum(ref() is not None for ref in watched[:-5])
            assert alive == 0, f'{alive} written buffers still held (ask={ask})'
            writer.finish()
        finally:
            writer.close()


def test_nothing_after_finish() -> None:
    stream = io.BytesIO()
    writer = ChunkWriter(stream, chunk_size=CHUNK, compression='lz4')
    writer.start()
    channel = writer.register_channel('/x', 'cdr', 0)
    writer.finish()
    size = len(stream.getvalue())
    with pytest.raises(ValueError):
        writer.add_message(channel, 1, b'late', 1)
    writer.close()
    assert len(stream.getvalue()) == size == writer.bytes_written


@pytest.mark.parametrize('compression', ['none', 'lz4'])
def test_drain_gives_the_position_mcap_writer_has_after_each_call(compression: str) -> None:
    """What a size estimate reads while the bag is written: after drain(), the bytes
    written are what mcap.Writer's file holds after the same calls."""
    ours, theirs = io.BytesIO(), io.BytesIO()
    writers = [ChunkWriter(ours, chunk_size=4096, compression=compression),
               Writer(theirs, chunk_size=4096, compression=CompressionType[compression.upper()])]
    for w in writers:
        w.start('ros2', 'test')
        w.register_channel('/x', 'cdr', w.register_schema('s', 'ros2msg', b''), {})
    rng = random.Random(3)
    for i in range(200):
        data = rng.randbytes(rng.choice([10, 900, 5000]))
        for w in writers:
            w.add_message(1, log_time=i, data=data, publish_time=i, sequence=i)
        assert writers[0].drain() == theirs.tell(), i
    for w in writers:
        w.finish()
    assert ours.getvalue() == theirs.getvalue()


@pytest.mark.parametrize('compression', ['none', 'lz4'])
def test_finalized_bytes_is_the_position_mcap_writer_has_after_each_call(
        compression: str) -> None:
    """The same without waiting for the writes: the file is a pipe that nobody reads
    until the end, so nothing past its buffer is written while the sizes are asked."""
    theirs = io.BytesIO()
    mine = Writer(theirs, chunk_size=4096, compression=CompressionType[compression.upper()])
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, 'wb') as pipe:
        ours = ChunkWriter(pipe, chunk_size=4096, compression=compression)
        got: list[bytes] = []
        reader = threading.Thread(target=lambda: got.append(os.fdopen(read_end, 'rb').read()))
        try:
            for w in (ours, mine):
                w.start('ros2', 'test')
                w.register_channel('/x', 'cdr', w.register_schema('s', 'ros2msg', b''), {})
            rng = random.Random(3)
            for i in range(200):
                data = rng.randbytes(rng.choice([10, 900, 5000]))
                for w in (ours, mine):
                    w.add_message(1, log_time=i, data=data, publish_time=i, sequence=i)
                assert ours.finalized_bytes() == theirs.tell(), i
            assert ours.bytes_written < theirs.tell()  # the pipe held the writes back
            reader.start()
            for w in (ours, mine):
                w.finish()
        finally:
            ours.close()
    reader.join(10)
    assert got == [theirs.getvalue()]
