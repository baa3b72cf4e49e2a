"""A LeRobot dataset's metadata (codebase v2.1 and v3.0): meta/info.json, the episode
list and the tasks. No ROS here; every fault is a DatasetFormatError naming its file.

v3.0: meta/episodes/chunk-XXX/file-XXX.parquet (a row per episode: its length, tasks,
data file, and per video key its file and from_timestamp/to_timestamp inside a video
that concatenates episodes), meta/tasks.parquet (task text -> task_index).
v2.1: meta/episodes.jsonl ({episode_index, tasks, length} a line), meta/tasks.jsonl.
Paths of data and videos come from info.json's data_path/video_path templates.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from react_ros.errors import DatasetFormatError

INFO = Path('meta') / 'info.json'
VERSIONS = ('v2.1', 'v3.0')
# Columns every LeRobot table has besides its features' own (bookkeeping, not topics).
BOOKKEEPING = ('timestamp', 'frame_index', 'episode_index', 'index', 'task_index')


@dataclass(frozen=True)
class Feature:
    key: str
    dtype: str
    shape: tuple[int, ...]
    names: tuple[str, ...] | None  # one per value, where info.json names them
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def is_video(self) -> bool:
        return self.dtype == 'video'

    @property
    def is_image(self) -> bool:
        return self.dtype == 'image'

    @property
    def is_depth(self) -> bool:
        return bool(self.info.get('video.is_depth_map') or self.info.get('is_depth_map'))

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class Info:
    path: Path
    version: str
    fps: float
    features: dict[str, Feature]
    data_path: str
    video_path: str | None
    chunks_size: int
    robot_type: str | None

    @property
    def video_keys(self) -> list[str]:
        return [k for k, f in self.features.items() if f.is_video]


@dataclass(frozen=True)
class VideoPart:
    path: Path
    from_s: float  # where the episode starts in the file
    to_s: float | None  # where it ends (v2.1: None, the whole file)


@dataclass(frozen=True)
class EpisodeMeta:
    index: int
    length: int
    tasks: tuple[str, ...]
    data: Path
    videos: dict[str, VideoPart]
    listed_in: Path  # the file that lists it (what a fault of its entry names)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding='utf-8'))
    except FileNotFoundError:
        raise DatasetFormatError(path, 'file is missing') from None
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise DatasetFormatError(path, f'is not readable JSON ({_one_line(err)})') from None


def _one_line(err: BaseException) -> str:
    return ' '.join(str(err).split())[:200] or type(err).__name__


def looks_like(root: Path) -> bool:
    """A LeRobot root: meta/info.json an object with codebase_version and features."""
    try:
        path = Path(root) / INFO
        if not path.is_file() or path.stat().st_size > 10_000_000:
            return False
        doc = json.loads(path.read_text(encoding='utf-8'))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and isinstance(doc.get('codebase_version'), str) \
        and isinstance(doc.get('features'), dict)


def read_info(root: Path) -> Info:
    path = Path(root) / INFO
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise DatasetFormatError(path, 'is not a JSON object')
    version = doc.get('codebase_version')
    if version not in VERSIONS:
        raise DatasetFormatError(path, f'codebase_version {version!r} is not one this reader '
                                 f'knows ({" or ".join(VERSIONS)})')
    fps = doc.get('fps')
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not fps > 0:
        raise DatasetFormatError(path, f"'fps' must be a positive number, not {fps!r}")
    features = {}
    raw = doc.get('features')
    if not isinstance(raw, dict) or not raw:
        raise DatasetFormatError(path, "'features' must be a non-empty object")
    for key, spec in raw.items():
        features[key] = _feature(path, key, spec)
    if 'timestamp' not in features:
        raise DatasetFormatError(path, "features has no 'timestamp'")
    data_path = doc.get('data_path')
    video_path = doc.get('video_path')
    if not isinstance(data_path, str):
        raise DatasetFormatError(path, "'data_path' must be a path template")
    if any(f.is_video for f in features.values()) and not isinstance(video_path, str):
        raise DatasetFormatError(path, "'video_path' must be a path template (features "
                                 'include videos)')
    chunks = doc.get('chunks_size', 1000)
    if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
        raise DatasetFormatError(path, f"'chunks_size' must be a positive integer, not {chunks!r}")
    robot = doc.get('robot_type')
    return Info(path, version, float(fps), features, data_path, video_path, chunks,
                robot if isinstance(robot, str) else None)


def _feature(path: Path, key: str, spec: Any) -> Feature:
    if not isinstance(spec, dict) or not isinstance(spec.get('dtype'), str):
        raise DatasetFormatError(path, f'feature {key!r} has no dtype')
    shape = spec.get('shape', [1])
    if not isinstance(shape, list) or not all(isinstance(d, int) and d > 0 for d in shape):
        raise DatasetFormatError(path, f'feature {key!r}: shape {shape!r} is not a list of sizes')
    names = spec.get('names')
    if isinstance(names, dict):  # v2.0-era {"motors": [...]}: one list of value names
        lists = [v for v in names.values() if isinstance(v, list)]
        names = lists[0] if len(lists) == 1 else None
    if isinstance(names, list) and all(isinstance(n, str) for n in names) \
            and len(names) == _size(shape) and len(shape) == 1:
        value_names: tuple[str, ...] | None = tuple(names)
    else:
        value_names = None  # absent, or axis names of an image (height, width, channels)
    info = spec.get('info') if isinstance(spec.get('info'), dict) else {}
    return Feature(key, spec['dtype'], tuple(shape), value_names, dict(info or {}))


def _size(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _fill(template: str, path: Path, **values: Any) -> str:
    try:
        return template.format(**values)
    except (KeyError, IndexError, ValueError) as err:
        raise DatasetFormatError(path, f'path template {template!r} cannot be filled '
                                 f'({_one_line(err)})') from None


# -- v2.1 ------------------------------------------------------------------------------------
def _jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    try:
        text = path.read_text(encoding='utf-8')
    except FileNotFoundError:
        raise DatasetFormatError(path, 'file is missing') from None
    except (OSError, UnicodeDecodeError) as err:
        raise DatasetFormatError(path, f'cannot be read ({_one_line(err)})') from None
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            raise DatasetFormatError(path, f'line {n} is not JSON') from None
        if not isinstance(doc, dict):
            raise DatasetFormatError(path, f'line {n} is not a JSON object')
        out.append((n, doc))
    return out


def _int(value: Any, path: Path, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DatasetFormatError(path, f'{what} must be an integer >= 0, not {value!r}')
    return value


def _episodes_v21(root: Path, info: Info) -> list[EpisodeMeta]:
    path = root / 'meta' / 'episodes.jsonl'
    out = []
    for n, doc in _jsonl(path):
        k = _int(doc.get('episode_index'), path, f'line {n}: episode_index')
        length = _int(doc.get('length'), path, f'line {n}: length')
        tasks = doc.get('tasks', [])
        if not isinstance(tasks, list) or not all(isinstance(t, str) for t in tasks):
            raise DatasetFormatError(path, f'line {n}: tasks must be a list of strings')
        chunk = k // info.chunks_size
        data = root / _fill(info.data_path, info.path, episode_chunk=chunk, episode_index=k)
        videos = {key: VideoPart(root / _fill(info.video_path or '', info.path,
                                              episode_chunk=chunk, video_key=key,
                                              episode_index=k), 0.0, None)
                  for key in info.video_keys}
        out.append(EpisodeMeta(k, length, tuple(tasks), data, videos, path))
    return out


def _tasks_v21(root: Path) -> dict[int, str]:
    path = root / 'meta' / 'tasks.jsonl'
    if not path.exists():
        return {}
    out = {}
    for n, doc in _jsonl(path):
        k = _int(doc.get('task_index'), path, f'line {n}: task_index')
        if not isinstance(doc.get('task'), str):
            raise DatasetFormatError(path, f'line {n}: task must be a string')
        out[k] = doc['task']
    return out


# -- v3.0 ------------------------------------------------------------------------------------
def read_parquet(path: Path, columns: list[str] | None = None, filters: Any = None) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq
    if not path.is_file():
        raise DatasetFormatError(path, 'file is missing')
    try:
        return pq.read_table(path, columns=columns, filters=filters)
    except (pa.ArrowException, OSError, ValueError) as err:
        raise DatasetFormatError(path, f'is not a readable parquet table '
                                 f'({_one_line(err)})') from None


def _episodes_v30(root: Path, info: Info) -> list[EpisodeMeta]:
    files = sorted((root / 'meta' / 'episodes').glob('chunk-*/file-*.parquet'))
    if not files:
        raise DatasetFormatError(root / 'meta' / 'episodes', 'holds no '
                                 'chunk-XXX/file-XXX.parquet episode table')
    out = []
    for path in files:
        rows = read_parquet(path).to_pylist()
        for n, row in enumerate(rows):
            out.append(_episode_v30(root, info, path, n, row))
    return out


def _episode_v30(root: Path, info: Info, path: Path, n: int, row: dict[str, Any]) -> EpisodeMeta:
    where = f'row {n}'

    def need(col: str) -> Any:
        if col not in row or row[col] is None:
            raise DatasetFormatError(path, f'{where}: no {col!r}')
        return row[col]
    k = _int(need('episode_index'), path, f'{where}: episode_index')
    where = f'episode {k}'
    length = _int(need('length'), path, f'{where}: length')
    tasks = row.get('tasks') or []
    if not isinstance(tasks, list) or not all(isinstance(t, str) for t in tasks):
        raise DatasetFormatError(path, f'{where}: tasks must be a list of strings')
    data = root / _fill(info.data_path, info.path,
                        chunk_index=_int(need('data/chunk_index'), path, f'{where}: data/chunk_index'),
                        file_index=_int(need('data/file_index'), path, f'{where}: data/file_index'))
    videos = {}
    for key in info.video_keys:
        pre = f'videos/{key}/'
        file = root / _fill(info.video_path or '', info.path, video_key=key,
                            chunk_index=_int(need(pre + 'chunk_index'), path, f'{where}: {pre}chunk_index'),
                            file_index=_int(need(pre + 'file_index'), path, f'{where}: {pre}file_index'))
        a, b = need(pre + 'from_timestamp'), need(pre + 'to_timestamp')
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b)) \
                or not 0 <= a < b:
            raise DatasetFormatError(path, f'{where}: {pre}from_timestamp {a!r} and '
                                     f'to_timestamp {b!r} are no interval of seconds')
        videos[key] = VideoPart(file, float(a), float(b))
    return EpisodeMeta(k, length, tuple(tasks), data, videos, path)


def _tasks_v30(root: Path) -> dict[int, str]:
    path = root / 'meta' / 'tasks.parquet'
    if not path.exists():
        return {}
    table = read_parquet(path)
    names = table.column_names
    text_col = 'task' if 'task' in names else _pandas_index(table)
    if text_col is None or 'task_index' not in names:
        raise DatasetFormatError(path, 'has no task text and task_index columns')
    return {int(i): str(t) for t, i in zip(table.column(text_col).to_pylist(),
                                            table.column('task_index').to_pylist())}


def _pandas_index(table: Any) -> str | None:
    """The column pandas stored a DataFrame's index in (LeRobot indexes tasks by text)."""
    meta = (table.schema.metadata or {}).get(b'pandas')
    try:
        index = json.loads(meta)['index_columns'] if meta else []
    except (ValueError, KeyError):
        return None
    return index[0] if index and isinstance(index[0], str) else None


def read_episodes(root: Path, info: Info) -> list[EpisodeMeta]:
    episodes = _episodes_v21(root, info) if info.version == 'v2.1' else _episodes_v30(root, info)
    seen: set[int] = set()
    for ep in episodes:
        if ep.index in seen:
            raise DatasetFormatError(ep.listed_in, f'episode {ep.index} is listed twice')
        seen.add(ep.index)
    return sorted(episodes, key=lambda e: e.index)


def read_tasks(root: Path, info: Info) -> dict[int, str]:
    return _tasks_v21(root) if info.version == 'v2.1' else _tasks_v30(root)


def episode_files(root: Path, info: Info) -> list[Path]:
    """The metadata files every episode's conversion reads."""
    meta = root / 'meta'
    listed = [meta / 'episodes.jsonl', meta / 'tasks.jsonl'] if info.version == 'v2.1' else \
        [*sorted((meta / 'episodes').glob('chunk-*/file-*.parquet')), meta / 'tasks.parquet']
    return [info.path, *(p for p in listed if p.is_file())]
