"""docs/react.md lists every topic the sample's episode publishes, and no other."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from react_support import EPISODE, react_release

from react_ros.registry import EpisodeOptions, open_episode

DOC = Path(__file__).resolve().parents[3] / 'docs' / 'react.md'


def _table(text: str) -> dict[str, tuple[str, bool]]:
    """topic -> (type, latched) of the rows of the '## Topics' table."""
    section = text.split('## Topics', 1)[1].split('\n## ', 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) == 5 and cells[0].startswith('/'):
            rows[cells[0]] = (cells[1].split()[0], cells[4] == 'yes')
    return rows


def test_doc_topic_table_is_the_episode_topics(tmp_path_factory: pytest.TempPathFactory) -> None:
    root = react_release(tmp_path_factory)
    episode = open_episode(root, options=EpisodeOptions(episode=EPISODE))
    published = {s.topic: (s.msg_type, s.latched) for s in episode.streams}
    table = _table(DOC.read_text())
    assert set(table) == set(published), (set(table) ^ set(published))
    assert table == published


def test_doc_table_parser_sees_a_missing_row() -> None:
    text = DOC.read_text()
    dropped = re.sub(r'^\| /tactile_left/values \|.*\n', '', text, flags=re.M)
    assert '/tactile_left/values' in _table(text) and '/tactile_left/values' not in \
        _table(dropped)


def test_doc_links_the_pitfalls_table() -> None:
    assert '../react_ros/kinds/react/PITFALLS.md' in DOC.read_text()
    assert (DOC.parent.parent / 'react_ros/kinds/react/PITFALLS.md').is_file()


def test_doc_says_how_to_pair_values_with_image_and_force(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """The pairing section's message_filters snippet subscribes to topics the episode
    publishes, with their types, and states the exact-stamp rule."""
    text = DOC.read_text()
    section = text.split('## Pairing tactile image, force and values', 1)[1].split('\n## ', 1)[0]
    assert 'exact stamp' in section and 'TimeSynchronizer' in section
    subscribed = {topic: kind for kind, topic in
                  re.findall(r"Subscriber\(node, (\w+), '([^']+)'\)", section)}
    assert set(subscribed) == {'/tactile_left/image_raw', '/sensor_left/force',
                               '/tactile_left/values'}
    episode = open_episode(react_release(tmp_path_factory),
                           options=EpisodeOptions(episode=EPISODE))
    types = {s.topic: s.msg_type.rsplit('/', 1)[-1] for s in episode.streams}
    assert {t: types[t] for t in subscribed} == subscribed
