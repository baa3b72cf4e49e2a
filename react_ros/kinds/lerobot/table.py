"""One episode's rows of a LeRobot data parquet, checked against info.json. No ROS.

v2.1 holds one episode per file; v3.0 many, told apart by the episode_index column.
`timestamp` is seconds from the episode's start (float32, frame_index / fps as
recorded): the clock every message is stamped on.
"""
from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from react_ros.errors import DatasetFormatError
from react_ros.kinds.lerobot.meta import BOOKKEEPING, EpisodeMeta, Info, read_parquet


@dataclass
class Rows:
    path: Path
    episode: int
    timestamp_s: np.ndarray  # (n,) float64
    values: dict[str, np.ndarray]  # numeric feature -> (n, size) float64
    task_index: np.ndarray | None  # (n,) int64

    @property
    def n(self) -> int:
        return len(self.timestamp_s)


def _filter(info: Info, ep: EpisodeMeta) -> Any:
    return [('episode_index', '=', ep.index)] if info.version == 'v3.0' else None


def numeric(feature_dtype: str) -> bool:
    return feature_dtype.startswith(('float', 'int', 'uint', 'bool'))


def read_rows(info: Info, ep: EpisodeMeta) -> Rows:
    """The episode's rows, every non-image feature of info.json checked to be a column."""
    path = ep.data
    schema_names = _schema_names(path)
    wanted = [k for k, f in info.features.items() if not f.is_video]
    for key in wanted:
        if key not in schema_names:
            raise DatasetFormatError(path, f'feature {key!r} of {info.path.name} is not a column '
                                     'of the table')
    cols = [k for k in wanted if not info.features[k].is_image
            and (numeric(info.features[k].dtype) or k in BOOKKEEPING)]
    if info.version == 'v3.0' and 'episode_index' not in cols:
        cols.append('episode_index')
    table = read_parquet(path, columns=cols, filters=_filter(info, ep))
    n = table.num_rows
    if n == 0:
        raise DatasetFormatError(path, f'holds no row of episode {ep.index}')
    if n != ep.length:
        raise DatasetFormatError(path, f'holds {n} rows of episode {ep.index}, but '
                                 f'{ep.listed_in.name} says its length is {ep.length}')
    ts = _matrix(table.column('timestamp'), n, 1, path, 'timestamp')[:, 0]
    if not np.all(np.isfinite(ts)):
        raise DatasetFormatError(path, f'episode {ep.index}: timestamp is not finite at row '
                                 f'{int(np.argmax(~np.isfinite(ts)))}')
    if n > 1 and not np.all(np.diff(ts) > 0):
        row = int(np.argmax(np.diff(ts) <= 0)) + 1
        raise DatasetFormatError(path, f'episode {ep.index}: timestamp does not increase at row '
                                 f'{row} ({ts[row - 1]!r} then {ts[row]!r})')
    if ts[0] < 0:
        raise DatasetFormatError(path, f'episode {ep.index}: timestamp starts below 0 ({ts[0]!r})')
    values = {}
    for key in cols:
        f = info.features.get(key)
        if key in BOOKKEEPING or f is None:
            continue
        values[key] = _matrix(table.column(key), n, f.size, path, key)
    tasks = np.asarray(table.column('task_index').to_pylist(), dtype=np.int64) \
        if 'task_index' in table.column_names else None
    return Rows(path, ep.index, ts, values, tasks)


def _schema_names(path: Path) -> set[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    if not path.is_file():
        raise DatasetFormatError(path, 'file is missing')
    try:
        return set(pq.read_schema(path).names)
    except (pa.ArrowException, OSError, ValueError) as err:
        raise DatasetFormatError(path, f'is not a readable parquet table '
                                 f'({" ".join(str(err).split())[:200]})') from None


def _matrix(column: Any, n: int, size: int, path: Path, key: str) -> np.ndarray:
    """A scalar or fixed-size list column as (n, size) float64."""
    import pyarrow as pa
    col = column.combine_chunks() if hasattr(column, 'combine_chunks') else column
    while pa.types.is_list(col.type) or pa.types.is_fixed_size_list(col.type) \
            or pa.types.is_large_list(col.type):
        col = col.flatten()
    try:
        flat = np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)
    except (pa.ArrowException, ValueError, TypeError):
        raise DatasetFormatError(path, f'column {key!r} is not numeric') from None
    if flat.size != n * size:
        raise DatasetFormatError(path, f'column {key!r} holds {flat.size} values for {n} rows, '
                                 f'not {size} a row as info.json says')
    return flat.reshape(n, size)


def images(info: Info, ep: EpisodeMeta, key: str) -> Iterator[np.ndarray]:
    """The episode's embedded images of `key` (PNG or JPEG bytes), decoded to HxWx3 uint8."""
    from PIL import Image, UnidentifiedImageError
    table = read_parquet(ep.data, columns=[key], filters=_filter(info, ep))
    for row, cell in enumerate(table.column(key).to_pylist()):
        data = cell.get('bytes') if isinstance(cell, dict) else cell
        if not isinstance(data, (bytes, bytearray)):
            raise DatasetFormatError(ep.data, f'episode {ep.index} row {row}: {key} holds no '
                                     'image bytes')
        try:
            with Image.open(io.BytesIO(data)) as im:
                yield np.asarray(im.convert('RGB'))
        except (UnidentifiedImageError, OSError) as err:
            raise DatasetFormatError(ep.data, f'episode {ep.index} row {row}: {key} does not '
                                     f'decode ({err})') from None


def image_size(info: Info, ep: EpisodeMeta, key: str) -> tuple[int, int]:
    """(width, height) of the first embedded image of `key`: every one must have it."""
    first = next(images(info, ep, key), None)
    if first is None:
        raise DatasetFormatError(ep.data, f'episode {ep.index}: no {key} image')
    return int(first.shape[1]), int(first.shape[0])
