"""The episodes of a release, as `react-ros list` prints them and `info` points at them.

The kind's own `find_episodes` (what convert-all converts) decides what an
episode is; this only turns each into the command that plays it.
"""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from react_ros.registry import find_release
from react_ros.adapters.base import DatasetKind, EpisodeRef
from react_ros.errors import DatasetFormatError, ReactRosError


def release_episodes(root: Path, kind: str | None = None) -> tuple[DatasetKind, list[EpisodeRef]]:
    """The release's kind and episodes; a folder that is none, or is empty, is refused."""
    root = Path(root)
    if root.is_file():
        raise DatasetFormatError(root, 'is a file; `react-ros list` takes a release folder '
                                 '(`react-ros info` describes one episode)')
    return find_release(root, kind)


def episode_path(root: Path, ref: EpisodeRef) -> Path:
    """Where the episode is, spelled from `root` as the user gave it."""
    try:
        return root / ref.path.resolve().relative_to(root.resolve())
    except ValueError:  # the kind placed it elsewhere: its own path
        return ref.path


def play_command(root: Path, ref: EpisodeRef) -> str:
    """`react-ros play ...` for one episode: its folder, or the release and --episode."""
    words = ['react-ros', 'play', str(episode_path(root, ref))]
    if ref.episode is not None:
        words += ['--episode', ref.episode]
    return shlex.join(words)


def listing(root: Path, kind: str | None = None) -> dict[str, Any]:
    """`react-ros list --json`: the release's kind and one entry per episode."""
    desc, refs = release_episodes(root, kind)
    return {'kind': desc.name, 'root': str(root),
            'episodes': [{'id': r.id, 'path': str(episode_path(root, r)), 'episode': r.episode,
                          'play': play_command(root, r)} for r in refs]}


def many_episodes_hint(path: Path, kind: str | None, refusal: str) -> str | None:
    """A command given a release of several episodes and no --episode: what to do.

    `refusal` is what opening it said. A kind that knows releases already says to
    choose with --episode, and gains the pointer at `list`; a folder of episodes
    no adapter opens as one (a UMI folder) is told which path to name. None when
    `path` is no such release (the caller's own refusal then stands).
    """
    if not Path(path).is_dir():
        return None
    try:
        desc, refs = find_release(Path(path), kind)
    except ReactRosError:
        return None
    if len(refs) < 2:
        return None
    listed = f'`react-ros list {path}` lists them'
    if '--episode' in refusal:
        return f'{refusal}; {listed}'
    return (f'{path}: a {desc.name} release of {len(refs)} episodes; name one episode '
            f'(e.g. {episode_path(Path(path), refs[0])}); {listed}')


__all__ = ['episode_path', 'listing', 'many_episodes_hint', 'play_command', 'release_episodes']
