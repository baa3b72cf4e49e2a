"""The player's Fast DDS profiles (react_ros/ros/dds.py use_player_profiles): a 32 MiB
shared-memory segment its images go through, and the user's own choices kept."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from react_ros.ros import dds

# The player's side, in a process of its own (Fast DDS reads the profiles at its first
# participant): five 1920x1200 images to a reliable subscriber in another process, then
# the size of each Fast DDS segment this process maps and how much of it was touched.
PLAYER = textwrap.dedent('''
    import json, os, subprocess, sys, time
    from react_ros.sinks.tuning import tune_for_playback
    tune_for_playback()
    import numpy as np, rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Image
    from react_ros.ros.image import rgb_image
    rclpy.init()
    node = rclpy.create_node('profile_probe')
    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    pub = node.create_publisher(Image, '/profile_probe', qos)
    env = {k: v for k, v in os.environ.items() if 'PROFILES_FILE' not in k}
    sub = subprocess.Popen([sys.executable, '-c', sys.argv[1]], stdout=subprocess.PIPE,
                           text=True, env=env)
    deadline = time.monotonic() + 60
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    image = rgb_image(np.random.default_rng(1).integers(0, 255, (1200, 1920, 3), np.uint8),
                      0, 'cam')
    for _ in range(5):
        pub.publish(image)
    received = sub.communicate(timeout=60)[0].strip()
    touched, path = {}, None
    with open('/proc/self/smaps') as smaps:
        for line in smaps:
            parts = line.split()
            if '-' in parts[0] and len(parts) >= 6:
                path = parts[5] if parts[5].startswith('/dev/shm/fastdds_') and \\
                    'port' not in parts[5] else None
            elif path and parts[0] == 'Rss:':
                touched[path] = touched.get(path, 0) + int(parts[1]) * 1024
    sizes = {p: os.path.getsize(p) for p in touched if os.path.exists(p)}  # (some unlinked)
    print(json.dumps({'profiles': os.environ.get('FASTDDS_DEFAULT_PROFILES_FILE'),
                      'received': received,
                      'segments': [[sizes[p], n] for p, n in touched.items() if p in sizes]}))
    rclpy.shutdown()
''')
SUBSCRIBER = textwrap.dedent('''
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Image
    rclpy.init()
    node = rclpy.create_node('profile_probe_subscriber')
    got = []
    node.create_subscription(Image, '/profile_probe', lambda m: got.append(len(m.data)),
                             QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
    while len(got) < 5:
        rclpy.spin_once(node, timeout_sec=0.5)
    print(sorted(set(got)))
''')
IMAGE_BYTES = 1920 * 1200 * 3


def _player(tmp_path: Path, **env: str) -> dict:
    script = tmp_path / 'player.py'
    script.write_text(PLAYER)
    clean = {k: v for k, v in os.environ.items()
             if 'PROFILES_FILE' not in k and k != 'FASTDDS_BUILTIN_TRANSPORTS'}
    out = subprocess.run([sys.executable, str(script), SUBSCRIBER], env={**clean, **env},
                         stdout=subprocess.PIPE, text=True, timeout=180, check=True).stdout
    result: dict = json.loads(out.strip().splitlines()[-1])
    return result


def test_the_players_images_go_through_its_large_segment(tmp_path: Path) -> None:
    got = _player(tmp_path)
    assert got['profiles'] == str(dds.PLAYER_PROFILES)
    assert got['received'] == f'[{IMAGE_BYTES}]'
    large = [(size, touched) for size, touched in got['segments'] if size >= 32 << 20]
    assert len(large) == 1, got['segments']
    # the images' fragments went through it (a segment only maps what is used)
    assert large[0][1] >= IMAGE_BYTES, got['segments']


def test_where_the_user_chose_the_transports_only_the_heartbeat_is_set(
        tmp_path: Path) -> None:
    got = _player(tmp_path, FASTDDS_BUILTIN_TRANSPORTS='DEFAULT')
    assert got['profiles'] == str(dds.PLAYER_WRITER_PROFILES)
    assert got['received'] == f'[{IMAGE_BYTES}]'
    assert all(size < 32 << 20 for size, _ in got['segments']), got['segments']


@pytest.mark.parametrize('variable', ['FASTDDS_DEFAULT_PROFILES_FILE',
                                      'FASTRTPS_DEFAULT_PROFILES_FILE'])
def test_a_profiles_file_the_user_names_wins(variable: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    for v in ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE'):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv(variable, '/their/own.xml')
    assert dds.use_player_profiles() is None
    assert os.environ[variable] == '/their/own.xml'
    assert os.environ.get('FASTDDS_DEFAULT_PROFILES_FILE', '/their/own.xml') == '/their/own.xml'
