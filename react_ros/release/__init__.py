"""`react-ros convert-all`: every episode of a release into its own bag, resumably.

    convert_all(root, out_dir, ConvertAllOptions(workers=N | ray=ADDRESS, ...), kind=, own=)

The release's kind finds its episodes (DatasetKind.find_episodes); each becomes
OUTDIR/<episode id>/ through the same bag writer as `convert`, in a worker process
(runners.run_local) or a Ray task (runners.run_ray); OUTDIR/index.json (index.py)
records every outcome as it arrives, so a killed run loses only the episodes it was
converting, and a re-run does only what is missing, failed or changed.

SIGINT, SIGTERM and SIGHUP stop a run within about a second. They set react_ros/output.py's
stop flag (stop_signals_flag), which the driver looks at between episodes of the
plan, between files it hashes and while it waits for workers: no episode starts
after it, the ones being converted are ended and leave nothing (they stay pending),
the ones finished are recorded, and the run exits 128 + the signal.
"""
from __future__ import annotations

import fcntl
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Iterator, Mapping

from react_ros.convert_options import ConvertAllOptions
from react_ros.registry import find_release
from react_ros.adapters.base import DatasetKind, EpisodeRef
from react_ros.errors import SinkError
from react_ros.registry import own_values
from react_ros.progress import Progress
from react_ros.release import index
from react_ros.release.index import CONVERTED, FAILED, REFUSED, Entry
from react_ros.release.runners import default_workers, run_local, run_ray
from react_ros.release.task import Outcome, Task, environmental
from react_ros.release.usage import RunUsage
from react_ros.progress import size_text
from react_ros.output import check_stop, output_path, stop_requested, stop_signals_flag

LOCK = '.convert-all.lock'


@dataclass(frozen=True)
class Plan:
    kind: DatasetKind
    root: Path
    out_dir: Path
    episodes: list[EpisodeRef]
    todo: list[EpisodeRef]  # to convert now
    entries: dict[str, Entry]  # what the index says now (kept and new alike)


def convert_all(root: str | os.PathLike[str], out: str | os.PathLike[str],
                options: ConvertAllOptions | None = None, *, kind: str | None = None,
                own: Mapping[str, Any] | None = None, progress: bool = False,
                quiet: bool = False) -> int:
    """Convert the release at `root` into `out`; 0 all converted, 1 some not.

    `options.ray`: None runs on local processes; '' a local Ray; else a Ray address.
    `kind`: None detects it; `own`: the kind's options the user set, by name.
    A ROOT or OUTDIR that cannot be used raises ReactRosError (exit 2).
    """
    run = ConvertAllOptions() if options is None else options
    root = Path(os.path.abspath(root))
    found, episodes = find_release(root, kind)
    own = dict(own or {})
    _check_own_options(found, own, root)
    # The kind's options that follow the run's of the same name (TrueTrace's verify).
    own.update({name: getattr(run, name) for name in sorted(found.options.FROM_RUN)
                if getattr(run, name)})
    out_dir = output_path(out, option='-o/--output', inputs=[root])
    _prepare_out_dir(out_dir)
    with _exclusive(out_dir), stop_signals_flag():
        plan = _plan(found, root, out_dir, episodes, run, own)
        index.save(out_dir, root, found.name, plan.entries.values())
        usage = _run(plan, run, own, progress)
        if stop_requested():  # Interrupted (exit 128 + signal); the index holds what finished
            _report_stop(plan, quiet)
            check_stop()
    return _report(plan, quiet, usage)


def _check_own_options(kind: DatasetKind, own: Mapping[str, Any], root: Path) -> None:
    own_values(kind, lambda opt: own.get(opt.name, opt.default), lambda opt: opt.flag,
               f'{root} is a {kind.name} release')  # the one refusal of another kind's option
    kind.options.from_values(dict(own))  # values are checked once, here, not per episode


def _prepare_out_dir(out_dir: Path) -> None:
    """OUTDIR is new, empty, or a previous convert-all's: never someone else's folder."""
    if out_dir.is_dir():
        # (a run killed before its first index leaves only the lock)
        if {p.name for p in out_dir.iterdir()} - {LOCK} and not (out_dir / index.NAME).is_file():
            raise SinkError(f'{out_dir}: exists, is not empty and holds no convert-all '
                            f'{index.NAME}; choose a new folder')
        return
    if os.path.lexists(out_dir):
        raise SinkError(f'{out_dir}: exists and is not a folder')
    try:
        out_dir.mkdir(parents=True)
    except OSError as exc:
        raise SinkError(f'{out_dir}: cannot create it ({exc.strerror})') from None


