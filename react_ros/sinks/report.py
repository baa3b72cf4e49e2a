"""What the players print on stderr besides errors, at `--log-level` (ros2 bag's levels).

An info line (the first line, the keyboard's keys, the summary, a note) shows at debug
and info; a warning up to warn. Errors are not filtered: a refusal is the one line a
user must see (exit 2), at any level. The progress line is --quiet's, not this.
"""
from __future__ import annotations

import sys
from typing import TextIO

LEVELS = ('debug', 'info', 'warn', 'error', 'fatal')


def shows(level: str, threshold: str) -> bool:
    """Whether a `level` message shows with --log-level `threshold`."""
    return LEVELS.index(level) >= LEVELS.index(threshold)


def ros_severity(level: str):
    """rclpy's LoggingSeverity for a level name."""
    from rclpy.logging import LoggingSeverity
    return {'debug': LoggingSeverity.DEBUG, 'info': LoggingSeverity.INFO,
            'warn': LoggingSeverity.WARN, 'error': LoggingSeverity.ERROR,
            'fatal': LoggingSeverity.FATAL}[level]


class Report:
    """stderr lines at a log level."""

    def __init__(self, threshold: str = 'info', out: TextIO | None = None) -> None:
        if threshold not in LEVELS:
            raise ValueError(f'log level {threshold!r} is not one of {", ".join(LEVELS)}')
        self.threshold = threshold
        self._out = out

    def shows(self, level: str) -> bool:
        return shows(level, self.threshold)

    def info(self, text: str) -> None:
        self._say('info', text)

    def warn(self, text: str) -> None:
        self._say('warn', text)

    def _say(self, level: str, text: str) -> None:
        if self.shows(level):
            out = self._out or sys.stderr  # looked up late: tests and pytest swap stderr
            out.write(text + '\n')
            out.flush()


__all__ = ['LEVELS', 'Report', 'ros_severity', 'shows']
