"""Write an episode as a rosbag2 bag: OUTDIR/metadata.yaml + OUTDIR/<name>_0.mcap.

Which rosbag2 metadata version, and why 8 (not Jazzy/Kilted's own 9):
- rosbag2 up to metadata version 8 stores a topic's `offered_qos_profiles` as one YAML
  *string* with integer enums; version 9 (Jazzy, Kilted) makes it a YAML sequence with
  enum names. Humble's reader does `offered_qos_profiles.as<std::string>()` and fails
  with "bad conversion" on the sequence (ros2/rosbag2 #1895, #2013).
- Jazzy and Kilted still read versions <= 8 through their string branch
  (`to_rclcpp_qos_vector(str, version)`), integers included. Humble ignores the keys it
  does not know (type_description_hash, custom_data, ros_distro), and no rosbag2 refuses a
  version number it has not seen.
- The MCAP plugin of Jazzy/Kilted parses each channel's `offered_qos_profiles` with the
  version of the MCAP `rosbag2` metadata record (key `serialized_metadata`), and defaults
  to 9 without one; so that record is written too, declaring version 8, and the channel
  metadata carries the same string as metadata.yaml.
"""
from __future__ import annotations

import dataclasses
import io
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence, cast

import lz4.frame
import yaml
from mcap import __version__ as mcap_version
from rclpy.qos import LivelinessPolicy, QoSProfile

from react_ros import __version__
from react_ros.rosbag2.chunk_writer import ChunkWriter, Output, Pieces, joined
from react_ros.errors import DatasetFormatError, SinkError
from react_ros.ros import qos
from react_ros.ros.msgs import _share_dirs, definition_text, message_class
from react_ros.ros.serialization import cdr_payload, cdr_pieces
from react_ros.rosbag2.direct_file import open_bag_file
from react_ros.rosbag2.disk_space import BagSizer, SizeWatch, check_fits
from react_ros.sinks.image_encoding import decodable, image_cdr_frames
from react_ros.output import check_stop, output_path, staged, stop_requested
from react_ros.sinks.readahead import Cancelled, ReadAhead, message_bytes
from react_ros.sinks.selection import BagSelection, TopicFilter, fold_topics
from react_ros.sinks.selection import select_streams as select_streams
from react_ros.streams import Event, Stream, merge
from react_ros.convert_options import ConvertOptions

if TYPE_CHECKING:
    from react_ros.adapters.base import Episode

METADATA_VERSION = 8
PROGRESS_EVERY = 100
# Messages of a heavy stream built ahead of the writer (readahead.py): enough to keep
# its worker busy while the merge takes the other streams in turn, but no more than
# READ_AHEAD_BYTES once READ_AHEAD_MIN are queued. A decoded frame waiting is memory its
# decoder cannot write the next frame into (formats/swscale.py): 1920x1200 frames 8 deep
# made the converter fault in twice the fresh pages of 2 deep, at the same or a few per
# cent fewer images a second (docs/speed.md, 2026-12-07).
READ_AHEAD = 8
READ_AHEAD_MIN = 2
READ_AHEAD_BYTES = 16 << 20
# How long the writer waits for a stopped worker: one message's read, decode and
# serialisation (milliseconds at the sizes seen), with room for a loaded machine.
JOIN_S = 10.0
# One big image per chunk is fine: chunks only bound what a reader decompresses at once.
CHUNK_SIZE = 4 * 1024 * 1024
# What rmw reports for "no deadline / lifespan / lease" and rosbag2 therefore records.
_INFINITE = {'sec': 9223372036, 'nsec': 854775807}
# Measured with bench/bench_convert.py once the writer was pipelined (docs/speed.md): on
# raw UMI images lz4 made the bag 0.82x in the same convert time as none (it runs on the
# writer's threads), zstd 0.60x at 1.9x the time and 3x the reading time; JPEG, PNG and
# video bytes do not compress further (lz4 saves under 1 %). Small messages (TF, joint
# states, poses) compress 3-10x. So 'auto': compressed payloads go in uncompressed
# chunks, small messages in lz4 chunks, and the big messages of a heavy stream (raw
# images, point clouds) by what lz4 does to the stream's first one (the default,
# convert_options.DEFAULT_COMPRESSION).
# Types whose payloads are compressed already: their chunks are written as they are.
PRECOMPRESSED = frozenset({'sensor_msgs/msg/CompressedImage',
                           'foxglove_msgs/msg/CompressedVideo'})
