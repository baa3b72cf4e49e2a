"""The bag writer, read back with readers that share none of its code (mcap + mcap_ros2)."""
from __future__ import annotations

import dataclasses
import random
import zlib
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml
from mcap.reader import make_reader
from mcap.records import Chunk
from mcap.stream_reader import StreamReader
from mcap_ros2.decoder import DecoderFactory
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, JointState
from std_msgs.msg import Empty, String, UInt8
from visualization_msgs.msg import Marker, MarkerArray

from react_ros.convert_options import ConvertOptions
from react_ros.adapters.base import Episode
from react_ros.errors import DatasetFormatError, SinkError
from react_ros.ros.msgs import stamp, to_ns
from react_ros.ros.tf import tf_message, transform_stamped
from react_ros.rosbag2.writer import cdr_payload, write_bag
from react_ros.streams import Role, Stream

T0 = 1_700_000_000_123_456_789  # absolute, as UMI's stamps are
MS = 1_000_000
W, H = 32, 24
URDF = '<robot name="r"><link name="base"/></robot>'
TF_HASH = 'RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087'


def _stream(topic: str, msg_type: str, make: Callable[[], list[tuple[int, Any]]],
            **kw: Any) -> Stream:
    items = make()
    return Stream(topic, msg_type, open=lambda: iter(make()), count=len(items), **kw)


def _tf(parent: str, child: str, times: list[int], x0: float) -> list[tuple[int, Any]]:
    return [(t, tf_message([transform_stamped(parent, child, t, (x0 + i, 0.5, -1.0),
                                              (0.0, 0.0, 0.0, 1.0))]))
            for i, t in enumerate(times)]


def _image(t: int, i: int) -> Image:
    msg = Image(height=H, width=W, encoding='rgb8', step=W * 3)
    msg.header.stamp = stamp(t)
    msg.header.frame_id = 'cam_optical_frame'
    msg.data = bytes((i * 7 + k) % 256 for k in range(W * H * 3))
    return msg


def _joints(t: int, i: int) -> JointState:
    msg = JointState(name=['left_left_finger'], position=[0.01 * i])
    msg.header.stamp = stamp(t)
    return msg


def _streams() -> list[Stream]:
    tf_times = [T0 + i * 100 * MS for i in range(5)]
    state_times = [t + 50 * MS for t in tf_times]
    img_times = [T0 + i * 33 * MS for i in range(3)]
    return [
        _stream('/tf', 'tf2_msgs/msg/TFMessage', lambda: _tf('world', 'quest_hmd', tf_times, 1.0)),
        _stream('/joint_states', 'sensor_msgs/msg/JointState',
                lambda: [(t, _joints(t, i)) for i, t in enumerate(tf_times)]),
        _stream('/center/image_raw', 'sensor_msgs/msg/Image',
                lambda: [(t, _image(t, i)) for i, t in enumerate(img_times)], heavy=True),
        _stream('/robot_description', 'std_msgs/msg/String',
                lambda: [(T0, String(data=URDF))], latched=True, role=Role.ROBOT_STATE),
        _stream('/tf_static', 'tf2_msgs/msg/TFMessage',
                lambda: _tf('base', 'camera', [T0], 0.0), latched=True, role=Role.ROBOT_STATE),
        _stream('/tf', 'tf2_msgs/msg/TFMessage',
                lambda: _tf('base', 'finger', state_times, 10.0), role=Role.ROBOT_STATE),
    ]


EXPECTED = {'/tf': 10, '/joint_states': 5, '/center/image_raw': 3, '/robot_description': 1,
            '/tf_static': 1}


def _episode(tmp_path: Path, streams: list[Stream] | None = None) -> Episode:
    src = tmp_path / 'episode'
    src.mkdir(exist_ok=True)
    return Episode(kind='test', path=src, start_ns=T0, end_ns=T0 + 450 * MS,
                   streams=_streams() if streams is None else streams, urdf=URDF)


def _mcap(bag: Path) -> Path:
    files = sorted(bag.glob('*.mcap'))
    assert [f.name for f in files] == [f'{bag.name}_0.mcap']
    return files[0]


