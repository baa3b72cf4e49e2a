"""Depth, CameraInfo and /tf of a converted RoboTwin sample rebuild the release's point cloud.

Only what a ROS perception node sees is used: the bag's depth Image (its encoding fixes
the unit), its CameraInfo, /tf and /tf_static, read back with mcap + mcap_ros2. The
depth is back-projected by depth_image_proc's rule (point = depth · K⁻¹ [u v 1]ᵀ, pixel
centres at integer coordinates), moved to world along the TF chain at the depth's
stamp, and the published /pointcloud of that stamp must lie on it. The negative controls
read the depth in the other unit, invert the camera pose, or use the stored intrinsics
unshifted (SAPIEN's pixel centres at u + 0.5): each must miss the bound.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from robotwin_support import EPISODE, robotwin_release
from scipy.spatial import cKDTree
from tf_support import world_from

from react_ros.ros.msgs import to_ns

BOUND_MM = 1.0
WORLD = 'world'
# encoding -> (dtype, metres per stored unit): REP 118 and depth_image_proc
UNITS = {'16UC1': (np.uint16, 1e-3), '32FC1': (np.float32, 1.0)}
Msgs = dict[str, dict[int, Any]]


@pytest.fixture(scope='module')
def bag(tmp_path_factory: pytest.TempPathFactory) -> Msgs:
    """Every message of the converted sample by topic and header stamp."""
    out = tmp_path_factory.mktemp('rt_depth') / 'bag'
    subprocess.run([sys.executable, '-m', 'react_ros.cli', 'convert',
                    str(robotwin_release(tmp_path_factory)), '--episode', EPISODE,
                    '-o', str(out), '--quiet'], check=True, timeout=120)
    (mcap_file,) = out.glob('*.mcap')
    msgs: Msgs = {}
    with open(mcap_file, 'rb') as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _, channel, _, msg in reader.iter_decoded_messages(
                topics=['/head_camera/depth/image_raw', '/head_camera/depth/camera_info',
                        '/pointcloud', '/tf', '/tf_static']):
            header = msg.transforms[0].header if channel.topic.startswith('/tf') \
                else msg.header
            msgs.setdefault(channel.topic, {})[to_ns(header.stamp)] = msg
    return msgs


def world_pose(frame: str, t_ns: int, bag: Msgs) -> np.ndarray:
    """world_T_frame: the TF chain from `frame` up to world, /tf at exactly t_ns."""
    pose = world_from(frame, t_ns, bag['/tf_static'].values(), [bag['/tf'][t_ns]], WORLD)
    assert pose is not None, f'{frame} is not connected to {WORLD} at {t_ns}'
    return pose


def depth_metres(img: Any, wrong_unit: bool = False) -> np.ndarray:
    dtype, scale = UNITS[img.encoding]
    if wrong_unit:  # the other encoding's unit: metres read as millimetres, or mm as m
        scale = 1e-3 if scale == 1.0 else 1.0
    dt = np.dtype(dtype).newbyteorder('>' if img.is_bigendian else '<')
    rows = np.frombuffer(bytes(img.data), np.uint8).reshape(img.height, img.step)
    d = rows[:, :img.width * dt.itemsize].copy().view(dt).astype(np.float64)
    return d * scale


def back_project(depth_m: np.ndarray, k: np.ndarray) -> np.ndarray:
    """(N, 3) optical-frame points of the valid pixels: depth · K⁻¹ [u v 1]ᵀ, u at integers."""
    v, u = np.nonzero(np.isfinite(depth_m) & (depth_m > 0))
    rays = np.linalg.solve(k, np.stack([u, v, np.ones_like(u)]).astype(np.float64))
    return (rays * depth_m[v, u]).T


def cloud_points(msg: Any) -> np.ndarray:
    offs = {f.name: f.offset for f in msg.fields}
    rec = np.frombuffer(bytes(msg.data), np.uint8).reshape(-1, msg.point_step)
    return np.stack([rec[:, offs[a]:offs[a] + 4].copy().view('<f4')[:, 0]
                     for a in 'xyz'], axis=1).astype(np.float64)


def frame_errors_mm(bag: Msgs, wrong_unit: bool = False, inverted: bool = False,
                    stored_centres: bool = False) -> list[float]:
    """Per frame: median distance (mm) of the published cloud to the back-projected depth."""
    out = []
    for t, img in sorted(bag['/head_camera/depth/image_raw'].items()):
        info = bag['/head_camera/depth/camera_info'][t]
        assert info.header.frame_id == img.header.frame_id
        assert (info.width, info.height) == (img.width, img.height)
        k = np.array(info.k, dtype=np.float64).reshape(3, 3)
        if stored_centres:  # the release's intrinsic_cv as it is stored: centres at u + 0.5
            k[0, 2] += 0.5
            k[1, 2] += 0.5
        pose = world_pose(img.header.frame_id, t, bag)
        if inverted:
            pose = np.linalg.inv(pose)
        cam = back_project(depth_metres(img, wrong_unit), k)
        world = cam @ pose[:3, :3].T + pose[:3, 3]
        cloud = bag['/pointcloud'][t]
        assert cloud.header.frame_id == WORLD
        pts = cloud_points(cloud)
        assert len(cam) > 1000 and len(pts) > 500  # a real frame, not a vacuous median
        dist, _ = cKDTree(world).query(pts)
        out.append(float(np.median(dist)) * 1000.0)
    return out


def test_every_depth_frame_has_its_info_tf_and_cloud_at_its_stamp(bag: Msgs) -> None:
    stamps = sorted(bag['/head_camera/depth/image_raw'])
    assert len(stamps) == 20
    for topic in ('/head_camera/depth/camera_info', '/pointcloud', '/tf'):
        assert sorted(bag[topic]) == stamps, topic
    assert {m.encoding for m in bag['/head_camera/depth/image_raw'].values()} <= set(UNITS)


def test_published_cloud_lies_on_the_back_projected_depth(bag: Msgs) -> None:
    errors = frame_errors_mm(bag)
    assert max(errors) < BOUND_MM, errors


@pytest.mark.parametrize('wrong', ['wrong_unit', 'inverted', 'stored_centres'])
def test_each_wrong_reading_misses_the_cloud(bag: Msgs, wrong: str) -> None:
    errors = frame_errors_mm(bag, **{wrong: True})
    assert np.median(errors) > BOUND_MM, errors
