"""Bags read back as episodes: rosbags' bags (versions 8 and 9, one or two files) and ours.

What the bag episode yields is compared with what the mcap package reads from the
same files, message for message (topic, log time, bytes); `info BAG`'s counts with
the mcap summaries; latching with the recorded QoS.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from mcap.reader import make_reader
from rosbag_support import N, UNKNOWN_TYPE, foreign_bag

from react_ros.convert_options import ConvertOptions
from react_ros.rosbag2.episode import open_bag
from react_ros.rosbag2.info import bag_facts
from react_ros.errors import DatasetFormatError
from react_ros.rosbag2.reader import is_rosbag2
from react_ros.streams import merge


def _mcap_messages(bag: Path) -> list[tuple[str, int, bytes]]:
    """Every message of every file the bag lists, by the mcap package, in log-time order."""
    meta = yaml.safe_load((bag / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    out = []
    for k, name in enumerate(meta['relative_file_paths']):
        with open(bag / name, 'rb') as f:
            for i, (_, ch, m) in enumerate(make_reader(f).iter_messages(log_time_order=True)):
                out.append((m.log_time, k, i, ch.topic, bytes(m.data)))
    out.sort(key=lambda e: e[:3])
    return [(topic, t, data) for t, _, _, topic, data in out]


def _episode_messages(bag: Path, start_ns: int | None = None) -> list[tuple[str, int, bytes]]:
    ep = open_bag(bag)
    its = [s.open() if start_ns is None else s.open_from(start_ns) for s in ep.streams]
    return [(ep.streams[e.stream_idx].topic, e.t_ns, bytes(e.msg)) for e in merge(its)]


@pytest.mark.parametrize('version,files', [(9, 1), (8, 1), (9, 2)])
def test_a_foreign_bag_yields_every_message_the_mcap_reader_reads(tmp_path: Path, version: int,
                                                                   files: int) -> None:
    bag = foreign_bag(tmp_path / 'bag', version=version, files=files)
    assert is_rosbag2(bag)
    want = [m for m in _mcap_messages(bag) if m[0] != '/gizmo']
    got = _episode_messages(bag)
    assert len(got) == len(want) and sorted(got) == sorted(want)
    # in log-time order, as recorded
    assert [t for _, t, _ in got] == sorted(t for _, t, _ in want)
    ep = open_bag(bag)
    assert [w for w in ep.warnings if '/gizmo' in w and UNKNOWN_TYPE in w and
            'not installed' in w], ep.warnings
    latched = {s.topic for s in ep.streams if s.latched}
    assert latched == {'/tf_static'}


def test_seeking_skips_to_the_time_asked(tmp_path: Path) -> None:
    bag = foreign_bag(tmp_path / 'bag', files=2)
    ep = open_bag(bag)
    mid = ep.start_ns + 12 * 100_000_000
    want = [m for m in _mcap_messages(bag) if m[0] != '/gizmo' and m[1] >= mid]
    assert want and _episode_messages(bag, mid) == want


def test_info_counts_what_the_mcap_reader_counts(tmp_path: Path) -> None:
    bag = foreign_bag(tmp_path / 'bag', files=2)
    facts = bag_facts(bag)
    counts: dict[str, int] = {}
    for topic, _, _ in _mcap_messages(bag):
        counts[topic] = counts.get(topic, 0) + 1
    assert {t['name']: t['count'] for t in facts['topics']} == counts
    assert facts['messages'] == sum(counts.values())
    by_name = {t['name']: t for t in facts['topics']}
    assert by_name['/tf']['rate_hz'] == pytest.approx(10.0)
    assert by_name['/camera/image_raw']['image'] == '8x6 rgb8'
    assert by_name['/camera/image_raw']['frame_id'] == 'camera_optical_frame'
    assert 'transient_local' in by_name['/tf_static']['qos']
    assert facts['tf_edges'] == {'base_link': 'world', 'camera_optical_frame': 'base_link'}
    assert facts['tf_static'] == ['camera_optical_frame']
    assert by_name['/tf']['count'] == N


def test_our_own_bag_reads_back_through_the_same_path(tmp_path: Path,
                                                      umi_episode: Path) -> None:
    from react_ros.registry import open_episode
    from react_ros.rosbag2.writer import write_bag
    bag = tmp_path / 'bag'
    write_bag(open_episode(umi_episode), bag, ConvertOptions(compression='zstd'))
    want = _mcap_messages(bag)
    got = _episode_messages(bag)
    assert sorted(got) == sorted(want)
    ep = open_bag(bag)
    assert {s.topic for s in ep.streams if s.latched} == {'/tf_static', '/robot_description'}


@pytest.mark.parametrize('edit,words', [
    (lambda m: m.update(version=3), 'metadata version 3'),
    (lambda m: m.update(storage_identifier='sqlite3'), "storage 'sqlite3'"),
    (lambda m: m['relative_file_paths'].append('gone_1.mcap'), 'gone_1.mcap'),
    (lambda m: m['topics_with_message_count'][0].update(message_count=99999), '99999'),
])
def test_a_bag_whose_metadata_is_wrong_is_refused_naming_the_file(tmp_path: Path, edit,
                                                                  words: str) -> None:
    bag = foreign_bag(tmp_path / 'bag')
    meta_path = bag / 'metadata.yaml'
    meta = yaml.safe_load(meta_path.read_text())
    edit(meta['rosbag2_bagfile_information'])
    meta_path.write_text(yaml.safe_dump(meta))
    with pytest.raises(DatasetFormatError) as err:
        open_bag(bag)
    assert words in str(err.value)
