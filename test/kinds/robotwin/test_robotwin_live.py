"""RoboTwin over real DDS with `react-ros play`: every frame arrives, stamped index / --fps on
the documented base, the head image in true colours, the entities on /tf and /tf_static.

Expectations come from the HDF5 files (h5py, PyAV), not from the adapter.
"""
from __future__ import annotations

import io
from pathlib import Path

import h5py
import numpy as np
import pytest
from PIL import Image
from robotwin_support import EP0, EPISODE, robotwin_release

from live_support import receive_a_play, spawn
from react_ros.ros.msgs import to_ns

pytestmark = pytest.mark.timeout(180)
TOPICS = {'/head_camera/image_raw': 'sensor_msgs/msg/Image',
          '/tf': 'tf2_msgs/msg/TFMessage',
          '/pointcloud': 'sensor_msgs/msg/PointCloud2',
          '/joint_states': 'sensor_msgs/msg/JointState',
          '/left_endpose': 'geometry_msgs/msg/PoseStamped'}


def test_play_delivers_every_frame_in_true_colours(tmp_path: Path,
                                                   tmp_path_factory: pytest.TempPathFactory
                                                   ) -> None:
    root = robotwin_release(tmp_path_factory)
    play = ['-m', 'react_ros.cli', 'play', str(root), '--episode', EPISODE, '--fps', '20',
            '--start-paused', '--quiet', '--no-state-publisher']
    received = receive_a_play('robotwin_listener', TOPICS, tmp_path / 'player.log',
                              lambda log: spawn(play, log))

    with h5py.File(root / EP0) as f:
        t = f['observation/head_camera/rgb'].shape[0]
        first_jpeg = bytes(f['observation/head_camera/rgb'][0]).rstrip(b'\0')
    want = (1_000_000_000 + np.arange(t) * 50_000_000).tolist()  # 1 s + i / 20 Hz
    for topic in TOPICS:
        msgs = received[topic]
        stamps = [to_ns(m.header.stamp) if hasattr(m, 'header') else
                  to_ns(m.transforms[0].header.stamp) for m in msgs]
        assert stamps == want, topic
    with Image.open(io.BytesIO(first_jpeg)) as im:  # libjpeg's decode, as react_ros's
        stored = np.asarray(im.convert('RGB'))  # R and B swapped, as RoboTwin wrote them
    image = received['/head_camera/image_raw'][0]
    got = np.frombuffer(bytes(image.data), np.uint8).reshape(image.height, image.width, 3)
    assert np.array_equal(got, stored[..., ::-1])
    children = {tr.child_frame_id for tr in received['/tf'][0].transforms}
    assert {'head_camera_optical_frame', 'left_camera_optical_frame', '001_bottle_2',
            '001_bottle_3', '020_hammer'} <= children
    (static,) = received['/tf_static']
    assert [tr.child_frame_id for tr in static.transforms] == ['table']
