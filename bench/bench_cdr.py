"""CDR bytes made and read every way the package has used, side by side (issue 26).

Writing, from the same numpy input each time (so building message objects counts
where a path needs them):
  rclpy        rclpy.serialization.serialize_message on the real message classes
               (its bytes carry uninitialised padding: not what a bag can store);
  cdr_payload  ros/serialization.py, what bags store: any message object walked
               and written with ros/cdr.py's CdrWriter (before issue 26: the rclpy
               bytes above, cut to the content and their padding zeroed);
  hand         ros/cdr.py's prepared writers from numpy rows (TF, sphere-list
               markers; an Image from CdrWriter's primitives);
  mcap_ros2    mcap_ros2.writer.Writer.write_message into an uncompressed in-memory
               MCAP: its only public encoder, so MCAP framing is included;
  rosbags      rosbags' typestore.serialize_cdr on its own message classes (a test
               dependency only, there as a reference point).
Reading pose and frame-pointer messages (a recorded source bag's, UMI's for one):
  rclpy        deserialize_message + the fields the adapter needs;
  mcap_ros2    mcap_ros2.decoder.DecoderFactory's decoder;
  hand         ros/cdr.py's CdrReader.

Every writing path's bytes are compared with cdr_payload's (padding included) and
printed as same/differs. Run: scripts/ros_env.sh python bench/bench_cdr.py [--quick]
"""
from __future__ import annotations

import argparse
import array
import io
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

Candidates = dict[str, Callable[[], Any]]


def best_rate(fn: Callable[[], Any], budget_s: float) -> float:
    """Calls a second, best of three rounds that each last about budget_s / 3."""
    fn()
    n, t = 1, 0.0
    while True:  # calibrate a round
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t = time.perf_counter() - t0
        if t > budget_s / 12:
            break
        n *= 4
    rounds = []
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        rounds.append((time.perf_counter() - t0) / n)
    return 1.0 / min(rounds)


def report(case: str, size: int, candidates: Candidates, budget_s: float,
           same: dict[str, bool | None]) -> None:
    rates = {name: best_rate(fn, budget_s) for name, fn in candidates.items()}
    top = max(rates.values())
    print(f'\n{case}  ({size} bytes a message)')
    print(f'  {"path":<12} {"msg/s":>11} {"MB/s":>9} {"x fastest":>10}  bytes')
    for name, rate in sorted(rates.items(), key=lambda kv: -kv[1]):
        check = {True: 'same', False: 'differs', None: '-'}[same.get(name)]
        print(f'  {name:<12} {rate:>11.0f} {rate * size / 1e6:>9.1f} {rate / top:>10.3f}  '
              f'{check}')


class McapEncoder:
    """mcap_ros2's public writer into memory; bytes() gives the last message's CDR."""

    def __init__(self, msg_type: str) -> None:
        from mcap.writer import CompressionType
        from mcap_ros2.writer import Writer

        from react_ros.ros.msgs import definition_text
        self.out = io.BytesIO()
        self.writer = Writer(self.out, compression=CompressionType.NONE, enable_crcs=False)
        self.schema = self.writer.register_msgdef(msg_type, definition_text(msg_type))

    def __call__(self, msg: Any) -> None:
        self.out.seek(0)
        self.out.truncate()
        self.writer.write_message('/bench', self.schema, msg, log_time=0)

    def last_cdr(self, msg: Any) -> bytes:
        """The CDR of `msg` as this writer encodes it, read back from a finished MCAP."""
        from mcap.reader import make_reader
        from mcap.writer import CompressionType
        from mcap_ros2.writer import Writer

        from react_ros.ros.msgs import definition_text
        out = io.BytesIO()
        with Writer(out, compression=CompressionType.NONE) as w:
            name = self.schema.name
            w.write_message('/b', w.register_msgdef(name, definition_text(name)), msg,
                            log_time=0)
        out.seek(0)
        return next(iter(make_reader(out).iter_messages()))[2].data


