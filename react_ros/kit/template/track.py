"""The kind's file format, read with no ROS (test/test_formats_without_rclpy.py imports every
module of a kind folder but adapter.py and sample.py with rclpy blocked).

The template's format is one CSV per episode folder, poses of one body:

    t_s,x_m,y_m,z_m,yaw_rad        the header, exactly
    0.0,0.5,0.0,0.3,1.57           one row per pose; t_s strictly increasing
    ...
    end,<rows>                     the row count: a file cut short has no such line

A pose field may be 'nan' (tracking lost): the reader keeps the row and the adapter
decides what it means. Anything else that is off refuses the file with one
DatasetFormatError naming it and the line: the CLI prints it as one line and exits 2.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from react_ros.errors import DatasetFormatError

FILE = 'track.csv'
HEADER = 't_s,x_m,y_m,z_m,yaw_rad'


@dataclass(frozen=True)
class Pose:
    line: int  # in the file, from 1: what a warning about this row names
    t_s: float
    xyz: tuple[float, float, float]
    yaw: float

    @property
    def finite(self) -> bool:
        return all(math.isfinite(v) for v in (*self.xyz, self.yaw))


def read_track(path: Path) -> list[Pose]:
    path = Path(path)
    try:
        lines = path.read_text(encoding='utf-8').splitlines()
    except UnicodeDecodeError:
        raise DatasetFormatError(path, 'is not UTF-8 text') from None
    except OSError as err:
        raise DatasetFormatError(path, f'cannot be read ({err.strerror})') from None
    if not lines or lines[0].strip() != HEADER:
        raise DatasetFormatError(path, f'line 1: expected the header {HEADER!r}')
    if len(lines) < 2 or not lines[-1].startswith('end,'):
        raise DatasetFormatError(path, "has no 'end,<rows>' line: cut short?")
    poses = [_pose(path, n, text) for n, text in enumerate(lines[1:-1], start=2)]
    declared = lines[-1].partition(',')[2].strip()
    if declared != str(len(poses)):
        raise DatasetFormatError(path, f'line {len(lines)}: says {declared!r} rows, '
                                 f'the file holds {len(poses)}')
    if not poses:
        raise DatasetFormatError(path, 'holds no poses')
    for before, pose in zip(poses, poses[1:]):
        if pose.t_s <= before.t_s:
            raise DatasetFormatError(path, f'line {pose.line}: t_s {pose.t_s} does not '
                                     f'follow {before.t_s} of line {before.line}')
    return poses


def _pose(path: Path, line: int, text: str) -> Pose:
    fields = text.split(',')
    if len(fields) != 5:
        raise DatasetFormatError(path, f'line {line}: expected 5 fields, got {len(fields)}')
    try:
        t, x, y, z, yaw = (float(f) for f in fields)
    except ValueError:
        raise DatasetFormatError(path, f'line {line}: not a number in {text!r}') from None
    if not (math.isfinite(t) and t >= 0):
        raise DatasetFormatError(path, f'line {line}: t_s must be a finite time >= 0, '
                                 f'got {fields[0]!r}')
    return Pose(line, t, (x, y, z), yaw)


def write_track(path: Path, poses: list[tuple[float, float, float, float, float]]) -> None:
    """(t_s, x, y, z, yaw) rows as read_track reads them (the sample's writer)."""
    rows = [HEADER, *(','.join(repr(float(v)) for v in row) for row in poses),
            f'end,{len(poses)}']
    Path(path).write_text('\n'.join(rows) + '\n', encoding='utf-8')
