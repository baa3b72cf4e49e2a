"""What every dataset kind must do, checked the same way for each (STYLE.md §11).

A kind's test module subclasses KindContract with its name, a `source` fixture
(its sample, written once per session) and the message counts its sample must
give on a few topics; it then gets every generic check below:

    class TestMyKind(KindContract):
        kind = 'mykind'
        counts = {'/tf': 120, '/cam/image_raw': 60}

        @pytest.fixture(scope='class')
        @classmethod
        def source(cls, tmp_path_factory): return write_my_sample(...)
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

import pytest

from react_ros.adapters import KINDS, detect_kind, open_episode
from react_ros.adapters.base import Episode, EpisodeOptions
from react_ros.errors import DatasetFormatError
from react_ros.formats.times import MAX_NS


class KindContract:
    kind: ClassVar[str]
    counts: ClassVar[dict[str, int]]  # topic -> messages the sample gives
    episode_id: ClassVar[str | None] = None  # --episode, for releases of many

    @pytest.fixture(scope='class')
    @classmethod
    def episode(cls, source: Path) -> Episode:
        return open_episode(source, cls.kind, EpisodeOptions(episode=cls.episode_id))

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
        topics = Counter()
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

    def test_the_bag_holds_every_stream(self, episode: Episode, tmp_path: Path) -> None:
        from rosbags.highlevel import AnyReader

        from react_ros.sinks.bag import write_bag
        write_bag(episode, tmp_path / 'bag')
        expected = Counter()
        for stream in episode.streams:
            expected[stream.topic] += stream.count if stream.count is not None else \
                sum(1 for _ in stream.open())
        with AnyReader([tmp_path / 'bag']) as reader:
            got = Counter(c.topic for c, _, _ in reader.messages())
            types = {c.topic: c.msgtype for c in reader.connections}
        assert got == expected
        for stream in episode.streams:
            assert types[stream.topic] == stream.msg_type
