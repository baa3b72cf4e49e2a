"""One episode into one bag: the unit of work a local process or a Ray worker runs.

Everything in and out is plain data (picklable, no open files), so the same
function runs in a worker process of this machine and on any Ray node that sees
the release and OUTDIR at the same paths.
"""
from __future__ import annotations

import ctypes
import errno
import os
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from react_ros.adapters.base import EpisodeRef
from react_ros.convert_options import ConvertAllOptions


@dataclass(frozen=True)
class Task:
    kind: str
    ref: EpisodeRef
    root: str  # the release, which the output must stay out of
    out: str  # OUTDIR/<id>
    options: ConvertAllOptions
    own: dict[str, Any] = field(default_factory=dict)  # the kind's options the user set


@dataclass(frozen=True)
class Outcome:
    id: str
    status: str  # index.CONVERTED, REFUSED or FAILED
    messages: int = 0
    duration_s: float = 0.0
    bytes: int = 0
    reason: str = ''
    seconds: float = 0.0


def convert_episode(task: Task) -> Outcome:
    """Convert one episode; a refusal or a bug becomes an Outcome, never an exception.

    refused: the episode's own fault (as `convert` would exit 2), kept until its
    sources change; failed: a bug, or the machine (environmental: a full disk, an
    I/O error), tried again by the next run. A stop signal still propagates: the
    run is being stopped, not this episode failed.
    """
    from react_ros.registry import KINDS, EpisodeOptions, open_episode
    from react_ros.errors import ReactRosError, interrupt_behind
    from react_ros.release.index import CONVERTED, FAILED, REFUSED
    from react_ros.rosbag2.writer import write_bag
    from react_ros.rosbag2.disk_space import SizeWatch

    start = time.monotonic()
    ref, run = task.ref, task.options
    try:
        kind = KINDS[task.kind]
        options = EpisodeOptions(image_scale=run.image_scale, episode=ref.episode,
                                 own=kind.options.from_values(task.own))
        episode = open_episode(ref.path, kind.name, options)
        summary = write_bag(episode, task.out, run.bag(), overwrite=True,
                            inputs=[Path(task.root)], size=SizeWatch(check=not run.no_space_check))
    except ReactRosError as err:
        # The output's disk or a read failing under us is the machine's fault, not the
        # episode's: failed, tried again by the next run (a refusal would stay for ever).
        status = FAILED if environmental(err) else REFUSED
        return Outcome(ref.id, status, reason=_one_line(str(err)),
                       seconds=time.monotonic() - start)
    except Exception as err:
        stop = interrupt_behind(err)
        if stop is not None:  # a stop signal that surfaced through a C extension's callback
            raise stop from None
        if environmental(err):  # as above (an OSError no reader turned into a refusal)
            return Outcome(ref.id, FAILED, reason=_one_line(str(err)),
                           seconds=time.monotonic() - start)
        # a bug: said in full on stderr, retried by the next run
        print(f'react-ros convert-all: {ref.id}: unexpected error\n{traceback.format_exc()}',
              file=sys.stderr, flush=True)
        return Outcome(ref.id, FAILED, reason=_one_line(f'{type(err).__name__}: {err}'),
                       seconds=time.monotonic() - start)
    return Outcome(ref.id, CONVERTED, messages=summary.message_count,
                   duration_s=summary.duration_ns / 1e9, bytes=tree_bytes(summary.path),
                   seconds=time.monotonic() - start)


# A read or write failing with these is the machine's doing (a full or failing disk,
# a network filesystem gone, memory), whatever the file: the episode may be fine.
ENVIRONMENT_ERRNOS = frozenset({errno.EIO, errno.ENOSPC, errno.EDQUOT, errno.EROFS,
                                errno.EFBIG, errno.ENOMEM, errno.ESTALE, errno.ETIMEDOUT,
                                errno.ENOTCONN, errno.EHOSTDOWN})


def environmental(err: BaseException) -> bool:
    """Whether `err` (or what it was raised from, `from None` included) is the
    output's filesystem failing (OutputWriteError) or an OSError of ENVIRONMENT_ERRNOS."""
    from react_ros.errors import OutputWriteError

    seen: set[int] = set()
    cause: BaseException | None = err
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, OutputWriteError):
            return True
        if isinstance(cause, OSError) and cause.errno in ENVIRONMENT_ERRNOS:
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _one_line(text: str) -> str:
    return ' '.join(text.split())


def tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob('*') if p.is_file())


_PR_SET_PDEATHSIG = 1


def init_worker(parent_pid: int) -> None:
    """Run first in every local worker process.

    Ctrl-C reaches the whole process group; the driver decides what stops, so a
    worker ignores SIGINT (and then SIGTERM from the driver cleans up through
    react_ros/output.py). A driver killed outright (SIGKILL) takes its workers with it,
    so that a re-run does not race a worker still finishing an episode.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: workers end when their next task fails
        pass
    if os.getppid() != parent_pid:  # the driver died before prctl took effect
        os._exit(1)


__all__ = ['ENVIRONMENT_ERRNOS', 'Outcome', 'Task', 'convert_episode',
           'environmental', 'init_worker', 'tree_bytes']
