"""A preview's one output file: checked first, written aside in its folder, renamed at the end.

Never a half-written PNG or mp4 under the name asked for: the file is written as
`.NAME.<token>.partial.EXT` beside it and renamed when complete; on an error or a stop
signal it is removed. An existing file is replaced only with --overwrite.
"""
from __future__ import annotations

import errno
import os
import secrets
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

from react_ros.errors import OutputWriteError, SinkError
from react_ros.output import check_stop, output_path, stop_signals_flag

SUFFIXES = ('.png', '.mp4')
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EACCES}


def preview_output(raw: str, inputs: Iterable[Path], overwrite: bool) -> Path:
    out = output_path(raw, option='-o/--output', inputs=inputs)
    if out.suffix.lower() not in SUFFIXES:
        raise SinkError(f'{out}: a preview is a .png (a sheet) or a .mp4 (a clip), '
                        f'not {out.suffix or "a name without a suffix"}')
    if not out.parent.is_dir():
        raise SinkError(f'{out.parent}: no such folder for the output')
    if out.is_dir():
        raise SinkError(f'{out}: is a folder; name the file to write')
    if os.path.lexists(out) and not overwrite:
        raise SinkError(f'{out}: exists already, not overwriting (use --overwrite)')
    if not os.access(out.parent, os.W_OK):
        raise SinkError(f'{out.parent}: is not writable')
    return out


@contextmanager
def written_aside(out: Path) -> Iterator[Path]:
    """Yield a hidden temporary name beside `out`; rename it to `out` when the block ends."""
    tmp = out.parent / f'.{out.stem}.{secrets.token_hex(4)}.partial{out.suffix}'
    try:  # made first, so a folder that takes no files is refused before any work
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except OSError as exc:
        raise OutputWriteError(f'{out}: cannot be written ({exc.strerror})') from None
    with stop_signals_flag():
        try:
            yield tmp
            check_stop()
            os.replace(tmp, out)
        except OSError as exc:
            _remove(tmp)
            if exc.errno in _WRITE_ERRNOS or exc.filename in (str(tmp), str(out)):
                raise OutputWriteError(f'{out}: cannot be written ({exc.strerror})') from None
            raise
        except BaseException:
            _remove(tmp)
            raise


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


__all__ = ['SUFFIXES', 'preview_output', 'written_aside']
