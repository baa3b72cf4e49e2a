"""The promise for bad input, checked the same way for every kind.

Each kind's test module lists its cases (a copy of its sample is broken by the
case, then `info` and `convert` run on it) and calls `check_refused` or
`check_accepted`. Refused: exit 2, exactly one line on stderr (stdout and the
C libraries' output included: file descriptors are captured) that names the
file or option and says what is wrong, no traceback, no output or partial left
anywhere, the input tree unchanged. Accepted but odd: exit 0, the warning on
stderr, and a bag that reads back.

The CLI runs in this process (cli.main): an exception other than the one-line
refusal escapes it and fails the test, as a traceback would.
"""
from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from react_ros import cli

Breaker = Callable[[Path], None]


@dataclass(frozen=True)
class Refused:
    name: str
    breaker: Breaker | None
    names: str  # the file the line names, relative to the input ('' = the input itself),
    #             or an option ('--image-scale')
    words: tuple[str, ...] = ()  # what the line must also say
    args: tuple[str, ...] = ()  # extra CLI arguments
    commands: tuple[str, ...] = ('info', 'convert')
    # where convert writes, relative to the test's folder ({input} = the input)
    output: str = 'out/bag'
    target: str = ''  # the path the commands are given, relative to the input ('' = itself)
    # warnings the episode's opening printed before the refusal (each a line holding it):
    # a fault found while writing comes after them
    warned: tuple[str, ...] = ()


@dataclass(frozen=True)
class Accepted:
    name: str
    breaker: Breaker | None
    warning: tuple[str, ...]  # words of one warning line
    args: tuple[str, ...] = ()
    check: Callable[[Path], None] | None = field(default=None)  # given the bag
    lines: int = 1  # lines it adds to what the input as written prints: one per odd thing


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file under root, by relative path: what "the input unchanged" means."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob('*')) if p.is_file()}


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob('*'))


def _run(capfd: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of `react-ros ARGS`, run in this process.

    Python warnings that a user's terminal shows on stderr (numpy's "invalid value
    encountered", any RuntimeWarning or UserWarning) pytest keeps off it: they are caught
    here under Python's default filters and added to stderr as the lines they would be."""
    import warnings
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()  # what `python` does by default, not what pytest set up
        for hidden in (DeprecationWarning, PendingDeprecationWarning, ImportWarning,
                       ResourceWarning):
            warnings.simplefilter('ignore', hidden)
        try:
            code = cli.main(args)
        except SystemExit as exit_:  # argparse
            code = exit_.code if isinstance(exit_.code, int) else 2
    out, err = capfd.readouterr()
    err += ''.join(f'{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}\n'
                   for w in caught)
    return code, out, err


def _broken_copy(breaker: Breaker | None, source: Path, workdir: Path) -> Path:
    import shutil
    root = workdir / 'input' / source.name
    shutil.copytree(source, root)
    if breaker is not None:
        breaker(root)
    return root


def check_refused(case: Refused, source: Path, workdir: Path,
                  capfd: pytest.CaptureFixture[str]) -> None:
    """Break a copy of `source` in `workdir` with the case and check every command refuses it."""
    root = _broken_copy(case.breaker, source, workdir)
    before = tree_digest(root)
    listing = _tree(workdir)
    here = sorted(p.name for p in Path.cwd().iterdir())
    for command in case.commands:
        args = [command, str(root / case.target) if case.target else str(root), *case.args]
        if command == 'convert':
            args += ['-o', case.output.format(input=root) if '{input}' in case.output
                     else str(workdir / case.output) if case.output else '']
        code, out, err = _run(capfd, args)
        lines = (out + err).splitlines()
        assert code == 2, f'{command}: exit {code}; stderr ends:\n{err[-1500:]}'
        if command == 'convert':
            for words in case.warned:
                if lines and words in lines[0] and not lines[0].startswith('error: '):
                    lines = lines[1:]
        assert len(lines) == 1, f'{command}: expected one line, got:\n{(out + err)[-1500:]}'
        line = lines[0]
        assert 'Traceback' not in line
        if case.names.startswith('-'):
            assert line.startswith('error: ') and case.names in line, line
        else:
            named = str(root / case.names) if case.names else str(root)
            assert line.startswith(f'error: {named}:'), line
        for word in case.words:
            assert word in line, line
        assert _tree(workdir) == listing, f'{command} left or removed files'
        assert sorted(p.name for p in Path.cwd().iterdir()) == here, f'{command} wrote in .'
        assert tree_digest(root) == before, f'{command} changed the input'


_BASELINES: dict[tuple[Path, tuple[str, ...]], list[str]] = {}


def _baseline(source: Path, args: tuple[str, ...], workdir: Path,
              capfd: pytest.CaptureFixture[str]) -> list[str]:
    """What converting the unbroken input with these arguments prints (once per run)."""
    key = (source, tuple(args))
    if key not in _BASELINES:
        bag = workdir / 'baseline_bag'
        code, out, err = _run(capfd, ['convert', str(source), *args, '-o', str(bag), '-q'])
        assert code == 0, err
        shutil.rmtree(bag, ignore_errors=True)
        _BASELINES[key] = (out + err).splitlines()
    return _BASELINES[key]


def check_accepted(case: Accepted, source: Path, workdir: Path,
                   capfd: pytest.CaptureFixture[str]) -> None:
    root = _broken_copy(case.breaker, source, workdir)
    before = tree_digest(root)
    bag = workdir / 'bag'
    code, out, err = _run(capfd, ['convert', str(root), *case.args, '-o', str(bag), '-q'])
    assert code == 0, err
    assert 'Traceback' not in out + err, err
    # One line more than the untouched input prints (a sample's own warnings, such as
    # React's pre-fix latency, are not the row's), and that line is the row's warning.
    added = list((out + err).splitlines())
    for line in _baseline(source, case.args, workdir, capfd):
        if line in added:
            added.remove(line)
    assert len(added) == case.lines, \
        f'expected {case.lines} line(s) more than the input as written, got:\n{err}'
    assert all(line.startswith('warning:') for line in added), err
    assert any(all(w in line for w in case.warning) for line in added), err
    assert tree_digest(root) == before
    from rosbags.highlevel import AnyReader
    with AnyReader([bag]) as reader:
        count = sum(1 for _ in reader.messages())
    assert count > 0
    if case.check is not None:
        case.check(bag)


def ids(cases: list) -> list[str]:
    names = [c.name for c in cases]
    assert len(set(names)) == len(names), 'case names must be distinct'
    return names


__all__ = ['Accepted', 'Breaker', 'Refused', 'check_accepted', 'check_refused', 'ids',
           'tree_digest']
