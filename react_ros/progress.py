"""Progress text for play, demo and convert: one renderer for lines and tables alike.

On a terminal the text is redrawn in place, at most every `interval` seconds;
anywhere else (a log file, a pipe) it is printed anew every `log_interval`
seconds, so a log gets readable lines instead of one stream of carriage returns.
A process in the background of its terminal (`react-ros play --loop &`) draws
nothing: its redraws landed in the line the user was typing.
"""
from __future__ import annotations

import math
import os
import sys
import time
from typing import Callable, Protocol, TextIO


class Written(Protocol):
    """What a progress line reads of a writer (a bag's SizeWatch, rosbag2/disk_space.py)."""

    written: int  # bytes written so far

    def fraction(self) -> float:
        """The share of the data (by time) written so far, 0 to 1."""


class Progress:
    """Shows the latest text; `close()` ends it (the cursor sits after its last line until then)."""

    def __init__(self, out: TextIO | None = None, *, interval: float = 0.2,
                 log_interval: float = 5.0, now: Callable[[], float] = time.monotonic) -> None:
        self.out = sys.stderr if out is None else out
        self.tty = self.out.isatty()
        self.interval = interval if self.tty else log_interval
        self._now = now
        self._last = -math.inf
        self._drawn = 0  # lines on screen now (terminal only)

    def show(self, text: str, force: bool = False) -> None:
        """Show `text` (one line or several), unless it is too soon; `force` shows it anyway."""
        now = self._now()
        if not force and now - self._last < self.interval:
            return
        if self.tty and not self._foreground():
            return
        self._last = now
        if self.tty:
            if self._drawn:  # to the start of what is drawn, then clear to the screen's end
                up = f'\x1b[{self._drawn - 1}A' if self._drawn > 1 else ''
                self.out.write(f'\r{up}\x1b[J')
            self.out.write(text)
            self._drawn = text.count('\n') + 1
        else:
            self.out.write(text + '\n')
        self.out.flush()

    def _foreground(self) -> bool:
        """Whether this process's group owns the terminal (not a job put in the background)."""
        try:
            return os.tcgetpgrp(self.out.fileno()) == os.getpgrp()
        except (OSError, ValueError, AttributeError):  # not our controlling terminal
            return True

    def close(self) -> None:
        if self._drawn:
            self.out.write('\n')
            self.out.flush()
            self._drawn = 0


class Counter:
    """`converting:  42.0% 10/24 messages`, as a progress(done, total) callback (total 0: unknown).

    With a `watch` (a bag's SizeWatch, rosbag2/disk_space.py) the line goes on with the
    bytes written, their rate and the time left, from the share of data time written:
    `, 1.2 GB at 310.5 MB/s, ETA 0:00:09`.
    """

    def __init__(self, what: str, out: TextIO | None = None, *, watch: Written | None = None,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.what = what
        self.watch = watch
        self.progress = Progress(out, interval=0.2, log_interval=2.0, now=now)
        self._now = now
        self._start = now()

    def __call__(self, done: int, total: int) -> None:
        pct = f'{100.0 * done / total:5.1f}%' if total else '     '
        self.progress.show(f'{self.what}: {pct} {done}/{total or "?"} messages{self._bytes()}',
                           force=done >= total)

    def _bytes(self) -> str:
        if self.watch is None:
            return ''
        elapsed = self._now() - self._start
        written = self.watch.written
        rate = f' at {written / elapsed / 1e6:.1f} MB/s' if elapsed > 0 else ''
        share = self.watch.fraction()
        eta = ''
        if 0 < share < 1 and elapsed > 0:
            eta = f', ETA {_clock(elapsed * (1 - share) / share)}'
        return f', {size_text(written)}{rate}{eta}'

    def close(self) -> None:
        self.progress.close()


def size_text(n: float) -> str:
    """Bytes in decimal units: `512 B`, `3.4 MB`, `2.9 GB`."""
    for unit in ('B', 'kB', 'MB', 'GB', 'TB', 'PB'):
        if n < 1000 or unit == 'PB':
            break
        n /= 1000
    return f'{n:.0f} {unit}' if unit == 'B' else f'{n:.1f} {unit}'


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f'{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}'


__all__ = ['Counter', 'Progress', 'Written', 'size_text']
