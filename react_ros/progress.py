"""Progress text for play, demo and convert: one renderer for lines and tables alike.

On a terminal the text is redrawn in place, at most every `interval` seconds;
anywhere else (a log file, a pipe) it is printed anew every `log_interval`
seconds, so a log gets readable lines instead of one stream of carriage returns.
"""
from __future__ import annotations

import math
import sys
import time
from typing import Callable, TextIO


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

    def close(self) -> None:
        if self._drawn:
            self.out.write('\n')
            self.out.flush()
            self._drawn = 0


class Counter:
    """`converting:  42.0% 10/24 messages`, as a progress(done, total) callback (total 0: unknown)."""

    def __init__(self, what: str, out: TextIO | None = None) -> None:
        self.what = what
        self.progress = Progress(out, interval=0.2, log_interval=2.0)

    def __call__(self, done: int, total: int) -> None:
        pct = f'{100.0 * done / total:5.1f}%' if total else '     '
        self.progress.show(f'{self.what}: {pct} {done}/{total or "?"} messages',
                           force=done >= total)

    def close(self) -> None:
        self.progress.close()


__all__ = ['Counter', 'Progress']
