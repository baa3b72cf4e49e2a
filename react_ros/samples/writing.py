"""What every sample generator does around its own content: check, write aside, rename."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

from react_ros.errors import SinkError


def write_sample(out_dir: Path, duration_s: float, size: tuple[int, int],
                 min_duration_s: float, min_size: tuple[int, int],
                 write: Callable[[Path], None]) -> Path:
    """Check the request, let `write(tmp)` fill a sibling folder, rename it to `out_dir`.

    An interrupted or failed run leaves no half episode behind; an existing
    non-empty `out_dir` is never touched.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise SinkError(f'{out_dir}: exists already and is not empty, not overwriting')
    if not min_duration_s <= duration_s <= 3600:
        raise SinkError(f'{out_dir}: duration must be between {min_duration_s:g} s and 1 h, '
                        f'got {duration_s}')
    (width, height), (min_w, min_h) = size, min_size
    if width % 2 or height % 2 or width < min_w or height < min_h:
        raise SinkError(f'{out_dir}: video size must be even and at least {min_w}x{min_h}, '
                        f'got {width}x{height}')
    tmp = out_dir.with_name(out_dir.name + '.partial')
    if tmp.exists():
        shutil.rmtree(tmp)
    try:
        write(tmp)
        if out_dir.exists():
            out_dir.rmdir()
        tmp.rename(out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir
