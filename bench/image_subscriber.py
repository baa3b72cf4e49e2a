"""Bench helper: one rclpy subscriber process counting Images on the given topics.

Prints one JSON line {topic: count, ...} when it gets SIGINT/SIGTERM or after
`--idle` seconds without a message once the first one arrived (or once it got
SIGUSR1, for a run that may bring none). `--keep-all`
subscribes reliable KEEP_ALL (every message is kept until the callback takes
it); the default is the contract's reliable KEEP_LAST 10, and `--best-effort`
a sensor-style reader (best effort, KEEP_LAST 10), which the player never waits
for. `--type` names the message type (default sensor_msgs/msg/Image); `--work-ms`
is spent per message; `--each` prints the topic of every message as it is taken,
for a test that watches delivery as it happens.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from react_ros.ros.msgs import message_class
from react_ros.ros.qos import DEFAULT


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument('topics', nargs='+')
    ap.add_argument('--idle', type=float, default=3.0)
    ap.add_argument('--keep-all', action='store_true')
    ap.add_argument('--best-effort', action='store_true')
    ap.add_argument('--each', action='store_true')
    ap.add_argument('--type', default='sensor_msgs/msg/Image')
    ap.add_argument('--work-ms', type=float, default=0.0)
    args = ap.parse_args()
    rclpy.init(args=[])
    node = rclpy.create_node('bench_image_subscriber')
    counts = {t: 0 for t in args.topics}
    last = [0.0]

    def make_cb(topic: str):
        def cb(_msg: bytes) -> None:
            counts[topic] += 1
            last[0] = time.monotonic()
            if args.each:
                print(topic, flush=True)
            if args.work_ms:
                time.sleep(args.work_ms / 1000)  # a consumer's own work, not synchronisation
        return cb

    qos = QoSProfile(depth=DEFAULT.depth, history=DEFAULT.history, reliability=DEFAULT.reliability)
    if args.keep_all:
        qos.history = HistoryPolicy.KEEP_ALL
    if args.best_effort:
        qos.reliability = ReliabilityPolicy.BEST_EFFORT
    msg_class = message_class(args.type)

    for t in args.topics:
        # raw=True: take the CDR bytes as they arrive. Deserialising a 7 MB image
        # into Python costs this process more than the player spends publishing
        # it, and on 2 cores that CPU would be taken from the player under test.
        node.create_subscription(msg_class, t, make_cb(t), qos, raw=True)
    stop = [False]

    def on_signal(*_a: object) -> None:
        stop[0] = True

    def drain(*_a: object) -> None:  # SIGUSR1: stop once --idle s pass without a message
        if not last[0]:
            last[0] = time.monotonic()

    signal.signal(signal.SIGUSR1, drain)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    print('ready', flush=True)
    try:
        while not stop[0]:
            rclpy.spin_once(node, timeout_sec=0.1)
            if last[0] and time.monotonic() - last[0] > args.idle:
                break
    except ExternalShutdownException:
        pass
    print(json.dumps(counts), flush=True)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
