"""The TrueTrace sample shared by the test_truetrace_* modules, and editing helpers."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable

import pytest
from conftest import written_once

from react_ros.kinds.truetrace.sample import EPISODE, EXPORT, write_truetrace_sample

TT_SECONDS = 2.0
TT_SIZE = (192, 108)
EP = f'episodes/{EPISODE}'


def truetrace_package(factory: pytest.TempPathFactory) -> Path:
    """A 2 s, 192x108 package (with its HDF5 export) written once per session; read-only."""
    return written_once(factory, 'truetrace_package', lambda root: write_truetrace_sample(
        root, seed=5, duration_s=TT_SECONDS, width=TT_SIZE[0], height=TT_SIZE[1]))


def edit_json(path: Path, edit: Callable[[Any], Any]) -> None:
    """Change a JSON file in place through `edit(doc)` (its return value is ignored)."""
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


def edit_lines(path: Path, edit: Callable[[int, str], str | None]) -> None:
    """Rewrite a text file line by line; `edit(index, line)` returns the new line or None."""
    lines = path.read_text().splitlines()
    out = [x for x in (edit(i, line) for i, line in enumerate(lines)) if x is not None]
    path.write_text('\n'.join(out) + '\n')


def refresh_manifest(root: Path) -> None:
    """Rewrite MANIFEST.sha256 after a deliberate edit (so only --verify cases see it)."""
    lines = []
    for p in sorted(root.rglob('*')):
        if p.is_file() and p.name != 'MANIFEST.sha256':
            lines.append(f'{hashlib.sha256(p.read_bytes()).hexdigest()}  '
                         f'{p.relative_to(root).as_posix()}\n')
    (root / 'MANIFEST.sha256').write_text(''.join(lines))


__all__ = ['EP', 'EXPORT', 'TT_SECONDS', 'TT_SIZE', 'edit_json', 'edit_lines',
           'refresh_manifest', 'truetrace_package']
