"""PLY meshes: the header checked and the vertex bounds read (ascii and binary)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from react_ros.errors import DatasetFormatError

_TYPES = {'char': 'i1', 'int8': 'i1', 'uchar': 'u1', 'uint8': 'u1', 'short': 'i2',
          'int16': 'i2', 'ushort': 'u2', 'uint16': 'u2', 'int': 'i4', 'int32': 'i4',
          'uint': 'u4', 'uint32': 'u4', 'float': 'f4', 'float32': 'f4', 'double': 'f8',
          'float64': 'f8'}
_FORMATS = {'ascii': None, 'binary_little_endian': '<', 'binary_big_endian': '>'}


def ply_bounds(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(min xyz, max xyz) of the vertices of a PLY file, in its own units."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DatasetFormatError(path, 'mesh file is missing') from None
    except OSError as exc:
        raise DatasetFormatError(path, f'mesh cannot be read ({exc.strerror})') from None
    end = raw.find(b'end_header')
    if not raw.startswith(b'ply') or end < 0:
        raise DatasetFormatError(path, 'not a PLY mesh (no ply ... end_header header)')
    body_start = raw.index(b'\n', end) + 1
    header = raw[:end].decode('ascii', 'replace').splitlines()
    fmt = None
    count = None
    props: list[tuple[str, str]] = []
    in_vertex = False
    for line in header:
        words = line.split()
        if not words:
            continue
        if words[0] == 'format' and len(words) > 1:
            fmt = words[1]
        elif words[0] == 'element':
            in_vertex = len(words) == 3 and words[1] == 'vertex'
            if in_vertex:
                count = int(words[2]) if words[2].isdigit() else None
            elif count is None:
                raise DatasetFormatError(path, 'PLY: the vertex element must come first')
        elif words[0] == 'property' and in_vertex:
            if words[1] == 'list' or words[1] not in _TYPES:
                raise DatasetFormatError(path, f'PLY: unsupported vertex property {line!r}')
            props.append((words[-1], _TYPES[words[1]]))
    if fmt not in _FORMATS:
        raise DatasetFormatError(path, f'PLY: unknown format {fmt!r}')
    names = [n for n, _ in props]
    if count is None or not {'x', 'y', 'z'} <= set(names):
        raise DatasetFormatError(path, 'PLY: no vertex element with x, y, z')
    if count == 0:
        raise DatasetFormatError(path, 'PLY: the mesh has no vertices')
    cols = [names.index(c) for c in 'xyz']
    try:
        order = _FORMATS[fmt]
        if order is None:
            lines = raw[body_start:].decode('ascii').splitlines()[:count]
            xyz = np.array([[float(line.split()[c]) for c in cols] for line in lines])
        else:
            dtype = np.dtype([(n, order + t) for n, t in props])
            verts = np.frombuffer(raw, dtype=dtype, count=count, offset=body_start)
            xyz = np.stack([verts[c].astype(float) for c in 'xyz'], axis=1)
    except (ValueError, IndexError, UnicodeDecodeError):
        raise DatasetFormatError(path, f'PLY: truncated or unreadable vertex data '
                                 f'({count} vertices declared)') from None
    if xyz.shape != (count, 3) or not np.all(np.isfinite(xyz)):
        raise DatasetFormatError(path, 'PLY: vertex data truncated or not finite')
    return xyz.min(axis=0), xyz.max(axis=0)


__all__ = ['ply_bounds']