# A heavy stream whose first message lz4 shrinks by less than this share is written
# uncompressed (a camera's noise barely compresses; depth, labels and clouds do).
PROBE_MIN_SAVING = 0.25


@dataclass(frozen=True)
class BagSummary:
    path: Path  # the bag directory
    message_count: int
    topic_counts: dict[str, int]
    start_ns: int
    duration_ns: int


def write_bag(episode: Episode, out_dir: str | os.PathLike[str],
              options: ConvertOptions | None = None, *, overwrite: bool = False,
              progress: Callable[[int, int], None] | None = None,
              inputs: Sequence[Path] = (), size: SizeWatch | None = None) -> BagSummary:
    """Convert every stream of `episode` (robot state too) into a bag at `out_dir`, as
    `options` asks (react_ros/convert_options.py; None: the defaults).

    Where it may write, and how it never leaves half a bag: react_ros/output.py
    (`inputs`: more paths it must stay out of, such as the path the user named).
    `overwrite` replaces only a previous react_ros bag. `progress(done, total)` is
    called every PROGRESS_EVERY messages and once at the end with done == total;
    before that, total is the streams' declared counts (a lower bound when one does
    not know its count). `images` 'jpeg' / 'png' writes each Image stream as
    CompressedImage the way image_transport does (sinks/image_encoding.py); 'h264' writes
    each video-backed Image stream as CompressedVideo, its packets passed through or
    re-encoded where they cannot be, and with `no_reencode` refuses the latter
    (sinks/compressed_video.py); 'raw' leaves the streams as they are. `topics`,
    `exclude_topics`, `regex`, `exclude_regex` choose streams as sinks/selection.py says.
    `size` follows the bag's bytes and data time and gets its estimate; unless it says
    not to (`check`), a bag estimated bigger than its disk's free space is refused
    early with NotEnoughSpace, leaving nothing (rosbag2/disk_space.py).
    """
    opts = ConvertOptions() if options is None else options
    out = output_path(out_dir, option='-o/--output', inputs=[*inputs, episode.path])
    # planned, and refused where it must be, before anything is written
    wanted = TopicFilter(opts.topics, opts.exclude_topics, opts.regex, opts.exclude_regex)
    selection = BagSelection(episode.streams, wanted, opts.images,
                             jpeg_quality=opts.jpeg_quality, reencode=not opts.no_reencode)
    with staged(out, overwrite=overwrite, ours=is_react_ros_bag, noun='react_ros bag') as tmp, \
            selection as streams:
        return _write(episode, streams, tmp, out, progress, opts.compression, opts.images,
                      SizeWatch() if size is None else size)


