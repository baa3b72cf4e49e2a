"""docs/umi.md's topic table is the episode's topics: every one, no other, each with its type."""
from __future__ import annotations

import re
from pathlib import Path

from react_ros.registry import open_episode

DOC = Path(__file__).resolve().parents[3] / 'docs' / 'umi.md'
ROW = re.compile(r'^\| `(/[^`]+)` \| ([\w/]+)')


def _table() -> dict[str, str]:
    rows = [ROW.match(line) for line in DOC.read_text().splitlines()]
    topics = [m.group(1) for m in rows if m]
    assert len(topics) == len(set(topics)), 'a topic listed twice'
    return {m.group(1): m.group(2) for m in rows if m}


def test_the_topic_table_lists_every_topic_of_the_sample_and_no_other(umi_episode: Path
                                                                     ) -> None:
    episode = open_episode(umi_episode)
    published = {s.topic: s.msg_type for s in episode.streams}
    assert {'/tf_static', '/robot_description', '/tracking/input/joy'} <= set(published)
    assert _table() == published
