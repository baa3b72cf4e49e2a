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
_PROFILE_VARIABLES = ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE')


def repair_lost_fragments_fast() -> bool:
    """Have the player's reliable writers send a heartbeat every 20 ms, not every 3 s.

    A 1920x1200 image travels as ~100 UDP fragments; on a busy machine a
    reader's socket drops some, and a reader only asks for them again when a
    heartbeat comes. While the player keeps sending, every sample carries one.
    But under flow control (sinks/flow.py) a writer waiting for its window sends
    nothing, and the repair waited for Fast DDS's periodic heartbeat, 3 s:
    measured on the 1920x1200 UMI sample with one KEEP_ALL subscriber, 4 s of
    episode took 73-240 s with stalls of 3, 6, 9 s. With 20 ms: 7.8-8.4 s, the
    longest wait 0.18 s, every image received. Only the writers' heartbeat
    changes (the rest of the profile is Fast DDS's default, and rmw_fastrtps
    applies each publisher's ROS QoS on top). A profiles file the user names
    wins, and the choice is Fast DDS's, read when its first participant is
    made: call this before rclpy.init. False when the user's file is kept.
    """
    if any(os.environ.get(v) for v in _PROFILE_VARIABLES):
        return False
    os.environ['FASTDDS_DEFAULT_PROFILES_FILE'] = str(PLAYER_PROFILES)
    return True


def clear_dead_ports(env: Mapping[str, str] = os.environ) -> int:
    """Before rclpy.init: clear the shared-memory ports a killed process left half-made
    in this process's ROS domain (ros/shm_ports.py), saying so on stderr; else the new
    participant could wait forever inside Node(). The number cleared."""
    try:
        domain = int(env.get('ROS_DOMAIN_ID') or 0)
    except ValueError:
        return 0  # rclpy words a bad domain id itself
    cleared = shm_ports.clear_half_made_ports(
        shm_ports.domain_ports(domain), say=lambda line: print(f'note: {line}', file=sys.stderr,
                                                               flush=True))
    return len(cleared)
