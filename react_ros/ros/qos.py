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


# What one heavy topic's writer history may hold, in bytes (at least 10 messages).
HEAVY_HISTORY_BYTES = 32 * 2**20


def live_writer(latched: bool, heavy: bool, message_bytes: int = 0) -> QoSProfile:
    """The live player's writer: the contract's profile, with a deeper history.

    Depth is not part of QoS matching, so readers see the same offer. A reliable
    KEEP_LAST writer overwrites samples not yet acknowledged once its history is
    full, and a player catching up after a stall of a few tens of milliseconds
    sends more than 10 small messages of one topic within one acknowledgement
    round trip (measured: bursts of 11 on the UMI /joint_states). Heavy topics
    keep what HEAVY_HISTORY_BYTES holds of `message_bytes` (never fewer than
    10): with 10, a subscriber on a busy machine lost 2-6 of 120 320x200
    images per camera, overwritten before it acknowledged them; a 1920x1200
    image (6.9 MB) still gets 10.
    """
    if latched:
        return for_stream(latched)
    depth = 100
    if heavy:
        depth = max(10, min(1000, HEAVY_HISTORY_BYTES // max(1, message_bytes or 2**20)))
    return QoSProfile(depth=depth, history=DEFAULT.history, reliability=DEFAULT.reliability,
                      durability=DEFAULT.durability)
