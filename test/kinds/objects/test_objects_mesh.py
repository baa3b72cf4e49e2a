"""A bag a user can keep: the meshes travel inside /objects/markers, not as file:// paths.

The bag is converted, moved, and the release it came from deleted; every mesh
instance's marker must still hold its triangles and nothing in the bag may point
into the deleted release. The PLY reader and the directly written Marker CDR are
checked against hand-written answers and rclpy's own serialisation.
"""
from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from react_ros import cli
from react_ros.errors import DatasetFormatError
from react_ros.kinds.objects.marker_cdr import TRIANGLE_LIST, MeshGeometry, write_marker
from react_ros.kinds.objects.ply_mesh import ply_triangles
from react_ros.kinds.objects.sample import SESSION, write_objects_sample

NPZ = f'{SESSION}/motions/objects.npz'


def _read(bag: Path) -> dict[str, list]:
    from rosbags.highlevel import AnyReader
    topics: dict[str, list] = {}
    with AnyReader([bag]) as reader:
        for conn, t, raw in reader.messages():
            topics.setdefault(conn.topic, []).append((t, reader.deserialize(raw, conn.msgtype)))
    return topics


def test_a_moved_bag_keeps_every_mesh_with_the_release_deleted(tmp_path: Path) -> None:
    release = write_objects_sample(tmp_path / 'src' / 'release')
    with np.load(release / NPZ) as z:
        names = [str(n) for n in z['names']]
        meshes = [str(m) for m in z['mesh']]
        pose_frame = [str(p) for p in z['pose_frame']]
    assert cli.main(['convert', str(release), '-o', str(tmp_path / 'bag'), '-q']) == 0
    kept = tmp_path / 'elsewhere' / 'kept_bag'
    kept.parent.mkdir()
    shutil.move(tmp_path / 'bag', kept)
    shutil.rmtree(tmp_path / 'src')
    # nothing in the bag's files names the release, or any file at all
    for path in kept.rglob('*'):
        if path.is_file():
            raw = path.read_bytes()
            assert b'file://' not in raw and str(release).encode() not in raw, path
    topics = _read(kept)
    mesh_ids = {i for i, p in enumerate(pose_frame) if p == 'mesh'}
    assert mesh_ids  # the sample has mesh instances
    added = 0
    for _, msg in topics['/objects/markers']:
        for m in msg.markers:
            assert m.mesh_resource == '' and m.mesh_file.filename == ''
            if m.action == 0 and m.id in mesh_ids:
                assert m.type == TRIANGLE_LIST and len(m.points) == 36, names[m.id]
                added += 1
    assert added >= 2 * len(mesh_ids)  # every message, not only the first
    # the file's mesh column stays, as the release-relative name it is in the file
    _, status = topics['/objects/status'][0]
    assert [{kv.key: kv.value for kv in s.values}['mesh'] for s in status.status] == meshes


def test_absent_rigid_bodies_go_to_annotations_once(tmp_path: Path) -> None:
    release = write_objects_sample(tmp_path / 'release')
    doc = json.loads((release / SESSION / 'motions' / 'objects.json').read_text())
    assert cli.main(['convert', str(release), '-o', str(tmp_path / 'bag'), '-q']) == 0
    topics = _read(tmp_path / 'bag')
    [(t, msg)] = topics['/annotations']
    item = json.loads(msg.data)
    assert item['type'] == 'absent' and item['absent'] == doc['absent'] == ['LittleBox2']
    assert item['object_list'] == doc['object_list']
    assert t == topics['/tf'][0][0] == item['time_ns']  # the session's first frame


# -- the PLY reader against hand-written answers -------------------------------------------
SQUARE = [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (1.0, 2.0, 0.0), (0.0, 2.0, 0.0), (0.5, 1.0, 3.0)]


def _ascii_ply(faces: list[list[int]], extra: str = '') -> bytes:
    head = (f'ply\nformat ascii 1.0\nelement vertex {len(SQUARE)}\nproperty float x\n'
            f'property float y\nproperty float z\n{extra}element face {len(faces)}\n'
            'property list uchar int vertex_indices\nend_header\n')
    body = ''.join(f'{x} {y} {z}\n' for x, y, z in SQUARE)
    return (head + body + ''.join(f'{len(f)} ' + ' '.join(map(str, f)) + '\n'
                                  for f in faces)).encode()


