"""rosbag2's keyboard controls for the player, when stdin is a terminal."""
from __future__ import annotations

import os
import select
import sys
import termios
import threading
import tty
from typing import Callable

# Keys as rosbag2 binds them: space pauses/resumes, right arrow plays the next
# message, up/down change the rate by 0.1.
SPACE = b' '
RIGHT = b'\x1b[C'
UP = b'\x1b[A'
DOWN = b'\x1b[B'


# What each key does, worded as rosbag2's player announces its keys.
CONTROLS = (('SPACE', 'Pause/Resume'), ('CURSOR_RIGHT', 'Play Next Message'),
            ('CURSOR_UP', 'Increase Rate 10%'), ('CURSOR_DOWN', 'Decrease Rate 10%'))


def controls_text() -> str:
    """The block printed once at the start: one `Press KEY for ACTION` line per key."""
    return '\n'.join(f'Press {key} for {action}' for key, action in CONTROLS)


def player_keys(timeline) -> dict[bytes, Callable[[], None]]:
    """The keys bound to a player's timeline (sinks/timeline.py), as rosbag2 binds them."""
    return {SPACE: timeline.toggle_paused,
            RIGHT: lambda: timeline.play_next(1, wait=None),
            UP: lambda: timeline.step_rate(+0.1), DOWN: lambda: timeline.step_rate(-0.1)}


def start_keyboard(enabled: bool, timeline, say: Callable[[str], None]) -> Keyboard | None:
    """A Keyboard on `timeline` when `enabled` and stdin is this process's terminal (not with
    --disable-keyboard-controls, not under a launcher or a pipe); `say` gets the keys once."""
    if not (enabled and Keyboard.available()):
        return None
    say(controls_text())
    return Keyboard(player_keys(timeline))


class Keyboard:
    """Reads keys on a thread in cbreak mode; the terminal is restored by `stop()`."""

    def __init__(self, handlers: dict[bytes, Callable[[], None]]) -> None:
        self.handlers = handlers
        self._stop = threading.Event()
        self._fd = sys.stdin.fileno()
        self._saved = termios.tcgetattr(self._fd)
        # cbreak, not raw: output post-processing and Ctrl-C (SIGINT) keep working.
        tty.setcbreak(self._fd)
        self._thread = threading.Thread(target=self._run, daemon=True, name='keyboard')
        self._thread.start()

    @staticmethod
    def available() -> bool:
        try:
            return sys.stdin.isatty() and os.getpgrp() == os.tcgetpgrp(sys.stdin.fileno())
        except (OSError, ValueError, AttributeError):
            return False

    def _run(self) -> None:
        pending = b''
        while not self._stop.is_set():
            ready, _, _ = select.select([self._fd], [], [], 0.1)
            if not ready:
                pending = b''
                continue
            pending += os.read(self._fd, 16)
            while pending:
                for key, handler in self.handlers.items():
                    if pending.startswith(key):
                        pending = pending[len(key):]
                        handler()
                        break
                else:
                    if pending.startswith(b'\x1b') and len(pending) < 3:
                        break  # the rest of an escape sequence is on its way
                    pending = pending[1:]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(1.0)
        termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)
