"""Process-wide settings for playback, applied by whoever owns the process (CLI, node, bench).

The player does not apply them itself: they reach beyond it (the C allocator,
every DDS participant made later, the whole heap), and their order matters
relative to rclpy.init and to opening the episode.
"""
from __future__ import annotations

import gc

from react_ros.ros.dds import prefer_async_publishing, use_player_profiles
from react_ros.sinks.allocator import reuse_freed_frames


def tune_for_playback() -> None:
    """Allocator, DDS publication mode, shared-memory segment and heartbeats; call before
    rclpy.init (Fast DDS reads them then)."""
    reuse_freed_frames()
    prefer_async_publishing()
    use_player_profiles()


def freeze_heap() -> None:
    """Keep everything alive now out of the cyclic GC; call once the episode is open.

    Modules and the episode's index live as long as the player, and the GC's
    full passes over those objects took a fifth of the publishing thread's time.
    """
    gc.freeze()


__all__ = ['freeze_heap', 'tune_for_playback']