def _read(bag: Path) -> dict[str, list[tuple[int, int, Any]]]:
    out: dict[str, list[tuple[int, int, Any]]] = {}
    with open(_mcap(bag), 'rb') as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _, channel, message, decoded in reader.iter_decoded_messages(log_time_order=False):
            out.setdefault(channel.topic, []).append(
                (message.log_time, message.publish_time, decoded))
    return out


def _header_ns(msg: Any) -> int:
    header = msg.transforms[0].header if hasattr(msg, 'transforms') else msg.header
    return int(header.stamp.sec) * 1_000_000_000 + int(header.stamp.nanosec)


@pytest.fixture
def bag(tmp_path: Path) -> Path:
    out = tmp_path / 'out' / 'umi_bag'
    summary = write_bag(_episode(tmp_path), out)
    assert summary.path == out
    assert summary.topic_counts == EXPECTED
    assert summary.message_count == sum(EXPECTED.values())
    assert summary.start_ns == T0 and summary.duration_ns == 450 * MS
    return out


def test_every_topic_round_trips_with_stamps_as_log_and_publish_time(bag: Path) -> None:
    got = _read(bag)
    assert {k: len(v) for k, v in got.items()} == EXPECTED
    for topic, msgs in got.items():
        for log_time, publish_time, msg in msgs:
            expected = T0 if topic == '/robot_description' else _header_ns(msg)
            assert log_time == publish_time == expected, topic
    # Data and robot-state /tf share one channel, interleaved by stamp.
    children = [m.transforms[0].child_frame_id for _, _, m in got['/tf']]
    assert children == ['quest_hmd', 'finger'] * 5
    xs = [m.transforms[0].transform.translation.x for _, _, m in got['/tf']]
    assert xs == [1.0, 10.0, 2.0, 11.0, 3.0, 12.0, 4.0, 13.0, 5.0, 14.0]
    assert got['/robot_description'][0][2].data == URDF
    assert got['/tf_static'][0][2].transforms[0].child_frame_id == 'camera'
    assert [m.position for _, _, m in got['/joint_states']] == [[0.01 * i] for i in range(5)]
    for i, (_, _, img) in enumerate(got['/center/image_raw']):
        assert (img.width, img.height, img.encoding, img.step) == (W, H, 'rgb8', W * 3)
        assert img.header.frame_id == 'cam_optical_frame'
        assert bytes(img.data) == _image(T0, i).data.tobytes()


def test_file_is_written_in_stamp_order(bag: Path) -> None:
    with open(_mcap(bag), 'rb') as f:
        times = [m.log_time for _, _, m in make_reader(f).iter_messages(log_time_order=False)]
    assert times == sorted(times) and len(times) == sum(EXPECTED.values())


def test_schemas_are_full_ros2msg_definitions(bag: Path) -> None:
    with open(_mcap(bag), 'rb') as f:
        summary = make_reader(f).get_summary()
    assert summary is not None
    schemas = {s.name: s for s in summary.schemas.values()}
    assert set(schemas) == {'tf2_msgs/msg/TFMessage', 'sensor_msgs/msg/JointState',
                            'sensor_msgs/msg/Image', 'std_msgs/msg/String'}
    for s in schemas.values():
        assert s.encoding == 'ros2msg'
    sep = '=' * 80 + '\nMSG: '
    tf_text = schemas['tf2_msgs/msg/TFMessage'].data.decode()
    assert tf_text.startswith('geometry_msgs/TransformStamped[] transforms')
    for dep in ('geometry_msgs/TransformStamped', 'std_msgs/Header', 'builtin_interfaces/Time',
                'geometry_msgs/Transform', 'geometry_msgs/Vector3', 'geometry_msgs/Quaternion'):
        assert f'{sep}{dep}\n' in tf_text, dep
    img_text = schemas['sensor_msgs/msg/Image'].data.decode()
    assert 'uint8[] data' in img_text.split(sep)[0]
    assert f'{sep}std_msgs/Header\n' in img_text
    assert sep not in schemas['std_msgs/msg/String'].data.decode()


