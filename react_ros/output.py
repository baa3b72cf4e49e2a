"""Where every writer puts what it makes: checked first, written aside, renamed into place.

The promise (README, "Bad input"): a refused, failed or interrupted write leaves nothing
behind and touches nothing of the user's. Bags, samples and convert-all go through here:

    out = output_path(raw, option='-o/--output', inputs=[episode.path])  # refusals
    with staged(out, overwrite=..., ours=is_react_ros_bag, noun='react_ros bag') as tmp:
        ...fill the directory tmp...
    # out is complete now; after an exception, SIGTERM, SIGINT or SIGHUP nothing is left

A stop signal does not raise where it lands: it sets a flag (the end of this file)
that the writer's loop turns into Interrupted at its next check_stop(), that worker
threads watch, and that staged() checks once more before the rename; so an output
is either complete or absent, and no thread is left running when the process exits.

Next to OUT while a write is under way (hidden, one <token> per write):
    .OUT.<token>.partial/   what is being written; renamed to OUT on success
    .OUT.<token>.lock       react_ros's marker with the writer's pid, flock-held by it
    .OUT.<token>.old        the output being replaced, for the moment of the swap
SIGKILL cannot be cleaned up after, so the next staged() to OUT (or remove_stale) removes
the partials whose lock nobody holds; a live writer holds its lock, and something
without our lock is not provably ours and is never touched.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import secrets
import shutil
import signal
import socket
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from react_ros.errors import OutputWriteError, SinkError

MARKER = 'react_ros partial output'
# The signals that mean "stop" and can be caught; each sets the stop flag (check_stop).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_LOCK = re.compile(r'\.(?P<name>.+)\.(?P<token>[0-9a-f]{8})\.lock')
_OUTPUT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG}
_Lock = tuple[int, str]  # the lock file's descriptor, the write's token


class Interrupted(KeyboardInterrupt):
    """A stop signal during a write: a KeyboardInterrupt, so Ctrl-C cleanup code runs too."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def output_path(raw: str | os.PathLike[str], *, option: str,
                inputs: Iterable[str | os.PathLike[str]] = ()) -> Path:
    """`raw` as an absolute path, or SinkError if writing there could harm something.

    Refused: an empty name (Path('') would be the current directory), a path that
    is, is inside or holds one of `inputs` (writing would change them; the line
    names the input, as input errors do), and the current directory or one that
    holds it (it would be moved away under the shell).
    """
    if not os.fspath(raw):
        raise SinkError(f'{option}: is empty; name the folder to write')
    out = Path(os.path.abspath(raw))  # '.', '..', 'x/' get a real name
    real = out.resolve()  # symlinks are followed to compare with what they point at
    for inp in inputs:
        src = Path(inp).resolve()
        if real == src:
            raise SinkError(f'{inp}: is the input, it cannot be the output ({option}) too')
        if src in real.parents or real in src.parents:
            where = 'is inside' if src in real.parents else 'holds'
            raise SinkError(f'{inp}: the output {out} {where} this input; '
                            'write the output elsewhere')
    cwd = Path.cwd().resolve()
    if real == cwd or real in cwd.parents:
        raise SinkError(f'{out}: is or holds the current directory; name a new folder')
    return out


def check_replaceable(out: Path, *, overwrite: bool = False,
                      ours: Callable[[Path], bool] | None = None,
                      noun: str = 'react_ros output') -> None:
    """SinkError unless `out` is free: absent, an empty folder, or (with `overwrite`) ours.

    `ours(path)` says whether a path is a previous output of this writer; without it
    nothing existing and non-empty is ever replaced.
    """
    if not os.path.lexists(out) or _empty_dir(out):
        return
    mine = not out.is_symlink() and ours is not None and ours(out)
    if mine and not overwrite:
        raise SinkError(f'{out}: exists already, not overwriting (use --overwrite)')
    if not mine:
        what = f'is not a {noun}' if ours is not None else 'is not empty'
        raise SinkError(f'{out}: exists already and {what}, not overwriting it')


