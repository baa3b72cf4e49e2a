"""`react-ros info` and `info --json`: median rates from stamps, frame_ids, image sizes,
QoS, the TF tree and the kinds' checks, for every kind's sample and for a bag; the JSON
validated against react_ros/info.schema.json."""
from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import written_once
from rosbag_support import foreign_bag

from react_ros import cli
from react_ros.registry import KINDS, EpisodeOptions, find_release, open_episode
from react_ros.info import deserialized, median_rate
from react_ros.streams import Stream

SCHEMA = json.loads(resources.files('react_ros').joinpath('info.schema.json').read_text())
SAMPLED = [k for k, d in KINDS.items() if d.sample and k in ('umi', 'react', 'truetrace',
                                                               'objects', 'robotwin')]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def _document(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(_run(capsys, 'info', '--json', *args))
    jsonschema.validate(doc, SCHEMA)
    return doc


@pytest.fixture(scope='module', params=SAMPLED)
def sample(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[str], dict[str, Any]]:
    """(kind, info's arguments for one episode of its small sample, the sample's sizes)."""
    kind = KINDS[request.param]
    root = written_once(tmp_path_factory, f'info_{kind.name}',
                        lambda out: kind.sample_writer()(out, seed=3, **kind.small_sample))
    _, refs = find_release(root, kind.name)
    ref = refs[0]
    args = [str(ref.path)] + (['--episode', ref.episode] if ref.episode else [])
    return kind.name, args, dict(kind.small_sample)


def test_median_rate_ignores_a_gap_and_repeated_stamps() -> None:
    ten_hz = [i * 100_000_000 for i in range(10)]
    stamps = ten_hz + [t + 3_000_000_000 for t in ten_hz]  # a 3 s hole in the middle
    assert median_rate(stamps) == pytest.approx(10.0)
    assert median_rate([0, 0, 50_000_000, 50_000_000, 100_000_000]) == pytest.approx(20.0)
    assert median_rate([5]) is None and median_rate([]) is None and median_rate([7, 7]) is None


def test_json_validates_and_says_what_the_episode_holds(
        sample: tuple[str, list[str], dict[str, Any]],
        capsys: pytest.CaptureFixture[str]) -> None:
    kind, args, size = sample
    doc = _document(capsys, *args)
    assert doc['kind'] == kind and doc['schema_version'] == 1 and doc['bag'] is None
    opened = open_episode(Path(args[0]), kind, EpisodeOptions(
        episode=args[2] if len(args) > 2 else None))
    assert [s['topic'] for s in doc['streams']] == [s.topic for s in opened.streams]
    for facts, stream in zip(doc['streams'], opened.streams):
        stamps, first = [], None
        for t, msg in stream.open():
            stamps.append(t)
            first = msg if first is None else first
        assert facts['count'] == len(stamps), stream.topic
        if stream.latched or len(set(stamps)) < 2:
            assert facts['rate_hz'] is None, stream.topic
        else:
            assert facts['rate_hz'] == pytest.approx(median_rate(stamps)), stream.topic
        header = getattr(first, 'header', None)
        if header is not None and stream.msg_type != 'tf2_msgs/msg/TFMessage':
            assert facts['frame_id'] == header.frame_id, stream.topic
        if stream.msg_type == 'sensor_msgs/msg/Image':
            image = facts['image']
            assert (image['width'], image['height'], image['encoding']) == \
                (first.width, first.height, first.encoding), stream.topic
            if 'width' in size and not stream.labels and image['encoding'] == 'rgb8':
                assert (image['width'], image['height']) == (size['width'], size['height'])
        expected_durability = 'transient_local' if stream.latched else 'volatile'
        assert facts['qos']['durability'] == expected_durability, stream.topic
        assert facts['qos']['reliability'] == 'reliable'
        assert facts['role'] == stream.role.value
    assert doc['messages'] == sum(s['count'] for s in doc['streams'])
    edges = {(e['parent'], e['child']): e['static'] for e in doc['tf_tree']}
    for stream in opened.streams:
        if stream.msg_type != 'tf2_msgs/msg/TFMessage':
            continue
        for _, msg in stream.open():
            for tr in deserialized(msg, stream.msg_type).transforms:
                edge = (tr.header.frame_id, tr.child_frame_id)
                assert edge in edges
                if stream.latched:
                    assert edges[edge], edge


def test_a_latched_stream_has_no_rate() -> None:
    from tf2_msgs.msg import TFMessage

    from react_ros.info import stream_facts
    messages = [(0, TFMessage()), (100_000_000, TFMessage())]  # re-sent: still latched
    for latched, rate in ((True, None), (False, 10.0)):
        stream = Stream('/tf_static', 'tf2_msgs/msg/TFMessage', lambda: iter(messages),
                        latched=latched)
        facts = stream_facts(stream, {})
        assert facts['rate_hz'] == (None if rate is None else pytest.approx(rate))
        assert facts['qos']['durability'] == ('transient_local' if latched else 'volatile')


def test_text_prints_the_same_facts_and_the_checks_as_entries(
        sample: tuple[str, list[str], dict[str, Any]],
        capsys: pytest.CaptureFixture[str]) -> None:
    kind, args, _ = sample
    text = _run(capsys, 'info', *args)
    doc = _document(capsys, *args)
    for s in doc['streams']:
        rate = '-' if s['rate_hz'] is None else f'{s["rate_hz"]:.1f} Hz'
        row = re.search(rf'^  {re.escape(s["topic"])}\s+{re.escape(s["type"])}\s+'
                        rf'{s["count"]}\s+{re.escape(rate)}\s', text, re.M)
        assert row, (s['topic'], text)
    assert 'TF tree:' in text
    for e in doc['tf_tree']:
        assert re.search(rf'^\s+{re.escape(e["child"])}' + (r' \(static\)' if e['static'] else '$'),
                         text, re.M), e
    entries = doc['checks']['entries']
    assert sum(len(e['would_read']) for e in entries) == text.count('would read: ')
    passed = len(re.findall(r'^ok\s|: OK$', text, re.M))
    failed = len(re.findall(r'^FAIL\s|: FAIL$', text, re.M))
    assert sum(e['status'] == 'pass' for e in entries) == passed
    assert sum(e['status'] == 'fail' for e in entries) == failed
    if kind in ('umi', 'react', 'truetrace', 'robotwin'):
        assert passed > 0  # each states its conventions as checks


@pytest.mark.parametrize('kind,topic,hz', [('robotwin', '/head_camera/image_raw', 10.0),
                                           ('truetrace', '/hands/left/keypoints', 10.0),
                                           ('truetrace', '/cam0/image_raw', 30.0),
                                           ('objects', '/tf', 120.0)])
def test_a_steady_stream_reads_its_own_rate(kind: str, topic: str, hz: float,
                                            tmp_path_factory: pytest.TempPathFactory,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    desc = KINDS[kind]
    root = written_once(tmp_path_factory, f'info_{kind}',
                        lambda out: desc.sample_writer()(out, seed=3, **desc.small_sample))
    _, refs = find_release(root, kind)
    args = [str(refs[0].path)] + (['--episode', refs[0].episode] if refs[0].episode else [])
    doc = _document(capsys, *args)
    (facts,) = [s for s in doc['streams'] if s['topic'] == topic]
    assert round(facts['rate_hz'], 1) == hz
    assert re.search(rf'^  {re.escape(topic)}\s.*\s{hz:.1f} Hz\s', _run(capsys, 'info', *args),
                     re.M)


def test_a_bag_in_the_same_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bag = foreign_bag(tmp_path / 'bag')
    doc = _document(capsys, str(bag))
    assert doc['kind'] == 'rosbag2' and doc['bag']['files'] == ['bag.mcap']
    streams = {s['topic']: s for s in doc['streams']}
    image = streams['/camera/image_raw']
    assert image['rate_hz'] == pytest.approx(5.0) and image['count'] == 10
    assert image['frame_id'] == 'camera_optical_frame'
    assert image['image'] == {'width': 8, 'height': 6, 'encoding': 'rgb8', 'format': None}
    assert streams['/tf']['rate_hz'] == pytest.approx(10.0) and streams['/tf']['frame_id'] is None
    static = streams['/tf_static']
    assert static['rate_hz'] is None and static['latched']
    assert static['qos'] == {'reliability': 'reliable', 'durability': 'transient_local',
                             'history': 'keep_last', 'depth': 1}
    assert doc['tf_tree'] == [
        {'parent': 'base_link', 'child': 'camera_optical_frame', 'static': True},
        {'parent': 'world', 'child': 'base_link', 'static': False}]


def test_a_topic_listed_twice_says_which_row_is_which(
        umi_episode: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """UMI's /tf: the recorded transforms, and the joints' from the URDF."""
    assert cli.main(['info', str(umi_episode)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines()
            if line.split()[:1] == ['/tf']]
    assert len(rows) == 2, rows
    assert "the episode's own" in rows[0] and 'robot state' not in rows[0]
    assert "robot_state_publisher's" in rows[1] and "episode's own" not in rows[1]


@pytest.mark.parametrize('args', [('info',), ('info', '--json'), ('list',)])
def test_a_reader_that_went_away_is_no_traceback(umi_episode: Path, args: tuple[str, ...]
                                                 ) -> None:
    """`react-ros info EP | head -1`: head exits, the pipe is closed under the next write.
    Closed before the command starts here, so that every write meets it: a quiet stop with a
    SIGPIPE death's status (141), never a BrokenPipeError traceback."""
    import os
    import subprocess
    import sys
    read, write = os.pipe()
    os.close(read)
    try:
        run = subprocess.run([sys.executable, '-m', 'react_ros.cli', *args, str(umi_episode)],
                             stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert run.stderr == '' and run.returncode == 141, run.stderr
