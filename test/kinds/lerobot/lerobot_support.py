"""LeRobot samples and the edits the lerobot tests break them with."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

EPISODES = Path('meta/episodes/chunk-000/file-000.parquet')
DATA_V3 = Path('data/chunk-000/file-000.parquet')  # episodes 0 and 1
VIDEO_V3 = Path('videos/observation.images.top/chunk-000/file-000.mp4')
INFO = Path('meta/info.json')


def edit_info(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def breaker(root: Path) -> None:
        doc = json.loads((root / INFO).read_text())
        change(doc)
        (root / INFO).write_text(json.dumps(doc, indent=4))
    return breaker


def edit_parquet(rel: Path, column: str, change: Callable[[list[Any], list[int]], None]
                 ) -> Callable[[Path], None]:
    """change(values of `column`, episode_index of each row) in place."""
    def breaker(root: Path) -> None:
        table = pq.read_table(root / rel)
        values = table.column(column).to_pylist()
        change(values, table.column('episode_index').to_pylist())
        i = table.column_names.index(column)
        table = table.set_column(i, column, pa.array(values, type=table.schema.field(i).type))
        pq.write_table(table, root / rel)
    return breaker


def replace_bytes(rel: Path, old: bytes, new: bytes) -> Callable[[Path], None]:
    def breaker(root: Path) -> None:
        data = (root / rel).read_bytes()
        assert old in data
        (root / rel).write_bytes(data.replace(old, new))
    return breaker
