"""The registry of dataset kinds: every folder under react_ros/kinds/ is one.

A dataset is one folder, react_ros/kinds/<kind>/: `KIND` and its options dataclass
(kind.py, light: it names its adapter as 'module:Class', so listing the kinds imports no
reader), its file readers (no ROS), its adapter (adapter.py), its sample generator
(sample.py), config.yaml and <kind>.rviz. A folder without kind.py declares `KIND` in
adapter.py (imported at start-up then). Nothing else names a kind: the CLI, the player
node, the launch file, convert-all and the tests read every kind from here.
"""
from __future__ import annotations

import dataclasses
import errno
import importlib
import os
import pkgutil
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

from react_ros import kinds as _kinds_package
from react_ros.kinds import PATH_VARIABLE
from react_ros.adapters.base import DatasetKind, Episode, EpisodeOptions, EpisodeRef
from react_ros.errors import DatasetFormatError, ReactRosError
from react_ros.options import Option, options_of


def _kinds_in(folders: list[str]) -> tuple[list[DatasetKind], list[str]]:
    """`KIND` of <folder>/<k>/kind.py (or adapter.py) for every <k> of the folders, and one
    line per folder that is not a kind (an out-of-tree one: its error must not stop the
    others)."""
    found: list[DatasetKind] = []
    broken: list[str] = []
    builtin = Path(_kinds_package.__file__).parent
    # Folder by folder: pkgutil.iter_modules over them all would hide a second <k> silently.
    for folder, module in ((f, m) for f in folders for m in pkgutil.iter_modules([f])):
        if not module.ispkg:
            continue
        where = Path(folder) / module.name
        if module.name in _KINDS or any(k.name == module.name for k in found):
            broken.append(f'{where}: a dataset kind named {module.name!r} exists already')
            continue
        declared = 'kind' if (where / 'kind.py').is_file() else 'adapter'
        try:
            kind = importlib.import_module(f'react_ros.kinds.{module.name}.{declared}').KIND
        except Exception as err:  # an out-of-tree kind's own bug: say where, go on
            if where.parent == builtin:
                raise
            broken.append(f'{where}: not a dataset kind folder '
                          f'({type(err).__name__}: {err})'.splitlines()[0])
            continue
        found.append(kind)
    return sorted(found, key=lambda k: (k.order, k.name)), broken


def add_kinds_path(folder: Path) -> list[DatasetKind]:
    """Register the kinds in `folder` (<folder>/<kind>/kind.py or adapter.py), as
    REACT_ROS_KINDS_PATH does at start-up; refuses a folder that holds a broken one.

    The folder joins REACT_ROS_KINDS_PATH of this process too: the processes it starts
    (convert-all's workers, the player) find the kind there.
    """
    resolved = str(Path(folder).resolve())
    added = resolved not in _kinds_package.__path__
    if added:
        _kinds_package.__path__.append(resolved)
    found, broken = _kinds_in([resolved])
    if broken:
        if added:
            _kinds_package.__path__.remove(resolved)
        raise ReactRosError(broken[0])
    paths = [d for d in os.environ.get(PATH_VARIABLE, '').split(os.pathsep) if d]
    if resolved not in paths:
        os.environ[PATH_VARIABLE] = os.pathsep.join([*paths, resolved])
    return [register(k) for k in found]


_KINDS: dict[str, DatasetKind] = {}
KINDS: Mapping[str, DatasetKind] = MappingProxyType(_KINDS)  # read-only view, by name


def register(kind: DatasetKind) -> DatasetKind:
    """Add a kind. Its options must not reuse another kind's option names."""
    if kind.name in _KINDS:
        raise ValueError(f'dataset kind {kind.name!r} is registered already')
    taken = {opt.name: name for name, k in _KINDS.items() for opt in options_of(k.options)}
    for opt in options_of(kind.options):
        if opt.name in taken:
            raise ValueError(f'option {opt.flag} of {kind.name!r} is declared by '
                             f'{taken[opt.name]!r} too: share it through EpisodeOptions')
    _KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    del _KINDS[name]


def kind_options() -> list[tuple[DatasetKind, Option]]:
    """Every kind's own options, in registry order."""
    return [(k, opt) for k in _KINDS.values() for opt in options_of(k.options)]


def missing(path: Path, what: str = 'file or directory') -> str | None:
    """Why `path` cannot be opened at all (no such file, a symlink loop, a link to
    nothing), or None when it exists. Path.exists() says False to all three alike."""
    try:
        os.stat(path)
        return None
    except OSError as err:
        if err.errno == errno.ELOOP:
            return 'is a symlink loop (following its links comes back to it)'
        if err.errno == errno.ENOENT and os.path.islink(path):
            return f'is a symlink to {os.readlink(path)}, which does not exist'
        if err.errno == errno.ENOENT:
            return f'no such {what}'
        return f'cannot be opened ({err.strerror})'


