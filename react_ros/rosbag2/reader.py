"""A rosbag2 bag in MCAP storage, as plain records: no rclpy.

A bag is a folder with `metadata.yaml` (`rosbag2_bagfile_information`, versions 4 to 9)
naming its files in `relative_file_paths`, or one `.mcap` file on its own (what Foxglove
and other tools write), or a folder of `.mcap` files whose metadata.yaml was lost (copied
without it, or a recorder killed before writing it). What the metadata says is checked
where it is read, and the files' own summaries are the truth for counts and times: a bag
whose metadata and files disagree is refused, naming the file.

Without metadata.yaml, as `ros2 bag info/play` do, everything comes from the MCAP summary:
topics and types from its channels and schemas, counts from its statistics, and each
topic's offered QoS from the channel's `offered_qos_profiles` metadata (rosbag2's MCAP
plugin writes it there too, as does react_ros). `Rosbag2.notes` says, in one line, what
was missing and what was read instead.

Differences between versions that matter here:
- 4 added `offered_qos_profiles`; up to 8 it is one YAML *string* (enums as integers),
  from 9 a YAML sequence (enums as names). Both are read into plain dicts.
- `relative_file_paths` are relative to the bag's folder from 4 on (older bags named
  them with the folder; only the file name is used, as rosbag2 does).
- A bag compressed per file (`compression_mode: FILE`, files `*.mcap.zstd`) is not read:
  MCAP compresses its own chunks, which is what every bag here uses.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any, Iterable, Iterator

import yaml

from react_ros.errors import DatasetFormatError
from react_ros.formats.mcap_bag import McapBag, RawMessage

METADATA = 'metadata.yaml'
VERSIONS = range(4, 10)
# rmw's QoS enums as metadata versions <= 8 write them (integers), by policy
_DURABILITY = {0: 'system_default', 1: 'transient_local', 2: 'volatile', 3: 'unknown'}
_RELIABILITY = {0: 'system_default', 1: 'reliable', 2: 'best_effort', 3: 'unknown'}
_HISTORY = {0: 'system_default', 1: 'keep_last', 2: 'keep_all', 3: 'unknown'}


@dataclass(frozen=True)
class Topic:
    name: str
    type: str  # 'sensor_msgs/msg/Image'
    serialization_format: str
    count: int
    qos: list[dict[str, Any]] = field(default_factory=list)  # offered, one per publisher
    type_hash: str = ''

    @property
    def latched(self) -> bool:
        """Offered transient local by every publisher: a late subscriber gets the last one."""
        return bool(self.qos) and all(q.get('durability') == 'transient_local'
                                      for q in self.qos)

    def qos_summary(self) -> str:
        if not self.qos:
            return '-'
        seen = []
        for q in self.qos:
            text = f'{q.get("reliability", "?")}, {q.get("durability", "?")}'
            if q.get('history') == 'keep_last' and q.get('depth'):
                text += f', keep last {q["depth"]}'
            elif q.get('history') == 'keep_all':
                text += ', keep all'
            if text not in seen:
                seen.append(text)
        return '; '.join(seen)


class Rosbag2:
    """A bag folder (or one .mcap), its metadata checked against its files on open."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.notes: list[str] = []  # what was missing and what was read instead
        if self.path.is_file() or not (self.path / METADATA).exists():
            self.version = None
            self.files = [self.path] if self.path.is_file() else mcap_files(self.path)
            if not self.files:
                raise DatasetFormatError(self.path / METADATA, 'is missing, and the folder '
                                         'holds no .mcap file to read the bag from')
            self._bags = [McapBag(f) for f in self.files]
            self.topics = self._topics_from_files({})
            names = ', '.join(f.name for f in self.files)
            where = f'{self.path}: no {METADATA} (a lone MCAP file)' if self.path.is_file() \
                else f'{self.path}: no {METADATA}'
            self.notes.append(f'{where}: topics, types, counts and QoS read from the '
                              f'summary of {names}, as ros2 bag does')
        else:
            meta_path = self.path / METADATA
            info = _metadata(meta_path)
            self.version = info['version']
            self.files = self._files(info, meta_path)
            self._bags = [McapBag(f) for f in self.files]
            self.topics = self._topics_from_files(self._declared_topics(info, meta_path))
        starts = [b.start_ns for b in self._bags if _has_messages(b)]
        ends = [b.end_ns for b in self._bags if _has_messages(b)]
        self.start_ns = min(starts) if starts else 0
        self.end_ns = max(ends) if ends else 0
        self.message_count = sum(t.count for t in self.topics)

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def size_bytes(self) -> int:
        return sum(f.stat().st_size for f in self.files)

    def _files(self, info: dict[str, Any], meta_path: Path) -> list[Path]:
        storage = info.get('storage_identifier')
        if storage != 'mcap':
            raise DatasetFormatError(meta_path, f'storage {storage!r}: react_ros reads rosbag2 '
                                     "bags in MCAP storage ('mcap'); convert with "
                                     'ros2 bag convert')
        if str(info.get('compression_mode') or '').lower() in ('file', 'message'):
            raise DatasetFormatError(meta_path, f'compression_mode '
                                     f'{info["compression_mode"]!r}: compressed per file or '
                                     'message; decompress with ros2 bag convert (MCAP chunk '
                                     'compression is read as it is)')
        names = info.get('relative_file_paths')
        if not isinstance(names, list) or not names or \
                not all(isinstance(n, str) and n for n in names):
            raise DatasetFormatError(meta_path, "'relative_file_paths' must list the bag's "
                                     'files')
        files = []
        for name in names:
            f = self.path / PurePath(name).name
            if not f.is_file():
                raise DatasetFormatError(f, f'is missing (listed in {METADATA})')
            files.append(f)
        return files

    @staticmethod
    def _declared_topics(info: dict[str, Any], meta_path: Path) -> dict[str, Topic]:
        topics = {}
        entries = info.get('topics_with_message_count')
        if not isinstance(entries, list):
            raise DatasetFormatError(meta_path, "'topics_with_message_count' is not a list")
        for i, entry in enumerate(entries):
            try:
                meta = entry['topic_metadata']
                name, msg_type = str(meta['name']), str(meta['type'])
                fmt = str(meta.get('serialization_format', 'cdr'))
                count = int(entry['message_count'])
                qos = _qos(meta.get('offered_qos_profiles', ''))
            except (KeyError, TypeError, ValueError, yaml.YAMLError) as exc:
                raise DatasetFormatError(meta_path, f'topics_with_message_count[{i}] is not a '
                                         f'topic entry ({type(exc).__name__}: {exc})') from None
            topics[name] = Topic(name, msg_type, fmt, count, qos,
                                 str(meta.get('type_description_hash', '')))
        return topics

    def _topics_from_files(self, declared: dict[str, Topic]) -> list[Topic]:
        """The topics the files hold, with their counts; the metadata adds QoS.

        A topic whose channel has no schema keeps type '' (the metadata's type, if any,
        is not a schema to decode by) and is listed in `missing_schema` with why.
        """
        self.missing_schema: dict[str, str] = {}
        counts: dict[str, int] = {}
        types: dict[str, tuple[str, str, str]] = {}
        for bag in self._bags:
            for ch in bag.channels():
                counts[ch.topic] = counts.get(ch.topic, 0) + ch.count
                if ch.missing_schema:
                    self.missing_schema.setdefault(ch.topic, f'{bag.path.name}: '
                                                   f'{ch.missing_schema}')
                if ch.topic in types and types[ch.topic][0] != ch.schema_name:
                    raise DatasetFormatError(bag.path, f'topic {ch.topic} is '
                                             f'{ch.schema_name!r} here and '
                                             f'{types[ch.topic][0]!r} in another file')
                types.setdefault(ch.topic, (ch.schema_name, ch.encoding,
                                            ch.metadata.get('offered_qos_profiles', '')))
        topics = []
        for name, (schema, encoding, qos_text) in types.items():
            known = declared.get(name)
            if known is not None and known.type != schema and name not in self.missing_schema:
                raise DatasetFormatError(self.path / METADATA, f'topic {name} is {known.type!r} '
                                         f'but its MCAP channel says {schema!r}')
            if known is not None and known.count != counts[name]:
                raise DatasetFormatError(self.path / METADATA, f'topic {name}: {known.count} '
                                         f'messages listed, the files hold {counts[name]}')
            qos = known.qos if known is not None else _qos_or_none(qos_text)
            topics.append(Topic(name, schema, encoding, counts[name], qos,
                                known.type_hash if known is not None else ''))
        for name, known in declared.items():
            if name not in types and known.count:
                raise DatasetFormatError(self.path / METADATA, f'topic {name}: {known.count} '
                                         'messages listed, the files hold none')
        return sorted(topics, key=lambda t: t.name)

    def messages(self, topics: Iterable[str] | None = None,
                 start_ns: int | None = None) -> Iterator[RawMessage]:
        """Messages in log-time order across every file (ties: file order, then position)."""
        wanted = list(topics) if topics is not None else None
        runs = [((m.log_time_ns, i, n, m) for n, m in
                 enumerate(b.messages(wanted, start_ns=start_ns)))
                for i, b in enumerate(self._bags)]
        for _, _, _, m in heapq.merge(*runs, key=lambda e: e[:3]):
            yield m


