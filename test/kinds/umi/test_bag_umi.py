"""A UMI sample converted to a bag, checked against the sample's own files.

Expectations come from reading the sample (its episode.mcap, YAML and URDF) with
mcap + mcap_ros2, not from the adapter, so a stamp or a count the adapter gets
wrong shows up here.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory

from react_ros.registry import open_episode
from react_ros.rosbag2.writer import BagSummary, write_bag

CAMERAS = ('left', 'center', 'right')
POSE = '/{}/perception_interface/pose/state'
POINTER = '/{}/perception_interface/camera/state'
GRIPPER = '/{}/perception_interface/gripper/state'
TRACKING = '/tracking/meta_interface/tracking_status/state'
RECORDED = {*(POSE.format(c) for c in CAMERAS), *(POINTER.format(c) for c in CAMERAS),
            GRIPPER.format('left'), GRIPPER.format('right'), TRACKING}
POSE_FRAME = {'left': 'quest_left_aim', 'center': 'quest_hmd', 'right': 'quest_right_aim'}
LATCHED = {'/tf_static', '/robot_description'}
BODY = {'left': 'left_aim', 'center': 'head', 'right': 'right_aim'}
# the tracking status's inputs and velocities
TRACKING_DERIVED = {'/tracking/input/joy', *(f'/tracking/{b}/twist' for b in (
    'head', 'left_grip', 'left_aim', 'right_grip', 'right_aim'))}
Msgs = dict[str, list[tuple[int, int, Any]]]


def _read(path: Path) -> Msgs:
    out: Msgs = {}
    with open(path, 'rb') as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _, channel, message, msg in reader.iter_decoded_messages(log_time_order=True):
            out.setdefault(channel.topic, []).append(
                (message.log_time, message.publish_time, msg))
    return out


def _ns(stamp: Any) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def _tracked(src: Msgs, cam: str) -> list[bool]:
    """Per recorded pose of `cam`: its body valid in the status logged nearest to it."""
    status = [(log, json.loads(m.data)) for log, _, m in src[TRACKING]]
    out = []
    for log, _, _ in src[POSE.format(cam)]:
        _, doc = min(status, key=lambda s: abs(s[0] - log))
        body = doc[BODY[cam]]
        out.append(body['position_valid'] and body['orientation_valid'] and not doc['stale'])
    return out


@pytest.fixture(scope='module')
def converted(umi_episode: Path, tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[BagSummary, Msgs, Msgs]:
    out = tmp_path_factory.mktemp('bag') / 'umi'
    summary = write_bag(open_episode(umi_episode), out)
    return summary, _read(out / 'umi_0.mcap'), _read(umi_episode / 'data' / 'episode.mcap')


def test_every_contract_topic_is_there(converted: tuple[BagSummary, Msgs, Msgs]) -> None:
    summary, bag, _ = converted
    expected = {'/tf', '/tf_static', '/robot_description', '/joint_states', '/annotations',
                *(f'/{c}/image_raw' for c in CAMERAS), *(f'/{c}/camera_info' for c in CAMERAS),
                *RECORDED, *TRACKING_DERIVED}
    assert set(bag) == expected
    assert summary.topic_counts == {t: len(v) for t, v in bag.items()}
    for topic, msgs in bag.items():
        assert all(log == pub for log, pub, _ in msgs), topic


def test_recorded_topics_are_republished_with_their_stamps(
        converted: tuple[BagSummary, Msgs, Msgs]) -> None:
    _, bag, src = converted
    assert set(src) == RECORDED
    headerless = {t for t in RECORDED if not hasattr(src[t][0][2], 'header')}
    assert headerless == {TRACKING, *(POINTER.format(c) for c in CAMERAS)}
    for topic in RECORDED:
        kept = src[topic]
        for cam in CAMERAS:  # a pose the tracking status calls invalid is not published
            if topic == POSE.format(cam):
                kept = [m for m, ok in zip(kept, _tracked(src, cam)) if ok]
                assert 0 < len(kept) < len(src[topic])
        assert len(bag[topic]) == len(kept), topic
        if not hasattr(src[topic][0][2], 'header'):  # keeps its recorded log time
            expected = sorted(log for log, _, _ in kept)
        else:
            expected = sorted(_ns(m.header.stamp) for _, _, m in kept)
            assert all(log == _ns(m.header.stamp) for log, _, m in bag[topic]), topic
        assert [log for log, _, _ in bag[topic]] == expected, topic


def _pose_ok(p: Any) -> bool:
    v = (p.position.x, p.position.y, p.position.z, p.orientation.x, p.orientation.y,
         p.orientation.z, p.orientation.w)
    return all(math.isfinite(x) for x in v) and abs(math.hypot(*v[3:]) - 1.0) < 0.01


def test_tf_holds_each_pose_at_its_stamp_and_the_finger_joints(
        converted: tuple[BagSummary, Msgs, Msgs]) -> None:
    _, bag, src = converted
    expected = Counter()
    for cam in CAMERAS:
        for (_, _, m), tracked in zip(src[POSE.format(cam)], _tracked(src, cam)):
            if _pose_ok(m.pose) and tracked:
                expected[(m.header.frame_id, POSE_FRAME[cam], _ns(m.header.stamp))] += 1
    poses: Counter[tuple[str, str, int]] = Counter()
    joints = []
    for log, _, m in bag['/tf']:
        assert all(_ns(tf.header.stamp) == log for tf in m.transforms)
        children = {tf.child_frame_id for tf in m.transforms}
        if children & set(POSE_FRAME.values()):
            [tf] = m.transforms
            poses[(tf.header.frame_id, tf.child_frame_id, log)] += 1
        else:
            joints.append(log)
    assert poses == expected and sum(expected.values()) > 0
    grippers = sorted(_ns(m.header.stamp) for side in ('left', 'right')
                      for _, _, m in src[GRIPPER.format(side)])
    assert joints == grippers  # robot_state_publisher's /tf, one per joint state


def test_joint_states_keep_the_gripper_stamps(converted: tuple[BagSummary, Msgs, Msgs]) -> None:
    _, bag, src = converted
    grippers = sorted(_ns(m.header.stamp) for side in ('left', 'right')
                      for _, _, m in src[GRIPPER.format(side)])
    assert [log for log, _, _ in bag['/joint_states']] == grippers
    names = {n for _, _, m in bag['/joint_states'] for n in m.name}
    assert names == {'left_left_finger', 'right_left_finger'}


def test_images_and_camera_infos_carry_the_pointer_stamps(
        converted: tuple[BagSummary, Msgs, Msgs], umi_episode: Path) -> None:
    _, bag, src = converted
    for cam in CAMERAS:
        pointers = sorted(int({kv.key: kv.value for kv in m.values}['header.stamp'])
                          for _, _, m in src[POINTER.format(cam)])
        frame = f'{cam}_color_optical_frame'
        images, infos = bag[f'/{cam}/image_raw'], bag[f'/{cam}/camera_info']
        assert [log for log, _, _ in images] == pointers
        assert [log for log, _, _ in infos] == pointers
        for (log, _, img), (_, _, info) in zip(images, infos):
            assert _ns(img.header.stamp) == _ns(info.header.stamp) == log
            assert img.header.frame_id == info.header.frame_id == frame
            assert (img.width, img.height, img.encoding) == (320, 200, 'rgb8')
            assert len(img.data) == img.step * img.height == 320 * 3 * 200
            assert (info.width, info.height) == (320, 200)


def test_description_static_tf_and_annotations(converted: tuple[BagSummary, Msgs, Msgs],
                                               umi_episode: Path) -> None:
    summary, bag, _ = converted
    urdf = (umi_episode / 'meta/scene/robot_description.urdf').read_text()
    [(t_desc, _, desc)] = bag['/robot_description']
    assert desc.data == urdf
    [(t_static, _, static)] = bag['/tf_static']
    assert static.transforms and t_desc == t_static == summary.start_ns
    system = umi_episode / 'meta/system'
    labels = yaml.safe_load((system / 'annotation.yaml').read_text())['annotations'] or []
    flags = yaml.safe_load((system / 'flag.yaml').read_text())['flags'] or []
    expected = sorted(int(e['time']) for e in [*labels, *flags])
    assert [log for log, _, _ in bag['/annotations']] == expected and expected


def test_metadata_yaml_latches_tf_static(converted: tuple[BagSummary, Msgs, Msgs]) -> None:
    summary, bag, _ = converted
    with open(summary.path / 'metadata.yaml') as f:
        info = yaml.safe_load(f)['rosbag2_bagfile_information']
    topics = {t['topic_metadata']['name']: t for t in info['topics_with_message_count']}
    assert {k: t['message_count'] for k, t in topics.items()} == {k: len(v) for k, v in
                                                                  bag.items()}
    for name, t in topics.items():
        [qos] = yaml.safe_load(t['topic_metadata']['offered_qos_profiles'])
        # rmw enums: durability 1 transient local, 2 volatile; reliability 1 reliable.
        assert (qos['durability'], qos['reliability']) == ((1, 1) if name in LATCHED
                                                           else (2, 1)), name
    assert info['message_count'] == summary.message_count
    assert info['starting_time']['nanoseconds_since_epoch'] == summary.start_ns