class _exclusive:
    """Hold OUTDIR's lock for the run: two convert-alls into one OUTDIR would race."""

    def __init__(self, out_dir: Path) -> None:
        self.path = out_dir / LOCK
        self.fd = -1

    def __enter__(self) -> None:
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            if self.fd >= 0:
                os.close(self.fd)
            raise SinkError(f'{self.path.parent}: another convert-all is writing there '
                            '(or it cannot be locked)') from None

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)  # the file stays: unlinking it would race the next run's open


def _bag_dir(out_dir: Path, ref: EpisodeRef) -> Path:
    parts = PurePosixPath(ref.id).parts
    if not parts or any(p in ('', '.', '..') for p in parts) or ref.id.startswith('/'):
        raise AssertionError(f'episode id {ref.id!r} is not a relative path')
    return out_dir.joinpath(*parts)


def _plan(kind: DatasetKind, root: Path, out_dir: Path, episodes: list[EpisodeRef],
          run: ConvertAllOptions, own: dict[str, Any]) -> Plan:
    previous = index.load(out_dir)
    key, verify = run.key(own), run.verify
    prints = index.Fingerprints(root, verify)
    entries: dict[str, Entry] = {}
    todo = []
    for ref in episodes:
        check_stop()
        bag = _bag_dir(out_dir, ref)  # (what a killed run left there, staged() removes)
        try:
            stat = prints.stat(ref)
            content = prints.content(ref) if verify else ''
        except OSError as exc:
            # A source vanished since the listing: the episode's fault (refused, until
            # it is back: the fingerprint '' matches nothing). An I/O error: the disk's.
            status = FAILED if environmental(exc) else REFUSED
            entries[ref.id] = _entry(ref, root, out_dir, Outcome(
                ref.id, status, reason=f'{exc.filename}: cannot be read ({exc.strerror})'),
                '', '', key)
            continue
        old = previous.get(ref.id)
        if old is not None and _still_good(old, bag, stat, content, key, verify):
            old.fingerprint, old.content = stat, content or old.content
            entries[ref.id] = old
        else:
            entries[ref.id] = _entry(ref, root, out_dir, Outcome(ref.id, 'pending'),
                                     stat, content, key)
            todo.append(ref)
    return Plan(kind, root, out_dir, episodes, todo, entries)


def _still_good(old: Entry, bag: Path, stat: str, content: str, key: dict[str, object],
                verify: bool) -> bool:
    """Whether a previous outcome stands: same sources, same settings, bag still whole.

    The sources are all the fingerprint covers: the episode's own files, the files
    it shares with the release (a manifest, a calibration) and, with --verify, all
    its kind's check reads; so a refusal naming any of them is tried again once
    that file changed (by content with --verify, else by size and mtime).
    """
    same_source = (content == old.content) if verify else (stat == old.fingerprint)
    if not same_source or old.settings != key:
        return False
    if old.status == CONVERTED:
        from react_ros.rosbag2.writer import is_react_ros_bag  # (the CLI's start stays light)
        return is_react_ros_bag(bag)
    return old.status == REFUSED  # a refusal repeats until the episode changes


def _entry(ref: EpisodeRef, root: Path, out_dir: Path, outcome: Outcome, stat: str,
           content: str, key: dict[str, object]) -> Entry:
    try:
        source = Path(ref.path).relative_to(root).as_posix()
    except ValueError:
        source = str(ref.path)
    return Entry(id=ref.id, source=source, episode=ref.episode,
                 bag=_bag_dir(out_dir, ref).relative_to(out_dir).as_posix(),
                 status=outcome.status, messages=outcome.messages,
                 duration_s=round(outcome.duration_s, 9), bytes=outcome.bytes,
                 reason=outcome.reason, seconds=round(outcome.seconds, 3),
                 fingerprint=stat, content=content, settings=key)


