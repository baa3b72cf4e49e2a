"""SIGINT and SIGTERM as a request to stop, the way a node under `ros2 launch` gets them.

Ctrl-C in a terminal running `ros2 launch` reaches every node twice within
milliseconds: once from the terminal (it signals the whole foreground process
group) and once forwarded by launch, which SIGINTs each process it started
when it shuts down. A node that took the second SIGINT for "really stop now"
and raised KeyboardInterrupt printed a traceback (launch then said "process
has died"), and an exception raised while DDS or a decoder thread was shutting
down could abort the process.

So the first signal asks for a stop (`on_stop`), a repeat within REPEAT_S of it
is the same Ctrl-C delivered twice and is ignored, and a signal after that (the
user pressing Ctrl-C again at a node that does not end, or launch's SIGTERM
once its sigterm_timeout ran out) ends the process at once with 128 + the
signal's number: one line on stderr, no traceback, no abort.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import Any, Callable

SIGNALS = (signal.SIGINT, signal.SIGTERM)
# Launch forwards its SIGINT after its own handler ran and its event loop
# turned: milliseconds on an idle machine, more under load.
REPEAT_S = 2.0


class StopSignals:
    """Installs the handlers (main thread only; elsewhere it does nothing) until `restore()`.

    `on_stop` runs on the first signal, in the main thread between two bytecodes
    (it may raise KeyboardInterrupt to abandon a set-up). `requested` is the
    first signal's number, 0 while none came.
    """

    # Per process, not per instance: a node's main() holds one over its whole
    # life and the player another while it plays; a repeat is a repeat in both.
    _requested = 0
    _first = 0.0

    def __init__(self, prog: str, on_stop: Callable[[], None] | None = None) -> None:
        self.prog = prog
        self.on_stop = on_stop
        self._old: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            self._old = {s: signal.signal(s, self._handler) for s in SIGNALS}

    @property
    def requested(self) -> int:
        return StopSignals._requested

    def _handler(self, signum: int, frame: Any) -> None:
        now = time.monotonic()
        if not StopSignals._requested:
            StopSignals._requested, StopSignals._first = signum, now
            if self.on_stop is not None:
                self.on_stop()
            return
        if now - StopSignals._first <= REPEAT_S:
            return  # the same Ctrl-C: from the terminal and from ros2 launch
        force_exit(self.prog, signum)

    def finish(self) -> None:
        """Call last, when the process only exits: from here SIGINT is ignored.

        Python's finalization puts the default action back for every signal that
        has a Python handler, so a repeat arriving then killed the process (status
        -2). An ignored signal stays ignored; SIGTERM keeps ending a process whose
        exit hangs (launch sends it after its sigterm_timeout).
        """
        if self._old:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            self._old = {}

    def restore(self) -> None:
        for s, h in self._old.items():
            signal.signal(s, h)
        self._old = {}


def force_exit(prog: str, signum: int) -> None:
    """End the process now with 128 + signum, without unwinding (nothing left can hang it)."""
    name = signal.Signals(signum).name
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 (a write the signal interrupted: lose it)
            pass
    try:
        os.write(2, f'{prog}: {name} again: exiting at once\n'.encode())
    except OSError:
        pass
    os._exit(128 + signum)
