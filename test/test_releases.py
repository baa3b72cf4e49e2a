"""Whole releases of every kind: what find_release lists, and what each episode reads.

A sample release of three episodes per kind (release_support.py) is listed by
its own kind and by no other; every episode it lists opens as that episode;
its sources are the files its conversion reads, shared ones in every episode's
list and each episode's own in its list only (the resume fingerprint of
convert-all); one broken episode is refused by name while the others open.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from release_support import (break_episode, broken_file, write_release,
                             write_small_sample)

from react_ros import cli
from react_ros.registry import (KINDS, DatasetKind, Episode, EpisodeOptions, EpisodeRef,
                                find_release, open_episode)
from react_ros.errors import DatasetFormatError, ReactRosError

EPISODES = 3


@dataclass(frozen=True)
class Release:
    kind: str
    root: Path
    desc: DatasetKind
    refs: list[EpisodeRef]


@pytest.fixture(scope='module', params=list(KINDS))
def release(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Release:
    """A release of EPISODES of each kind, written once (treat as read-only)."""
    root = tmp_path_factory.mktemp(request.param) / 'release'
    desc, refs = write_release(request.param, root, EPISODES)
    return Release(request.param, root, desc, refs)


def _open(kind: str, ref: EpisodeRef) -> Episode:
    return open_episode(ref.path, kind, EpisodeOptions(episode=ref.episode))


def _first(episode: Episode, topic: str) -> Any:
    from rclpy.serialization import deserialize_message

    from react_ros.ros.msgs import message_class
    (stream,) = [s for s in episode.streams if s.topic == topic]
    _, msg = next(iter(stream.open()))
    return deserialize_message(msg, message_class(stream.msg_type)) \
        if isinstance(msg, bytes) else msg


def _annotation(episode: Episode) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(_first(episode, '/annotations').data)
    return doc


def _umi_hour(episode: Episode) -> int:
    from react_ros.kinds.umi.sample import EPOCH_NS
    return (episode.start_ns - EPOCH_NS) // 3_600_000_000_000


def _react_is(episode: Episode, ref: EpisodeRef, k: int) -> bool:
    """Named as asked, and played from the table episodes.jsonl names for that id."""
    import pyarrow.parquet as pq

    from react_ros.kinds.react.adapter import table_path
    from react_ros.kinds.react.parquet_video import date_base_ns
    table = pq.read_table(table_path(ref.path, ref.id))
    t = table.column('timestamp').to_pylist()
    return (_annotation(episode)['episode'] == ref.id
            and table.column('episode_index')[0].as_py() == k
            and episode.start_ns == date_base_ns(ref.id) + round(t[0] * 1e9)
            and episode.duration_ns == round(t[-1] * 1e9) - round(t[0] * 1e9))


def _robotwin_is(episode: Episode, ref: EpisodeRef) -> bool:
    doc = _annotation(episode)
    # The sample gives even episodes an _extra file and odd ones none.
    return (f'{doc["embodiment"]}/{doc["task"]}/episode{doc["episode"]}' == ref.id
            and doc['extra'] == (doc['episode'] % 2 == 0))


# What tells episode k of a sample release (written with seed + k) from the others.
IDENTITY: dict[str, Callable[[Episode, EpisodeRef, int], bool]] = {
    'umi': lambda ep, ref, k: _umi_hour(ep) == k,  # an hour later each
    'react': _react_is,
    'truetrace': lambda ep, ref, k: _annotation(ep)['episode_index'] == k,
    'objects': lambda ep, ref, k: len(_first(ep, '/objects/status').status) == 4 + k,
    'robotwin': lambda ep, ref, k: _robotwin_is(ep, ref),
    'lerobot': lambda ep, ref, k: _annotation(ep)['episode_index'] == k,
}

# The ids of a sample release of EPISODES, in the order written (episode k: seed + k).
WRITTEN = {
    'umi': ['episode0000', 'episode0001', 'episode0002'],
    'react': ['2026-05-10/episode_000', '2026-05-10/episode_001', '2026-05-11/episode_000'],
    'truetrace': ['episode_000000', 'episode_000001', 'episode_000002'],
    'objects': ['S01_carry_box_001', 'S01_carry_box_002', 'S01_carry_box_003'],
    'robotwin': ['agilex/beat_block_hammer/episode0', 'agilex/place_shoe/episode0',
                 'agilex/beat_block_hammer/episode1'],
    'lerobot': ['episode_000000', 'episode_000001', 'episode_000002'],
}


def _as_written(release: Release) -> list[EpisodeRef]:
    by_id = {r.id: r for r in release.refs}
    return [by_id[i] for i in WRITTEN[release.kind]]


# -- listing --------------------------------------------------------------------------------
def test_a_sample_release_is_found_as_its_kind_with_every_episode(release: Release) -> None:
    assert release.desc.name == release.kind
    ids = [r.id for r in release.refs]
    assert ids == sorted(WRITTEN[release.kind])
    for i in ids:
        parts = i.split('/')
        assert all(parts) and '..' not in parts and '.' not in parts and '\\' not in i, i
    again = find_release(release.root, release.kind)
    assert again == (release.desc, release.refs)  # the same order on every call


def test_each_listed_episode_opens_as_that_episode(release: Release) -> None:
    for k, ref in enumerate(_as_written(release)):
        episode = _open(release.kind, ref)
        assert IDENTITY[release.kind](episode, ref, k), ref.id


def test_sources_are_files_under_the_release(release: Release) -> None:
    root = release.root.resolve()
    for ref in release.refs:
        assert ref.sources, ref.id
        assert len(set(ref.sources)) == len(ref.sources), ref.id
        assert Path(ref.path).resolve().is_relative_to(root), ref.id
        for p in ref.sources:
            assert p.is_file(), p
            assert p.resolve().is_relative_to(root), p


def test_each_source_is_shared_by_all_episodes_or_owned_by_one(release: Release) -> None:
    holders: dict[Path, set[str]] = {}
    for ref in release.refs:
        for p in ref.sources:
            holders.setdefault(p, set()).add(ref.id)
    everyone = {r.id for r in release.refs}
    for p, ids in holders.items():
        assert ids == everyone or len(ids) == 1, (p, ids)
    own = {ref.id: {p for p in ref.sources if holders[p] != everyone} for ref in release.refs}
    for ref in release.refs:  # its table (bag, archive, file) is its own
        assert broken_file(release.kind, ref) in own[ref.id], ref.id


@pytest.fixture(scope='module')
def opened_files() -> Iterator[list[str]]:
    """Paths opened by Python code while the list is armed (sys.addaudithook).

    What C libraries open themselves (HDF5, parquet, ffmpeg) is not seen; the
    text, YAML, JSON, MCAP and npz files around them are.
    """
    seen: list[str] = []
    armed = [True]

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if armed[0] and event == 'open' and isinstance(args[0], (str, bytes, os.PathLike)):
            seen.append(os.fsdecode(args[0]))
    sys.addaudithook(hook)  # cannot be removed: disarmed instead
    yield seen
    armed[0] = False


def test_sources_hold_every_file_a_conversion_reads(release: Release, opened_files: list[str],
                                                    tmp_path: Path) -> None:
    from react_ros.rosbag2.writer import write_bag
    root = release.root.resolve()
    for ref in release.refs:
        opened_files.clear()
        write_bag(_open(release.kind, ref), tmp_path / ref.id / 'bag')
        read = {Path(p).resolve() for p in opened_files}
        read = {p for p in read if p.is_relative_to(root) and p.is_file()}
        assert read, ref.id  # the hook sees this kind's reads
        assert read <= {p.resolve() for p in ref.sources}, (ref.id, read)


# -- claims -----------------------------------------------------------------------------------
def test_no_other_kind_claims_the_release(release: Release) -> None:
    for name, kind in KINDS.items():
        if name != release.kind:
            assert kind.find_episodes is not None, name
            assert kind.find_episodes(release.root) is None, name


@pytest.mark.parametrize('kind', list(KINDS))
def test_a_single_sample_episode_is_claimed_by_its_kind_only(kind: str, tmp_path: Path) -> None:
    root = write_small_sample(kind, tmp_path / 'sample')
    assert KINDS[kind].find_episodes is not None
    assert KINDS[kind].find_episodes(root)
    for name, other in KINDS.items():
        if name != kind:
            assert other.find_episodes is not None, name
            assert other.find_episodes(root) is None, name
    desc, _ = find_release(root)
    assert desc.name == kind


@pytest.mark.parametrize('kind', list(KINDS))
def test_a_foreign_or_missing_folder_is_no_release_and_no_error(kind: str,
                                                                tmp_path: Path) -> None:
    find = KINDS[kind].find_episodes
    assert find is not None
    (tmp_path / 'notes.txt').write_text('not a dataset\n')
    (tmp_path / 'sub' / 'deeper').mkdir(parents=True)
    for root in (tmp_path, tmp_path / 'sub', tmp_path / 'missing', tmp_path / 'notes.txt'):
        assert find(root) is None, root
    with pytest.raises(DatasetFormatError, match='holds no release'):
        find_release(tmp_path)


# Where a root that is one episode is natural: that episode's folder (file's, for RoboTwin).
ONE_EPISODE_ROOT: dict[str, Callable[[EpisodeRef], tuple[Path, str]]] = {
    'umi': lambda ref: (ref.path, ref.path.name),
    'truetrace': lambda ref: (ref.path, ref.path.name),
    'objects': lambda ref: (ref.path, ref.path.name),
    'robotwin': lambda ref: (ref.path.parent, ref.path.stem),
}


def test_a_root_that_is_one_episode_lists_that_episode(release: Release) -> None:
    if release.kind not in ONE_EPISODE_ROOT:
        pytest.skip(f'a {release.kind} episode is only ever named inside its release')
    ref = release.refs[-1]  # RoboTwin: alone in its task
    root, want = ONE_EPISODE_ROOT[release.kind](ref)
    find = release.desc.find_episodes
    assert find is not None
    (alone,) = find(root)  # type: ignore[misc]
    assert alone.id == want
    assert set(alone.sources) == set(ref.sources)
    assert _open(release.kind, alone).duration_ns == _open(release.kind, ref).duration_ns


def test_umi_episodes_are_found_one_group_deep_and_no_deeper(tmp_path: Path) -> None:
    import shutil
    root = write_small_sample('umi', tmp_path / 'umi', episodes=3)
    (root / 'day1').mkdir()
    shutil.move(root / 'episode0001', root / 'day1' / 'episode0001')
    (root / 'day2' / 'op').mkdir(parents=True)
    shutil.move(root / 'episode0002', root / 'day2' / 'op' / 'episode0002')
    shutil.copytree(root / 'episode0000', root / '.partial-copy')
    _, refs = find_release(root)
    assert [r.id for r in refs] == ['day1/episode0001', 'episode0000']


def test_robotwin_ids_are_the_episode_flag_from_the_root_given(tmp_path: Path) -> None:
    desc, _ = write_release('robotwin', tmp_path / 'release')
    assert desc.find_episodes is not None
    task = tmp_path / 'release' / 'agilex' / 'beat_block_hammer'
    refs = desc.find_episodes(task)
    assert refs is not None
    assert [r.id for r in refs] == ['episode0', 'episode1']
    for ref in refs:  # what `--episode` names from that folder
        assert open_episode(task, 'robotwin', EpisodeOptions(episode=ref.id)).path == ref.path


def test_a_react_release_whose_episode_list_is_unreadable_is_refused(tmp_path: Path) -> None:
    root = write_small_sample('react', tmp_path / 'react', episodes=2)
    jsonl = root / 'episodes.jsonl'
    jsonl.write_text(jsonl.read_text()[:-20])
    with pytest.raises(DatasetFormatError, match='episodes.jsonl'):
        find_release(root)


# -- one bad episode ------------------------------------------------------------------------
@pytest.mark.parametrize('kind', list(KINDS))
def test_a_broken_episode_is_refused_naming_its_file_and_the_others_open(
        kind: str, tmp_path: Path) -> None:
    _, refs = write_release(kind, tmp_path / 'release')
    victim = refs[1]
    damaged = break_episode(kind, victim)
    assert Path(damaged) in victim.sources
    assert all(Path(damaged) not in r.sources for r in refs if r is not victim)
    _, listed = find_release(tmp_path / 'release')  # listing reads no episode's own files
    assert listed == refs
    with pytest.raises(ReactRosError) as err:
        _open(kind, victim)
    line = str(err.value)
    assert damaged in line and '\n' not in line, line
    for ref in refs:
        if ref is not victim:
            assert _open(kind, ref).streams, ref.id


@pytest.mark.parametrize('kind', list(KINDS))
def test_break_episode_damages_the_file_it_names(kind: str, tmp_path: Path) -> None:
    _, refs = write_release(kind, tmp_path / 'release', n=2)
    path = broken_file(kind, refs[0])
    size = path.stat().st_size
    assert break_episode(kind, refs[0]) == str(path)
    assert 0 < path.stat().st_size < size


# -- writing a release --------------------------------------------------------------------------
def _sample_args(kind: str, out: Path, episodes: str) -> list[str]:
    small = KINDS[kind].small_sample
    args = ['sample', kind, str(out), '--episodes', episodes,
            '--duration', str(small['duration_s'])]
    if 'width' in small:
        args += ['--resolution', f'{small["width"]}x{small["height"]}']
    return args


def _main(args: list[str]) -> int:
    try:
        return cli.main(args)
    except SystemExit as exit_:  # argparse refuses with SystemExit(2)
        return exit_.code if isinstance(exit_.code, int) else 2


@pytest.mark.parametrize('kind', list(KINDS))
def test_the_cli_writes_a_release(kind: str, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / 'release'
    assert _main(_sample_args(kind, out, str(EPISODES))) == 0
    assert 'release' in capsys.readouterr().out
    desc, refs = find_release(out)
    assert desc.name == kind and len(refs) == EPISODES


@pytest.mark.parametrize('kind', list(KINDS))
def test_a_release_of_no_episodes_is_refused(kind: str, tmp_path: Path) -> None:
    out = tmp_path / 'release'
    assert _main(_sample_args(kind, out, '0')) == 2
    assert not out.exists()
    with pytest.raises(ReactRosError, match='at least one episode'):
        write_small_sample(kind, out, episodes=0)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize('kind', list(KINDS))
def test_each_episode_of_a_release_differs(kind: str, tmp_path: Path) -> None:
    """Different seeds: no two episodes hold the same bytes in their own files."""
    import hashlib
    _, refs = write_release(kind, tmp_path / 'release', n=2)
    digests = [hashlib.sha256(broken_file(kind, r).read_bytes()).hexdigest() for r in refs]
    assert digests[0] != digests[1]
