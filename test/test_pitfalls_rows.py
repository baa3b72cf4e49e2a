"""Every test a kind's PITFALLS.md row names exists (react_ros/kinds/<kind>/PITFALLS.md).

A row says which test shows the pitfall is handled and which wrong reading fails it; a
renamed or removed test would leave the row pointing at nothing.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PITFALLS = sorted((ROOT / 'react_ros' / 'kinds').glob('*/PITFALLS.md'))
TESTS = {p.name: p for p in (ROOT / 'test').rglob('test_*.py')}


@pytest.mark.parametrize('doc', PITFALLS, ids=lambda p: p.parent.name)
def test_every_test_a_pitfall_row_names_exists(doc: Path) -> None:
    named = re.findall(r'(test_\w+\.py)::(test_\w+)', doc.read_text())
    assert named, f'{doc}: names no test'
    missing = [f'{file}::{name}' for file, name in named
               if file not in TESTS
               or not re.search(rf'def {name}\(', TESTS[file].read_text())]
    assert not missing, f'{doc} names tests that do not exist: {missing}'