def test_mcap_is_chunked_indexed_and_checksummed(bag: Path) -> None:
    with open(_mcap(bag), 'rb') as f:
        reader = make_reader(f)
        header = reader.get_header()
        summary = reader.get_summary()
        metadata = list(reader.iter_metadata())
    assert header.profile == 'ros2' and 'react_ros' in header.library
    assert summary is not None and summary.statistics is not None
    assert summary.statistics.message_count == sum(EXPECTED.values())
    assert summary.chunk_indexes
    assert all(ci.message_index_offsets for ci in summary.chunk_indexes)
    assert len(summary.channels) == len(EXPECTED)  # one channel per topic
    records = StreamReader(str(_mcap(bag)), emit_chunks=True).records
    chunks = [r for r in records if isinstance(r, Chunk)]
    assert chunks and len(chunks) == len(summary.chunk_indexes)
    import lz4.frame
    for c in chunks:
        assert c.compression == 'lz4'  # 'auto': small messages, an image lz4 halves
        data = lz4.frame.decompress(c.data)
        assert len(data) == c.uncompressed_size
        assert c.uncompressed_crc != 0 and c.uncompressed_crc == zlib.crc32(data)
    # The MCAP's own copy of the bag metadata, as rosbag2's MCAP plugin reads it.
    [record] = [m for m in metadata if m.name == 'rosbag2']
    inner = yaml.safe_load(record.metadata['serialized_metadata'])
    with open(bag / 'metadata.yaml') as f:
        assert inner == yaml.safe_load(f)['rosbag2_bagfile_information']


def _chunk_compressions(bag: Path) -> dict[str, set[str]]:
    """Topic -> the compressions of the chunks its messages are in."""
    from mcap.records import Channel, Message
    from mcap.stream_reader import breakup_chunk
    topics: dict[int, str] = {}
    found: dict[str, set[str]] = {}
    for record in StreamReader(str(_mcap(bag)), emit_chunks=True).records:
        if isinstance(record, Chunk):
            for inner in breakup_chunk(record):
                if isinstance(inner, Channel):
                    topics[inner.id] = inner.topic
                elif isinstance(inner, Message):
                    found.setdefault(topics[inner.channel_id], set()).add(
                        record.compression or 'none')
    return found


def _noise_image(t: int, i: int) -> Image:
    msg = _image(t, i)
    msg.data = random.Random(i).randbytes(len(msg.data))  # what lz4 cannot shrink
    return msg


def _jpeg(t: int, i: int) -> CompressedImage:
    msg = CompressedImage(format='rgb8; jpeg compressed bgr8')
    msg.header.stamp = stamp(t)
    msg.data = random.Random(-i).randbytes(2000)
    return msg


def _compression_streams() -> list[Stream]:
    times = [T0 + i * 33 * MS for i in range(3)]
    return [
        _stream('/center/image_raw', 'sensor_msgs/msg/Image',
                lambda: [(t, _image(t, i)) for i, t in enumerate(times)], heavy=True),
        _stream('/noise/image_raw', 'sensor_msgs/msg/Image',
                lambda: [(t, _noise_image(t, i)) for i, t in enumerate(times)], heavy=True),
        _stream('/cam/image_raw/compressed', 'sensor_msgs/msg/CompressedImage',
                lambda: [(t, _jpeg(t, i)) for i, t in enumerate(times)], heavy=True),
        _stream('/joint_states', 'sensor_msgs/msg/JointState',
                lambda: [(t, _joints(t, i)) for i, t in enumerate(times)]),
        _stream('/silent/image_raw', 'sensor_msgs/msg/Image', lambda: [], heavy=True),
    ]


