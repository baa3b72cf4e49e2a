"""The real-time factor: computed from the player's history, shown by the demo's rate table."""
from __future__ import annotations

import io

from react_ros.play import RateTable
from react_ros.sinks.live import PlaybackStats, TopicStats, real_time_factor


def test_real_time_factor_counts_the_current_pass_only() -> None:
    history = [(10.0, {}, 0, 1), (10.5, {}, 500_000_000, 1),  # pass 1: real time
               (11.0, {}, 100_000_000, 2), (11.5, {}, 350_000_000, 2)]  # after a seek
    assert real_time_factor(history, 12.0, 600_000_000, 2) == 0.5
    assert real_time_factor(history, 11.0, 1_000_000_000, 1) == 1.0
    assert real_time_factor(history, 11.1, 0, 3) is None  # a pass with no history yet
    assert real_time_factor(history[2:], 11.1, 150_000_000, 2) is None  # too short to tell


def _table(stats: PlaybackStats) -> str:
    out = io.StringIO()
    RateTable(out)(stats)
    return out.getvalue()


def test_rate_table_shows_the_real_time_factor() -> None:
    topics = {'/left/image_raw': TopicStats(120, 0, 59.6)}
    text = _table(PlaybackStats(topics, 2 * 10**9, 10 * 10**9, 1.0, False, 120, 0, 0, rtf=0.97))
    assert text.splitlines()[0] == \
        '   2.00 / 10.00 s  rate x1.00  real-time factor 0.97  120 messages  loops 0'
    assert '  /left/image_raw     59.6Hz      120' in text.splitlines()
    paused = _table(PlaybackStats(topics, 3 * 10**9, 10 * 10**9, 1.0, True, 180, 0, 0))
    assert paused.splitlines()[0] == '   3.00 / 10.00 s  paused  180 messages  loops 0'