def mcap_files(folder: Path) -> list[Path]:
    """The .mcap files directly in `folder`, in rosbag2's split order (<name>_2 before
    <name>_10); the order only breaks ties, messages merge by log time."""
    def key(p: Path) -> tuple[str, int, str]:
        stem, _, n = p.stem.rpartition('_')
        return (stem, int(n), p.name) if n.isdigit() else (p.stem, -1, p.name)
    try:
        found = [p for p in Path(folder).iterdir() if p.suffix == '.mcap' and p.is_file()]
    except OSError:
        return []
    return sorted(found, key=key)


def is_rosbag2(path: Path) -> bool:
    """A folder with a rosbag2 metadata.yaml, a single .mcap file, or a folder of .mcap
    files without metadata.yaml (nothing else in it but more such data: a dataset folder
    that holds an .mcap among its own files, UMI's data/, is not taken for a bag)."""
    path = Path(path)
    if path.is_file():
        return path.suffix == '.mcap'
    meta = path / METADATA
    if not meta.exists():
        return _only_mcap(path)
    if not meta.is_file():
        return False
    try:
        with meta.open('rb') as f:
            return b'rosbag2_bagfile_information' in f.read(4096)
    except OSError:
        return False


def _only_mcap(folder: Path) -> bool:
    """`folder` holds .mcap files and nothing but them (hidden files aside)."""
    try:
        names = [p.name for p in folder.iterdir() if not p.name.startswith('.')]
    except OSError:
        return False
    return bool(names) and all(n.endswith('.mcap') for n in names)