def test_auto_compression_chooses_per_channel(tmp_path: Path) -> None:
    """The default: compressed payloads and images lz4 cannot shrink by a quarter go
    into uncompressed chunks, the rest into lz4 chunks; every message reads back."""
    out = tmp_path / 'auto'
    write_bag(_episode(tmp_path, _compression_streams()), out)
    assert _chunk_compressions(out) == {
        '/center/image_raw': {'lz4'}, '/noise/image_raw': {'none'},
        '/cam/image_raw/compressed': {'none'}, '/joint_states': {'lz4'}}
    got = _read(out)
    assert {t: len(v) for t, v in got.items()} == {
        '/center/image_raw': 3, '/noise/image_raw': 3, '/cam/image_raw/compressed': 3,
        '/joint_states': 3}
    assert bytes(got['/noise/image_raw'][2][2].data) == bytes(_noise_image(0, 2).data)
    with open(_mcap(out), 'rb') as f:  # the summary has every channel, by id
        channels = make_reader(f).get_summary().channels  # type: ignore[union-attr]
    assert [c.topic for c in channels.values()] == [  # a silent heavy one too
        '/center/image_raw', '/noise/image_raw', '/cam/image_raw/compressed', '/joint_states',
        '/silent/image_raw']
    assert list(channels) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize('compression', ['none', 'lz4', 'zstd'])
def test_a_named_compression_applies_to_every_chunk(tmp_path: Path, compression: str) -> None:
    out = tmp_path / compression
    write_bag(_episode(tmp_path, _compression_streams()), out,
              ConvertOptions(compression=compression))
    assert set(map(frozenset, _chunk_compressions(out).values())) == {
        frozenset({compression})}


def _durability(profiles: Any) -> int:
    # rosbag2 <= 8 (the only form Humble reads): a YAML string, integer rmw enums.
    assert isinstance(profiles, str)
    [p] = yaml.safe_load(profiles)
    assert p['reliability'] == 1 and p['history'] == 1  # reliable, keep last
    assert p['depth'] == (1 if p['durability'] == 1 else 10)
    return int(p['durability'])


def test_channels_record_offered_qos_and_type_hash(bag: Path) -> None:
    with open(_mcap(bag), 'rb') as f:
        summary = make_reader(f).get_summary()
    assert summary is not None
    for ch in summary.channels.values():
        assert ch.message_encoding == 'cdr'
        latched = ch.topic in ('/tf_static', '/robot_description')
        assert _durability(ch.metadata['offered_qos_profiles']) == (1 if latched else 2)
        assert ch.metadata['topic_type_hash'].startswith('RIHS01_')
    tf = next(c for c in summary.channels.values() if c.topic == '/tf')
    assert tf.metadata['topic_type_hash'] == TF_HASH


def test_metadata_yaml(bag: Path) -> None:
    with open(bag / 'metadata.yaml') as f:
        info = yaml.safe_load(f)['rosbag2_bagfile_information']
    assert info['version'] == 8
    assert info['storage_identifier'] == 'mcap'
    assert info['relative_file_paths'] == ['umi_bag_0.mcap']
    assert info['message_count'] == sum(EXPECTED.values())
    assert info['starting_time'] == {'nanoseconds_since_epoch': T0}
    assert info['duration'] == {'nanoseconds': 450 * MS}
    assert info['compression_format'] == '' and info['compression_mode'] == ''
    assert info['files'] == [{'path': 'umi_bag_0.mcap',
                              'starting_time': {'nanoseconds_since_epoch': T0},
                              'duration': {'nanoseconds': 450 * MS},
                              'message_count': sum(EXPECTED.values())}]
    assert info['custom_data'] == {} and isinstance(info['ros_distro'], str)
    topics = {t['topic_metadata']['name']: t for t in info['topics_with_message_count']}
    assert {k: t['message_count'] for k, t in topics.items()} == EXPECTED
    for name, t in topics.items():
        meta = t['topic_metadata']
        assert meta['serialization_format'] == 'cdr'
        latched = name in ('/tf_static', '/robot_description')
        assert _durability(meta['offered_qos_profiles']) == (1 if latched else 2), name
    assert topics['/tf']['topic_metadata']['type'] == 'tf2_msgs/msg/TFMessage'
    assert topics['/tf']['topic_metadata']['type_description_hash'] == TF_HASH


