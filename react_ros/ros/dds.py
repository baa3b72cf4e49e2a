"""Process-wide DDS settings the player asks for before it creates its node."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Mapping

from react_ros.ros import shm_ports


def prefer_async_publishing() -> None:
    """Let Fast DDS send from its own thread instead of inside publish().

    In synchronous mode a publish() of a 7 MB image copies it into the shared
    memory transport on the calling thread, which holds Python's GIL for the
    whole copy; the video decoding threads then wait. Measured here on the
    1920x1200 UMI sample with one subscriber: 82 Images/s synchronous, 120
    asynchronous. Only rmw_fastrtps reads the variable, and a user's own
    setting wins.
    """
    os.environ.setdefault('RMW_FASTRTPS_PUBLICATION_MODE', 'ASYNCHRONOUS')


PLAYER_PROFILES = Path(__file__).with_name('fastdds_player.xml')
# The writers' part alone, where the user chose Fast DDS's transports themselves.
PLAYER_WRITER_PROFILES = Path(__file__).with_name('fastdds_player_writers.xml')
_PROFILE_VARIABLES = ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE')
_TRANSPORTS_VARIABLE = 'FASTDDS_BUILTIN_TRANSPORTS'


def use_player_profiles() -> Path | None:
    """Give the player's process a 32 MiB shared-memory segment and its reliable writers a
    heartbeat every 20 ms (fastdds_player.xml); the profiles file used, or None when the
    user's own file is kept.

    Segment: Fast DDS sends a 1920x1200 image to a reader on this machine as ~100 fragments
    of 64 KB through the sending participant's shared-memory segment, 512 KiB by default:
    the writer reuses buffers the reader has not taken yet, the reader loses those
    fragments and asks for them again. Measured with bench_player.py's delivered publish
    limit (300 images, one subscriber, 2 cores): 153-165 Images/s with the default
    segment, 230-304 with 16, 64 or 256 MiB (32: 4 such images; the segment is memory the
    process touches). The transports are otherwise Fast DDS's
    defaults (shared memory and UDPv4, so remote subscribers still get everything), and
    rmw_fastrtps still applies ROS_AUTOMATIC_DISCOVERY_RANGE on top. Where the user chose
    the transports (FASTDDS_BUILTIN_TRANSPORTS) only the heartbeat is set.

    Heartbeat: a reader asks for lost fragments only when a heartbeat comes, and under
    flow control (sinks/flow.py) a writer waiting for its window sends nothing, so the
    repair waited for Fast DDS's periodic heartbeat, 3 s: measured on the 1920x1200 UMI
    sample with one KEEP_ALL subscriber, 4 s of episode took 73-240 s with stalls of 3, 6,
    9 s. With 20 ms: 7.8-8.4 s, the longest wait 0.18 s, every image received.

    A profiles file the user names wins, and the choice is Fast DDS's, read when its first
    participant is made: call this before rclpy.init.
    """
    if any(os.environ.get(v) for v in _PROFILE_VARIABLES):
        return None
    chosen = PLAYER_WRITER_PROFILES if os.environ.get(_TRANSPORTS_VARIABLE) else PLAYER_PROFILES
    os.environ['FASTDDS_DEFAULT_PROFILES_FILE'] = str(chosen)
    return chosen


def clear_dead_ports(env: Mapping[str, str] = os.environ) -> int:
    """Before rclpy.init: clear the shared-memory ports a killed process left half-made
    in this process's ROS domain (ros/shm_ports.py), saying so on stderr; else the new
    participant could wait forever inside Node(). Also removes the data segments of
    participants that are gone (any domain: they are nobody's). The number of ports
    cleared."""
    try:
        domain = int(env.get('ROS_DOMAIN_ID') or 0)
    except ValueError:
        return 0  # rclpy words a bad domain id itself
    cleared = shm_ports.clear_half_made_ports(
        shm_ports.domain_ports(domain), say=lambda line: print(f'note: {line}', file=sys.stderr,
                                                               flush=True))
    shm_ports.clear_dead_segments()  # housekeeping, said nowhere: Fast DDS's own leftovers
    return len(cleared)
