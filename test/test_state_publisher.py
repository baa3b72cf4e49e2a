"""URDF kinematics and the drop-in robot_state_publisher, live over real DDS."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from react_ros.errors import DatasetFormatError
from react_ros.formats.urdf import parse_urdf
from react_ros.ros.robot_state import RobotModel, robot_state_streams
from react_ros.streams import Role, Stream

pytestmark = pytest.mark.timeout(180)  # the live tests: a lost DDS match fails, not hangs

URDF = """<?xml version="1.0" encoding="utf-8"?>
<robot name="t">
  <link name="world"/><link name="origin"/><link name="hmd"/><link name="base"/>
  <link name="finger_a"/><link name="finger_b"/><link name="slide"/>
  <joint name="world_to_origin" type="fixed"><parent link="world"/><child link="origin"/></joint>
  <joint name="hmd" type="floating"><parent link="origin"/><child link="hmd"/></joint>
  <joint name="base_joint" type="fixed"><parent link="hmd"/><child link="base"/>
    <origin xyz="0.1 0.2 0.3" rpy="0.3 -0.2 1.1"/></joint>
  <joint name="a" type="revolute"><parent link="base"/><child link="finger_a"/>
    <origin xyz="0 0.05 0" rpy="0 0.5 0"/><axis xyz="0 0 2"/>
    <limit lower="0" upper="1" effort="1" velocity="1"/></joint>
  <joint name="b" type="revolute"><parent link="base"/><child link="finger_b"/>
    <origin xyz="0 -0.05 0"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="0" effort="1" velocity="1"/>
    <mimic joint="a" multiplier="-2" offset="0.1"/></joint>
  <joint name="s" type="prismatic"><parent link="base"/><child link="slide"/>
    <origin xyz="1 0 0" rpy="0 0 1.5707963267948966"/><axis xyz="1 0 0"/>
    <limit lower="0" upper="1" effort="1" velocity="1"/></joint>