@contextmanager
def staged(out: Path, *, overwrite: bool = False, ours: Callable[[Path], bool] | None = None,
           noun: str = 'react_ros output') -> Iterator[Path]:
    """Yield a new hidden directory to fill; rename it to `out` when the block succeeds.

    `out` comes from output_path. On any exception or stop signal the directory,
    its lock and the parent folders made for it are removed and the exception goes
    on (a signal as Interrupted, raised by the block's check_stop() or here before
    the rename; a full or read-only disk as OutputWriteError). A previous output is
    replaced (see check_replaceable) only once the new one is complete. A stop
    requested before the block starts raises Interrupted before anything is made;
    one that arrives during the rename itself leaves the complete output in place
    and the flag set, for the caller to exit with (cli.main does).
    """
    out = Path(out)
    try:
        if out.parent.is_dir():
            remove_stale(out.parent, out.name)
    except OSError as exc:
        raise OutputWriteError(f'{out}: cannot be written ({exc.strerror})') from None
    check_replaceable(out, overwrite=overwrite, ours=ours, noun=noun)
    check_stop()
    made: list[Path] = []
    lock: _Lock | None = None
    with stop_signals_flag():
        try:
            with _held_back():  # `made` and `lock` are known before any handler runs
                made, lock = _prepare(out)
            tmp = _name(out, lock[1], 'partial')
            try:
                yield tmp
            except OSError as exc:
                if exc.errno in _OUTPUT_ERRNOS:  # only writing fails like this, never reading
                    raise OutputWriteError(f'{out}: cannot be written ({exc.strerror})') from None
                raise
            check_stop()  # a stop after the block's last check: no output
            with _held_back():
                _commit(tmp, out, lock[1], overwrite, ours, noun)
                _release(lock, out)
                lock = None
        except BaseException:
            with _held_back():
                if lock is not None:
                    shutil.rmtree(_name(out, lock[1], 'partial'), ignore_errors=True)
                    _release(lock, out)
                _remove_parents(made)
            raise


def remove_stale(folder: Path, name: str | None = None) -> list[Path]:
    """Remove what killed react_ros writers left in `folder` (for output `name`, or any).

    Only partials whose lock file is react_ros's and held by no process go; an
    output that was moved aside to be replaced goes back if nothing took its place.
    Returns the outputs whose leftovers were removed.
    """
    done = []
    for lock_path in sorted(Path(folder).glob('.*.lock')):
        m = _LOCK.fullmatch(lock_path.name)
        if m is None or (name is not None and m['name'] != name):
            continue
        try:
            fd = os.open(lock_path, os.O_RDWR)
        except OSError:  # gone meanwhile (its writer finished, or another run cleaned it)
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # fails while its writer lives
            # An empty lock is a writer between creating and marking it, not a dead one.
            if _marker(os.read(fd, 4096)) != MARKER:
                continue
            out = Path(folder) / m['name']
            old = _name(out, m['token'], 'old')
            if os.path.lexists(old) and not os.path.lexists(out):
                os.replace(old, out)  # killed mid-swap: the previous output is whole
            _remove(old)
            shutil.rmtree(_name(out, m['token'], 'partial'), ignore_errors=True)
            lock_path.unlink(missing_ok=True)
            done.append(out)
        except OSError:
            continue  # held, or not ours to change: leave it as it is
        finally:
            os.close(fd)
    return done


def _marker(data: bytes) -> object:
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    return doc.get('marker') if isinstance(doc, dict) else None


def _name(out: Path, token: str, suffix: str) -> Path:
    return out.parent / f'.{out.name}.{token}.{suffix}'


