"""OUTDIR/index.json: what convert-all did to every episode, and what it did it from.

One writer (the convert-all driver) rewrites it whole after every episode, under a
temporary name renamed into place, so a reader or a killed run never sees half of it.
An entry's `fingerprint` is the episode's source files' sizes and mtimes (`content`,
with --verify: their sha256); `settings` is what the bag was made with. A re-run
converts an episode again when its bag is gone, its last attempt failed, or either
of those changed. The sources are every file the episode's conversion reads, the
release's shared ones too (calibration, manifest: EpisodeRef.sources), and with
--verify also what the kind's own check reads (EpisodeRef.verified), so a refusal
is tried again as soon as anything it could have come from changed.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from react_ros.adapters.base import EpisodeRef
from react_ros.errors import SinkError
from react_ros.output import check_stop

FORMAT = 'react_ros convert-all index'
VERSION = 1
NAME = 'index.json'
# Outcomes of one attempt. `refused` is the episode's own fault (bad input, as
# `convert` would exit 2) and stays refused until its sources change; `failed`
# is anything else (a bug, a worker that died, the output's disk full, an I/O
# error) and is tried again by every run.
CONVERTED, REFUSED, FAILED = 'converted', 'refused', 'failed'


@dataclass
class Entry:
    id: str
    source: str  # the episode's path, relative to the release root
    episode: str | None  # its name inside that path, for releases that hold many
    bag: str  # the bag's folder, relative to OUTDIR
    status: str
    messages: int = 0
    duration_s: float = 0.0
    bytes: int = 0
    reason: str = ''
    seconds: float = 0.0  # how long the conversion took
    fingerprint: str = ''
    content: str = ''
    settings: dict[str, Any] = field(default_factory=dict)


class Fingerprints:
    """The fingerprints of a run's episodes; each file is stat'ed and hashed once.

    `verify`: the run's --verify, which adds each episode's `verified` files (the
    same ones for every episode of a package, hence the per-file cache).
    """

    def __init__(self, root: Path, verify: bool = False) -> None:
        self.root, self.verify = root, verify
        self._stats: dict[Path, os.stat_result] = {}
        self._digests: dict[Path, str] = {}

    def stat(self, ref: EpisodeRef) -> str:
        """sha256 over every source's relative path, size and mtime (ns)."""
        h = hashlib.sha256()
        for rel, path in self._files(ref):
            st = self._stat(path)
            h.update(f'{rel}\0{st.st_size}\0{st.st_mtime_ns}\n'.encode())
        return h.hexdigest()

    def content(self, ref: EpisodeRef) -> str:
        """sha256 over every source's relative path and contents (--verify).

        The episode's own sources are hashed as one stream (the fingerprint of
        earlier versions); the verified files, by their digests.
        """
        h = hashlib.sha256()
        for rel, path in _relative(ref.sources, self.root):
            h.update(f'{rel}\0'.encode())
            with open(path, 'rb') as f:
                for block in iter(lambda: f.read(1 << 20), b''):
                    check_stop()
                    h.update(block)
            h.update(b'\n')
        if self.verify and ref.verified:
            h.update(b'verified\n')
            for rel, path in _relative(ref.verified, self.root):
                h.update(f'{rel}\0{self._digest(path)}\n'.encode())
        return h.hexdigest()

    def _files(self, ref: EpisodeRef) -> list[tuple[str, Path]]:
        files = _relative(ref.sources, self.root)
        if self.verify and ref.verified:
            files += _relative(ref.verified, self.root)
        return files

    def _stat(self, path: Path) -> os.stat_result:
        if path not in self._stats:
            self._stats[path] = path.stat()
        return self._stats[path]

    def _digest(self, path: Path) -> str:
        if path not in self._digests:
            h = hashlib.sha256()
            with open(path, 'rb') as f:
                for block in iter(lambda: f.read(1 << 20), b''):
                    check_stop()
                    h.update(block)
            self._digests[path] = h.hexdigest()
        return self._digests[path]


def _relative(paths: Iterable[Path], root: Path) -> list[tuple[str, Path]]:
    out = []
    for p in paths:
        p = Path(p)
        try:
            rel = p.relative_to(root).as_posix()
        except ValueError:
            rel = p.as_posix()
        out.append((rel, p))
    return sorted(out)


def load(out_dir: Path) -> dict[str, Entry]:
    """The entries of a previous run by id; none when there is no index yet.

    An index this version cannot read is refused rather than overwritten: the
    user may have written it, or a newer react_ros.
    """
    path = out_dir / NAME
    try:
        doc = json.loads(path.read_text(encoding='utf-8'))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise SinkError(f'{path}: not a readable convert-all index ({exc})') from None
    if not isinstance(doc, dict) or doc.get('format') != FORMAT or doc.get('version') != VERSION:
        raise SinkError(f'{path}: is not a react_ros convert-all index (version {VERSION}); '
                        'move it away or choose another OUTDIR')
    entries = {}
    known = set(Entry.__dataclass_fields__)
    for raw in doc.get('episodes', []):
        if isinstance(raw, dict) and 'id' in raw:
            entries[raw['id']] = Entry(**{k: v for k, v in raw.items() if k in known})
    return entries


def save(out_dir: Path, root: Path, kind: str, entries: Iterable[Entry]) -> None:
    doc = {'format': FORMAT, 'version': VERSION, 'root': str(root), 'kind': kind,
           'episodes': [asdict(e) for e in sorted(entries, key=lambda e: e.id)]}
    path = out_dir / NAME
    tmp = out_dir / f'.{NAME}.{os.getpid()}.tmp'
    try:
        tmp.write_text(json.dumps(doc, indent=1) + '\n', encoding='utf-8')
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise SinkError(f'{path}: cannot be written ({exc.strerror})') from None


__all__ = ['CONVERTED', 'FAILED', 'REFUSED', 'Entry', 'Fingerprints', 'load', 'save']