</robot>
"""


def _quat(ts) -> np.ndarray:
    q = ts.transform.rotation
    return np.array([q.x, q.y, q.z, q.w])


def _xyz(ts) -> np.ndarray:
    t = ts.transform.translation
    return np.array([t.x, t.y, t.z])


def _same_rotation(q: np.ndarray, r: Rotation) -> bool:
    return bool(abs(abs(np.dot(q, r.as_quat())) - 1.0) < 1e-9)


@pytest.fixture
def model() -> RobotModel:
    return RobotModel.from_urdf(URDF, Path('t.urdf'))


def test_parse_fields() -> None:
    robot = parse_urdf(URDF, Path('t.urdf'))
    assert robot.root == 'world'
    b = robot.joints['b']
    assert (b.type, b.parent, b.child) == ('revolute', 'base', 'finger_b')
    assert b.mimic is not None and (b.mimic.joint, b.mimic.multiplier, b.mimic.offset) == \
        ('a', -2.0, 0.1)
    assert b.limits is not None and (b.limits.lower, b.limits.upper) == (-1.0, 0.0)
    assert robot.joints['a'].axis == (0.0, 0.0, 1.0)  # normalised like urdfdom


def test_fixed_joints_use_fixed_axis_rpy(model: RobotModel) -> None:
    static = {ts.child_frame_id: ts for ts in model.static_transforms(5)}
    assert set(static) == {'origin', 'base'}  # the floating joint is left to the data
    base = static['base']
    assert (base.header.frame_id, base.header.stamp.nanosec) == ('hmd', 5)
    np.testing.assert_allclose(_xyz(base), [0.1, 0.2, 0.3])
    # URDF: roll about X, pitch about Y, yaw about Z, all fixed axes: R = Rz Ry Rx.
    r, p, y = 0.3, -0.2, 1.1
    expected = (Rotation.from_rotvec([0, 0, y]) * Rotation.from_rotvec([0, p, 0])
                * Rotation.from_rotvec([r, 0, 0]))
    assert _same_rotation(_quat(base), expected)


def test_movable_joints_and_mimic(model: RobotModel) -> None:
    out = {ts.child_frame_id: ts for ts in model.joint_transforms(['a', 's', 'hmd'],
                                                                  [0.4, 0.25, 9.0], 7)}
    assert set(out) == {'finger_a', 'finger_b', 'slide'}  # b mimics a; hmd is floating
    a = out['finger_a']
    assert a.header.frame_id == 'base' and a.header.stamp.nanosec == 7
    assert _same_rotation(_quat(a), Rotation.from_euler('xyz', [0, 0.5, 0])
                          * Rotation.from_rotvec([0, 0, 0.4]))
    np.testing.assert_allclose(_xyz(a), [0, 0.05, 0])
    assert _same_rotation(_quat(out['finger_b']), Rotation.from_rotvec([0, -2 * 0.4 + 0.1, 0]))
    # prismatic: along the axis expressed in the joint frame (rotated 90 deg about z)
    np.testing.assert_allclose(_xyz(out['slide']), [1.0, 0.25, 0.0], atol=1e-12)


def test_mimic_only_when_mimicked_joint_present(model: RobotModel) -> None:
    out = model.joint_transforms(['s'], [0.1], 1)
    assert [ts.child_frame_id for ts in out] == ['slide']
    assert model.joint_transforms(['unknown'], [0.1], 1) == []


def test_robot_state_streams() -> None:
    from sensor_msgs.msg import JointState

    from react_ros.ros.msgs import stamp

    def states():
        for i, q in enumerate([0.1, 0.2]):
            msg = JointState(name=['a'], position=[q])
            msg.header.stamp = stamp(1_000 + i)
            yield 1_000 + i, msg

    js = Stream('/joint_states', 'sensor_msgs/msg/JointState', states)
    desc, static, tf = robot_state_streams(URDF, js, 500, Path('t.urdf'))
    assert [s.topic for s in (desc, static, tf)] == ['/robot_description', '/tf_static', '/tf']
    assert all(s.role is Role.ROBOT_STATE for s in (desc, static, tf))
    assert desc.latched and static.latched and not tf.latched
    assert [(t, m.data) for t, m in desc.open()] == [(500, URDF)]
    statics = list(static.open())
    assert len(statics) == 1 and len(statics[0][1].transforms) == 2
    dyn = list(tf.open())
    assert [t for t, _ in dyn] == [1_000, 1_001]
    assert [ts.child_frame_id for ts in dyn[0][1].transforms] == ['finger_a', 'finger_b']


def test_a_block_of_joint_states_gives_what_each_gives_alone(model: RobotModel) -> None:
    """transforms_of (one Rotation call per joint for many JointStates, as the /tf stream
    computes them) gives each state's transforms bit for bit, in the same order."""
    from react_ros.ros.serialization import cdr_payload
    rnd = np.random.default_rng(3)
    names = [['a', 's'], ['s'], ['a'], ['unknown'], ['s', 'a', 'hmd'], []]
    states = [(names[i % len(names)], rnd.uniform(-2, 2, len(names[i % len(names)])).tolist(),
               i) for i in range(50)]
    alone = [[bytes(cdr_payload(ts)) for ts in model.joint_transforms(*s)] for s in states]
    together = [[bytes(cdr_payload(ts)) for ts in out] for out in model.transforms_of(states)]
    assert together == alone
    assert [len(a) for a in alone[:6]] == [3, 1, 2, 0, 3, 0]  # b mimics a


def test_the_tf_stream_spans_blocks_of_joint_states(monkeypatch: pytest.MonkeyPatch) -> None:
    from sensor_msgs.msg import JointState

    from react_ros.ros import robot_state
    from react_ros.ros.msgs import stamp, to_ns
    monkeypatch.setattr(robot_state, 'BLOCK', 4)
    positions = [0.1 * i for i in range(11)]

    def states():
        for i, q in enumerate(positions):
            msg = JointState(name=['s'] if i % 3 else ['nothing'], position=[q])
            msg.header.stamp = stamp(2_000 + i)
            yield 2_000 + i, msg

    js = Stream('/joint_states', 'sensor_msgs/msg/JointState', states)
    tf = robot_state_streams(URDF, js, 500, Path('t.urdf'))[2]
    got = [(t, to_ns(m.transforms[0].header.stamp), _xyz(m.transforms[0])[1])
           for t, m in tf.open()]
    expected = [(2_000 + i, 2_000 + i, positions[i]) for i in range(11) if i % 3]
    assert [g[:2] for g in got] == [e[:2] for e in expected]
    np.testing.assert_allclose([g[2] for g in got], [e[2] for e in expected], atol=1e-12)


@pytest.mark.parametrize('text, match', [
    ('<robot name="x"><link name="a"/>', 'does not parse'),
    ('<robot name="x"><link name="a"/><joint name="j" type="fixed"><parent link="a"/>'
     '<child link="nope"/></joint></robot>', "unknown link 'nope'"),
    ('<robot name="x"><link name="a"/><link name="b"/></robot>', 'more than one root'),
    ('<robot name="x"><link name="a"/><link name="b"/>'
     '<joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint>'
     '<joint name="k" type="fixed"><parent link="b"/><child link="a"/></joint></robot>',
     'no root'),
    ('<robot name="x"><link name="a"/><link name="b"/><joint name="j" type="hinge">'
     '<parent link="a"/><child link="b"/></joint></robot>', "unknown type 'hinge'"),
    ('<robot name="x"><link name="a"/><link name="b"/><joint name="j" type="fixed">'
     '<parent link="a"/><child link="b"/><origin xyz="1 2"/></joint></robot>', 'not 3'),
    ('<robot name="x"><link name="a"/><link name="b"/><joint name="j" type="continuous">'
     '<parent link="a"/><child link="b"/><mimic joint="z"/></joint></robot>',
     "mimics unknown joint 'z'"),
])
def test_bad_urdf(text: str, match: str) -> None:
    with pytest.raises(DatasetFormatError, match=match) as info:
        parse_urdf(text, Path('bad.urdf'))
    assert str(info.value).startswith('bad.urdf: URDF does not parse')


# --- the node, live ---------------------------------------------------------------

def test_node_publishes_tf_and_latched_topics(tmp_path: Path) -> None:
    from sensor_msgs.msg import JointState

    from live_support import Listener
    from react_ros.ros import qos
    from react_ros.ros.msgs import stamp, to_ns
    from react_ros.ros.state_publisher import start_state_publisher

    rsp = start_state_publisher(URDF, use_sim_time=False)
    listener = Listener()
    try:
        listener.subscribe('/tf', 'tf2_msgs/msg/TFMessage', qos.TF)
        pub = listener.node.create_publisher(JointState, '/joint_states', 10)
        sent = []

        def send() -> bool:
            # stamps 1 s apart: the node throttles each joint to 20 Hz by header stamp
            msg = JointState(name=['a', 'hmd'], position=[0.4, 1.0])
            msg.header.stamp = stamp(10**9 * (len(sent) + 1))
            sent.append(to_ns(msg.header.stamp))
            pub.publish(msg)
            listener.spin_for(0.1)
            return bool(listener.msgs['/tf'])

        assert listener.spin_until(send, 30), 'no /tf from the state publisher'
        tf = listener.msgs['/tf'][0]
        frames = {ts.child_frame_id: ts for ts in tf.transforms}
        assert set(frames) == {'finger_a', 'finger_b'}
        assert to_ns(frames['finger_b'].header.stamp) in sent
        assert _same_rotation(_quat(frames['finger_b']), Rotation.from_rotvec([0, -0.7, 0]))

        # late joiners still get the latched topics
        listener.subscribe('/tf_static', 'tf2_msgs/msg/TFMessage', qos.LATCHED)
        listener.subscribe('/robot_description', 'std_msgs/msg/String', qos.LATCHED)
        assert listener.spin_until(lambda: listener.msgs['/tf_static']
                                   and listener.msgs['/robot_description'], 20)
        assert listener.msgs['/robot_description'][0].data == URDF
        (static,) = listener.msgs['/tf_static']
        assert {ts.child_frame_id for ts in static.transforms} == {'origin', 'base'}
    finally:
        listener.close()
        assert rsp.stop() == 0


