"""foxglove_msgs as built here (interfaces/foxglove_msgs) is Foxglove's: same fields, same type hash."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from builtin_interfaces.msg import Time
from rclpy.serialization import deserialize_message, serialize_message

from react_ros.ros.msgs import definition_text

ROOT = Path(__file__).resolve().parents[1]
# Computed by rosidl here and, independently, by rosbags 0.11.9 (ternaris' pure-Python
# REP 2011 implementation) from the same .msg; the hash covers field names and types only,
# so a .msg with its comments stripped hashes the same.
COMPRESSED_VIDEO_HASH = 'RIHS01_32039eafc3770e589c86c4dabff9c392ce9955ebffd43f5f60763011d43d8d1d'


def test_compressed_video_round_trips() -> None:
    from foxglove_msgs.msg import CompressedVideo
    msg = CompressedVideo(timestamp=Time(sec=3, nanosec=5), frame_id='cam0',
                          data=b'\x00\x00\x00\x01\x67\x42', format='h264')
    back = deserialize_message(serialize_message(msg), CompressedVideo)
    assert back == msg
    assert bytes(back.data) == b'\x00\x00\x00\x01\x67\x42'


def test_definition_text_is_upstreams() -> None:
    upstream = (ROOT / 'interfaces' / 'foxglove_msgs' / 'msg' / 'CompressedVideo.msg').read_text()
    text = definition_text('foxglove_msgs/msg/CompressedVideo')
    assert text.startswith(upstream.rstrip('\n'))
    assert '\nMSG: builtin_interfaces/Time\n' in text


def test_type_hash_is_foxgloves() -> None:
    share = Path(sys.prefix) / 'share' / 'foxglove_msgs' / 'msg' / 'CompressedVideo.json'
    hashes = json.loads(share.read_text())['type_hashes']
    assert hashes[0] == {'type_name': 'foxglove_msgs/msg/CompressedVideo',
                         'hash_string': COMPRESSED_VIDEO_HASH}
