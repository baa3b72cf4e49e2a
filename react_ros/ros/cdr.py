"""CDR (XCDR1, little endian), written and read directly: the package's one CDR path.

Written: `ros/serialization.cdr_payload` encodes any message object with CdrWriter;
the objects kind's 120 Hz streams (many instances a frame) use the prepared writers
below, which make the same bytes from numpy rows without building message objects
(bench/bench_cdr.py on 2 loaded cores: a TFMessage of 40 transforms 26 000 a second
against 1 900 built as message objects and encoded; a MarkerArray of 20 sphere lists
32 000 against 930; 120 Hz at 10x real time is 1 200 a second of each). The bytes
are the ones Fast DDS writes (encapsulation 00 01 00 00, primitives aligned to their
size from the end of the encapsulation, no trailing bytes) with the padding zeroed,
so a seed gives the same bag.

Read: CdrReader, the few fixed fields the UMI kind checks on every message of its
source MCAP (rclpy's deserialize_message ~10x slower on a PoseStamped).

Nothing here imports ROS 2: the layouts are fixed by their .msg files.
"""
from __future__ import annotations

import struct
from typing import Sequence

import numpy as np

_ENCAPSULATION = b'\x00\x01\x00\x00'


class CdrWriter:
    def __init__(self) -> None:
        self.buf = bytearray(_ENCAPSULATION)

    def _align(self, n: int) -> None:
        pad = (-(len(self.buf) - 4)) % n
        if pad:
            self.buf += bytes(pad)

    def u8(self, v: int) -> None:
        self.buf.append(v & 0xFF)

    def i32(self, v: int) -> None:
        self._align(4)
        self.buf += struct.pack('<i', v)

    def u32(self, v: int) -> None:
        self._align(4)
        self.buf += struct.pack('<I', v)

    def string(self, text: str) -> None:
        raw = text.encode()
        self.u32(len(raw) + 1)
        self.buf += raw + b'\x00'

    def stamp(self, t_ns: int) -> None:
        self._align(4)
        self.buf += struct.pack('<iI', t_ns // 1_000_000_000, t_ns % 1_000_000_000)

    def header(self, t_ns: int, frame_id: str) -> None:
        self.stamp(t_ns)
        self.string(frame_id)

    def f64s(self, values: Sequence[float] | np.ndarray) -> None:
        self._align(8)
        self.buf += np.asarray(values, dtype='<f8').tobytes()

    def f32s(self, values: Sequence[float] | np.ndarray) -> None:
        self._align(4)
        self.buf += np.asarray(values, dtype='<f4').tobytes()

    def struct_seq(self, rows: np.ndarray, dtype: str, size: int) -> None:
        """A sequence of structs made of one primitive type (Point: 3 f64, ColorRGBA: 4 f32)."""
        self.u32(len(rows))
        if len(rows):
            self._align(size)
            self.buf += np.ascontiguousarray(rows, dtype=dtype).tobytes()

    def bytes(self) -> bytes:
        return bytes(self.buf)


def _pad(buf: bytearray, n: int) -> None:
    pad = (-(len(buf) - 4)) % n
    if pad:
        buf += bytes(pad)


def tf_message_cdr(t_ns: int, parent: str, children: Sequence[str], translations: np.ndarray,
                   quats_xyzw: np.ndarray) -> bytes:
    """tf2_msgs/TFMessage: one TransformStamped per child, all at `t_ns` from `parent`."""
    buf = bytearray(_ENCAPSULATION)
    parent_b = parent.encode()
    head = struct.pack('<iII', t_ns // 1_000_000_000, t_ns % 1_000_000_000,
                       len(parent_b) + 1) + parent_b + b'\x00'
    values = np.concatenate([np.asarray(translations, dtype='<f8').reshape(-1, 3),
                             np.asarray(quats_xyzw, dtype='<f8').reshape(-1, 4)], axis=1)
    buf += struct.pack('<I', len(children))
    for child, row in zip(children, values):
        _pad(buf, 4)
        child_b = child.encode()
        buf += head
        _pad(buf, 4)
        buf += struct.pack('<I', len(child_b) + 1) + child_b + b'\x00'
        _pad(buf, 8)
        buf += row.tobytes()
    return bytes(buf)


def _marker_tail(w: CdrWriter, text: str = '', mesh_resource: str = '') -> None:
    w.string('')  # texture_resource
    w.header(0, '')  # texture: sensor_msgs/CompressedImage
    w.string('')  # texture.format
    w.u32(0)  # texture.data
    w.u32(0)  # uv_coordinates
    w.string(text)
    w.string(mesh_resource)
    w.string('')  # mesh_file.filename
    w.u32(0)  # mesh_file.data
    w.u8(0)  # mesh_use_embedded_materials


def _tail_bytes() -> bytes:
    """The empty tail of a Marker (texture ... mesh_use_embedded_materials), from a
    4-aligned offset: the same bytes wherever it starts, since every member aligns to 4."""
    w = CdrWriter()
    _marker_tail(w)
    return bytes(w.buf[4:])


_TAIL = _tail_bytes()


def _head(buf: bytearray, t_ns: int, frame_id: bytes, ns: bytes, marker_id: int,
          kind: int, action: int) -> None:
    _pad(buf, 4)
    buf += struct.pack('<iII', t_ns // 1_000_000_000, t_ns % 1_000_000_000,
                       len(frame_id) + 1) + frame_id + b'\x00'
    _pad(buf, 4)
    buf += struct.pack('<I', len(ns) + 1) + ns + b'\x00'
    _pad(buf, 4)
    buf += struct.pack('<iii', marker_id, kind, action)


class SphereLists:
    """visualization_msgs/Marker SPHERE_LISTs (ADD, identity pose, per-point colours) for
    many frames of the same markers, with their fixed bytes prepared.

    A Marker starts 4-aligned, so its fixed prefix (after the stamp, up to the points)
    comes in two layouts, for a start at 0 or 4 modulo 8; both are built once per id.
    """

    def __init__(self, frame_id: str, ns: str, ids: Sequence[int], diameter: float) -> None:
        self.prefix: dict[tuple[int, int], bytes] = {}
        for mod in (0, 4):
            for i in ids:
                w = CdrWriter()
                w.buf += bytes(mod)
                _head(w.buf, 0, frame_id.encode(), ns.encode(), i, 7, 0)
                _pad(w.buf, 8)
                w.buf += struct.pack('<10d4fiIB', 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, diameter,
                                     diameter, diameter, 1.0, 1.0, 1.0, 1.0, 0, 0, 0)
                self.prefix[(mod, i)] = bytes(w.buf[4 + mod + 8:])

    def write(self, w: CdrWriter, t_ns: int, marker_id: int, points: np.ndarray,
              colors: np.ndarray) -> None:
        buf = w.buf
        _pad(buf, 4)
        buf += struct.pack('<iI', t_ns // 1_000_000_000, t_ns % 1_000_000_000)
        buf += self.prefix[((len(buf) - 12) % 8, marker_id)]
        _pad(buf, 4)
        buf += struct.pack('<I', len(points))
        if len(points):
            _pad(buf, 8)
            buf += points.tobytes()
        buf += struct.pack('<I', len(colors))  # 4-aligned: 24 bytes a point
        buf += colors.tobytes()
        buf += _TAIL


def delete_marker_cdr(w: CdrWriter, t_ns: int, frame_id: str, ns: str, marker_id: int) -> None:
    """One visualization_msgs/Marker DELETE of (ns, id); the other fields as a default Marker."""
    buf = w.buf
    _head(buf, t_ns, frame_id.encode(), ns.encode(), marker_id, 0, 2)
    _pad(buf, 8)
    buf += struct.pack('<10d4fiIB', 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0,
                       0.0, 0.0, 0.0, 0.0, 0, 0, 0)
    _pad(buf, 4)
    buf += struct.pack('<II', 0, 0)  # points, colors
    buf += _TAIL


# -- reading ------------------------------------------------------------------------------
def header_stamp(data: bytes) -> int:
    """Header.stamp in ns of a message whose first field is a std_msgs/Header."""
    # 4-byte encapsulation header (byte 1: 0 big-, 1 little-endian), then
    # Header.stamp as int32 sec + uint32 nanosec: read without deserialising.
    sec, nsec = struct.unpack_from('<iI' if data[1] & 1 else '>iI', data, 4)
    return int(sec) * 1_000_000_000 + int(nsec)


class CdrReader:
    """Just enough CDR to read the fields an adapter checks on every message.

    rclpy's deserialisation of every pose and frame pointer was half the time
    of opening a UMI episode; these layouts are fixed by their .msg files.
    """

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.end = '<' if data[1] & 1 else '>'
        self.pos = 0  # relative to the end of the 4-byte encapsulation header

    def _align(self, n: int) -> None:
        self.pos += -self.pos % n

    def u32(self) -> int:
        self._align(4)
        (v,) = struct.unpack_from(self.end + 'I', self.data, 4 + self.pos)
        self.pos += 4
        return int(v)

    def string(self) -> str:
        n = self.u32()
        raw = self.data[4 + self.pos:4 + self.pos + n]
        if len(raw) != n:
            raise struct.error('string runs past the end of the message')
        self.pos += n
        return raw.rstrip(b'\0').decode('utf-8', 'replace')

    def doubles(self, n: int) -> tuple[float, ...]:
        self._align(8)
        values = struct.unpack_from(self.end + 'd' * n, self.data, 4 + self.pos)
        self.pos += 8 * n
        return tuple(float(v) for v in values)

    def pose_stamped(self) -> tuple[float, ...]:
        """x, y, z, qx, qy, qz, qw of a geometry_msgs/PoseStamped."""
        self.pos = 8  # header.stamp
        self.string()  # header.frame_id
        return self.doubles(7)

    def diagnostic_status(self) -> tuple[str, dict[str, str]]:
        """Return name and key -> value pairs of a diagnostic_msgs/DiagnosticStatus."""
        self.pos = 1  # level (byte)
        name = self.string()
        self.string()  # message
        self.string()  # hardware_id
        return name, {self.string(): self.string() for _ in range(self.u32())}


__all__ = ['CdrReader', 'CdrWriter', 'SphereLists', 'delete_marker_cdr', 'header_stamp',
           'tf_message_cdr']