def _metadata(path: Path) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text(encoding='utf-8'))
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetFormatError(path, f'cannot be read ({exc})') from None
    except yaml.YAMLError as exc:
        raise DatasetFormatError(path, f'is not YAML ({" ".join(str(exc).split())[:200]})'
                                 ) from None
    info = doc.get('rosbag2_bagfile_information') if isinstance(doc, dict) else None
    if not isinstance(info, dict):
        raise DatasetFormatError(path, "has no 'rosbag2_bagfile_information'")
    version = info.get('version')
    if not isinstance(version, int) or version not in VERSIONS:
        raise DatasetFormatError(path, f'metadata version {version!r}: react_ros reads '
                                 f'versions {VERSIONS.start}-{VERSIONS.stop - 1}')
    return info


def _qos(raw: Any) -> list[dict[str, Any]]:
    """offered_qos_profiles of any version as dicts with policy names as words."""
    if raw in (None, ''):
        return []
    items = yaml.safe_load(raw) if isinstance(raw, str) else raw
    if items is None:
        return []
    if not isinstance(items, list):
        raise ValueError('offered_qos_profiles is not a list')
    out = []
    for item in items:
        if not isinstance(item, dict):
            raise ValueError('an offered QoS profile is not a mapping')
        q = dict(item)
        for key, names in (('durability', _DURABILITY), ('reliability', _RELIABILITY),
                           ('history', _HISTORY)):
            value = q.get(key)
            if isinstance(value, int):
                q[key] = names.get(value, 'unknown')
            elif isinstance(value, str):
                q[key] = value.lower()
        out.append(q)
    return out


def _qos_or_none(text: str) -> list[dict[str, Any]]:
    try:
        return _qos(text)
    except (ValueError, yaml.YAMLError):
        return []


def _has_messages(bag: McapBag) -> bool:
    return any(c.count for c in bag.channels())


__all__ = ['METADATA', 'Rosbag2', 'Topic', 'is_rosbag2', 'mcap_files']
