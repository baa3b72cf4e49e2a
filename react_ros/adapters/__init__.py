"""Adapter registry: one adapter per dataset kind."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from react_ros.adapters.base import DatasetAdapter, Episode, EpisodeOptions
from react_ros.adapters.react import ReactAdapter
from react_ros.adapters.umi import UmiAdapter
from react_ros.errors import DatasetFormatError

ADAPTERS: Mapping[str, type[DatasetAdapter]] = {
    'umi': UmiAdapter,
    'react': ReactAdapter,
}

KINDS = ('react', 'truetrace', 'objects', 'robotwin', 'umi')


def detect_kind(path: Path) -> str:
    for kind, adapter in ADAPTERS.items():
        if adapter.probe(path):
            return kind
    raise DatasetFormatError(path, 'not an episode of any known dataset '
                             f'({", ".join(sorted(ADAPTERS))})')


def open_episode(path: Path, kind: str | None = None,
                 options: EpisodeOptions | None = None) -> Episode:
    path = Path(path)
    if not path.exists():
        raise DatasetFormatError(path, 'no such file or directory')
    if kind is None:
        kind = detect_kind(path)
    elif kind not in ADAPTERS:
        raise DatasetFormatError(path, f'dataset kind {kind!r} is not supported yet')
    return ADAPTERS[kind](path, options or EpisodeOptions()).open()


__all__ = ['ADAPTERS', 'KINDS', 'Episode', 'EpisodeOptions', 'detect_kind', 'open_episode']
