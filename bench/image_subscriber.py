"""Bench helper: one rclpy subscriber process counting Images on the given topics.

Prints one JSON line {topic: count, ...} when it gets SIGINT/SIGTERM or after
`--idle` seconds without a message once the first one arrived.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time

import rclpy
from rclpy.executors import ExternalShutdownException
from sensor_msgs.msg import Image

from react_ros.ros.qos import DEFAULT


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument('topics', nargs='+')
    ap.add_argument('--idle', type=float, default=3.0)
    args = ap.parse_args()
    rclpy.init(args=[])
    node = rclpy.create_node('bench_image_subscriber')
    counts = {t: 0 for t in args.topics}
    last = [0.0]

    def make_cb(topic: str):
        def cb(_msg: bytes) -> None:
            counts[topic] += 1
            last[0] = time.monotonic()
        return cb

    for t in args.topics:
        # raw=True: take the CDR bytes as they arrive. Deserialising a 7 MB image
        # into Python costs this process more than the player spends publishing
        # it, and on 2 cores that CPU would be taken from the player under test.
        node.create_subscription(Image, t, make_cb(t), DEFAULT, raw=True)
    stop = [False]

    def on_signal(*_a: object) -> None:
        stop[0] = True

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
