"""The triangles of a scanned PLY mesh, for markers that carry their geometry.

A bag that names its meshes by file:// path breaks once the release moves or
is deleted; a visualization_msgs/Marker TRIANGLE_LIST holding the vertices
needs no file. This reads the vertex positions and the face lists of an ascii
or binary PLY (polygons split into fans) and returns the triangle corners,
(3 * triangles, 3) float64 in the mesh's own frame and units.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from react_ros.errors import DatasetFormatError

_TYPES = {'char': 'i1', 'int8': 'i1', 'uchar': 'u1', 'uint8': 'u1', 'short': 'i2',
          'int16': 'i2', 'ushort': 'u2', 'uint16': 'u2', 'int': 'i4', 'int32': 'i4',
          'uint': 'u4', 'uint32': 'u4', 'float': 'f4', 'float32': 'f4', 'double': 'f8',
          'float64': 'f8'}
_ENDIAN = {'ascii': None, 'binary_little_endian': '<', 'binary_big_endian': '>'}


class _Element:
    def __init__(self, name: str, count: int) -> None:
        self.name, self.count = name, count
        # (name, scalar type) or (name, (count type, item type)) for a list property
        self.props: list[tuple[str, str | tuple[str, str]]] = []


def _header(raw: bytes, path: Path) -> tuple[str, list[_Element], int]:
    end = raw.find(b'end_header')
    if not raw.startswith(b'ply') or end < 0:
        raise DatasetFormatError(path, 'not a PLY mesh (no ply ... end_header header)')
    fmt = ''
    elements: list[_Element] = []
    for line in raw[:end].decode('ascii', 'replace').splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == 'format' and len(words) > 1:
            fmt = words[1]
        elif words[0] == 'element' and len(words) == 3 and words[2].isdigit():
            elements.append(_Element(words[1], int(words[2])))
        elif words[0] == 'property' and elements:
            if len(words) == 5 and words[1] == 'list' and words[2] in _TYPES \
                    and words[3] in _TYPES:
                elements[-1].props.append((words[4], (_TYPES[words[2]], _TYPES[words[3]])))
            elif len(words) == 3 and words[1] in _TYPES:
                elements[-1].props.append((words[2], _TYPES[words[1]]))
            else:
                raise DatasetFormatError(path, f'PLY: unreadable property line {line!r}')
    if fmt not in _ENDIAN:
        raise DatasetFormatError(path, f'PLY: unknown format {fmt!r}')
    return fmt, elements, raw.index(b'\n', end) + 1


def _binary_element(raw: bytes, at: int, el: _Element, endian: str,
                    path: Path) -> tuple[dict[str, np.ndarray | list[np.ndarray]], int]:
    """One binary element's columns; list properties as lists of arrays."""
    scalars = all(isinstance(t, str) for _, t in el.props)
    if scalars:
        dtype = np.dtype([(n, endian + t) for n, t in el.props])  # type: ignore[operator]
        if at + dtype.itemsize * el.count > len(raw):
            raise DatasetFormatError(path, f'PLY: {el.name} data truncated')
        rows = np.frombuffer(raw, dtype=dtype, count=el.count, offset=at)
        return {n: rows[n] for n, _ in el.props}, at + dtype.itemsize * el.count
    # Faces: try the usual layout (every list of the same length) in one read, else walk.
    first: list[tuple[str, str]] = []
    probe = at
    for name, t in el.props:
        if isinstance(t, str):
            first.append((name, endian + t))
            probe += np.dtype(t).itemsize
            continue
        count_t, item_t = t
        if probe + np.dtype(count_t).itemsize > len(raw):
            raise DatasetFormatError(path, f'PLY: {el.name} data truncated')
        k = int(np.frombuffer(raw, dtype=endian + count_t, count=1, offset=probe)[0])
        first += [(name + '#n', endian + count_t), (name, f'{endian}{item_t}', (k,))]  # type: ignore[list-item]
        probe += np.dtype(count_t).itemsize + k * np.dtype(item_t).itemsize
    dtype = np.dtype(first)  # type: ignore[call-overload]
    if at + dtype.itemsize * el.count <= len(raw):
        rows = np.frombuffer(raw, dtype=dtype, count=el.count, offset=at)
        lists = [n for n, t in el.props if not isinstance(t, str)]
        if all(np.all(rows[n + '#n'] == rows.dtype[n].shape[0]) for n in lists):
            return {n: rows[n] for n, _ in el.props}, at + dtype.itemsize * el.count
    out: dict[str, list[np.ndarray]] = {n: [] for n, _ in el.props}
    for _ in range(el.count):
        for name, t in el.props:
            if isinstance(t, str):
                size = np.dtype(t).itemsize
                out[name].append(np.frombuffer(raw, endian + t, 1, at))
                at += size
            else:
                k = int(np.frombuffer(raw, endian + t[0], 1, at)[0])
                at += np.dtype(t[0]).itemsize
                out[name].append(np.frombuffer(raw, endian + t[1], k, at))
                at += k * np.dtype(t[1]).itemsize
    return out, at  # type: ignore[return-value]


