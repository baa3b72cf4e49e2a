"""A bag without metadata.yaml: a lone .mcap file, or a bag folder that lost it.

`ros2 bag info/play` read such a bag from the MCAP's own summary; so do `info` and `play`:
the same topics, types, counts, times and offered QoS as with the metadata (rosbag2's MCAP
plugin, and react_ros's writer, keep each topic's `offered_qos_profiles` in its channel's
metadata too), and one line saying what was missing and what was read instead. A channel
whose schema is missing is said to be so, not taken for a type that is not installed.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mcap.reader import make_reader
from mcap.writer import Writer
from rosbag_support import foreign_bag

from react_ros import cli
from react_ros.rosbag2.episode import open_bag
from react_ros.rosbag2.info import bag_facts


@pytest.fixture(scope='module')
def converted(tmp_path_factory: pytest.TempPathFactory, umi_episode: Path) -> Path:
    from react_ros.registry import open_episode
    from react_ros.rosbag2.writer import write_bag
    bag = tmp_path_factory.mktemp('converted') / 'bag'
    write_bag(open_episode(umi_episode), bag)
    return bag


def _without_metadata(bag: Path, where: Path) -> Path:
    copy = Path(shutil.copytree(bag, where))
    (copy / 'metadata.yaml').unlink()
    return copy


def _topics(facts: dict) -> list[tuple]:
    return [(t['name'], t['type'], t['count'], t['qos'], t['offered'], t['latched'],
             t['rate_hz'], t['frame_id'], t.get('image')) for t in facts['topics']]


def _streams(path: Path) -> list[tuple]:
    return [(s.topic, s.msg_type, s.count, s.latched, s.heavy) for s in open_bag(path).streams]


@pytest.mark.parametrize('source', ['converted', 'foreign, split over two files'])
def test_the_mcap_summary_gives_what_the_metadata_gave(source: str, converted: Path,
                                                       tmp_path: Path) -> None:
    bag = converted if source == 'converted' else foreign_bag(tmp_path / 'bag', files=2)
    lost = _without_metadata(bag, tmp_path / 'lost')
    with_meta, without = bag_facts(bag), bag_facts(lost)
    assert _topics(without) == _topics(with_meta)
    assert all(t['offered'] for t in without['topics'])  # QoS read, not defaulted
    for key in ('messages', 'start_ns', 'end_ns', 'files', 'tf_edges', 'tf_static'):
        assert without[key] == with_meta[key], key
    assert _streams(lost) == _streams(bag)
    (note,) = [w for w in open_bag(lost).warnings if 'metadata.yaml' in w]
    assert note.startswith(f'{lost}: no metadata.yaml') and 'summary of' in note
    assert all(f in note for f in with_meta['files'])
    assert not any('metadata.yaml' in w for w in open_bag(bag).warnings)
    if source == 'converted':  # and a lone file of it, given by its path
        (mcap,) = lost.glob('*.mcap')
        assert _topics(bag_facts(mcap)) == _topics(with_meta)
        assert _streams(mcap) == _streams(bag)


def test_info_prints_the_same_and_says_what_it_read(converted: Path, tmp_path: Path,
                                                    capfd: pytest.CaptureFixture[str]) -> None:
    lost = _without_metadata(converted, tmp_path / 'lost')
    capfd.readouterr()
    outputs = []
    for path in (converted, lost):
        assert cli.main(['info', str(path)]) == 0
        out, err = capfd.readouterr()
        assert err == ''
        outputs.append(out.splitlines())
    storage = [i for i, line in enumerate(outputs[0]) if line.startswith('Storage id:')]
    assert 'no metadata.yaml' in outputs[1][storage[0]]
    del outputs[0][storage[0]], outputs[1][storage[0]]
    # the bag size counts metadata.yaml's bytes too
    assert [line for line in outputs[1] if not line.startswith('Bag size')] == \
        [line for line in outputs[0] if not line.startswith('Bag size')]


def test_a_folder_that_is_not_only_mcap_is_not_taken_for_a_bag(umi_episode: Path) -> None:
    """UMI's data/ holds its episode.mcap among the videos: a dataset's folder, not a bag."""
    from react_ros.rosbag2.reader import is_rosbag2
    assert not is_rosbag2(umi_episode / 'data')
    assert not is_rosbag2(umi_episode)
    assert is_rosbag2(umi_episode / 'data' / 'episode.mcap')


def _schemas_lost(src: Path, dst: Path) -> Path:
    """`src`'s messages again, /gizmo on a channel without schema (id 0) and /chatter on
    one naming a schema id the file never defines."""
    with src.open('rb') as f, dst.open('wb') as out:
        reader = make_reader(f)
        writer = Writer(out)
        writer.start(profile='ros2', library='test')
        schemas: dict[int, int] = {}
        channels: dict[int, int] = {}
        for schema, ch, m in reader.iter_messages(log_time_order=True):
            if ch.id not in channels:
                if ch.topic == '/gizmo':
                    sid = 0
                elif ch.topic == '/chatter':
                    sid = 99
                else:
                    if schema.id not in schemas:
                        schemas[schema.id] = writer.register_schema(schema.name,
                                                                    schema.encoding,
                                                                    schema.data)
                    sid = schemas[schema.id]
                channels[ch.id] = writer.register_channel(ch.topic, ch.message_encoding, sid,
                                                          ch.metadata)
            writer.add_message(channels[ch.id], m.log_time, m.data, m.publish_time)
        writer.finish()
    return dst


def test_a_channel_without_schema_is_reported_as_such(tmp_path: Path,
                                                      capfd: pytest.CaptureFixture[str]) -> None:
    bag = foreign_bag(tmp_path / 'bag')
    lone = _schemas_lost(bag / 'bag.mcap', tmp_path / 'lone.mcap')
    ep = open_bag(lone)
    says = {t: [w for w in ep.warnings if f'topic {t} ' in w] for t in ('/gizmo', '/chatter')}
    assert 'no schema' in says['/gizmo'][0] and 'schema id 0' in says['/gizmo'][0], ep.warnings
    assert 'schema id 99 is not in the file' in says['/chatter'][0], ep.warnings
    assert not any('not installed' in w or '()' in w for w in ep.warnings), ep.warnings
    assert {s.topic for s in ep.streams} == {'/tf', '/tf_static', '/camera/image_raw'}
    capfd.readouterr()
    assert cli.main(['info', str(lone)]) == 0
    out = capfd.readouterr().out
    assert 'Topic: /gizmo | Type: none, the channel has no schema' in out, out
