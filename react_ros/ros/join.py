"""Which ROS domain a second terminal's command (`react-ros topic`, `control`) uses.

The player's domain, found the way `scripts/ros_env.sh --join` finds it: a
player started through scripts/ros_env.sh holds a lock file per domain id with
its command written in it (isolation.py). A command joins that player by
itself when the user has not chosen a domain: ROS_DOMAIN_ID unset (a new
shell), or a domain that ros_env.sh took for this very kind of command (nobody
else is in it). An explicit ROS_DOMAIN_ID (`ros_env.sh --join`, an export, a
`ros_env.sh bash` shell whose player runs in the background) is kept, as every
ROS 2 tool keeps it. No DDS here: this runs before rclpy is initialised.
"""
from __future__ import annotations

import fcntl
import re
from dataclasses import dataclass
from pathlib import Path
from typing import MutableMapping

from react_ros.errors import ReactRosError
from react_ros.ros.isolation import HELD_VAR, RANGE_VAR, discovery_range_chosen, lock_dir

# The same pattern as scripts/ros_env.sh's `player`.
PLAYER = re.compile(r'(react-ros|react_ros\.cli) (play|demo)|react_ros\.node|react_ros/node')
# Commands that never hold a player: a domain ros_env.sh took for one of them is empty.
VISITOR = re.compile(r'(react-ros|react_ros\.cli) (topic|control)\b')


@dataclass(frozen=True)
class RunningPlayer:
    domain_id: int
    command: str  # the first line its lock holds


def _held(path: Path) -> bool:
    """Whether a process still holds the lock (a shared lock would be refused)."""
    try:
        with path.open('rb') as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            return False  # closing the file drops the shared lock again
    except OSError:
        return False


def _command(path: Path) -> str:
    try:
        return path.read_text(errors='replace')[:200].partition('\n')[0]
    except OSError:
        return ''


def running_players(directory: Path | None = None) -> list[RunningPlayer]:
    """Players started through scripts/ros_env.sh that still run, by domain id."""
    found = []
    for path in sorted((directory or lock_dir()).glob('*.lock')):
        command = _command(path)
        if path.stem.isdigit() and PLAYER.search(command) and _held(path):
            found.append(RunningPlayer(int(path.stem), command))
    return sorted(found, key=lambda p: p.domain_id)


def _own_empty_domain(env: MutableMapping[str, str]) -> bool:
    """ROS_DOMAIN_ID was taken by ros_env.sh for a second-terminal command: empty."""
    domain = env.get('ROS_DOMAIN_ID', '')
    if not domain or env.get(HELD_VAR) != domain:
        return False
    return bool(VISITOR.search(_command(lock_dir() / f'{domain}.lock')))


def join_player(env: MutableMapping[str, str], prog: str) -> str | None:
    """Put the running player's domain in `env` when the user chose none; what was done.

    Returns a line for stderr when it joined, None when `env` is kept. Several
    players and no choice: a ReactRosError naming their domains.
    """
    if env.get('ROS_DOMAIN_ID') and not _own_empty_domain(env):
        return None
    players = running_players()
    if not players:
        return None  # ROS 2's default domain (or the empty one): the wait will say so
    if len(players) > 1:
        listed = '; '.join(f'ROS_DOMAIN_ID={p.domain_id}: {p.command}' for p in players)
        raise ReactRosError(f'{len(players)} players are running ({listed}): choose one with '
                            f'ROS_DOMAIN_ID=N {prog} ...')
    player = players[0]
    env['ROS_DOMAIN_ID'] = str(player.domain_id)
    env.pop(HELD_VAR, None)  # joined, not held
    note = ''
    if not discovery_range_chosen(env):
        env[RANGE_VAR] = 'LOCALHOST'  # what ros_env.sh gives the player
        note = f', {RANGE_VAR}=LOCALHOST'
    return (f'{prog}: joined the player in ROS_DOMAIN_ID={player.domain_id}{note} '
            f'({player.command}); set ROS_DOMAIN_ID to choose another domain')


__all__ = ['RunningPlayer', 'join_player', 'running_players']
