"""The QoS profiles of the contract, live and as recorded in bags."""
from __future__ import annotations

from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy,
                       qos_profile_sensor_data)

# /tf_static and /robot_description: late joiners get the last (merged) message.
LATCHED = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                     reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
DEFAULT = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST,
                     reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.VOLATILE)
# What rosbag2's player (rclcpp::ClockQoS) and rclpy's TimeSource use for /clock:
# only the newest time matters, so a late or lost tick is never re-sent.
CLOCK = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                   reliability=ReliabilityPolicy.BEST_EFFORT,
                   durability=DurabilityPolicy.VOLATILE)
# tf2_ros's TransformBroadcaster (DynamicBroadcasterQoS): reliable, depth 100.
TF = QoSProfile(depth=100, history=HistoryPolicy.KEEP_LAST,
                reliability=ReliabilityPolicy.RELIABLE,
                durability=DurabilityPolicy.VOLATILE)
# robot_state_publisher subscribes /joint_states with SensorDataQoS.
JOINT_STATES_IN = qos_profile_sensor_data


def for_stream(latched: bool) -> QoSProfile:
    return LATCHED if latched else DEFAULT