def own_values(kind: Any, given: Callable[[Option], Any], source: Callable[[Option], str],
               what: str) -> dict[str, Any]:
    """`kind`'s own options from what an entry point was given (a flag, a parameter, a
    launch argument: `given(opt)`, raw or typed); another kind's option set to anything
    but its default is refused, in the same words from every entry point."""
    own = {}
    for other, opt in kind_options():
        value = opt.coerce(given(opt), source(opt))
        if other is kind:
            own[opt.name] = value
        elif value != opt.default:
            raise ReactRosError(f'{source(opt)} is an option of {other.name} episodes; {what}')
    return own


def detect_kind(path: Path) -> str:
    """The one kind whose adapter claims `path`; refuses when none or several do."""
    claims = [name for name, k in _KINDS.items() if k.adapter.probe(path)]
    if not claims:
        raise DatasetFormatError(path, 'not an episode of any known dataset '
                                 f'({", ".join(_KINDS)}){_bag_hint(path)}')
    if len(claims) > 1:
        raise DatasetFormatError(path, f'looks like an episode of {" and ".join(claims)}; '
                                 f'choose one with --kind ({" or ".join(claims)})')
    return claims[0]


def _bag_hint(path: Path) -> str:
    """For a folder holding .mcap files among others but no metadata.yaml: how to play
    it as a bag (a folder of only .mcap files is read as one: rosbag2/reader.py)."""
    try:
        mcaps = sorted(p.name for p in Path(path).glob('*.mcap'))
    except OSError:
        return ''
    if not mcaps or (Path(path) / 'metadata.yaml').exists():
        return ''
    return (f'; nor a rosbag2 bag: no metadata.yaml, and files besides {mcaps[0]}'
            f'{" and more .mcap" if len(mcaps) > 1 else ""} (give the .mcap file itself to '
            'read it as a bag)')


def resolve_kind(path: Path, kind: str | None = None) -> DatasetKind:
    """The kind of the episode at `path`: `kind` if given, else the one that claims it."""
    path = Path(path)
    why = missing(path)
    if why is not None:
        raise DatasetFormatError(path, why)
    if kind is None:
        kind = detect_kind(path)
    elif kind not in _KINDS:
        raise DatasetFormatError(path, f'dataset kind {kind!r} is not supported '
                                 f'(known: {", ".join(_KINDS)})')
    return _KINDS[kind]


def find_release(root: Path, kind: str | None = None) -> tuple[DatasetKind, list[EpisodeRef]]:
    """The kind of the release at `root` and its episodes; refuses none, several or empty."""
    root = Path(root)
    if not root.is_dir():
        raise DatasetFormatError(root, missing(root, 'directory')
                                 or 'is not a directory; convert-all takes a release folder')
    kinds = [resolve_kind(root, kind)] if kind is not None else list(_KINDS.values())
    found = []
    for k in kinds:
        episodes = k.find_episodes(root) if k.find_episodes is not None else None
        if episodes is not None:
            found.append((k, episodes))
    if not found:
        raise DatasetFormatError(root, 'holds no release of ' + (
            f'{kind} episodes' if kind else f'any known dataset ({", ".join(_KINDS)})'))
    if len(found) > 1:
        names = [k.name for k, _ in found]
        raise DatasetFormatError(root, f'looks like a release of {" and ".join(names)}; '
                                 f'choose one with --kind ({" or ".join(names)})')
    desc, episodes = found[0]
    if not episodes:
        raise DatasetFormatError(root, f'is a {desc.name} release with no episodes')
    ids = [e.id for e in episodes]
    if len(set(ids)) != len(ids):
        raise AssertionError(f'{desc.name}: find_episodes gave one id twice')
    return desc, episodes


def open_episode(path: Path, kind: str | None = None,
                 options: EpisodeOptions | None = None) -> Episode:
    path = Path(path)
    desc = resolve_kind(path, kind)
    kind = desc.name
    options = options or EpisodeOptions()
    own = options.own if options.own is not None else desc.options()
    if not isinstance(own, desc.options):
        raise ReactRosError(f'{path}: options of another kind ({type(own).__name__}) given '
                            f'to a {kind} episode')
    return desc.adapter(path, dataclasses.replace(options, own=own)).open()


_found, BROKEN = _kinds_in(list(_kinds_package.__path__))
BUILTIN = tuple(_found)  # the kinds found at start-up
for _kind in _found:
    register(_kind)

__all__ = ['BROKEN', 'BUILTIN', 'add_kinds_path', 'KINDS', 'DatasetKind', 'Episode', 'EpisodeOptions', 'EpisodeRef',
           'detect_kind', 'find_release', 'kind_options', 'open_episode', 'own_values', 'register',
           'resolve_kind', 'unregister']