def _prepare(out: Path) -> tuple[list[Path], _Lock]:
    """Make the parents of `out` (returning those made), its lock and its partial folder."""
    for attempt in range(3):
        made: list[Path] = []
        lock = None
        try:
            made = _missing_parents(out)
            out.parent.mkdir(parents=True, exist_ok=True)
            lock = _take_lock(out)
            _name(out, lock[1], 'partial').mkdir()  # not mkdtemp: its 0700 would stay
            return made, lock
        except OSError as exc:
            if lock is not None:
                _release(lock, out)
            _remove_parents(made)
            # A failing writer next door (convert-all) may remove a parent it made just
            # before our lock is in it: make it again.
            if not isinstance(exc, FileNotFoundError) or attempt == 2:
                raise OutputWriteError(f'{out}: cannot create it ({exc.strerror})') from None
    raise AssertionError('not reached')


def _take_lock(out: Path) -> _Lock:
    """A new lock file next to `out`, created, locked, then marked (remove_stale's order)."""
    while True:
        token = secrets.token_hex(4)
        path = _name(out, token, 'lock')
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        if os.path.lexists(_name(out, token, 'partial')):  # someone else's, without a lock
            os.close(fd)
            path.unlink()
            continue
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, json.dumps({'marker': MARKER, 'pid': os.getpid(),
                                 'host': socket.gethostname()}).encode() + b'\n')
        return fd, token


def _release(lock: _Lock, out: Path) -> None:
    _name(out, lock[1], 'lock').unlink(missing_ok=True)  # unlinked while still locked
    os.close(lock[0])


def _commit(tmp: Path, out: Path, token: str, overwrite: bool,
            ours: Callable[[Path], bool] | None, noun: str) -> None:
    check_replaceable(out, overwrite=overwrite, ours=ours, noun=noun)  # may have appeared
    old = None
    try:
        if os.path.lexists(out) and not _empty_dir(out):  # an empty folder is renamed over
            old = _name(out, token, 'old')
            os.replace(out, old)
        try:
            os.replace(tmp, out)
        except OSError:
            if old is not None:
                os.replace(old, out)
            raise
    except OSError as exc:
        raise OutputWriteError(f'{out}: cannot put it in place ({exc.strerror})') from None
    if old is not None:
        _remove(old)


def _empty_dir(path: Path) -> bool:
    if path.is_symlink() or not path.is_dir():
        return False
    with os.scandir(path) as it:
        return next(it, None) is None


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        path.unlink()


def _missing_parents(out: Path) -> list[Path]:
    """The folders above `out` that do not exist, deepest first."""
    missing = []
    p = out.parent
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    return missing


def _remove_parents(made: list[Path]) -> None:
    for p in made:
        try:
            p.rmdir()
        except OSError as exc:  # not empty: something else writes there now; keep it
            if exc.errno != errno.ENOENT:
                break