def is_react_ros_bag(path: Path) -> bool:
    """Whether `path` is a bag this writer made, and nothing more: what --overwrite may delete.

    Its metadata.yaml, the files it lists and no others, each an MCAP whose header
    names react_ros as the library (rosbag2 and other tools write their own name).
    """
    try:
        info = yaml.safe_load((path / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
        files = info['relative_file_paths']
        if {p.name for p in path.iterdir()} != {'metadata.yaml', *files}:
            return False
        return all(_mcap_library(path / f).startswith('react_ros ') for f in files)
    except (OSError, ValueError, TypeError, KeyError, yaml.YAMLError):
        return False


def _mcap_library(path: Path) -> str:
    """The library string of an MCAP's header record ('' when it has none)."""
    with open(path, 'rb') as f:
        head = f.read(4096)
    if head[:8] != b'\x89MCAP0\r\n' or head[8:9] != b'\x01':  # magic, then the header
        return ''
    pos = 17 + 4 + int.from_bytes(head[17:21], 'little')  # opcode, length; skip profile
    size = int.from_bytes(head[pos:pos + 4], 'little')
    return head[pos + 4:pos + 4 + size].decode(errors='replace')


@dataclass
class _Topic:
    name: str
    msg_type: str
    latched: bool
    heavy: bool = False
    channel_id: int = 0
    count: int = 0
    # Its chunks' compression; '' until it is registered ('auto' registers a heavy topic
    # at its first message, with the channel id reserved for it).
    compression: str = ''


def _topics(streams: Sequence[Stream]) -> dict[str, _Topic]:
    """One channel per topic, even when several streams feed it (/tf from data and state)."""
    def conflict(topic: str, first: str, other: str) -> Exception:
        return SinkError(f'{topic}: two streams with different types ({first}, {other}) '
                         'cannot share one bag topic')
    return {name: _Topic(name, t.msg_type, t.latched, t.heavy)
            for name, t in fold_topics(streams, conflict).items()}


def _write(episode: Episode, streams: list[Stream], tmp: Path, out: Path,
           progress: Callable[[int, int], None] | None,
           compression_name: str, images: str, size: SizeWatch) -> BagSummary:
    # rosbag2 names the file after the bag directory, not after our temporary one.
    file_name = f'{out.name}_0.mcap'
    topics = _topics(streams)
    # A stream that does not know its count (robot state's /tf) makes this a lower bound.
    total = sum(s.count or 0 for s in streams)
    start = end = done = 0
    opened: list[Iterator[tuple[int, Any]]] = []
    readers: list[ReadAhead] = []
    with open_bag_file(tmp / file_name) as f, _closing(opened, readers):
        writer = _start_mcap(f, topics.values(), compression_name)
        try:  # its threads stopped however the block ends
            # Until it has estimated, the sizer needs each chunk's bytes as it is made, as
            # a synchronous writer would have them on disk (their compression waited for,
            # not their writes); then what is on disk.
            made: list[BagSizer] = []

            def written() -> int:
                return writer.bytes_written if made and made[0].done \
                    else writer.finalized_bytes()
            sizer = _sizer(episode, streams, topics, file_name, out, written,
                           compression_name, images, size)
            made.append(sizer)
            opened += _open(streams, readers)
            for ev in _merged(opened):
                check_stop()  # a stop signal ends the write here, between two messages
                stream = streams[ev.stream_idx]
                is_cdr = isinstance(ev.msg, (bytes, bytearray, Pieces))
                if not is_cdr:
                    _check_type(stream, ev.msg)
                if ev.t_ns < 0:
                    raise DatasetFormatError(episode.path, f'{stream.topic}: stamp '
                                             f'{ev.t_ns} ns is negative')
                if ev.t_ns < end:
                    raise DatasetFormatError(episode.path, f'{stream.topic}: stamp '
                                             f'{ev.t_ns} ns comes after {end} ns; stamps '
                                             'must not go back')
                start = ev.t_ns if done == 0 else start
                end = ev.t_ns
                t = topics[stream.topic]
                # The bag's timeline is the data's: log time = publish time = the stamp.
                # (The writer takes any buffer; its annotation says bytes.)
                data = ev.msg if is_cdr else cast(bytes, cdr_payload(ev.msg))
                if not t.compression:
                    _register(writer, t, probed(data))
                writer.add_message(t.channel_id, log_time=ev.t_ns, publish_time=ev.t_ns,
                                   data=data, sequence=t.count)
                estimate = sizer.add(ev.stream_idx, ev.t_ns, data, t.compression)
                if estimate is not None:
                    check_fits(estimate, size)  # a refusal says the numbers itself
                    if size.on_estimate is not None:
                        size.on_estimate(estimate)
                t.count += 1
                done += 1
                if progress is not None and done % PROGRESS_EVERY == 0:
                    sizer.update()
                    progress(done, max(total, done))
            for t in topics.values():  # a heavy topic that had no message: a channel all the same
                if not t.compression:
                    _register(writer, t, writer.compression)
            meta = bag_metadata(list(topics.values()), file_name, start, end - start, done)
            writer.add_metadata('rosbag2', {'serialized_metadata': _dump(meta)})
            writer.finish()
            size.written = f.tell()
        finally:
            writer.close()
    (tmp / 'metadata.yaml').write_text(_dump({'rosbag2_bagfile_information': meta}))
    if progress is not None and (done == 0 or done % PROGRESS_EVERY or total != done):
        progress(done, done)
    return BagSummary(out, done, {t.name: t.count for t in topics.values()}, start, end - start)


def _sizer(episode: Episode, streams: Sequence[Stream], topics: dict[str, _Topic],
           file_name: str, out: Path, bytes_written: Callable[[], int], compression: str,
           images: str, size: SizeWatch) -> BagSizer:
    """What estimates this bag's size as it is written (rosbag2/disk_space.py).

    `bytes_written` is the file's position: the MCAP writer writes a chunk whole.
    What every bag has whatever its messages is measured on this bag without them:
    the MCAP (header, summary with the schemas and channels), plus the rosbag2 record
    (its YAML and the record's and its index's framing) and metadata.yaml.
    """
    span = episode.end_ns - episode.start_ns
    counts = [dataclasses.replace(t, channel_id=0, compression='') for t in topics.values()]
    meta = bag_metadata(counts, file_name, episode.start_ns, span,
                        sum(s.count or 0 for s in streams))
    buf = io.BytesIO()
    _start_mcap(buf, counts, compression, defer=False).finish()
    record = _dump(meta)
    # metadata.yaml is the same YAML under one key, each line indented by two spaces
    yaml_bytes = len(_YAML_KEY) + len(record.encode()) + 2 * record.count('\n')
    metadata_record = len(record.encode()) + _METADATA_FRAMING
    return BagSizer(out, streams, episode.start_ns, span, bytes_written, buf.getvalue(),
                    metadata_record + yaml_bytes, compression, images, size)


# The metadata record's opcode, lengths, name and key, and its entry in the summary.
_METADATA_FRAMING = 120
_YAML_KEY = 'rosbag2_bagfile_information:\n'


def read_ahead_bytes(message_bytes: int) -> int:
    """A heavy stream's read-ahead budget for messages of `message_bytes`: READ_AHEAD of
    them, at most READ_AHEAD_BYTES unless that is fewer than READ_AHEAD_MIN."""
    return max(READ_AHEAD_MIN * message_bytes, min(READ_AHEAD * message_bytes, READ_AHEAD_BYTES))


def _open(streams: Sequence[Stream], readers: list[ReadAhead]
          ) -> list[Iterator[tuple[int, Any]]]:
    """Every stream opened; a heavy one read, built, checked and serialised ahead on a
    worker thread of its own (readahead.py), read_ahead_bytes deep."""
    opened: list[Iterator[tuple[int, Any]]] = []
    for s in streams:
        if not s.heavy:
            opened.append(s.open())
            continue
        if decodable(s):  # the decoder's pixels into the bag, no Image built on the way
            video = s.video
            assert video is not None  # decodable: backed by a video
            s = dataclasses.replace(s, open=partial(image_cdr_frames, video))

        def prepare(msg: Any, stream: Stream = s) -> Any:
            if isinstance(msg, (bytes, Pieces)):
                return msg
            _check_type(stream, msg)
            # The CDR as built, not copied into bytes, an Image's pixels not copied into it
            # (6.9 MB a frame at 1920x1200): the writer keeps the pieces as they are until
            # their chunk is on disk, and nothing changes them.
            return Pieces(cdr_pieces(msg))
        r = ReadAhead(s, None, read_ahead_bytes(message_bytes(s)), stop_requested, prepare)
        readers.append(r)
        opened.append(iter(r))
    return opened


def _merged(opened: Sequence[Iterator[tuple[int, Any]]]) -> Iterator[Event]:
    """The merge; a read-ahead cancelled by a stop signal ends it as the signal does."""
    try:
        yield from merge(opened)
    except Cancelled:
        check_stop()
        raise


def _check_type(stream: Stream, msg: Any) -> None:
    if type(msg) is not message_class(stream.msg_type):
        raise TypeError(f'{stream.topic}: stream of {stream.msg_type} yielded a '
                        f'{type(msg).__module__}.{type(msg).__name__}')


@contextmanager
def _closing(iterators: list[Iterator[tuple[int, Any]]],
             readers: list[ReadAhead]) -> Iterator[None]:
    """Stop and join the read-ahead workers and close every stream when the block ends,
    however it ends.

    Now, on this thread, rather than whenever the garbage collector gets to it, or
    never before the interpreter exits (a thread still inside h5py then deadlocks its
    shutdown). A worker notices the stop flag between two messages.
    """
    try:
        yield
    finally:
        for r in readers:
            r.close(JOIN_S)
        for it in iterators:
            close = getattr(it, 'close', None)
            if close is not None:
                close()


def _start_mcap(f: Output, topics: Iterable[_Topic], compression: str,
                defer: bool = True) -> ChunkWriter:
    """A started MCAP writer with one schema per type and one channel per topic.

    rosbag2/chunk_writer.py: mcap.Writer's bytes, with chunks compressed and written on
    threads of their own while this thread builds the next messages. Under 'auto' a
    heavy topic is registered at its first message (`_register`), unless not `defer`.
    """
    writer = ChunkWriter(f, chunk_size=CHUNK_SIZE,
                         compression='lz4' if compression == 'auto' else compression)
    writer.start(profile='ros2', library=f'react_ros {__version__}; mcap-python {mcap_version}')
    for t in topics:
        lane = chunk_compression(t.msg_type, t.heavy, compression)
        if lane or not defer:
            _register(writer, t, lane or writer.compression)
        else:  # its schema and channel ids where they would be had it been registered now
            writer.schema_id(t.msg_type, 'ros2msg', definition_text(t.msg_type).encode())
            t.channel_id = writer.reserve_channel_id()
    return writer


def chunk_compression(msg_type: str, heavy: bool, compression: str) -> str:
    """The chunk compression of a topic's messages, or '' when its first message decides
    (`probed`): `compression` itself unless it is 'auto' (see DEFAULT_COMPRESSION)."""
    if compression != 'auto':
        return compression
    if msg_type in PRECOMPRESSED:
        return 'none'
    return '' if heavy else 'lz4'


def probed(data: Any) -> str:
    """'lz4' if lz4 shrinks this message (a buffer or Pieces) by PROBE_MIN_SAVING, else
    'none'."""
    data = joined(data)
    return 'lz4' if len(lz4.frame.compress(data)) <= (1 - PROBE_MIN_SAVING) * len(data) \
        else 'none'


def _register(writer: ChunkWriter, t: _Topic, compression: str) -> None:
    """`t`'s channel (and its type's schema, once per file), its chunks `compression`."""
    t.channel_id = writer.register_channel(
        t.name, 'cdr', writer.schema_id(t.msg_type, 'ros2msg',
                                        definition_text(t.msg_type).encode()),
        {'offered_qos_profiles': offered_qos_yaml(t.latched),
         'topic_type_hash': type_hash(t.msg_type)},
        compression=compression, channel_id=t.channel_id or None)
    t.compression = compression


def bag_metadata(topics: Sequence[_Topic], file_name: str, start_ns: int, duration_ns: int,
                 message_count: int) -> dict[str, Any]:
    """The BagMetadata map rosbag2 writes, in its key order, for METADATA_VERSION."""
    return {
        'version': METADATA_VERSION,
        'storage_identifier': 'mcap',
        'duration': {'nanoseconds': duration_ns},
        'starting_time': {'nanoseconds_since_epoch': start_ns},
        'message_count': message_count,
        'topics_with_message_count': [{
            'topic_metadata': {
                'name': t.name,
                'type': t.msg_type,
                'serialization_format': 'cdr',
                'offered_qos_profiles': _Quoted(offered_qos_yaml(t.latched)),
                'type_description_hash': type_hash(t.msg_type),
            },
            'message_count': t.count,
        } for t in topics],
        'compression_format': '',
        'compression_mode': '',
        'relative_file_paths': [file_name],
        'files': [{
            'path': file_name,
            'starting_time': {'nanoseconds_since_epoch': start_ns},
            'duration': {'nanoseconds': duration_ns},
            'message_count': message_count,
        }],
        'custom_data': {},
        'ros_distro': os.environ.get('ROS_DISTRO') or 'kilted',
    }


@lru_cache(maxsize=None)  # two values, asked for per topic by the bag and its size estimate
def offered_qos_yaml(latched: bool) -> str:
    """The offered QoS as rosbag2 <= 8 records it: a YAML list, integer rmw enums."""
    p: QoSProfile = qos.for_stream(latched)
    liveliness = p.liveliness
    if liveliness == LivelinessPolicy.SYSTEM_DEFAULT:
        liveliness = LivelinessPolicy.AUTOMATIC  # what an endpoint reports for the default
    profile = {
        'history': int(p.history.value),
        'depth': int(p.depth),
        'reliability': int(p.reliability.value),
        'durability': int(p.durability.value),
        'deadline': _duration(p.deadline.nanoseconds),
        'lifespan': _duration(p.lifespan.nanoseconds),
        'liveliness': int(liveliness.value),
        'liveliness_lease_duration': _duration(p.liveliness_lease_duration.nanoseconds),
        'avoid_ros_namespace_conventions': bool(p.avoid_ros_namespace_conventions),
    }
    return str(yaml.safe_dump([profile], sort_keys=False, default_flow_style=False)).rstrip('\n')


def _duration(ns: int) -> dict[str, int]:
    if ns == 0:  # unspecified: an endpoint reports it as infinite
        return dict(_INFINITE)
    return {'sec': ns // 1_000_000_000, 'nsec': ns % 1_000_000_000}


@lru_cache(maxsize=None)
def type_hash(msg_type: str) -> str:
    """The RIHS01 type hash from the package's share/<pkg>/msg/<Type>.json, or ''."""
    pkg, kind, name = msg_type.split('/')
    for share in _share_dirs():
        f = share / pkg / kind / f'{name}.json'
        if f.is_file():
            try:
                hashes = json.loads(f.read_text())['type_hashes']
                return str(next(h['hash_string'] for h in hashes
                                if h['type_name'] == msg_type))
            except (ValueError, KeyError, StopIteration):
                return ''
    return ''


class _Quoted(str):
    """A string emitted double-quoted with escapes, as yaml-cpp writes multi-line strings."""


# libyaml's emitter where PyYAML was built with it: the pure-Python one took a fifth of
# converting an episode's non-image topics (three dumps of the metadata). Same text.
class _Dumper(getattr(yaml, 'CSafeDumper', yaml.SafeDumper)):  # type: ignore[misc]
    pass


_Dumper.add_representer(
    _Quoted, lambda d, s: d.represent_scalar('tag:yaml.org,2002:str', str(s), style='"'))


_NO_FOLD = 2**31 - 1  # no line folded (libyaml takes an int where PyYAML took inf)


def _dump(data: Any) -> str:
    return str(yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                         allow_unicode=True, width=_NO_FOLD))
