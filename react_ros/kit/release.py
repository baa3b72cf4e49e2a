"""Sample releases of every kind, small and fast, and one episode of them broken.

For the tests of whole releases (find_release, convert-all): `write_release`
writes a release of n episodes with the kind's own sample writer and returns
what find_release finds in it; `break_episode` damages one file that belongs
to one episode only, so that episode is refused when it is opened, naming that
file, and every other episode of the release still converts. `run` runs the CLI
in this process; `index_of`, `leftovers` and `converted_ids` read what a run left.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from react_ros import cli
from react_ros.registry import KINDS, DatasetKind, EpisodeRef, find_release

def write_small_sample(kind: str, out: Path, **kwargs: Any) -> Path:
    """The kind's sample (kwargs: seed, episodes, ...) at its small size: the smallest
    sizes and durations its writer accepts, or near them, as its DatasetKind declares
    (read now, so a kind registered after this module's import has one too)."""
    writer = KINDS[kind].sample_writer()
    assert writer is not None, kind
    return writer(out, **{**KINDS[kind].small_sample, **kwargs})


def write_release(kind: str, dir: Path, n: int = 3, duration: float | None = None,
                  ) -> tuple[DatasetKind, list[EpisodeRef]]:
    """A sample release of `n` episodes of `kind` at `dir` (which must not exist yet),
    and what find_release finds in it. `duration`: seconds per episode (default: the kind's small sample's)."""
    more = {} if duration is None else {'duration_s': duration}
    root = write_small_sample(kind, Path(dir), episodes=n, **more)
    desc, refs = find_release(root)
    if desc.name != kind or len(refs) != n:
        raise AssertionError(f'{kind} release of {n} read back as {desc.name} with '
                             f'{[r.id for r in refs]}')
    return desc, refs


def broken_file(kind: str, ref: EpisodeRef) -> Path:
    """The source of `ref` that break_episode damages."""
    first = KINDS[kind].read_first
    assert first is not None, f'{kind} declares no read_first'
    picked = [p for p in ref.sources if first(p)]
    if len(picked) != 1:
        raise AssertionError(f'{kind} {ref.id}: no single file to break among {ref.sources}')
    return picked[0]


def break_episode(kind: str, ref: EpisodeRef) -> str:
    """Truncate one file of `ref`'s own to half its size and return its path.

    Half a file is what an interrupted copy leaves: a table, bag or archive
    whose end (index, footer, last line) is missing, which its reader refuses
    at open time by name.
    """
    path = broken_file(kind, ref)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    return str(path)


# -- running convert-all and reading what it left ------------------------------------------
def run(capfd: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    """`react-ros ARGS` in this process: exit code, stdout, stderr."""
    capfd.readouterr()
    try:
        code = cli.main([str(a) for a in args])
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 2
    out, err = capfd.readouterr()
    return code, out, err


def index_of(out: Path) -> dict[str, dict[str, Any]]:
    """OUTDIR/index.json's entries by id."""
    doc = json.loads((out / 'index.json').read_text())
    return {e['id']: e for e in doc['episodes']}


def leftovers(out: Path) -> list[str]:
    """What a writer leaves only while it runs (or when killed): partials, locks, old."""
    return sorted(p.relative_to(out).as_posix() for p in out.rglob('.*')
                  if p.name not in ('.convert-all.lock',))


def converted_ids(stdout: str) -> int:
    """How many episodes the run took on: '<kind> release <root>: N to convert, ...'."""
    return int(stdout.split(': ', 1)[1].split(' to convert')[0])


def workers_of(pid: int) -> list[int]:
    """The child processes of `pid` (a driver's workers)."""
    try:
        text = Path(f'/proc/{pid}/task/{pid}/children').read_text()
    except OSError:
        return []
    return [int(c) for c in text.split()]


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not)."""
    try:
        stat = Path(f'/proc/{pid}/stat').read_text()
    except OSError:
        return False
    return stat.rsplit(')', 1)[1].split()[0] != 'Z'


def wait_for(what: str, condition: Callable[[], object], timeout: float = 120.0) -> None:
    """Poll `condition` until it holds; AssertionError naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f'timed out waiting for {what}')
        time.sleep(0.05)


__all__ = ['alive', 'break_episode', 'broken_file', 'converted_ids', 'index_of',
           'leftovers', 'run', 'wait_for', 'workers_of', 'write_release', 'write_small_sample']