def test_a_quad_is_two_triangles_fanned_from_its_first_corner(tmp_path: Path) -> None:
    path = tmp_path / 'quad.ply'
    path.write_bytes(_ascii_ply([[0, 1, 2, 3], [0, 1, 4]]))
    got = ply_triangles(path)
    want = np.array([SQUARE[i] for i in (0, 1, 2, 0, 2, 3, 0, 1, 4)])
    assert np.array_equal(got, want)


def test_binary_big_endian_with_colours_and_face_flags(tmp_path: Path) -> None:
    """Real scans carry vertex colours and extra face properties; big-endian counts too."""
    head = ('ply\nformat binary_big_endian 1.0\nelement vertex 5\nproperty double x\n'
            'property double y\nproperty double z\nproperty uchar red\nproperty uchar green\n'
            'property uchar blue\nelement face 2\nproperty list uchar uint vertex_indices\n'
            'property int flags\nend_header\n').encode()
    body = b''.join(struct.pack('>3d3B', *v, 10, 20, 30) for v in SQUARE)
    body += struct.pack('>B3Ii', 3, 4, 3, 2, 7) + struct.pack('>B3Ii', 3, 1, 2, 4, 9)
    path = tmp_path / 'scan.ply'
    path.write_bytes(head + body)
    want = np.array([SQUARE[i] for i in (4, 3, 2, 1, 2, 4)])
    assert np.array_equal(ply_triangles(path), want)
    # negative control: read little-endian, the same bytes are other numbers
    path.write_bytes(head.replace(b'binary_big_endian', b'binary_little_endian') + body)
    with pytest.raises(DatasetFormatError):  # the face indices land far outside 5 vertices
        ply_triangles(path)


@pytest.mark.parametrize('bad, words', [
    (b'not a mesh', 'not a PLY'),
    (_ascii_ply([[0, 1, 9]]), 'vertex 9 of 5'),
    (_ascii_ply([[0, 1, 2]])[:-8], 'truncated'),
    (_ascii_ply([]), 'no faces'),
])
def test_a_broken_ply_is_refused_naming_the_file(tmp_path: Path, bad: bytes,
                                                 words: str) -> None:
    path = tmp_path / 'broken.ply'
    path.write_bytes(bad)
    with pytest.raises(DatasetFormatError) as err:
        ply_triangles(path)
    assert str(path) in str(err.value) and words in str(err.value)


# -- the Marker bytes are rclpy's --------------------------------------------------------
@pytest.mark.parametrize('frame_ids', [['a'], ['BigBox0', 'LittleBox12'], ['xyz', 'ab', 'c']])
def test_written_markers_equal_rclpy_serialisation(frame_ids: list[str]) -> None:
    from geometry_msgs.msg import Point
    from rclpy.serialization import deserialize_message, serialize_message
    from std_msgs.msg import ColorRGBA
    from visualization_msgs.msg import Marker, MarkerArray

    from react_ros.ros.cdr import CdrWriter
    from react_ros.ros.msgs import stamp
    from react_ros.rosbag2.writer import cdr_payload
    rng = np.random.default_rng(len(frame_ids))
    t = 1_234_567_891_011
    w, array = CdrWriter(), MarkerArray()
    w.u32(len(frame_ids))
    for i, name in enumerate(frame_ids):
        corners = rng.normal(size=(3 * (i + 1), 3)) if i % 2 == 0 else None
        kind = TRIANGLE_LIST if corners is not None else Marker.CUBE
        scale = (1.0, 1.0, 1.0) if corners is not None else (0.25, 0.5, 0.75)
        rgba = (0.75, 0.625, 0.5, 1.0)
        write_marker(w, t, name, 'objects', i, kind, scale, rgba, name,
                     None if corners is None else MeshGeometry.of(corners))
        m = Marker(ns='objects', id=i, type=kind, action=Marker.ADD, frame_locked=True,
                   text=name)
        m.header.stamp, m.header.frame_id = stamp(t), name
        m.pose.orientation.w = 1.0
        m.scale.x, m.scale.y, m.scale.z = scale
        m.color = ColorRGBA(r=rgba[0], g=rgba[1], b=rgba[2], a=rgba[3])
        if corners is not None:
            m.points = [Point(x=float(x), y=float(y), z=float(z)) for x, y, z in corners]
        array.markers.append(m)
    # rclpy leaves padding bytes as they were: compare what it reads, and the sinks' bytes
    assert deserialize_message(w.bytes(), MarkerArray) == array
    assert len(w.bytes()) == len(serialize_message(array))
    assert w.bytes() == bytes(cdr_payload(array))
