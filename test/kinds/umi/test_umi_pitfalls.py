"""The UMI format document's remaining pitfalls, each with the wrong reading shown to differ.

(The tracking status, inputs, velocities and gripper units: test_umi_tracking.py. The
table of every pitfall: react_ros/kinds/umi/PITFALLS.md.)
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from rclpy.serialization import deserialize_message

from react_ros.registry import open_episode
from react_ros.adapters.base import Episode
from react_ros.formats.mcap_bag import McapBag
from react_ros.formats.urdf import parse_urdf
from react_ros.ros.msgs import message_class
from react_ros.streams import Role

CAMERAS = ('left', 'center', 'right')
POINTER = '/{}/perception_interface/camera/state'
GRIPPER = '/{}/perception_interface/gripper/state'
CAM_INFO = 'meta/sensor/{}.metadata_interface.camera_info.meta.yaml'


@pytest.fixture(scope='module')
def episode(umi_episode: Path) -> Episode:
    return open_episode(umi_episode)


def _values(root: Path, cam: str) -> list[dict[str, str]]:
    cls = message_class('diagnostic_msgs/msg/DiagnosticStatus')
    return [{kv.key: kv.value for kv in deserialize_message(raw.data, cls).values}
            for raw in McapBag(root / 'data/episode.mcap').messages([POINTER.format(cam)])]


@pytest.mark.parametrize('cam', CAMERAS)
def test_video_stamp_is_microseconds_since_the_first_frame_not_a_frame_index(
        episode: Episode, umi_episode: Path, cam: str) -> None:
    values = _values(umi_episode, cam)
    header = np.array([int(v['header.stamp']) for v in values])
    video_us = np.array([int(v['video.stamp']) for v in values])
    assert list(video_us) == list((header - header[0]) // 1000)
    # Negative control: as a frame index, pointer 1 would already be past the video's end.
    assert video_us[1] > len(values)
    (line,) = [r for r in episode.report if 'video.stamp = header.stamp' in r
               and POINTER.format(cam) in r]
    assert line.startswith('ok ') and f'on {len(values)} of {len(values)} pointers' in line
    assert f'pointer 1 is frame {video_us[1]}' in line


def test_camera_streams_are_declared_image_but_recorded_as_frame_pointers(
        episode: Episode, umi_episode: Path) -> None:
    workcell = yaml.safe_load((umi_episode / 'meta/scene/workcell_description.yaml')
                              .read_text())['devices']
    channels = {c.topic: c.schema_name for c in McapBag(umi_episode / 'data/episode.mcap')
                .channels()}
    for cam in CAMERAS:
        # Negative control: the workcell's declared type is not what the bag holds.
        assert workcell[f'{cam}_camera']['type'] == 'sensor_msgs/msg/Image'
        assert channels[POINTER.format(cam)] == 'diagnostic_msgs/msg/DiagnosticStatus'
        (image,) = [s for s in episode.streams if s.topic == f'/{cam}/image_raw']
        assert image.msg_type == 'sensor_msgs/msg/Image' and image.video is not None
    assert 'sensor_msgs/msg/Image' not in channels.values()


def test_p_is_the_cameras_own_k_row_major(episode: Episode, umi_copy: Path) -> None:
    lines = [r for r in episode.report if 'row-major' in r]
    assert len(lines) == 3 and all(r.startswith('ok ') for r in lines)
    # Negative control: K read column-major puts the principal point at the corner...
    k = yaml.safe_load((umi_copy / CAM_INFO.format('left')).read_text())['k']
    assert (k[6], k[7]) == (0.0, 0.0) != (k[2], k[5])
    assert 'cx 0, cy 0' in lines[0]
    # ...and a P that is not its K fails, named.
    path = umi_copy / CAM_INFO.format('left')
    doc = yaml.safe_load(path.read_text())
    doc['p'][2] = doc['k'][2] + 40.0
    path.write_text(yaml.safe_dump(doc))
    ep = open_episode(umi_copy)
    (bad,) = [r for r in ep.report if 'row-major' in r and 'left' in r]
    assert bad.startswith('FAIL') and 'is not its own K' in bad
    assert any(CAM_INFO.format('left') in w and 'is not its own K' in w for w in ep.warnings)


def test_flags_tilde_means_no_flags(umi_copy: Path) -> None:
    (umi_copy / 'meta/system/flag.yaml').write_text('flags: ~\n')
    # Negative control: '~' is YAML's null, not an empty list (len() of it would raise).
    assert yaml.safe_load('flags: ~\n') == {'flags': None}
    ep = open_episode(umi_copy)
    (notes,) = [s for s in ep.streams if s.topic == '/annotations']
    kinds = [json.loads(m.data)['type'] for _, m in notes.open()]
    assert kinds == ['label']


def test_gripper_scalars_are_renamed_to_the_urdf_joints(episode: Episode,
                                                        umi_episode: Path) -> None:
    robot = parse_urdf((umi_episode / 'meta/scene/robot_description.urdf').read_text(),
                       umi_episode / 'meta/scene/robot_description.urdf')
    cls = message_class('sensor_msgs/msg/JointState')
    recorded = {n for side in ('left', 'right') for raw in McapBag(
        umi_episode / 'data/episode.mcap').messages([GRIPPER.format(side)])
        for n in deserialize_message(raw.data, cls).name}
    # Negative control: the recorded names move no URDF joint.
    assert recorded == {'left_gripper', 'right_gripper'}
    assert not recorded & set(robot.joints)
    (joints,) = [s for s in episode.streams if s.topic == '/joint_states']
    names = {n for _, m in joints.open() for n in m.name}
    assert names == {'left_left_finger', 'right_left_finger'} <= set(robot.joints)
    # the second finger of each gripper is the URDF's mimic, moved by the robot state
    assert robot.joints['left_right_finger'].mimic.joint == 'left_left_finger'
    moved = {t.child_frame_id for s in episode.streams
             if s.topic == '/tf' and s.role is Role.ROBOT_STATE
             for _, m in s.open() for t in m.transforms}
    assert {'left_right_finger', 'right_right_finger'} <= moved


def test_images_are_unrectified_with_the_calibrations_distortion(episode: Episode,
                                                                 umi_episode: Path) -> None:
    for cam in CAMERAS:
        doc = yaml.safe_load((umi_episode / CAM_INFO.format(cam)).read_text())
        (info,) = [s for s in episode.streams if s.topic == f'/{cam}/camera_info']
        _, msg = next(iter(info.open()))
        assert list(msg.r) == doc['r'] == [1.0, 0, 0, 0, 1.0, 0, 0, 0, 1.0]
        assert msg.distortion_model == 'plumb_bob' and list(msg.d) == doc['d']
        # Negative control: a rectified reading would publish no distortion; this has some.
        assert any(abs(v) > 1e-3 for v in msg.d)
    assert not any(s.topic.endswith('image_rect') for s in episode.streams)


def test_optical_frames_come_static_from_the_urdf_as_written(episode: Episode,
                                                              umi_episode: Path) -> None:
    from scipy.spatial.transform import Rotation
    robot = parse_urdf((umi_episode / 'meta/scene/robot_description.urdf').read_text(),
                       umi_episode / 'meta/scene/robot_description.urdf')
    (static,) = [s for s in episode.streams if s.topic == '/tf_static']
    _, msg = next(iter(static.open()))
    by_child = {t.child_frame_id: t for t in msg.transforms}
    world = by_child['quest_origin'].transform
    assert by_child['quest_origin'].header.frame_id == 'world'
    assert (world.translation.x, world.translation.y, world.translation.z) == (0, 0, 0)
    assert world.rotation.w == 1.0  # world_to_quest_origin is the identity
    for cam in CAMERAS:
        joint = robot.joints[f'{cam}_color_optical_frame_joint']
        t = by_child[f'{cam}_color_optical_frame']
        assert t.header.frame_id == joint.parent
        q = t.transform.rotation
        want = Rotation.from_euler('xyz', joint.rpy)
        assert (Rotation.from_quat([q.x, q.y, q.z, q.w]) * want.inv()).magnitude() < 1e-6
        # Negative control: the optical frame is not its parent's axes (z forward, not x).
        assert want.magnitude() > 1.0
