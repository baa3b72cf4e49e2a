"""Keeping DDS on this machine, and a ROS domain of one's own.

Fast DDS discovers peers by multicasting to every interface unless ROS 2 is
told otherwise, and two processes on one domain see each other's topics.
Self-contained runs (the test suite, `react-ros demo`) therefore keep
discovery on localhost and, for the tests, hold a domain id that no other run
on this machine holds, as ROS 2's own `domain_coordinator` does for its tests.

Domain ids are held with `flock` on one file per id, so a run that dies
releases its id with its last file descriptor and nothing goes stale.
scripts/ros_env.sh takes ids from the same files; it exports
REACT_ROS_DOMAIN_HELD so that a process it starts knows the id is held. Each
holder writes its command into its file, so `scripts/ros_env.sh --join` finds
the domain of a running player, and `react-ros play`/`demo` say on their
first line which domain and discovery range they use (`announce`).
"""
from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path
from typing import IO, MutableMapping

RANGE_VAR = 'ROS_AUTOMATIC_DISCOVERY_RANGE'
# Fast DDS's ports are 7400 + 250 * domain + offsets; above 101 they reach
# Linux's ephemeral range (32768+). 0 is everybody's default: never take it.
DOMAIN_IDS = range(1, 102)
HELD_VAR = 'REACT_ROS_DOMAIN_HELD'


def lock_dir() -> Path:
    return Path(os.environ.get('TMPDIR') or '/tmp') / 'react_ros_domains'


def discovery_range_chosen(env: MutableMapping[str, str] = os.environ) -> bool:
    """Whether the user has said how far discovery may reach (either variable)."""
    return bool(env.get(RANGE_VAR) or env.get('ROS_LOCALHOST_ONLY'))


def keep_discovery_local(env: MutableMapping[str, str] = os.environ) -> bool:
    """Set discovery to LOCALHOST unless the user chose a range; True if it set it."""
    if discovery_range_chosen(env):
        return False
    env[RANGE_VAR] = 'LOCALHOST'
    return True


class DomainLease:
    """A ROS_DOMAIN_ID held until `release()` (or the process's end)."""

    def __init__(self, domain_id: int, handle: IO[bytes] | None) -> None:
        self.domain_id = domain_id
        self._handle = handle

    @property
    def inherited(self) -> bool:
        """Held by the process that started us (scripts/ros_env.sh), not by this one."""
        return self._handle is None

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def hold_domain(env: MutableMapping[str, str] = os.environ) -> DomainLease:
    """Hold a domain id nobody else on this machine holds, and put it in `env`.

    An id that scripts/ros_env.sh took for us (REACT_ROS_DOMAIN_HELD equal to
    ROS_DOMAIN_ID) is kept; any other ROS_DOMAIN_ID, a pid-based guess among
    them, is replaced.
    """
    held = env.get(HELD_VAR)
    if held and held == env.get('ROS_DOMAIN_ID'):
        return DomainLease(int(held), None)
    directory = lock_dir()
    directory.mkdir(parents=True, exist_ok=True)
    start = os.getpid() % len(DOMAIN_IDS)
    for i in range(len(DOMAIN_IDS)):
        domain_id = DOMAIN_IDS[(start + i) % len(DOMAIN_IDS)]
        handle = open(directory / f'{domain_id}.lock', 'ab')  # noqa: SIM115 (held open)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        # The holder's command, as scripts/ros_env.sh writes it: `--join` looks for players.
        handle.truncate(0)
        handle.write((' '.join(sys.argv) + '\n').encode())
        handle.flush()
        env['ROS_DOMAIN_ID'] = env[HELD_VAR] = str(domain_id)
        return DomainLease(domain_id, handle)
    raise RuntimeError(f'every ROS domain id {DOMAIN_IDS.start}-{DOMAIN_IDS.stop - 1} '
                       f'is held by another run (locks in {directory})')


ROS_ENV = Path(__file__).resolve().parents[2] / 'scripts' / 'ros_env.sh'
_announced = False


def domain_line(prog: str, note: str = '', env: MutableMapping[str, str] = os.environ) -> str:
    """Which ROS domain and discovery range this process's DDS uses, and how to join it."""
    domain = env.get('ROS_DOMAIN_ID') or ''
    where = (f'ROS_DOMAIN_ID={domain}' if domain else "ROS_DOMAIN_ID=0 (unset: ROS 2's default)")
    if env.get(RANGE_VAR):
        reach = f'{RANGE_VAR}={env[RANGE_VAR]}'
    elif env.get('ROS_LOCALHOST_ONLY') == '1':
        reach = 'ROS_LOCALHOST_ONLY=1'
    else:
        reach = f"{RANGE_VAR}=SUBNET (unset: ROS 2's default)"
    line = f'{prog}: DDS on {where}, {reach}' + (f' ({note})' if note else '')
    if domain and env.get(HELD_VAR) == domain and ROS_ENV.is_file():
        script = ROS_ENV
        try:
            script = ROS_ENV.relative_to(Path.cwd())
        except ValueError:
            pass
        line += (f'; from another terminal: {script} --join COMMAND '
                 f'(or ROS_DOMAIN_ID={domain} {script} COMMAND)')
    elif domain:
        line += f'; another terminal sees it with ROS_DOMAIN_ID={domain} and the same range'
    return line


def announce(prog: str, note: str = '') -> None:
    """Print domain_line on stderr, once per process (the demo's first line, then play's)."""
    global _announced
    if not _announced:
        _announced = True
        print(domain_line(prog, note), file=sys.stderr, flush=True)
