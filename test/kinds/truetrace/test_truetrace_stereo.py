"""TrueTrace stereo rectified from the bag's CameraInfo alone, as stereo_image_proc does.

stereo_image_proc and image_geometry never read /tf_static: for `equidistant` they map
each image with cv::fisheye::initUndistortRectifyMap(K, D, R, P) and take depth as
f * B / disparity, B = -P_right[0, 3] / f. This converts the sample the user's way
(`react-ros sample`, `react-ros convert`), reads the bag back with mcap, rectifies both
cameras' frames with OpenCV and measures the dots the sample draws at every kept
keypoint (sample.py: a disc centred on the keypoint's equidistant projection, cam1's
through the refined extrinsics X1 = R X0 + T). Truth comes from the delivery's files:
hands_3d.jsonl's keypoints_3d_cam0_m and calibration.json.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from truetrace_support import EP, edit_json, truetrace_package

from react_ros import cli
from react_ros.registry import open_episode

CAMS = ('cam0', 'cam1')
ISOLATED_PX = 6.0  # a dot measured only where no other dot is this close (raw image)
WINDOW = 3  # half-size of the window a dot's centroid is taken in (rectified image)
ROW_PX = 0.5
DEPTH = 0.01


@dataclass(frozen=True)
class Camera:
    k: np.ndarray
    d: np.ndarray
    r: np.ndarray
    p: np.ndarray
    size: tuple[int, int]


def _camera(info: Any) -> Camera:
    return Camera(np.array(info.k).reshape(3, 3), np.array(info.d), np.array(info.r).reshape(3, 3),
                  np.array(info.p).reshape(3, 4), (info.width, info.height))


def _unrectified(cam: Camera) -> Camera:
    """What the CameraInfo carried before issue 37: R = I, P = [K | 0]."""
    return Camera(cam.k, cam.d, np.eye(3), np.hstack([cam.k, np.zeros((3, 1))]), cam.size)


@pytest.fixture(scope='module')
def converted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp('tt_stereo')
    root, bag = tmp / 'sample', tmp / 'bag'
    assert cli.main(['sample', 'truetrace', str(root)]) == 0  # the sample as users get it
    assert cli.main(['convert', str(root), '-o', str(bag), '-q']) == 0
    msgs: dict[str, list[Any]] = {}
    (mcap,) = sorted(bag.glob('*.mcap'))
    with open(mcap, 'rb') as f:
        for _, channel, _, decoded in make_reader(f, decoder_factories=[DecoderFactory()]) \
                .iter_decoded_messages(log_time_order=True):
            if channel.topic.startswith(('/cam0/', '/cam1/')):
                msgs.setdefault(channel.topic, []).append(decoded)
    hands = [json.loads(s) for s in (root / EP / 'hands_3d.jsonl').read_text().splitlines()]
    return {'root': root, 'msgs': msgs, 'hands': hands,
            'calib': json.loads((root / EP / 'calibration.json').read_text())}


def _one_camera_info(msgs: dict[str, list[Any]], cam: str) -> Camera:
    infos = msgs[f'/{cam}/camera_info']
    first = _camera(infos[0])
    for info in infos[1:]:  # one calibration for the episode
        c = _camera(info)
        assert all(np.array_equal(getattr(c, f), getattr(first, f)) for f in 'kdrp')
    return first


def _opencv(converted: dict[str, Any]) -> tuple[np.ndarray, ...]:
    """cv::fisheye::stereoRectify on calibration.json (refined R, T; CALIB_ZERO_DISPARITY,
    balance 0 as ROS's camera_calibration calls it): R1, R2, P1, and T."""
    cal = converted['calib']
    ref = cal['refined_stereo_extrinsics']
    cams = [cal['cameras'][c] for c in CAMS]
    r1, r2, p1, _, _ = cv2.fisheye.stereoRectify(
        *(a for c in cams for a in (np.array(c['K']).reshape(3, 3), np.array(c['D']))),
        (cams[0]['width'], cams[0]['height']), np.array(ref['R']), np.array(ref['T']),
        cv2.CALIB_ZERO_DISPARITY)
    return r1, r2, p1, np.array(ref['T'])


def _grey(img: Any) -> np.ndarray:
    assert img.encoding == 'rgb8'
    rgb = np.frombuffer(img.data, dtype=np.uint8).reshape(img.height, img.width, 3)
    return rgb.astype(np.float32) @ np.array([0.299, 0.587, 0.114], dtype=np.float32)


def _centroid(grey: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Brightness centroid of the dot nearest pixel `at`, above the window's border level."""
    x, y = (int(round(v)) for v in at)
    win = grey[y - WINDOW:y + WINDOW + 1, x - WINDOW:x + WINDOW + 1].astype(np.float64)
    ring = np.concatenate([win[0], win[-1], win[1:-1, 0], win[1:-1, -1]])
    w = np.clip(win - np.median(ring), 0.0, None)
    yy, xx = np.mgrid[-WINDOW:WINDOW + 1, -WINDOW:WINDOW + 1]
    return np.array([x + (w * xx).sum() / w.sum(), y + (w * yy).sum() / w.sum()])


def _measure(converted: dict[str, Any], cams: dict[str, Camera]) -> tuple[np.ndarray, ...]:
    """(row of the dot in rectified cam0 - in rectified cam1, disparity u0 - u1, true
    depth) for every dot isolated in both cameras, all frames."""
    msgs, hands, cal = converted['msgs'], converted['hands'], converted['calib']
    ref = cal['refined_stereo_extrinsics']
    r, t = np.array(ref['R']), np.array(ref['T'])
    r_true = _opencv(converted)[0]
    maps = {c: cv2.fisheye.initUndistortRectifyMap(m.k, m.d, m.r, m.p, m.size, cv2.CV_32FC1)
            for c, m in cams.items()}
    rows, disparity, depth = [], [], []
    for i, line in enumerate(hands):
        x0 = np.array([p for h in line['hands'] for p in h['keypoints_3d_cam0_m']], float)
        if not len(x0):
            continue
        seen = []
        for c, x in (('cam0', x0), ('cam1', x0 @ r.T + t)):
            m = cams[c]
            raw, _ = cv2.fisheye.projectPoints(x.reshape(-1, 1, 3), np.zeros(3), np.zeros(3),
                                               m.k, m.d)
            raw = raw.reshape(-1, 2)
            apart = np.linalg.norm(raw[:, None] - raw[None], axis=2)
            np.fill_diagonal(apart, np.inf)
            # Where each dot lands in the rectified image: only to find it, not to measure.
            at = cv2.fisheye.undistortPoints(raw.reshape(-1, 1, 2), m.k, m.d, R=m.r,
                                             P=m.p).reshape(-1, 2)
            w, h = m.size
            ok = (apart.min(axis=1) >= ISOLATED_PX) & np.all(
                (at >= WINDOW + 1) & (at < np.array([w, h]) - WINDOW - 1), axis=1)
            rect = cv2.remap(_grey(msgs[f'/{c}/image_raw'][i]), *maps[c], cv2.INTER_LINEAR)
            seen.append([_centroid(rect, a) if good else None for a, good in zip(at, ok)])
        z = (x0 @ r_true.T)[:, 2]  # depth in the rectified cam0 frame
        for j, (a, b) in enumerate(zip(*seen)):
            if a is not None and b is not None:
                rows.append(a[1] - b[1])
                disparity.append(a[0] - b[0])
                depth.append(z[j])
    return np.array(rows), np.array(disparity), np.array(depth)


def test_the_bags_camera_info_alone_rectifies_the_pair(converted: dict[str, Any]) -> None:
    """Every dot on the same row within 0.5 px and at f * B / disparity within 1 % of its
    true depth; R = I, P = [K | 0] (before issue 37) leaves the rows ~0.9 px apart and no
    baseline to take depth from."""
    cams = {c: _one_camera_info(converted['msgs'], c) for c in CAMS}
    rows, disparity, z = _measure(converted, cams)
    assert len(rows) >= 300  # ~445 dots of 90 frames are isolated enough to measure
    f, baseline = cams['cam1'].p[0, 0], -cams['cam1'].p[0, 3] / cams['cam1'].p[0, 0]
    assert np.abs(rows).max() <= ROW_PX, np.abs(rows).max()  # 0.16 px seen
    err = np.abs(f * baseline / disparity / z - 1)
    assert err.max() <= DEPTH, err.max()  # 0.8 % seen; median 0.16 %

    # Negative control: the CameraInfo as it was, R = I and P = [K | 0].
    before = {c: _unrectified(m) for c, m in cams.items()}
    rows, disparity, _ = _measure(converted, before)
    assert np.median(np.abs(rows)) > ROW_PX  # 0.88 px
    assert before['cam1'].p[0, 3] == 0.0  # no baseline: depth f * 0 / d = 0 everywhere


def test_rectification_is_opencvs_rotation_split_with_cam1_the_right_camera(
        converted: dict[str, Any]) -> None:
    """R: cv::fisheye::stereoRectify's rotations from the refined extrinsics; P: one f' and
    principal point for both, cam1's Tx = -f' B (image_geometry: the right camera), cam0
    the left one with Tx 0; K and D stay the raw calibration."""
    cams = {c: _one_camera_info(converted['msgs'], c) for c in CAMS}
    r1, r2, cv_p1, t = _opencv(converted)
    np.testing.assert_allclose(cams['cam0'].r, r1, atol=1e-9)
    np.testing.assert_allclose(cams['cam1'].r, r2, atol=1e-9)
    p0, p1 = cams['cam0'].p, cams['cam1'].p
    np.testing.assert_array_equal(p0[:, :3], p1[:, :3])
    assert p0[0, 0] == p0[1, 1] and p0[0, 3] == 0.0
    assert p1[0, 3] < 0.0  # cam1 right of cam0 (format document: cam0 is the left camera)
    assert -p1[0, 3] / p1[0, 0] == pytest.approx(np.linalg.norm(t), abs=1e-12)
    for c in CAMS:
        raw = converted['calib']['cameras'][c]
        assert list(cams[c].k.reshape(-1)) == raw['K'] and list(cams[c].d) == raw['D']
    # The intrinsics are ours (rectify.py): the principal point stays inside the image,
    # where OpenCV's choice for this ~180 deg lens puts it (cx' = -66 px at 320x180).
    w, h = cams['cam0'].size
    assert 0 < p0[0, 2] < w and 0 < p0[1, 2] < h
    assert cv_p1[0, 2] < 0


def test_without_refined_values_the_factory_pose_rectifies(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    root = Path(shutil.copytree(truetrace_package(tmp_path_factory), tmp_path / 'pkg'))
    edit_json(root / EP / 'calibration.json', lambda d: d.pop('refined_stereo_extrinsics'))
    (root / 'qc' / 'refined_extrinsics.json').unlink()
    ep = open_episode(root, 'truetrace')
    info = {s.topic: next(iter(s.open()))[1] for s in ep.streams
            if s.topic.endswith('/camera_info')}
    p1 = np.array(info['/cam1/camera_info'].p).reshape(3, 4)
    fac = json.loads((root / EP / 'calibration.json').read_text())['extrinsics']['cam0->cam1']
    assert -p1[0, 3] / p1[0, 0] == pytest.approx(np.linalg.norm(fac['t']), abs=1e-12)
    assert any(line.startswith('rectification: CameraInfo R, P from the factory')
               for line in ep.report)