def test_existing_output_is_refused_then_replaced_with_overwrite(tmp_path: Path) -> None:
    out = tmp_path / 'bag'
    out.mkdir()
    (out / 'keep').write_text('x')
    # --overwrite replaces only a react_ros bag (issue 7): this folder is the user's.
    for overwrite in (False, True):
        with pytest.raises(SinkError, match='exists already and is not a react_ros bag'):
            write_bag(_episode(tmp_path), out, overwrite=overwrite)
    assert [p.name for p in out.iterdir()] == ['keep']
    (out / 'keep').unlink()
    write_bag(_episode(tmp_path), out)
    with pytest.raises(SinkError, match='exists already, not overwriting'):
        write_bag(_episode(tmp_path), out)
    write_bag(_episode(tmp_path), out, overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == ['bag_0.mcap', 'metadata.yaml']
    # Made like any directory of the user's (umask), not private like a temporary one.
    assert out.stat().st_mode & 0o777 == (tmp_path / 'episode').stat().st_mode & 0o777
    assert sorted(p.name for p in tmp_path.iterdir()) == ['bag', 'episode']


def test_overwrite_never_deletes_the_episode(tmp_path: Path) -> None:
    episode = _episode(tmp_path)
    (tmp_path / 'episode' / 'data').mkdir()
    for out in (tmp_path, tmp_path / 'episode', tmp_path / 'episode' / 'data'):
        with pytest.raises(SinkError, match='input'):
            write_bag(episode, out, overwrite=True)
    assert sorted(p.name for p in tmp_path.rglob('*')) == ['data', 'episode']


def _failing(exc: BaseException) -> Stream:
    def gen() -> Iterator[tuple[int, Any]]:
        for i in range(3):
            yield T0 + i * 10 * MS, String(data=str(i))
        raise exc
    return Stream('/annotations', 'std_msgs/msg/String', open=gen)


@pytest.mark.parametrize('exc', [RuntimeError('disk on fire'), KeyboardInterrupt()])
def test_failure_mid_write_leaves_no_output_and_no_temporary(tmp_path: Path,
                                                             exc: BaseException) -> None:
    episode = _episode(tmp_path, [*_streams(), _failing(exc)])
    out = tmp_path / 'bag'
    with pytest.raises(type(exc)):
        write_bag(episode, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ['episode']


def test_failure_with_overwrite_keeps_the_previous_bag(tmp_path: Path) -> None:
    out = tmp_path / 'bag'
    write_bag(_episode(tmp_path), out)
    before = (out / 'metadata.yaml').read_text()
    with pytest.raises(RuntimeError):
        write_bag(_episode(tmp_path, [*_streams(), _failing(RuntimeError('x'))]), out,
                  overwrite=True)
    assert (out / 'metadata.yaml').read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ['bag', 'episode']


def test_stamps_going_back_are_refused(tmp_path: Path) -> None:
    times = [T0, T0 + 2 * MS, T0 + MS]
    bad = _stream('/joint_states', 'sensor_msgs/msg/JointState',
                  lambda: [(t, _joints(t, i)) for i, t in enumerate(times)])
    with pytest.raises(DatasetFormatError, match='stamps must not go back'):
        write_bag(_episode(tmp_path, [bad]), tmp_path / 'bag')
    assert not (tmp_path / 'bag').exists()


def test_unwritable_output_is_a_sink_error(tmp_path: Path) -> None:
    (tmp_path / 'file').write_text('x')
    with pytest.raises(SinkError, match='cannot create it'):
        write_bag(_episode(tmp_path), tmp_path / 'file' / 'bag')


def test_topic_selection(tmp_path: Path) -> None:
    write_bag(_episode(tmp_path), tmp_path / 'a', ConvertOptions(topics=['/tf', '/tf_static']))
    assert {k: len(v) for k, v in _read(tmp_path / 'a').items()} == {'/tf': 10, '/tf_static': 1}
    write_bag(_episode(tmp_path), tmp_path / 'b',
              ConvertOptions(exclude_topics=['/center/image_raw']))
    got = {k: len(v) for k, v in _read(tmp_path / 'b').items()}
    assert got == {k: v for k, v in EXPECTED.items() if k != '/center/image_raw'}
    with pytest.raises(SinkError, match='/nope'):
        write_bag(_episode(tmp_path), tmp_path / 'c', ConvertOptions(topics=['/nope']))
    assert not (tmp_path / 'c').exists()


def test_progress_total_when_a_count_is_unknown(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr('react_ros.rosbag2.writer.PROGRESS_EVERY', 3)
    uncounted = [dataclasses.replace(s, count=None) if s.topic == '/joint_states' else s
                 for s in _streams()]
    calls: list[tuple[int, int]] = []
    write_bag(_episode(tmp_path, uncounted), tmp_path / 'bag',
              progress=lambda d, t: calls.append((d, t)))
    assert all(t >= d for d, t in calls) and calls[-1] == (20, 20)
    assert [d for d, _ in calls] == [*range(3, 20, 3), 20]


def test_progress_reports_done_and_total(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr('react_ros.rosbag2.writer.PROGRESS_EVERY', 3)
    calls: list[tuple[int, int]] = []
    write_bag(_episode(tmp_path), tmp_path / 'bag', progress=lambda d, t: calls.append((d, t)))
    n = sum(EXPECTED.values())
    assert n == 20 and calls == [(d, n) for d in range(3, n, 3)] + [(n, n)]


def test_stamp_helpers_agree() -> None:
    assert to_ns(stamp(T0)) == T0


@pytest.mark.parametrize('msg', [
    Empty(), UInt8(data=7), String(data='héllo'), JointState(),
    JointState(name=['a', 'b'], position=[1.0, 2.0], velocity=[], effort=[3.0]),
    tf_message([transform_stamped('a', 'b', T0, (1, 2, 3), (0, 0, 0, 1))] * 2),
    _image(T0, 1), CameraInfo(d=[0.1] * 5), MarkerArray(markers=[Marker(), Marker(text='x')]),
], ids=lambda m: type(m).__name__)
def test_payload_is_exactly_the_cdr_content(msg: Any) -> None:
    full, cut = serialize_message(msg), bytes(cdr_payload(msg))
    assert len(cut) <= len(full)
    # Only padding (which rmw leaves uninitialised) may differ, and it is zeroed.
    assert all(c == 0 for c, f in zip(cut, full) if c != f)
    assert deserialize_message(cut, type(msg)) == msg
    # One byte less no longer decodes: nothing real was cut, nothing extra kept.
    with pytest.raises(Exception):
        deserialize_message(cut[:-1], type(msg))


def test_empty_sequences_do_not_leave_stray_bytes() -> None:
    # rmw_fastrtps returns an estimated size: 8 bytes too many for an empty JointState.
    msg = JointState()
    assert len(cdr_payload(msg)) == 4 + 32 < len(serialize_message(msg))


def test_bags_are_reproducible(tmp_path: Path) -> None:
    a, b = tmp_path / 'a' / 'bag', tmp_path / 'b' / 'bag'
    write_bag(_episode(tmp_path), a)
    write_bag(_episode(tmp_path), b)
    for name in ('bag_0.mcap', 'metadata.yaml'):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_rosbags_reads_the_bag_like_rosbag2(bag: Path) -> None:
    """rosbags re-implements rosbag2's metadata.yaml parsing (all versions) and strict CDR."""
    rosbag2 = pytest.importorskip('rosbags.rosbag2')
    typesys = pytest.importorskip('rosbags.typesys')
    store = typesys.get_typestore(typesys.Stores.ROS2_JAZZY)
    with rosbag2.Reader(bag) as reader:
        qos = {c.topic: c.ext.offered_qos_profiles[0].durability.name for c in reader.connections}
        assert qos == {t: 'TRANSIENT_LOCAL' if t in ('/tf_static', '/robot_description')
                       else 'VOLATILE' for t in EXPECTED}
        counts: dict[str, int] = {}
        for conn, t_ns, raw in reader.messages():
            msg = store.deserialize_cdr(raw, conn.msgtype)
            if conn.topic != '/robot_description':
                assert t_ns == _header_ns(msg)
            counts[conn.topic] = counts.get(conn.topic, 0) + 1
    assert counts == EXPECTED
