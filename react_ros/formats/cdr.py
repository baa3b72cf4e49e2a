"""Reading a few fixed fields straight from ROS 2 CDR bytes, without rclpy.

Plain XCDR1 as rosbag2 records it: a 4-byte encapsulation header (byte 1 odd =
little-endian), then fields aligned to their size relative to the end of that
header.
"""
from __future__ import annotations

import struct


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
