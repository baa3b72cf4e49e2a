"""Fast DDS shared-memory ports that a killed process left half-made, found and cleared;
and the segments of participants that are gone (clear_dead_segments).

Each participant listens on a port, a segment /dev/shm/fastdds_port<N> (N = 7400 +
250 * domain + 11 + 2 * participant index under ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST).
Its creator sizes the file and then marks its first word "initialized" (Boost.Interprocess'
managed segment header: 0 uninitialized, 1 initializing, 2 initialized, 3 corrupted) before
it takes the port's lock file. A process killed (SIGKILL, or a signal it has no handler
for) between the two leaves a segment of size 0, or marked 0 or 1, and no lock file:
Fast DDS' zombie check (an unlocked `_el` file) cannot see it, `fastdds shm clean` does
not remove it, and every later participant that takes that port index in that domain
waits forever inside Boost's open loop (no timeout in Fast DDS 3.2's bundled Boost), in
rclpy's Node(), spinning on sched_yield.

A live creator holds that state for microseconds, under the port's mutex. One still in
it after SETTLE_S is dead; it is then marked corrupted (a process already spinning on it
gives up and takes the next port, which Fast DDS handles), and the segment and its mutex
semaphore are removed, so the next participant creates the port afresh.

No ROS here: this runs before rclpy creates anything.
"""
from __future__ import annotations

import fcntl
import os
import re
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

SHM = Path('/dev/shm')
PREFIX = 'fastdds_port'
_UNINITIALIZED, _INITIALIZING, _CORRUPTED = 0, 1, 3
SETTLE_S = 2.0
# A participant's data segment (its lock file: the name and _el).
_SEGMENT = re.compile(r'fastdds_[0-9a-f]{16}')
_POLL_S = 0.05


@dataclass(frozen=True)
class HalfMadePort:
    path: Path
    inode: int
    size: int

    @property
    def port(self) -> int:
        return int(self.path.name[len(PREFIX):])

    @property
    def domain(self) -> int:
        return (self.port - 7400) // 250


def domain_ports(domain_id: int) -> range:
    """The ports RTPS gives a domain: 7400 + 250 * domain, the next 250."""
    start = 7400 + 250 * domain_id
    return range(start, start + 250)


def _state(path: Path) -> HalfMadePort | None:
    """The port as it is now, if half-made; None if whole, corrupted-marked or gone."""
    try:
        with open(path, 'rb') as f:
            st = os.fstat(f.fileno())
            head = f.read(4)
    except OSError:
        return None
    if 0 < len(head) < 4:
        return None  # sized but too short to be a segment: Boost gives up on it (no wait)
    if head and struct.unpack('<I', head)[0] not in (_UNINITIALIZED, _INITIALIZING):
        return None
    return HalfMadePort(path, st.st_ino, st.st_size)


def half_made_ports(ports: Iterable[int] | None = None, shm: Path = SHM) -> list[HalfMadePort]:
    """Port segments that are, at this instant, unsized or not yet marked initialized."""
    wanted = None if ports is None else set(ports)
    found = []
    try:
        entries = list(os.scandir(shm))
    except OSError:  # no /dev/shm: not Linux, or no shared memory transport here
        return []
    for entry in entries:
        name = entry.name
        number = name[len(PREFIX):]
        if not name.startswith(PREFIX) or not number.isdigit():
            continue  # _el / _sl lock files, participants' data segments, others
        if wanted is not None and int(number) not in wanted:
            continue
        state = _state(Path(entry.path))
        if state is not None:
            found.append(state)
    return found


def _still_half_made(port: HalfMadePort, settle_s: float) -> bool:
    """True if it stays half-made (same file) for settle_s: its creator is dead."""
    deadline = time.monotonic() + settle_s
    while True:
        now = _state(port.path)
        if now is None or now.inode != port.inode:
            return False
        if time.monotonic() >= deadline:
            return True
        time.sleep(_POLL_S)


def _clear(port: HalfMadePort, shm: Path) -> bool:
    """Mark the dead port corrupted, then remove it and its mutex. False if it moved on."""
    try:
        fd = os.open(port.path, os.O_RDWR)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if st.st_ino != port.inode:
            return False
        if st.st_size < 4:
            # Boost waits for a size; one byte ends the wait and fails its checks.
            os.ftruncate(fd, 1)
        else:
            os.pwrite(fd, struct.pack('<I', _CORRUPTED), 0)
        for path in (port.path, shm / f'sem.{port.path.name}_mutex'):
            try:
                path.unlink()
            except FileNotFoundError:
                pass
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def clear_half_made_ports(ports: Iterable[int] | None = None, shm: Path = SHM,
                          settle_s: float = SETTLE_S,
                          say: Callable[[str], None] | None = None) -> list[HalfMadePort]:
    """Clear every port segment (of `ports`, else any) a dead creator left half-made.

    Costs a directory listing when there is none; a half-made one is watched for
    `settle_s` first, as its creator may still be at work. `say` gets one line per port
    cleared. Returns the ports cleared.
    """
    cleared = []
    for port in half_made_ports(ports, shm):
        if _still_half_made(port, settle_s) and _clear(port, shm):
            cleared.append(port)
            if say is not None:
                say(f'removed {port.path}, a Fast DDS shared-memory port that a killed '
                    f'process left half-made (every new participant of ROS domain '
                    f'{port.domain} that took it would have waited forever)')
    return cleared


def clear_dead_segments(shm: Path = SHM, settle_s: float = SETTLE_S) -> list[Path]:
    """Remove the data segments of participants that are gone; the segments removed.

    A participant sends through a segment /dev/shm/fastdds_<16 hex digits> and holds an
    exclusive flock on its `<name>_el` file while it lives. A process that ends without
    destroying its participant (SIGKILL, a crash) leaves both behind, and Fast DDS 3.2 does
    not remove them (`fastdds shm clean` does, by the same test). The player's segment is
    32 MiB of memory once used (ros/dds.py), so each killed player would keep that much of
    /dev/shm until the machine restarts. A segment whose lock file nobody holds, both older
    than `settle_s` (a creator takes its lock as it makes them), is removed, lock held.
    """
    removed = []
    try:
        entries = [e for e in os.scandir(shm) if _SEGMENT.fullmatch(e.name)]
    except OSError:  # no /dev/shm: not Linux, or no shared memory transport here
        return []
    old = time.time() - settle_s
    for entry in entries:
        segment, lock = Path(entry.path), shm / f'{entry.name}_el'
        try:
            if max(segment.stat().st_mtime, lock.stat().st_mtime) > old:
                continue
            fd = os.open(lock, os.O_RDONLY)
        except OSError:  # no lock file (not Fast DDS's), or gone meanwhile
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # its participant is alive
        try:
            segment.unlink()
            lock.unlink()
            removed.append(segment)
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed
