"""UMI tracking status: it decides which poses are valid; its inputs and velocities published.

Each test reads the status JSON itself (json.loads, join by nearest log time) rather
than through react_ros.kinds.umi.tracking, and each shows the wrong reading differs.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import rewrite_mcap
from rclpy.serialization import deserialize_message

from react_ros.registry import open_episode
from react_ros.adapters.base import Episode
from react_ros.adapters.poses import pose_faults
from react_ros.formats.mcap_bag import McapBag
from react_ros.ros.msgs import message_class, to_ns
from react_ros.streams import Role, Stream

POSE = '/{}/perception_interface/pose/state'
GRIPPER = '/{}/perception_interface/gripper/state'
TRACKING = '/tracking/meta_interface/tracking_status/state'
BODY = {'center': 'head', 'left': 'left_aim', 'right': 'right_aim'}
CHILD = {'center': 'quest_hmd', 'left': 'quest_left_aim', 'right': 'quest_right_aim'}


@pytest.fixture(scope='module')
def episode(umi_episode: Path) -> Episode:
    return open_episode(umi_episode)


def stream(ep: Episode, topic: str, role: Role = Role.DATA) -> Stream:
    (s,) = [s for s in ep.streams if s.topic == topic and s.role is role]
    return s


def statuses(root: Path) -> list[tuple[int, dict[str, Any]]]:
    cls = message_class('std_msgs/msg/String')
    return [(raw.log_time_ns, json.loads(deserialize_message(raw.data, cls).data))
            for raw in McapBag(root / 'data/episode.mcap').messages([TRACKING])]


def poses(root: Path, cam: str) -> list[tuple[int, int, np.ndarray]]:
    """(log time, header stamp, [x y z qx qy qz qw]) of a pose topic."""
    cls = message_class('geometry_msgs/msg/PoseStamped')
    out = []
    for raw in McapBag(root / 'data/episode.mcap').messages([POSE.format(cam)]):
        m = deserialize_message(raw.data, cls)
        p, q = m.pose.position, m.pose.orientation
        out.append((raw.log_time_ns, to_ns(m.header.stamp),
                    np.array([p.x, p.y, p.z, q.x, q.y, q.z, q.w])))
    return out


def status_valid(root: Path, cam: str) -> list[bool]:
    """Per pose of `cam`: its body valid in the status logged nearest to it."""
    st = statuses(root)
    times = np.array([t for t, _ in st])
    out = []
    for log_ns, _, _ in poses(root, cam):
        _, doc = st[int(np.argmin(np.abs(times - log_ns)))]
        body = doc[BODY[cam]]
        out.append(body['position_valid'] and body['orientation_valid'] and not doc['stale'])
    return out


def tf_stamps(ep: Episode, child: str) -> list[int]:
    return [t for t, m in stream(ep, '/tf').open() for tr in m.transforms
            if tr.child_frame_id == child]


@pytest.mark.parametrize('cam', ['left', 'center', 'right'])
def test_poses_the_status_calls_invalid_never_reach_tf_nor_the_pose_topic(
        episode: Episode, umi_episode: Path, cam: str) -> None:
    valid = status_valid(umi_episode, cam)
    recorded = poses(umi_episode, cam)
    # The sample holds a tracking loss of this body (the format document's status)...
    assert 5 <= valid.count(False) < len(valid) // 2
    lost = [(s, p) for (_, s, p), ok in zip(recorded, valid) if not ok]
    kept = [s for (_, s, _), ok in zip(recorded, valid) if ok]
    # ...whose poses every other check passes: finite unit quaternions.
    assert all(f == '' for f in pose_faults(np.array([p for _, p in lost]), 0.01))
    assert tf_stamps(episode, CHILD[cam]) == kept
    published = [to_ns(deserialize_message(raw, message_class(
        'geometry_msgs/msg/PoseStamped')).header.stamp)
        for _, raw in stream(episode, POSE.format(cam)).open()]
    assert published == kept
    assert episode.invalid_poses[POSE.format(cam)] == len(lost)
    (line,) = [r for r in episode.report if r.startswith('ok   tracking status')
               and POSE.format(cam) in r]
    assert f'{len(kept)} of {len(recorded)} poses published' in line
    assert f'would read: the pose message alone (no status): {len(lost)} more poses' in line
    # Negative control: the pose message alone would put these on /tf, and they are
    # far off the tracked motion (the reference origin, or upside down).
    assert sorted(s for _, s, _ in recorded) != kept
    good = np.array([p for (_, _, p), ok in zip(recorded, valid) if ok])
    for _, p in lost:
        jump = np.min(np.linalg.norm(good[:, :3] - p[:3], axis=1))
        turn = np.degrees(2 * np.arccos(np.clip(np.max(np.abs(good[:, 3:] @ p[3:])), 0, 1)))
        assert jump > 0.05 or turn > 20, (jump, turn)


def _edit_status(root: Path, edit: Any) -> None:
    seen = {'n': 0}

    def change(topic: str, msg: Any) -> Any:
        if topic == TRACKING:
            doc = json.loads(msg.data)
            edit(seen['n'], doc)
            msg.data = json.dumps(doc)
            seen['n'] += 1
        return msg
    rewrite_mcap(root / 'data/episode.mcap', change)


@pytest.mark.parametrize('what', ['position_valid', 'orientation_valid', 'stale'])
def test_each_flag_alone_makes_a_pose_invalid(umi_copy: Path, episode: Episode, what: str
                                              ) -> None:
    # status 10 is in a tracked stretch of every body
    def spoil(i: int, doc: dict[str, Any]) -> None:
        if i == 10:
            if what == 'stale':
                doc['stale'] = True
            else:
                doc['left_aim'][what] = False
            doc['right_aim']['position_tracked'] = False  # not a validity flag: no effect
    _edit_status(umi_copy, spoil)
    ep = open_episode(umi_copy)
    before = {c: tf_stamps(episode, CHILD[c]) for c in CHILD}
    after = {c: tf_stamps(ep, CHILD[c]) for c in CHILD}
    gone = {c: sorted(set(before[c]) - set(after[c])) for c in CHILD}
    st_ns = statuses(umi_copy)[10][0]
    assert len(gone['left']) == 1
    (log_ns,) = [n for n, s, _ in poses(umi_copy, 'left') if s == gone['left'][0]]
    assert abs(log_ns - st_ns) < 7e6
    # a stale status speaks for no body; one body's flag for that body only
    assert len(gone['right']) == len(gone['center']) == (1 if what == 'stale' else 0)
    assert all(set(after[c]) <= set(before[c]) for c in CHILD)


def test_joy_carries_triggers_joysticks_and_bitmask_buttons(episode: Episode,
                                                             umi_episode: Path) -> None:
    st = statuses(umi_episode)
    joy = list(stream(episode, '/tracking/input/joy').open())
    assert len(joy) == len(st)
    pressed_at_once = 0
    for (t, msg), (log_ns, doc) in zip(joy, st):
        inp = doc['input']
        assert t == log_ns == to_ns(msg.header.stamp)
        assert msg.header.frame_id == 'quest_origin'
        want = [inp['left_index_trigger'], inp['left_grip_trigger'],
                inp['right_index_trigger'], inp['right_grip_trigger'],
                *inp['left_joystick'], *inp['right_joystick']]
        assert list(msg.axes) == pytest.approx(want, abs=1e-6)
        assert len(msg.buttons) == 64
        assert sum(b << i for i, b in enumerate(msg.buttons[:32])) == inp['buttons']
        assert sum(b << i for i, b in enumerate(msg.buttons[32:])) == inp['touches']
        pressed_at_once = max(pressed_at_once, sum(msg.buttons[:32]))
        # Negative control: a bitmask read as a count of pressed buttons differs.
        if inp['buttons'] == 5:
            assert sum(msg.buttons[:32]) == 2 != inp['buttons']
    assert pressed_at_once == 2
    assert any(d['input']['buttons'] == 5 for _, d in st)
    assert len({tuple(m.axes) for _, m in joy}) > 50  # the inputs move


@pytest.mark.parametrize('body', ['head', 'left_grip', 'left_aim', 'right_grip', 'right_aim'])
def test_velocities_are_twists_where_the_status_says_they_are_valid(
        episode: Episode, umi_episode: Path, body: str) -> None:
    st = statuses(umi_episode)
    twists = list(stream(episode, f'/tracking/{body}/twist').open())
    want = [(n, d[body]) for n, d in st if d[body]['velocity_flags'] & 3 == 3]
    # the sample's losses clear the velocity flags: fewer twists than statuses
    assert 0 < len(want) < len(st)
    assert len(twists) == len(want)
    for (t, msg), (n, b) in zip(twists, want):
        assert t == n == to_ns(msg.header.stamp)
        assert msg.header.frame_id == 'quest_origin'
        lin, ang = msg.twist.linear, msg.twist.angular
        assert [lin.x, lin.y, lin.z] == b['linear_velocity']
        assert [ang.x, ang.y, ang.z] == b['angular_velocity']


def _grippers_as_ticks(root: Path) -> None:
    def ticks(topic: str, msg: Any) -> Any:
        if topic == GRIPPER.format('left'):
            msg.position = [float(round(v * 16384 / (2 * math.pi))) for v in msg.position]
        return msg
    rewrite_mcap(root / 'data/episode.mcap', ticks)


def test_gripper_radians_within_the_urdf_limits_and_ticks_fail(episode: Episode,
                                                                umi_copy: Path) -> None:
    (line,) = [r for r in episode.report if GRIPPER.format('left') in r]
    assert line.startswith('ok ') and 'within left_left_finger limits [0, 1.2]' in line
    assert 'would read: as 14-bit ticks (0..16383)' in line
    assert not any('gripper' in w for w in episode.warnings)
    # Negative control: the same angles stored as encoder ticks fail, named as ticks.
    _grippers_as_ticks(umi_copy)
    ep = open_episode(umi_copy)
    (bad,) = [r for r in ep.report if GRIPPER.format('left') in r]
    assert bad.startswith('FAIL') and 'raw encoder ticks' in bad
    (right,) = [r for r in ep.report if GRIPPER.format('right') in r]
    assert right.startswith('ok ')
    assert any(GRIPPER.format('left') in w and 'ticks' in w for w in ep.warnings)


def test_info_prints_every_check_with_its_would_read_line(episode: Episode) -> None:
    checks = [r for r in episode.report if r[:4] in ('ok  ', 'FAIL')]
    assert all('\n       would read: ' in r for r in checks)
    text = '\n'.join(episode.report)
    for topic in (*(POSE.format(c) for c in CHILD), *(GRIPPER.format(s) for s in
                                                       ('left', 'right')), '/tracking/input/joy'):
        assert topic in text, topic
    assert not any(r.startswith('FAIL') for r in episode.report)


def _drop_status(root: Path, which: Any) -> None:
    seen = {'n': -1}

    def drop(topic: str, msg: Any) -> Any:
        if topic == TRACKING:
            seen['n'] += 1
            return None if which(seen['n']) else msg
        return msg
    rewrite_mcap(root / 'data/episode.mcap', drop)


def test_a_pose_without_its_status_is_not_published(umi_copy: Path, episode: Episode) -> None:
    _drop_status(umi_copy, lambda i: i == 10)
    ep = open_episode(umi_copy)
    for cam, child in CHILD.items():
        gone = set(tf_stamps(episode, child)) - set(tf_stamps(ep, child))
        # the next status is a tracker frame (14 ms) away: too far to speak for this pose
        assert len(gone) == 1, cam
    assert any('no tracking status within 7 ms: 1' in r for r in ep.report)


def test_without_a_tracking_status_validity_is_not_known(umi_copy: Path,
                                                         episode: Episode) -> None:
    _drop_status(umi_copy, lambda i: True)
    ep = open_episode(umi_copy)
    topics = {s.topic: s.count for s in ep.streams}
    assert topics.get(TRACKING, 0) == 0 and '/tracking/input/joy' not in topics
    # every finite unit pose is published, the lost ones too: info says it cannot tell
    for cam, child in CHILD.items():
        assert tf_stamps(ep, child) == sorted(s for _, s, _ in poses(umi_copy, cam))
        assert len(tf_stamps(ep, child)) > len(tf_stamps(episode, child))
    assert any(r.startswith('--') and 'pose validity not known' in r for r in ep.report)
    assert ep.invalid_poses == {}