def _run(plan: Plan, run: ConvertAllOptions, own: dict[str, Any], show: bool) -> str:
    """Runs the plan's episodes; returns what limited the run (release/usage.py)."""
    if not plan.todo:
        return ''
    workers, ray = run.workers or default_workers(), run.ray
    usage = RunUsage(min(workers, len(plan.todo)))
    task_seconds = 0.0
    refs = {r.id: r for r in plan.todo}
    tasks = [Task(plan.kind.name, ref, str(plan.root), str(_bag_dir(plan.out_dir, ref)),
                  run, own) for ref in plan.todo]
    outcomes: Iterator[Outcome] = (run_local(tasks, workers) if ray is None
                                   else run_ray(tasks, ray or None, workers))
    meter = _Meter(len(plan.todo), Progress() if show else None)
    unsaved = False
    try:
        for outcome in outcomes:
            old = plan.entries[outcome.id]
            plan.entries[outcome.id] = _entry(refs[outcome.id], plan.root, plan.out_dir,
                                              outcome, old.fingerprint, old.content,
                                              old.settings)
            try:
                index.save(plan.out_dir, plan.root, plan.kind.name, plan.entries.values())
                unsaved = False
            except SinkError:  # OUTDIR's disk full for now: the next outcome tries again
                unsaved = True
            meter.done(outcome)
            task_seconds += outcome.seconds
    finally:
        meter.close()
        if unsaved:  # the last try; its failure is the run's (exit 2, one line)
            index.save(plan.out_dir, plan.root, plan.kind.name, plan.entries.values())
    return usage.line(meter.count, task_seconds, meter.bytes)


class _Meter:
    """`convert-all: 3/10 episodes, 1 refused, 2.1 GB, ETA 0:04:10` on stderr."""

    def __init__(self, total: int, progress: Progress | None) -> None:
        self.total, self.progress = total, progress
        self.count = self.refused = self.bytes = 0
        self.start = time.monotonic()
        self._show(force=True)

    def done(self, outcome: Outcome) -> None:
        self.count += 1
        self.refused += outcome.status != CONVERTED
        self.bytes += outcome.bytes
        self._show(force=self.count == self.total)

    def _show(self, force: bool = False) -> None:
        if self.progress is None:
            return
        eta = '?'
        if self.count:
            left = (time.monotonic() - self.start) / self.count * (self.total - self.count)
            eta = time.strftime('%H:%M:%S', time.gmtime(left))
        bad = f', {self.refused} not converted' if self.refused else ''
        self.progress.show(f'convert-all: {self.count}/{self.total} episodes{bad}, '
                           f'{size_text(self.bytes)}, ETA {eta}', force=force)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.close()


def _report_stop(plan: Plan, quiet: bool) -> None:
    if quiet:
        return
    entries = [plan.entries[r.id] for r in plan.todo]
    made = sum(e.status == CONVERTED for e in entries)
    left = sum(e.status == 'pending' for e in entries)
    name = signal.Signals(stop_requested()).name
    print(f'convert-all: stopped by {name}: {made} of {len(entries)} converted, {left} left '
          f'to convert by the next run; index: {plan.out_dir / index.NAME}', file=sys.stderr)


def _report(plan: Plan, quiet: bool, usage: str) -> int:
    """List what is not converted (one line each, on stderr); 0 when nothing is. Unless
    `quiet`, the summary, and `usage`, the run's limits, on stdout."""
    entries = [plan.entries[r.id] for r in plan.episodes]
    bad = [e for e in entries if e.status != CONVERTED]
    for e in bad:
        print(f'{e.status}: {e.id}: {e.reason}', file=sys.stderr)
    if not quiet:
        new = {r.id for r in plan.todo}
        made = sum(e.status == CONVERTED and e.id in new for e in entries)
        kept = sum(e.status == CONVERTED and e.id not in new for e in entries)
        print(f'{plan.kind.name} release {plan.root}: {len(new)} to convert, {made} '
              f'converted, {kept} converted before; {len(bad)} not converted '
              f'({sum(e.status == REFUSED for e in bad)} refused, '
              f'{sum(e.status == FAILED for e in bad)} failed); '
              f'index: {plan.out_dir / index.NAME}')
        if usage:
            print(usage)
    return 1 if bad else 0


__all__ = ['convert_all']
