"""docs/truetrace.md lists every topic the sample's episode publishes (the folder and the
HDF5 export of it), with its type and QoS, and no other; PITFALLS.md names tests that exist."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_kind_truetrace import ACCEPTED, REFUSED
from truetrace_support import EP, EXPORT, truetrace_package

from react_ros.registry import open_episode

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / 'docs' / 'truetrace.md'
PITFALLS = ROOT / 'react_ros' / 'kinds' / 'truetrace' / 'PITFALLS.md'


def _table(text: str) -> dict[str, tuple[str, bool]]:
    """topic -> (type, latched) of the rows of the '## Topics' table."""
    section = text.split('## Topics', 1)[1].split('\n## ', 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) == 6 and cells[0].startswith('/'):
            rows[cells[0]] = (cells[1], cells[4] == 'latched')
    return rows


def test_doc_topic_table_is_the_episode_topics(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    root = truetrace_package(tmp_path_factory)
    published: dict[str, tuple[str, bool]] = {}
    for path in (root, root / EP, root / EXPORT):
        for s in open_episode(path, 'truetrace').streams:
            published[s.topic] = (s.msg_type, s.latched)
    table = _table(DOC.read_text())
    assert set(table) == set(published), set(table) ^ set(published)
    assert table == published


def test_doc_table_parser_sees_a_missing_row() -> None:
    text = DOC.read_text()
    dropped = re.sub(r'^\| /hands/left/keypoints_2d \|.*\n', '', text, flags=re.M)
    assert '/hands/left/keypoints_2d' in _table(text)
    assert '/hands/left/keypoints_2d' not in _table(dropped)


def test_doc_links_the_pitfalls_table() -> None:
    assert '(../react_ros/kinds/truetrace/PITFALLS.md)' in DOC.read_text()
    assert PITFALLS.is_file()


def _rows() -> list[str]:
    return [ln for ln in PITFALLS.read_text().splitlines() if re.match(r'^\| \d+ \|', ln)]


def test_pitfall_rows_are_numbered_in_order() -> None:
    # 36: the parametrized test below walks them all.
    assert [int(ln.split('|')[1]) for ln in _rows()] == list(range(1, 37))


@pytest.mark.parametrize('row', range(1, 37))
def test_every_pitfall_row_names_tests_that_exist(row: int) -> None:
    """Each test a row names is a test of this folder; each REFUSED/ACCEPTED case is in
    its table (a name ending in * is a prefix); every row names at least one."""
    [line] = [ln for ln in _rows() if ln.startswith(f'| {row} |')]
    here = Path(__file__).parent
    tests = re.findall(r'(test_\w+\.py)::(test_\w+)', line)
    for file, name in tests:
        assert re.search(rf'def {name}\(', (here / file).read_text()), (file, name)
    cases = 0
    for table, names in (('REFUSED', REFUSED), ('ACCEPTED', ACCEPTED)):
        for group in re.findall(rf'{table} ((?:\'[\w*]+\'(?:, )?)+)', line):
            for name in re.findall(r"'([\w*]+)'", group):
                cases += 1
                known = [c.name for c in names]
                assert (name in known if not name.endswith('*')
                        else any(k.startswith(name[:-1]) for k in known)), (table, name)
    assert tests or cases, f'row {row} names no test'
