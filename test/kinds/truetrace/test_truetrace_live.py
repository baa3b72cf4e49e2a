"""TrueTrace over real DDS: `react-ros play` on the HDF5 export (with --verify) delivers every
IMU row, both cameras on cam0's clock and the latched extrinsics; expectations from the files.
The CameraInfo a subscriber gets is the bag's, rectification included."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import h5py
import pytest
from live_support import receive_a_play, spawn
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from truetrace_support import EP, EXPORT, truetrace_package

from react_ros import cli
from react_ros.ros.msgs import to_ns

pytestmark = pytest.mark.timeout(180)
BASE_NS = 1_000_000_000


def test_play_delivers_imu_and_stereo_on_the_cam0_clock(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    root = truetrace_package(tmp_path_factory)
    topics = {'/imu/data': 'sensor_msgs/msg/Imu',
              '/cam0/camera_info': 'sensor_msgs/msg/CameraInfo',
              '/cam1/camera_info': 'sensor_msgs/msg/CameraInfo',
              '/hands/right/keypoints': 'geometry_msgs/msg/PoseArray'}
    play = ['-m', 'react_ros.cli', 'play', str(root / EXPORT), '--verify', '--start-paused',
            '--quiet', '--rate', '2']
    received = receive_a_play('truetrace_listener', topics, tmp_path / 'player.log',
                              lambda log: spawn(play, log))

    with open(root / EP / 'imu.csv') as f:
        rows = list(csv.DictReader(f))
    offset = json.loads((root / EP / 'calibration.json').read_text())['imu'][
        'time_offset_to_cam0_s']
    imu = received['/imu/data']
    assert [to_ns(m.header.stamp) for m in imu] == \
        [BASE_NS + round((float(r['t_s']) + offset) * 1e9) for r in rows]
    # Frames at cam0.mp4's presentation times (t_s is written rounded): 1/30 s apart.
    with h5py.File(root / EXPORT) as f:
        n = len(f['time/t_s'])
        frames = [BASE_NS + i * 1_000_000_000 // 30 for i in range(n)]
        right = [t for t, p in zip(frames, f['hands/present'][()]) if p[1]]
    bag = tmp_path / 'bag'
    assert cli.main(['convert', str(root / EXPORT), '-o', str(bag), '-q']) == 0
    with open(next(bag.glob('*.mcap')), 'rb') as f:
        converted = [(c.topic, m) for _, c, _, m in make_reader(
            f, decoder_factories=[DecoderFactory()]).iter_decoded_messages(log_time_order=True)
            if c.topic.endswith('/camera_info')]
    for cam in ('cam0', 'cam1'):
        got = received[f'/{cam}/camera_info']
        assert [to_ns(m.header.stamp) for m in got] == frames
        assert {m.distortion_model for m in got} == {'equidistant'}
        # The rectification stereo_image_proc reads (R, P) is the bag's, message by message.
        in_bag = [m for topic, m in converted if topic == f'/{cam}/camera_info']
        assert [_fields(m) for m in got] == [_fields(m) for m in in_bag]
    assert got[0].p[3] < 0 and list(got[0].r) != [1, 0, 0, 0, 1, 0, 0, 0, 1]  # cam1: rectified
    assert [to_ns(m.header.stamp) for m in received['/hands/right/keypoints']] == right
    (static,) = received['/tf_static']
    assert {(t.header.frame_id, t.child_frame_id) for t in static.transforms} == {
        ('cam0_optical_frame', 'cam1_optical_frame'), ('cam0_optical_frame', 'imu0')}


def _fields(info: object) -> tuple:
    return tuple(v if isinstance(v, (int, str)) else [float(x) for x in v]
                 for v in (info.width, info.height, info.distortion_model, info.d, info.k,
                           info.r, info.p, info.header.frame_id))