class Rosbags:
    def __init__(self) -> None:
        from rosbags.typesys import Stores, get_typestore
        self.store = get_typestore(Stores.ROS2_KILTED)
        self.t = self.store.types

    def stamp(self, t_ns: int) -> Any:
        return self.t['builtin_interfaces/msg/Time'](sec=t_ns // 10**9, nanosec=t_ns % 10**9)

    def header(self, t_ns: int, frame: str) -> Any:
        return self.t['std_msgs/msg/Header'](stamp=self.stamp(t_ns), frame_id=frame)


def compare(want: bytes, got: dict[str, bytes]) -> dict[str, bool | None]:
    return {'cdr_payload': True, 'rclpy': None, **{k: v == want for k, v in got.items()}}


# -- images -------------------------------------------------------------------------------
def images(w: int, h: int, budget: float, rb: Rosbags) -> None:
    from rclpy.serialization import serialize_message

    from react_ros.ros.cdr import CdrWriter
    from react_ros.ros.image import rgb_image
    from react_ros.ros.serialization import cdr_payload
    frame = np.random.default_rng(0).integers(0, 255, (h, w, 3), dtype=np.uint8)
    t = 1_700_000_000_123_456_789

    def hand() -> bytes:
        c = CdrWriter()
        c.header(t, 'camera')
        c.u32(h)
        c.u32(w)
        c.string('rgb8')
        c.u8(0)
        c.u32(w * 3)
        c.u32(frame.nbytes)
        c.buf += frame.data.cast('B')
        return c.bytes()

    def rosbags() -> bytes:
        msg = rb.t['sensor_msgs/msg/Image'](header=rb.header(t, 'camera'), height=h, width=w,
                                            encoding='rgb8', is_bigendian=0, step=w * 3,
                                            data=frame.reshape(-1))
        return bytes(rb.store.serialize_cdr(msg, 'sensor_msgs/msg/Image'))

    mcap = McapEncoder('sensor_msgs/msg/Image')
    want = bytes(cdr_payload(rgb_image(frame, t, 'camera')))
    same = compare(want, {'hand': hand(), 'rosbags': rosbags(),
                          'mcap_ros2': mcap.last_cdr(rgb_image(frame, t, 'camera'))})
    report(f'sensor_msgs/Image {w}x{h} rgb8', len(want), {
        'rclpy': lambda: serialize_message(rgb_image(frame, t, 'camera')),
        'cdr_payload': lambda: cdr_payload(rgb_image(frame, t, 'camera')),
        'hand': hand,
        'mcap_ros2': lambda: mcap(rgb_image(frame, t, 'camera')),
        'rosbags': rosbags}, budget, same)


# -- TF -----------------------------------------------------------------------------------
def tf(n: int, budget: float, rb: Rosbags) -> None:
    from rclpy.serialization import serialize_message

    from react_ros.ros.cdr import tf_message_cdr
    from react_ros.ros.serialization import cdr_payload
    from react_ros.ros.tf import tf_message, transform_stamped
    rng = np.random.default_rng(n)
    names = [f'object_{i:02d}' for i in range(n)]
    tr = rng.normal(size=(n, 3))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    t = 1_000_000_000 + 8_333_333

    def build() -> Any:
        return tf_message(transform_stamped('world', c, t, tr[i], q[i])
                          for i, c in enumerate(names))

    def rosbags() -> bytes:
        T = rb.t
        vec, quat = T['geometry_msgs/msg/Vector3'], T['geometry_msgs/msg/Quaternion']
        msg = T['tf2_msgs/msg/TFMessage'](transforms=[T['geometry_msgs/msg/TransformStamped'](
            header=rb.header(t, 'world'), child_frame_id=c,
            transform=T['geometry_msgs/msg/Transform'](
                translation=vec(x=float(tr[i, 0]), y=float(tr[i, 1]), z=float(tr[i, 2])),
                rotation=quat(x=float(q[i, 0]), y=float(q[i, 1]), z=float(q[i, 2]),
                              w=float(q[i, 3]))))
            for i, c in enumerate(names)])
        return bytes(rb.store.serialize_cdr(msg, 'tf2_msgs/msg/TFMessage'))

    def hand() -> bytes:
        return tf_message_cdr(t, 'world', names, tr, q)

    mcap = McapEncoder('tf2_msgs/msg/TFMessage')
    want = bytes(cdr_payload(build()))
    same = compare(want, {'hand': hand(), 'rosbags': rosbags(),
                          'mcap_ros2': mcap.last_cdr(build())})
    report(f'tf2_msgs/TFMessage of {n} transforms', len(want), {
        'rclpy': lambda: serialize_message(build()),
        'cdr_payload': lambda: cdr_payload(build()),
        'hand': hand,
        'mcap_ros2': lambda: mcap(build()),
        'rosbags': rosbags}, budget, same)


# -- markers ------------------------------------------------------------------------------
def markers(n: int, points: int, budget: float, rb: Rosbags) -> None:
    """A MarkerArray as the objects kind's raw markers: one SPHERE_LIST per instance."""
    from rclpy.serialization import serialize_message
    from std_msgs.msg import ColorRGBA
    from visualization_msgs.msg import Marker, MarkerArray
    from geometry_msgs.msg import Point

    from react_ros.ros.cdr import CdrWriter, SphereLists
    from react_ros.ros.msgs import stamp
    from react_ros.ros.serialization import cdr_payload
    rng = np.random.default_rng(points)
    xyz = np.ascontiguousarray(rng.normal(size=(n, points, 3)), dtype='<f8')
    rgba = np.ascontiguousarray(rng.random(size=(n, points, 4)), dtype='<f4')
    t, d = 1_000_000_000 + 8_333_333, 0.015
    spheres = SphereLists('world', 'raw_markers', range(n), d)

    def build() -> Any:
        out = MarkerArray()
        for i in range(n):
            m = Marker(ns='raw_markers', id=i, type=Marker.SPHERE_LIST, action=Marker.ADD)
            m.header.stamp = stamp(t)
            m.header.frame_id = 'world'
            m.pose.orientation.w = 1.0
            m.scale.x = m.scale.y = m.scale.z = d
            m.color = ColorRGBA(r=1.0, g=1.0, b=1.0, a=1.0)
            m.points = [Point(x=p[0], y=p[1], z=p[2]) for p in xyz[i].tolist()]
            m.colors = [ColorRGBA(r=c[0], g=c[1], b=c[2], a=c[3]) for c in rgba[i].tolist()]
            out.markers.append(m)
        return out

    def hand() -> bytes:
        w = CdrWriter()
        w.u32(n)
        for i in range(n):
            spheres.write(w, t, i, xyz[i], rgba[i])
        return w.bytes()

    def rosbags() -> bytes:
        T = rb.t
        pt, col = T['geometry_msgs/msg/Point'], T['std_msgs/msg/ColorRGBA']
        M = T['visualization_msgs/msg/Marker']
        empty_image = T['sensor_msgs/msg/CompressedImage'](
            header=rb.header(0, ''), format='', data=np.zeros(0, np.uint8))
        out = []
        for i in range(n):
            out.append(M(
                header=rb.header(t, 'world'), ns='raw_markers', id=i, type=7, action=0,
                pose=T['geometry_msgs/msg/Pose'](
                    position=pt(x=0.0, y=0.0, z=0.0),
                    orientation=T['geometry_msgs/msg/Quaternion'](x=0.0, y=0.0, z=0.0, w=1.0)),
                scale=T['geometry_msgs/msg/Vector3'](x=d, y=d, z=d),
                color=col(r=1.0, g=1.0, b=1.0, a=1.0),
                lifetime=T['builtin_interfaces/msg/Duration'](sec=0, nanosec=0),
                frame_locked=False,
                points=[pt(x=p[0], y=p[1], z=p[2]) for p in xyz[i].tolist()],
                colors=[col(r=c[0], g=c[1], b=c[2], a=c[3]) for c in rgba[i].tolist()],
                texture_resource='', texture=empty_image, uv_coordinates=[], text='',
                mesh_resource='', mesh_file=T['visualization_msgs/msg/MeshFile'](
                    filename='', data=np.zeros(0, np.uint8)),
                mesh_use_embedded_materials=False))
        msg = T['visualization_msgs/msg/MarkerArray'](markers=out)
        return bytes(rb.store.serialize_cdr(msg, 'visualization_msgs/msg/MarkerArray'))

    mcap = McapEncoder('visualization_msgs/msg/MarkerArray')
    want = bytes(cdr_payload(build()))
    same = compare(want, {'hand': hand(), 'rosbags': rosbags(),
                          'mcap_ros2': mcap.last_cdr(build())})
    report(f'visualization_msgs/MarkerArray of {n} sphere lists x {points} points',
           len(want), {
               'rclpy': lambda: serialize_message(build()),
               'cdr_payload': lambda: cdr_payload(build()),
               'hand': hand,
               'mcap_ros2': lambda: mcap(build()),
               'rosbags': rosbags}, budget, same)


# -- reading ------------------------------------------------------------------------------
def reading(budget: float) -> None:
    """Pose and frame-pointer messages (PoseStamped, DiagnosticStatus) as a recorded
    source bag holds them: serialised by rclpy, read back by each decoder."""
    from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
    from geometry_msgs.msg import PoseStamped
    from mcap.records import Schema
    from mcap_ros2.decoder import DecoderFactory
    from rclpy.serialization import deserialize_message, serialize_message

    from react_ros.ros.cdr import CdrReader
    from react_ros.ros.msgs import definition_text
    pose = PoseStamped()
    pose.header.frame_id = 'map'
    pose.pose.position.x, pose.pose.orientation.w = 0.25, 1.0
    status = DiagnosticStatus(name='camera', values=[
        KeyValue(key='video.stamp', value='1718470800.949463464'),
        KeyValue(key='video.frame', value='17')])
    found: dict[str, tuple[Any, bytes]] = {}
    for i, (name, msg) in enumerate((('geometry_msgs/msg/PoseStamped', pose),
                                     ('diagnostic_msgs/msg/DiagnosticStatus', status))):
        schema = Schema(id=i + 1, name=name, encoding='ros2msg',
                        data=definition_text(name).encode())
        found[name] = (schema, serialize_message(msg))
    factory = DecoderFactory()

    def pose_rclpy(data: bytes) -> tuple[float, ...]:
        p = deserialize_message(data, PoseStamped).pose
        return (p.position.x, p.position.y, p.position.z, p.orientation.x, p.orientation.y,
                p.orientation.z, p.orientation.w)

    def pose_mcap(decode: Callable[[bytes], Any], data: bytes) -> tuple[float, ...]:
        p = decode(data).pose
        return (p.position.x, p.position.y, p.position.z, p.orientation.x, p.orientation.y,
                p.orientation.z, p.orientation.w)

    def status_rclpy(data: bytes) -> tuple[str, dict[str, str]]:
        s = deserialize_message(data, DiagnosticStatus)
        return s.name, {v.key: v.value for v in s.values}

    def status_mcap(decode: Callable[[bytes], Any], data: bytes) -> tuple[str, dict[str, str]]:
        s = decode(data)
        return s.name, {v.key: v.value for v in s.values}

    for name, (schema, data), by_rclpy, by_mcap, by_hand in (
            ('geometry_msgs/PoseStamped', found['geometry_msgs/msg/PoseStamped'],
             pose_rclpy, pose_mcap, lambda d: CdrReader(d).pose_stamped()),
            ('diagnostic_msgs/DiagnosticStatus (frame pointer)',
             found['diagnostic_msgs/msg/DiagnosticStatus'], status_rclpy, status_mcap,
             lambda d: CdrReader(d).diagnostic_status())):
        decode = factory.decoder_for('cdr', schema)
        assert decode is not None
        want = by_rclpy(data)
        same: dict[str, bool | None] = {'rclpy': True, 'mcap_ros2': by_mcap(decode, data) == want,
                                        'hand': by_hand(data) == want}
        report(f'reading {name}', len(data), {
            'rclpy': lambda: by_rclpy(data),
            'mcap_ros2': lambda: by_mcap(decode, data),
            'hand': lambda: by_hand(data)}, budget, same)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--quick', action='store_true', help='short rounds (a smoke run)')
    args = parser.parse_args()
    budget = 0.15 if args.quick else 1.0
    import rclpy
    print(f'python {sys.version.split()[0]}, rclpy from {Path(rclpy.__file__).parent}')
    print('"bytes": the path\'s output against cdr_payload\'s (reading: the values read)')
    rb = Rosbags()
    images(1920, 1200, budget, rb)
    images(320, 200, budget, rb)
    for n in (1, 10, 40):
        tf(n, budget, rb)
    markers(20, 6, budget, rb)
    reading(budget)


if __name__ == '__main__':
    main()
