"""visualization_msgs/Marker written straight to CDR, for markers that carry a mesh.

A scanned mesh is tens of thousands of points; as geometry_msgs/Point objects
it would be built and encoded again on every marker message. Here its corners
are held as one little-endian array (`MeshGeometry`) copied into each message, the rest of
the Marker written field by field in the order of Marker.msg. The bytes equal
rclpy's serialisation of the same message (test_objects_mesh.py checks it).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from react_ros.ros.cdr import CdrWriter

TRIANGLE_LIST = 11
CUBE = 1
ADD = 0


@dataclass(frozen=True)
class MeshGeometry:
    """Triangle corners in the mesh frame, as the Point[] rows of the wire."""
    rows: np.ndarray  # (3 * triangles, 3) little-endian float64, contiguous

    @classmethod
    def of(cls, corners: np.ndarray) -> MeshGeometry:
        return cls(np.ascontiguousarray(corners, dtype='<f8').reshape(-1, 3))

    @property
    def triangles(self) -> int:
        return len(self.rows) // 3


def write_marker(w: CdrWriter, t_ns: int, frame_id: str, ns: str, marker_id: int,
                 kind: int, scale: tuple[float, float, float],
                 rgba: tuple[float, float, float, float], text: str,
                 geometry: MeshGeometry | None = None) -> None:
    """One ADD Marker at the identity pose of `frame_id`, frame-locked."""
    w.header(t_ns, frame_id)
    w.string(ns)
    w.i32(marker_id)
    w.i32(kind)
    w.i32(ADD)
    w.f64s([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])  # pose: identity
    w.f64s(scale)
    w.f32s(rgba)
    w.i32(0)  # lifetime: forever
    w.u32(0)
    w.u8(1)  # frame_locked
    w.struct_seq(np.empty((0, 3)) if geometry is None else geometry.rows, '<f8', 8)
    w.u32(0)  # colors: the marker's colour for every vertex
    w.string('')  # texture_resource
    w.header(0, '')  # texture (sensor_msgs/CompressedImage)
    w.string('')  # texture.format
    w.u32(0)  # texture.data
    w.u32(0)  # uv_coordinates
    w.string(text)
    w.string('')  # mesh_resource: none, the geometry is in the message
    w.string('')  # mesh_file.filename
    w.u32(0)  # mesh_file.data
    w.u8(0)  # mesh_use_embedded_materials


__all__ = ['CUBE', 'MeshGeometry', 'TRIANGLE_LIST', 'write_marker']
