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


def live_writer(latched: bool, heavy: bool) -> QoSProfile:
    """The live player's writer: the contract's profile, with a deeper history for light topics.

    Depth is not part of QoS matching, so readers see the same offer. A reliable
    KEEP_LAST writer overwrites samples not yet acknowledged once its history is
    full, and a player catching up after a stall of a few tens of milliseconds
    sends more than 10 small messages of one topic within one acknowledgement
    round trip (measured: bursts of 11 on the UMI /joint_states). Heavy topics
    keep 10: their history is memory (about 7 MB per 1920x1200 image).
    """
    if latched or heavy:
        return for_stream(latched)
    return QoSProfile(depth=100, history=DEFAULT.history, reliability=DEFAULT.reliability,
                      durability=DEFAULT.durability)
