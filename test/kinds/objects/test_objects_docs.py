"""docs/objects.md lists every topic the sample's session publishes, and no other."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from react_ros.registry import open_episode
from react_ros.kinds.objects.sample import write_objects_sample

DOC = Path(__file__).resolve().parents[3] / 'docs' / 'objects.md'


def _table(text: str) -> dict[str, tuple[str, bool]]:
    """topic -> (type, latched) of the rows of the '## Topics' table."""
    section = text.split('## Topics', 1)[1].split('\n## ', 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) == 5 and cells[0].startswith('/'):
            rows[cells[0]] = (cells[1].split()[0], cells[4] == 'yes')
    return rows


def test_doc_topic_table_is_the_session_topics(tmp_path: Path) -> None:
    episode = open_episode(write_objects_sample(tmp_path / 'release'))
    published = {s.topic: (s.msg_type, s.latched) for s in episode.streams}
    table = _table(DOC.read_text())
    assert set(table) == set(published), set(table) ^ set(published)
    assert table == published


def test_doc_table_parser_sees_a_missing_row() -> None:
    text = DOC.read_text()
    dropped = re.sub(r'^\| /annotations \|.*\n', '', text, flags=re.M)
    assert '/annotations' in _table(text) and '/annotations' not in _table(dropped)


def test_doc_links_the_pitfalls_table() -> None:
    assert '../react_ros/kinds/objects/PITFALLS.md' in DOC.read_text()
    assert (DOC.parent.parent / 'react_ros/kinds/objects/PITFALLS.md').is_file()


@pytest.mark.parametrize('row', range(1, 18))
def test_every_pitfall_row_names_tests_that_exist(row: int) -> None:
    """Each test a PITFALLS.md row names is a test of this folder."""
    text = (DOC.parent.parent / 'react_ros/kinds/objects/PITFALLS.md').read_text()
    [line] = [ln for ln in text.splitlines() if ln.startswith(f'| {row} |')]
    here = Path(__file__).parent
    for file, name in re.findall(r'(test_\w+\.py)::(test_\w+)', line):
        assert re.search(rf'def {name}\(', (here / file).read_text()), (file, name)