def test_node_bad_urdf_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / 'bad.urdf'
    bad.write_text('<robot name="x"><link name="a"/><link name="b"/></robot>')
    for args in (['--urdf', str(bad)], ['--urdf', str(tmp_path / 'missing.urdf')]):
        proc = subprocess.run([sys.executable, '-m', 'react_ros.ros.state_publisher', *args],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and args[1] in lines[0], proc.stderr


def test_node_recovers_when_clock_jumps_back() -> None:
    """A looping player sends /clock back: the node must publish the earlier stamps again."""
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState

    from live_support import Listener
    from react_ros.ros import qos
    from react_ros.ros.msgs import stamp, to_ns
    from react_ros.ros.state_publisher import start_state_publisher

    rsp = start_state_publisher(URDF, use_sim_time=True)
    listener = Listener()
    try:
        listener.subscribe('/tf', 'tf2_msgs/msg/TFMessage', qos.TF)
        clock = listener.node.create_publisher(Clock, '/clock', qos.CLOCK)
        joints = listener.node.create_publisher(JointState, '/joint_states', 10)

        def play(t_s: int) -> bool:
            """Clock then joint state at t_s until a /tf with that stamp comes back."""
            t_ns = t_s * 10**9

            def send() -> bool:
                clock.publish(Clock(clock=stamp(t_ns)))
                listener.spin_for(0.05)
                msg = JointState(name=['a'], position=[0.1])
                msg.header.stamp = stamp(t_ns)
                joints.publish(msg)
                listener.spin_for(0.15)
                return any(to_ns(m.transforms[0].header.stamp) == t_ns
                           for m in listener.msgs['/tf'])
            return listener.spin_until(send, 15)

        assert play(100)
        assert play(200)
        assert play(50), 'no /tf after /clock went back: throttle state not reset'
    finally:
        listener.close()
        assert rsp.stop() == 0


def test_node_hears_each_joint_state_once_from_either_kind_of_publisher() -> None:
    """A reliable publisher (the player) matches both of the node's /joint_states
    subscriptions and must be heard once, through the reliable one; a best-effort
    publisher matches only the sensor-data one. ignore_timestamp turns the per-stamp
    throttle off, so a JointState handled twice would show as a second /tf."""
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import JointState

    from live_support import Listener
    from react_ros.ros import qos
    from react_ros.ros.msgs import stamp, to_ns
    from react_ros.ros.state_publisher import StatePublisherProcess

    rsp = StatePublisherProcess(URDF, ['-p', 'ignore_timestamp:=true'])
    listener = Listener()
    try:
        assert rsp.wait_ready(120), 'the state publisher did not start'
        listener.subscribe('/tf', 'tf2_msgs/msg/TFMessage', qos.TF)
        reliable = listener.node.create_publisher(JointState, '/joint_states', qos.DEFAULT)
        best_effort = listener.node.create_publisher(JointState, '/joint_states',
                                                     qos_profile_sensor_data)
        assert listener.spin_until(lambda: reliable.get_subscription_count() == 2
                                   and best_effort.get_subscription_count() == 1, 60)
        sent = {'reliable': [], 'best effort': []}
        for i in range(20):
            for name, pub, base in (('reliable', reliable, 10**9),
                                    ('best effort', best_effort, 10**10)):
                msg = JointState(name=['a'], position=[0.01 * i])
                msg.header.stamp = stamp(base + i * 10**6)
                sent[name].append(base + i * 10**6)
                pub.publish(msg)
            listener.spin_for(0.02)

        def stamps() -> list[int]:
            return [to_ns(m.transforms[0].header.stamp) for m in listener.msgs['/tf']]
        assert listener.spin_until(lambda: set(sent['reliable']) <= set(stamps()), 30)
        listener.spin_for(1.0)  # a second copy, if any, would come meanwhile
        got = stamps()
        assert sorted(t for t in got if t in sent['reliable']) == sent['reliable']
        from_best_effort = [t for t in got if t in sent['best effort']]
        assert from_best_effort and len(from_best_effort) == len(set(from_best_effort))
    finally:
        listener.close()
        assert rsp.stop() == 0
