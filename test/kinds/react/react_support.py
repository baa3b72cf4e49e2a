"""The React sample shared by the test_react_* modules, and parquet editing helpers."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from conftest import written_once

from react_ros.kinds.react.sample import EPISODE, write_react_sample

REACT_SECONDS = 2.0
REACT_SIZE = (160, 120)
PARQUET = 'data/2026-05-10/episode_000.parquet'
VIDEOS = 'videos/2026-05-10/episode_000'


def react_release(factory: pytest.TempPathFactory) -> Path:
    """A 2 s, 160x120 release written once per test session (treat as read-only)."""
    return written_once(factory, 'react_release', lambda root: write_react_sample(
        root, seed=3, duration_s=REACT_SECONDS, width=REACT_SIZE[0], height=REACT_SIZE[1]))


def read_parquet(root: Path) -> Any:
    import pyarrow.parquet as pq
    return pq.read_table(root / PARQUET)


def column(root: Path, name: str) -> np.ndarray:
    return np.asarray(read_parquet(root).column(name).to_pylist())


def rewrite_parquet(root: Path, edit: Callable[[Any], Any]) -> None:
    """Rewrite the episode parquet through `edit(table) -> table` (metadata kept)."""
    import pyarrow.parquet as pq
    path = root / PARQUET
    table = pq.read_table(path)
    meta = table.schema.metadata
    table = edit(table)
    if table.schema.metadata is None and meta is not None:
        table = table.replace_schema_metadata(meta)
    pq.write_table(table, path)


def replace_column(table: Any, name: str, values: Any) -> Any:
    import pyarrow as pa
    i = table.column_names.index(name)
    return table.set_column(i, name, pa.array(values, table.schema.field(name).type))


def edit_json(path: Path, edit: Callable[[Any], None]) -> None:
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


__all__ = ['EPISODE', 'PARQUET', 'VIDEOS', 'REACT_SIZE', 'column', 'edit_json', 'read_parquet',
           'react_release', 'replace_column', 'rewrite_parquet']
