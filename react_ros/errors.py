"""One small error hierarchy; the CLI prints these as one line and exits 2."""
from __future__ import annotations

from pathlib import Path


class ReactRosError(Exception):
    """Anything the user can fix: bad input, bad options, an output in the way."""


class DatasetFormatError(ReactRosError):
    """A file of the episode is missing, corrupt or disagrees with its format document."""

    def __init__(self, path: Path | str, detail: str) -> None:
        self.path = Path(path)
        self.detail = detail
        super().__init__(f'{path}: {detail}')


class FrameSyncError(DatasetFormatError):
    """Video frames and the records that point at them do not line up."""


class SinkError(ReactRosError):
    """An output cannot be written (exists already, not writable)."""


class OutputWriteError(SinkError):
    """The output's filesystem failed (full, over quota, read-only, an I/O error).

    Still a one-line exit 2 for `convert`, but not the episode's fault: convert-all
    records it as failed, to be tried again once the disk is fixed.
    """


def interrupt_behind(err: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt in `err`'s chain of causes and contexts, if any.

    A Ctrl-C that lands inside a C extension's callback (rclpy's deserialisation builds
    messages in Python) comes back wrapped, e.g. as a TypeError caused by the interrupt.
    """
    seen: set[int] = set()
    cause: BaseException | None = err
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None
