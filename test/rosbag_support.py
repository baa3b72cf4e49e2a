"""Bags written by a writer other than react_ros's own (rosbags'), for the bag tests.

`foreign_bag` writes a small rosbag2 MCAP bag with rosbags' Writer (metadata version 8
or 9), in one file or split over two (`files=2`, the way `ros2 bag record
--max-bag-duration` splits): a latched /tf_static, /tf, a /chatter of strings, an Image
topic, and a topic of a type no ROS 2 install has.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, \
    QosReliability, QosTime
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

T0 = 1_700_000_000_000_000_000
STEP = 100_000_000  # 10 Hz
N = 20
UNKNOWN_TYPE = 'lab_msgs/msg/Gizmo'


def _qos(durability: QosDurability, depth: int) -> Qos:
    zero = QosTime(0, 0)
    return Qos(QosHistory.KEEP_LAST, depth, QosReliability.RELIABLE, durability, zero, zero,
               QosLiveliness.AUTOMATIC, zero, False)


def expected(store: Any) -> list[tuple[str, int, str, Any]]:
    """(topic, log time, type, message) of every message the foreign bag holds, in order."""
    s = store.types
    Time = s['builtin_interfaces/msg/Time']
    Header = s['std_msgs/msg/Header']

    def header(t: int, frame: str) -> Any:
        return Header(stamp=Time(sec=t // 10**9, nanosec=t % 10**9), frame_id=frame)

    def transform(t: int, parent: str, child: str, x: float) -> Any:
        return s['geometry_msgs/msg/TransformStamped'](
            header=header(t, parent), child_frame_id=child,
            transform=s['geometry_msgs/msg/Transform'](
                translation=s['geometry_msgs/msg/Vector3'](x=x, y=0.0, z=0.0),
                rotation=s['geometry_msgs/msg/Quaternion'](x=0.0, y=0.0, z=0.0, w=1.0)))
    out = [('/tf_static', T0, 'tf2_msgs/msg/TFMessage', s['tf2_msgs/msg/TFMessage'](
        transforms=[transform(T0, 'base_link', 'camera_optical_frame', 0.1)]))]
    for i in range(N):
        t = T0 + i * STEP
        out.append(('/tf', t, 'tf2_msgs/msg/TFMessage', s['tf2_msgs/msg/TFMessage'](
            transforms=[transform(t, 'world', 'base_link', 0.01 * i)])))
        out.append(('/chatter', t + 1000, 'std_msgs/msg/String',
                    s['std_msgs/msg/String'](data=f'hello {i}')))
        if i % 2 == 0:
            img = np.full((6, 8, 3), i, dtype=np.uint8)
            out.append(('/camera/image_raw', t + 2000, 'sensor_msgs/msg/Image',
                        s['sensor_msgs/msg/Image'](header=header(t, 'camera_optical_frame'),
                                                   height=6, width=8, encoding='rgb8',
                                                   is_bigendian=0, step=24,
                                                   data=img.ravel())))
        out.append(('/gizmo', t + 3000, UNKNOWN_TYPE, s[UNKNOWN_TYPE](value=i)))
    return out


def typestore() -> Any:
    store = get_typestore(Stores.ROS2_KILTED)
    store.register(get_types_from_msg('int32 value', UNKNOWN_TYPE))
    return store


def foreign_bag(path: Path, version: int = 9, files: int = 1) -> Path:
    """Write the bag at `path` (a new folder) and return it."""
    store = typestore()
    msgs = expected(store)
    halves = [msgs] if files == 1 else [msgs[:len(msgs) // 2], msgs[len(msgs) // 2:]]
    parts = [_write(path if k == 0 else path.with_name(path.name + f'.part{k}'), part, store,
                    version) for k, part in enumerate(halves)]
    if files == 2:  # the second part's file joins the first bag, as a split recording
        meta_path = path / 'metadata.yaml'
        meta = yaml.safe_load(meta_path.read_text())
        other = yaml.safe_load((parts[1] / 'metadata.yaml').read_text())
        info, more = meta['rosbag2_bagfile_information'], other['rosbag2_bagfile_information']
        name = f'{path.name}_1.mcap'
        shutil.move(str(parts[1] / more['relative_file_paths'][0]), str(path / name))
        shutil.rmtree(parts[1])
        info['relative_file_paths'].append(name)
        counts = {t['topic_metadata']['name']: t for t in info['topics_with_message_count']}
        for t in more['topics_with_message_count']:
            name_ = t['topic_metadata']['name']
            if name_ in counts:
                counts[name_]['message_count'] += t['message_count']
            else:
                info['topics_with_message_count'].append(t)
        info['message_count'] += more['message_count']
        meta_path.write_text(yaml.safe_dump(meta, sort_keys=False))
    return path


def _write(path: Path, msgs: list[tuple[str, int, str, Any]], store: Any, version: int) -> Path:
    with Writer(path, version=version, storage_plugin=StoragePlugin.MCAP) as writer:
        conns: dict[str, Any] = {}
        for topic, t, msg_type, msg in msgs:
            if topic not in conns:
                latched = topic == '/tf_static'
                qos = _qos(QosDurability.TRANSIENT_LOCAL if latched else QosDurability.VOLATILE,
                           1 if latched else 10)
                conns[topic] = writer.add_connection(topic, msg_type, typestore=store,
                                                     offered_qos_profiles=[qos])
            writer.write(conns[topic], t, store.serialize_cdr(msg, msg_type))
    return path
