"""What every dataset kind must do, checked the same way for each (docs/kinds.md, "Testing a kind").

Installed with the package (react_ros.kit), so a kind kept in another repository runs
the same checks as the kinds shipped here. A kind's test module subclasses KindContract
with its name and the message counts its sample must give on a few topics; it then gets
every generic check below:

    from react_ros.kit import KindContract

    class TestMyKind(KindContract):
        kind = 'mykind'
        counts = {'/tf': 120, '/cam/image_raw': 60}

`source` (the episode the checks read) is the kind's own sample at its `small_sample`
size, written once per class; a kind whose checks need another gives its own fixture:

        @pytest.fixture(scope='class')
        @classmethod
        def source(cls, tmp_path_factory): return write_my_sample(...)

Besides, a kind lists its bad inputs (REFUSED, ACCEPTED: react_ros/kit/bad_input.py),
may give the live player node parameters (live_kwargs) and other trees for the
bad inputs and the live run (the `bad_input_source` and `live_source` fixtures,
`source` by default). A check its sample cannot take is skipped by a class
attribute saying why (`no_live`, `no_release`), never silently.

Needs pytest and rosbags (requirements/test.txt) besides the package; the live run
needs a ROS 2 domain of its own (docs/kinds.md, "Testing a kind").
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

import pytest

from react_ros.registry import KINDS, detect_kind, open_episode
from react_ros.adapters.base import Episode, EpisodeOptions
from react_ros.errors import DatasetFormatError
from react_ros.formats.times import MAX_NS
from react_ros.kit.bad_input import Accepted, Refused, check_accepted, check_refused, ids


class KindContract:
    kind: ClassVar[str]
    counts: ClassVar[dict[str, int]]  # topic -> messages the sample gives
    episode_id: ClassVar[str | None] = None  # --episode, for releases of many
    REFUSED: ClassVar[list[Refused]] = []
    ACCEPTED: ClassVar[list[Accepted]] = []
    live_kwargs: ClassVar[dict[str, Any]] = {}  # more node parameters for the live run
    no_live: ClassVar[str | None] = None  # why the live run cannot be done, if it cannot
    no_release: ClassVar[str | None] = None  # why the release round trip cannot be done

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """One test per case of this kind's tables, named by the case."""
        for arg, cases in (('refused', self.REFUSED), ('accepted', self.ACCEPTED)):
            if arg not in metafunc.fixturenames:
                continue
            if not cases:  # a kind with no cases says so in the report
                reason = f'{type(self).__name__} lists no {arg.upper()} cases'
                metafunc.parametrize(arg, [pytest.param(None, marks=pytest.mark.skip(reason))])
            else:
                metafunc.parametrize(arg, cases, ids=ids(cases))

    @pytest.fixture(scope='class')
    @classmethod
    def source(cls, tmp_path_factory: pytest.TempPathFactory) -> Path:
        """The kind's own sample at its small size (override for another episode)."""
        from react_ros.kit.release import write_small_sample
        out = tmp_path_factory.mktemp(f'{cls.kind}_sample') / 'episode'
        return write_small_sample(cls.kind, out, seed=0)

    @pytest.fixture(scope='class')
    @classmethod
    def episode(cls, source: Path) -> Episode:
        return open_episode(source, cls.kind, EpisodeOptions(episode=cls.episode_id))

    @pytest.fixture(scope='class')
    @classmethod
    def bad_input_source(cls, source: Path) -> Path:
        """The tree each bad-input case breaks a copy of."""
        return source

    @pytest.fixture(scope='class')
    @classmethod
    def live_source(cls, source: Path) -> Path:
        """What the live run plays (a kind whose sample is long gives a shorter one)."""
        return source

    @pytest.fixture(scope='class')
    @classmethod
    def sample_bag(cls, episode: Episode, tmp_path_factory: pytest.TempPathFactory) -> Path:
        from react_ros.rosbag2.writer import write_bag
        bag = tmp_path_factory.mktemp(f'{cls.kind}_bag') / 'bag'
        write_bag(episode, bag)
        return bag

    def test_the_kind_is_registered_with_a_sample_config_and_rviz(self) -> None:
        kind = KINDS[self.kind]
        assert kind.sample_writer() is not None
        assert kind.config() is not None
        assert kind.rviz_source.is_file() and kind.folder.name == self.kind
        assert kind.adapter.kind == self.kind

    def test_only_this_kind_claims_its_sample(self, source: Path) -> None:
        assert detect_kind(source) == self.kind
        assert [k for k, d in KINDS.items() if d.adapter.probe(source)] == [self.kind]

    def test_a_foreign_folder_is_refused(self, tmp_path: Path) -> None:
        (tmp_path / 'notes.txt').write_text('not a dataset\n')
        assert not KINDS[self.kind].adapter.probe(tmp_path)
        assert not KINDS[self.kind].adapter.probe(tmp_path / 'missing')
        with pytest.raises(DatasetFormatError):
            open_episode(tmp_path, self.kind)

    def test_streams_are_sorted_on_one_time_base(self, episode: Episode) -> None:
        assert 0 < episode.start_ns <= episode.end_ns <= MAX_NS
        topics: Counter[str] = Counter()
        for stream in episode.streams:
            stamps = [t for t, _ in stream.open()]
            assert stamps == sorted(stamps), stream.topic
            assert all(episode.start_ns <= t <= episode.end_ns for t in stamps), stream.topic
            if stream.count is not None:
                assert stream.count == len(stamps), stream.topic
            topics[stream.topic] += len(stamps)
        for topic, n in self.counts.items():
            assert topics[topic] == n, topic

    def test_every_message_is_its_declared_type_and_serialises(self, episode: Episode) -> None:
        from rclpy.serialization import deserialize_message, serialize_message

        from react_ros.ros.msgs import message_class
        for stream in episode.streams:
            cls: Any = message_class(stream.msg_type)
            for i, (_, msg) in enumerate(stream.open()):
                if i >= 5:  # the first few of each: the types, not the volume
                    break
                if isinstance(msg, bytes):
                    msg = deserialize_message(msg, cls)
                assert isinstance(msg, cls), stream.topic
                assert deserialize_message(serialize_message(msg), cls) == msg, stream.topic

    def test_the_bag_holds_every_stream(self, episode: Episode, sample_bag: Path) -> None:
        from rosbags.highlevel import AnyReader
        with AnyReader([sample_bag]) as reader:
            got = Counter(c.topic for c, _, _ in reader.messages())
            types = {c.topic: c.msgtype for c in reader.connections}
        assert got == _messages_by_topic(episode)
        for stream in episode.streams:
            assert types[stream.topic] == stream.msg_type

    def test_the_bag_reads_the_same_through_two_readers(self, sample_bag: Path) -> None:
        """rosbags' AnyReader and react_ros's own reader (which `play` uses on bags) agree."""
        from rosbags.highlevel import AnyReader

        from react_ros.rosbag2.reader import Rosbag2
        with AnyReader([sample_bag]) as reader:
            theirs = [(c.topic, c.msgtype, t, bytes(raw)) for c, t, raw in reader.messages()]
        bag = Rosbag2(sample_bag)
        ours = [(m.topic, m.schema_name, m.log_time_ns, bytes(m.data)) for m in bag.messages()]
        assert theirs, 'the bag holds nothing'
        for read in (theirs, ours):
            stamps = [t for _, _, t, _ in read]
            assert stamps == sorted(stamps)
        # ties (one stamp on two topics) may come in either order: compare per topic
        assert _by_topic(ours) == _by_topic(theirs)
        assert {t.name: (t.type, t.count) for t in bag.topics} == {
            topic: (rows[0][0], len(rows)) for topic, rows in _by_topic(theirs).items()}

    def test_bad_input_is_refused(self, refused: Refused, bad_input_source: Path,
                                  tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
        check_refused(refused, bad_input_source, tmp_path, capfd)

    def test_odd_input_is_converted_with_a_warning(self, accepted: Accepted,
                                                   bad_input_source: Path, tmp_path: Path,
                                                   capfd: pytest.CaptureFixture[str]) -> None:
        check_accepted(accepted, bad_input_source, tmp_path, capfd)

    @pytest.mark.timeout(240)
    def test_live_run_delivers_every_topic(self, live_source: Path, tmp_path: Path) -> None:
        """The player node, paused, then played to its end: a subscriber on every topic of
        the episode gets each one, and as many messages as the streams that count them say."""
        if self.no_live:
            pytest.skip(self.no_live)
        from react_ros.kit.live import receive_a_play, spawn_player
        episode = open_episode(live_source, self.kind, EpisodeOptions(episode=self.episode_id))
        streams = {s.topic: s for s in episode.streams}  # a topic's streams share its type
        counted = _counted_topics(episode)
        # the player publishes the robot-state streams too, so every stream has its topic
        params = {'publish_robot_state': True, **self.live_kwargs}
        if self.episode_id is not None:
            params.setdefault('episode_id', self.episode_id)
        log = tmp_path / 'player.log'
        got = receive_a_play(  # /tf_static: joined late, as a latecomer would
            f'{self.kind}_contract_listener',
            {t: s.msg_type for t, s in streams.items() if t != '/tf_static'}, log,
            lambda log: spawn_player(live_source, log, start_paused=True, **params),
            # a latched topic's messages may come before this reader matches: keep them
            {t: _latched_reader() for t, s in streams.items() if s.latched})
        for topic, stream in streams.items():
            assert got[topic], f'nothing arrived on {topic}; player log:\n{log.read_text()}'
            if stream.latched:
                # a latched writer keeps its last message only (qos.LATCHED): one not yet
                # acknowledged when the next comes is replaced, so at most that many arrive
                assert len(got[topic]) <= max(1, counted.get(topic, 1)), topic
            elif topic in counted:
                assert len(got[topic]) == counted[topic], \
                    f'{topic}: {len(got[topic])} of {counted[topic]}; {log.read_text()}'
            stamps = [t for t in map(_stamp_or_none, got[topic]) if t is not None]
            assert stamps == sorted(stamps), topic

    def test_release_round_trip(self, tmp_path: Path, capfd: pytest.CaptureFixture[str]
                                ) -> None:
        """A small release of two episodes through `react-ros convert-all`: each episode's
        bag holds that episode's messages, topic by topic, stamp by stamp."""
        if self.no_release:
            pytest.skip(self.no_release)
        from react_ros.kit.release import index_of, run, write_release
        _, refs = write_release(self.kind, tmp_path / 'release', n=2)
        out = tmp_path / 'bags'
        code, _, err = run(capfd, 'convert-all', tmp_path / 'release', '-o', out)
        assert code == 0, err
        index = index_of(out)
        assert sorted(index) == sorted(r.id for r in refs)
        for ref in refs:
            entry = index[ref.id]
            assert entry['status'] == 'converted', entry
            episode = open_episode(ref.path, self.kind, EpisodeOptions(episode=ref.episode))
            _assert_same_messages(_bag_messages(out / entry['bag']),
                                  _episode_messages(episode), ref.id)


def _latched_reader() -> Any:
    """Reliable and transient local as a latched writer offers, deep enough to keep all."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    return QoSProfile(depth=10000, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def _messages_by_topic(episode: Episode) -> Counter[str]:
    """Messages per topic the episode gives (several streams may share a topic)."""
    out: Counter[str] = Counter()
    for stream in episode.streams:
        out[stream.topic] += stream.count if stream.count is not None else \
            sum(1 for _ in stream.open())
    return out


def _counted_topics(episode: Episode) -> dict[str, int]:
    """Messages per topic, for the topics whose every stream knows its count."""
    uncounted = {s.topic for s in episode.streams if s.count is None}
    return {t: n for t, n in _messages_by_topic(episode).items() if t not in uncounted}


def _episode_messages(episode: Episode) -> dict[str, dict[int, list[Any]]]:
    """Every message of the episode by topic and stamp: what a bag of it must hold."""
    from rclpy.serialization import deserialize_message

    from react_ros.ros.msgs import message_class
    out: dict[str, dict[int, list[Any]]] = {}
    for stream in episode.streams:
        cls = message_class(stream.msg_type)
        for t, msg in stream.open():
            if isinstance(msg, bytes):
                msg = deserialize_message(msg, cls)
            out.setdefault(stream.topic, {}).setdefault(t, []).append(msg)
    return out


def _bag_messages(bag: Path) -> dict[str, dict[int, list[Any]]]:
    """The same of a bag, read through rosbags and deserialised by rclpy.

    Messages are compared, not bytes: rclpy leaves CDR's padding bytes as they were
    in memory, so one message serialises to different bytes from run to run.
    """
    from rclpy.serialization import deserialize_message
    from rosbags.highlevel import AnyReader

    from react_ros.ros.msgs import message_class
    out: dict[str, dict[int, list[Any]]] = {}
    with AnyReader([bag]) as reader:
        for connection, t, raw in reader.messages():
            msg: Any = deserialize_message(bytes(raw), message_class(connection.msgtype))
            out.setdefault(connection.topic, {}).setdefault(t, []).append(msg)
    return out


def _assert_same_messages(got: dict[str, dict[int, list[Any]]],
                          want: dict[str, dict[int, list[Any]]], what: str) -> None:
    assert sorted(got) == sorted(want), what
    for topic, by_stamp in want.items():
        assert sorted(got[topic]) == sorted(by_stamp), f'{what} {topic}: other stamps'
        for t, msgs in by_stamp.items():
            # messages are not ordered (nor hashable): ties at one stamp match in any order
            others = list(got[topic][t])
            for msg in msgs:
                assert msg in others, f'{what} {topic} at {t}: a message differs'
                others.remove(msg)


def _by_topic(rows: list[tuple[str, str, int, bytes]]) -> dict[str, list[tuple]]:
    out: dict[str, list[tuple]] = {}
    for topic, msgtype, t, data in rows:
        out.setdefault(topic, []).append((msgtype, t, data))
    return {topic: sorted(v) for topic, v in out.items()}


def _stamp_or_none(msg: Any) -> int | None:
    from react_ros.ros.msgs import to_ns
    if hasattr(msg, 'header'):
        return to_ns(msg.header.stamp)
    if getattr(msg, 'transforms', None):
        return to_ns(msg.transforms[0].header.stamp)
    return None


__all__ = ['KindContract']