def _ascii_elements(raw: bytes, at: int, elements: list[_Element]
                    ) -> dict[str, dict[str, list[np.ndarray]]]:
    lines = iter(raw[at:].decode('ascii').splitlines())
    out: dict[str, dict[str, list[np.ndarray]]] = {}
    for el in elements:
        cols: dict[str, list[np.ndarray]] = {n: [] for n, _ in el.props}
        for _ in range(el.count):
            words = next(lines).split()
            pos = 0
            for name, t in el.props:
                if isinstance(t, str):
                    cols[name].append(np.array([float(words[pos])]))
                    pos += 1
                else:
                    k = int(words[pos])
                    cols[name].append(np.array([int(w) for w in words[pos + 1:pos + 1 + k]]))
                    pos += 1 + k
        out[el.name] = cols
    return out


def ply_triangles(path: Path) -> np.ndarray:
    """The triangle corners of a PLY mesh: (3 * triangles, 3) float64, its own units."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DatasetFormatError(path, f'mesh cannot be read ({exc.strerror})') from None
    fmt, elements, at = _header(raw, path)
    by_name = {el.name: el for el in elements}
    if 'vertex' not in by_name or 'face' not in by_name:
        raise DatasetFormatError(path, 'PLY: needs a vertex and a face element')
    if not {'x', 'y', 'z'} <= {n for n, _ in by_name['vertex'].props}:
        raise DatasetFormatError(path, 'PLY: the vertex element has no x, y, z')
    face_list = [n for n, t in by_name['face'].props if not isinstance(t, str)
                 and n in ('vertex_indices', 'vertex_index')]
    if not face_list:
        raise DatasetFormatError(path, 'PLY: the face element has no vertex_indices list')
    try:
        if _ENDIAN[fmt] is None:
            data = _ascii_elements(raw, at, elements)
            verts = np.stack([np.concatenate(data['vertex'][c]) for c in 'xyz'], axis=1)
            faces: list[np.ndarray] | np.ndarray = data['face'][face_list[0]]
        else:
            cols: dict[str, dict[str, np.ndarray | list[np.ndarray]]] = {}
            for el in elements:  # elements are stored in header order, each after the last
                cols[el.name], at = _binary_element(raw, at, el, _ENDIAN[fmt] or '<', path)
            verts = np.stack([np.asarray(cols['vertex'][c], dtype=float).reshape(-1)
                              for c in 'xyz'], axis=1)
            faces = cols['face'][face_list[0]]
    except (ValueError, IndexError, StopIteration, UnicodeDecodeError):
        raise DatasetFormatError(path, 'PLY: truncated or unreadable vertex or face '
                                 'data') from None
    return _corners(verts, faces, path)


def _corners(verts: np.ndarray, faces: list[np.ndarray] | np.ndarray, path: Path) -> np.ndarray:
    if isinstance(faces, np.ndarray) and faces.ndim == 2 and faces.shape[1] == 3:
        tris = faces.astype(np.int64)
    else:  # polygons: fans around their first corner
        fans = [np.stack([np.full(len(f) - 2, f[0]), f[1:-1], f[2:]], axis=1)
                for f in (np.asarray(f, dtype=np.int64) for f in faces) if len(f) >= 3]
        tris = np.concatenate(fans) if fans else np.empty((0, 3), np.int64)
    if not len(tris):
        raise DatasetFormatError(path, 'PLY: the mesh has no faces')
    if tris.min() < 0 or tris.max() >= len(verts):
        raise DatasetFormatError(path, f'PLY: a face names vertex {int(tris.max())} of '
                                 f'{len(verts)}')
    corners = verts[tris.reshape(-1)]
    if not np.all(np.isfinite(corners)):
        raise DatasetFormatError(path, 'PLY: vertex positions not finite')
    return np.ascontiguousarray(corners, dtype=float)


__all__ = ['ply_triangles']