@contextmanager
def _held_back() -> Iterator[None]:
    """The stop signals wait for the block's end: a commit or a clean-up is never cut.

    Our handler only sets a flag; this holds back a handler of someone else's too.
    """
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextmanager
def stop_signals_flag() -> Iterator[None]:
    """For the block, SIGINT, SIGTERM and SIGHUP set the stop flag (below) instead of raising.

    Only the main thread can set handlers (writers run there, convert-all's worker
    processes too); a signal the process ignores (`nohup`, `&`, a worker's SIGINT) or
    handles its own way stays so. After a stop the handlers stay in place, so a
    second signal while the process winds down is a no-op, not a traceback or
    another exit status; clear_stop() puts the previous ones back.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for s in STOP_SIGNALS:
        current = signal.getsignal(s)
        if current in (signal.SIG_DFL, signal.default_int_handler):
            previous[s] = signal.signal(s, _on_stop_signal)
    try:
        yield
    finally:
        for s, h in previous.items():
            if stop_requested():
                _KEPT.setdefault(s, h)
            else:
                signal.signal(s, h)


# What drivers that are not writers themselves (convert-all) hold around their run. The
# old name stays, with the flag's meaning: nothing raises from inside a C callback.
stop_signals_raise = stop_signals_flag


# --- the stop flag ---------------------------------------------------------------
# A handler that raises lands wherever the main thread happens to be: inside a C
# extension's callback (rclpy's deserialisation) it surfaces as another exception,
# and worker threads left running at exit deadlock the interpreter's shutdown on
# h5py's global lock. The handler instead records the signal and returns; the
# writers' loops (check_stop), every worker thread (stop_requested; its owner joins
# it) and every blocking wait (wait_for_stop, or a wait in steps of STOP_POLL_S)
# stop where stopping is safe. The first signal's number is what the process exits
# with.
#
# Nothing here takes a lock: a handler runs on the main thread between two
# bytecodes, possibly while that thread holds the very lock it would take (a
# threading.Event's, inside its wait), and would wait for itself for ever. So
# request_stop only stores the number (safe in a handler), and waits poll it every
# STOP_POLL_S.
STOP_POLL_S = 0.05
_STOP_SIGNUM = [0]
_KEPT: dict[int, Any] = {}  # the handlers stop_signals_flag replaced, kept aside after a stop
_IGNORED: set[int] = set()  # the signals ignore_stop_signals ignores


def _on_stop_signal(signum: int, frame: object) -> None:
    request_stop(signum)


def request_stop(signum: int) -> None:
    """Ask every loop and worker thread of this process to stop; safe in a signal handler."""
    if not _STOP_SIGNUM[0]:
        _STOP_SIGNUM[0] = int(signum)


def stop_requested() -> int:
    """The number of the (first) stop signal received, 0 while none was."""
    return _STOP_SIGNUM[0]


def check_stop() -> None:
    """Raise Interrupted if a stop signal arrived: call it where stopping is safe."""
    if _STOP_SIGNUM[0]:
        raise Interrupted(_STOP_SIGNUM[0])


def wait_for_stop(timeout: float | None) -> bool:
    """Sleep up to `timeout` s (None: until a stop), waking within STOP_POLL_S of a stop.

    True if a stop was requested.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    while not _STOP_SIGNUM[0]:
        step = STOP_POLL_S
        if deadline is not None:
            step = min(step, deadline - time.monotonic())
            if step <= 0:
                return False
        time.sleep(step)  # a signal cuts it short only to resume it (PEP 475): hence the steps
    return True


def ignore_stop_signals() -> None:
    """The process is exiting after a stop: from now on the stop signals are ignored.

    At exit the interpreter puts back the default action of every signal with a
    Python handler, so a second Ctrl-C while it finalises would kill the process
    and change its exit status (-2 instead of 130, seen with two signals 5 ms
    apart); an ignored signal stays ignored. Main thread only; clear_stop() undoes it.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for s in STOP_SIGNALS:
        current = signal.getsignal(s)
        if current is _on_stop_signal or current in (signal.SIG_DFL,
                                                      signal.default_int_handler):
            _KEPT.setdefault(s, current)
            signal.signal(s, signal.SIG_IGN)
            _IGNORED.add(s)


def clear_stop() -> None:
    """Forget a stop signal (tests, and a process that handled one and goes on).

    The handlers stop_signals_flag left in place after the stop, or
    ignore_stop_signals set, are replaced by the ones they stood in for.
    """
    for s, h in _KEPT.items():
        current = signal.getsignal(s)
        if current is _on_stop_signal or (current == signal.SIG_IGN and s in _IGNORED):
            signal.signal(s, h)
    _KEPT.clear()
    _IGNORED.clear()
    _STOP_SIGNUM[0] = 0


__all__ = ['STOP_POLL_S', 'Interrupted', 'check_replaceable', 'check_stop', 'clear_stop',
           'ignore_stop_signals', 'output_path', 'remove_stale', 'request_stop', 'staged',
           'stop_requested', 'stop_signals_flag', 'stop_signals_raise', 'wait_for_stop']
