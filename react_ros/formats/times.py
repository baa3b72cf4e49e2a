"""Times read from files, checked once: integers of nanoseconds that a ROS 2 Time can hold.

builtin_interfaces/Time has an int32 `sec`, so a stamp after 2038-01-19T03:14:07Z
(or before 1970) would wrap to a negative time in every message that carries it.
Such times are refused where they are read, never wrapped or clipped.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from react_ros.errors import DatasetFormatError

MAX_NS = (2**31 - 1) * 10**9 + 999_999_999
LAST = '2038-01-19T03:14:07Z'


def check_ns(t_ns: int, path: Path, what: str) -> int:
    """`t_ns`, if a ROS 2 Time can hold it."""
    if t_ns < 0:
        raise DatasetFormatError(path, f'{what} is {t_ns} ns, before 1970: a ROS 2 Time '
                                 'cannot hold it')
    if t_ns > MAX_NS:
        raise DatasetFormatError(path, f'{what} is {t_ns} ns, after {LAST} (2038), the last '
                                 'time a ROS 2 Time can hold')
    return t_ns


def ns_value(value: Any, path: Path, what: str) -> int:
    """An integer count of nanoseconds as a file gives it (int, or digits in a string)."""
    if isinstance(value, bool):
        raise DatasetFormatError(path, f'{what} must be integer nanoseconds, not {value!r}')
    if isinstance(value, str):
        text = value.strip()
        if not text.lstrip('-').isdigit():
            raise DatasetFormatError(path, f'{what} must be integer nanoseconds, not {value!r}')
        value = int(text)
    elif isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise DatasetFormatError(path, f'{what} must be integer nanoseconds, not {value!r}')
        value = int(value)
    elif not isinstance(value, int):
        raise DatasetFormatError(path, f'{what} must be integer nanoseconds, not {value!r}')
    return check_ns(value, path, what)


def seconds_to_ns(value: float, path: Path, what: str) -> int:
    """Seconds (a float column, say) as nanoseconds, refusing NaN, inf and unholdable times."""
    if not math.isfinite(value):
        raise DatasetFormatError(path, f'{what} is {value}, not a finite time')
    if abs(value) > MAX_NS / 1e9 + 1:
        raise DatasetFormatError(path, f'{what} is {value:g} s, after {LAST} (2038), the '
                                 'last time a ROS 2 Time can hold')
    return int(round(value * 1e9))


__all__ = ['LAST', 'MAX_NS', 'check_ns', 'ns_value', 'seconds_to_ns']
