"""What every sample generator does around its own content: check, write aside, rename."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from react_ros.errors import SinkError
from react_ros.output import check_replaceable, output_path, staged


def write_sample(out_dir: str | os.PathLike[str], duration_s: float, size: tuple[int, int],
                 min_duration_s: float, min_size: tuple[int, int],
                 write: Callable[[Path], None]) -> Path:
    """Check the request, let `write(tmp)` fill a sibling folder, rename it to `out_dir`.

    The output rules and the clean-up after a failure or a signal: react_ros/output.py.
    An existing non-empty `out_dir` is never touched (samples have no --overwrite).
    """
    out = output_path(out_dir, option='DIR')
    check_replaceable(out)  # before the other checks: the message that matters most
    if not min_duration_s <= duration_s <= 3600:
        raise SinkError(f'{out}: duration must be between {min_duration_s:g} s and 1 h, '
                        f'got {duration_s}')
    (width, height), (min_w, min_h) = size, min_size
    if width % 2 or height % 2 or width < min_w or height < min_h:
        raise SinkError(f'{out}: video size must be even and at least {min_w}x{min_h}, '
                        f'got {width}x{height}')
    with staged(out) as tmp:
        write(tmp)
    return out
