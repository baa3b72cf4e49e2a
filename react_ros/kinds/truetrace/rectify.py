"""Stereo rectification of the fisheye pair for CameraInfo's R and P. ROS-free.

stereo_image_proc and image_geometry rectify with a CameraInfo's R and P alone (for
`equidistant`: cv::fisheye::initUndistortRectifyMap(K, D, R, P)), never with /tf_static,
so the refined extrinsics have to reach them through R and P.

The rotations are Bouguet's split, as cv::fisheye::stereoRectify computes them: each
camera turns half the relative rotation, then both turn together until the baseline
lies along x. The test compares them with OpenCV's to 1e-9 (OpenCV is a test-only
dependency: the product does not need it for a dozen lines of algebra).

The rectified intrinsics are ours, not OpenCV's. cv::fisheye::stereoRectify fits the
undistorted midpoints of the image edges into the image; on a lens that sees ~180 deg
across, the horizontal ones undistort to tens of focal lengths away and drag the
principal point off the image (cx' = -397 px on the sample's 1920x1080 calibration,
the left hand outside the rectified view). Instead: one focal length, the mean of the
four raw ones, so the view's centre keeps its resolution; the principal point the mean
of the two raw ones (both cameras the same: zero disparity at infinity). The rectified
image is the central part of the fisheye view a pinhole can hold, at the raw size.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from react_ros.kinds.truetrace.files import CameraCalibration
from react_ros.kinds.truetrace.geometry import Pose


@dataclass(frozen=True)
class Rectification:
    r0: np.ndarray  # 3x3: cam0 coordinates -> rectified cam0 (CameraInfo R)
    r1: np.ndarray
    p0: np.ndarray  # 3x4 CameraInfo P
    p1: np.ndarray  # P[0, 3] = -f' * baseline: cam1 is the right camera

    @property
    def baseline_m(self) -> float:
        return float(-self.p1[0, 3] / self.p1[0, 0])


def rectification(cam0: CameraCalibration, cam1: CameraCalibration,
                  cam1_in_cam0: Pose) -> Rectification:
    # OpenCV's stereo convention: X1 = R X0 + T.
    r = cam1_in_cam0.r.T
    t = -r @ cam1_in_cam0.t
    half = Rotation.from_matrix(r).inv().as_rotvec() * 0.5
    r_half = Rotation.from_rotvec(half).as_matrix()  # turns cam1 half-way back to cam0
    tt = r_half @ t
    axis = np.cross(tt, [1.0 if tt[0] > 0 else -1.0, 0.0, 0.0])
    norm = np.linalg.norm(axis)
    # The common turn that lays the half-turned baseline along x.
    angle = np.arccos(min(1.0, abs(tt[0]) / np.linalg.norm(tt)))
    w = Rotation.from_rotvec(axis * (angle / norm) if norm > 0 else np.zeros(3)).as_matrix()
    r0, r1 = w @ r_half.T, w @ r_half
    t_rect = r1 @ t  # (-baseline, 0, 0) for a right-hand cam1
    f = float(np.mean([cam0.k[0, 0], cam0.k[1, 1], cam1.k[0, 0], cam1.k[1, 1]]))
    cx = float(np.mean([cam0.k[0, 2], cam1.k[0, 2]]))
    cy = float(np.mean([cam0.k[1, 2], cam1.k[1, 2]]))
    p0 = np.array([[f, 0.0, cx, 0.0], [0.0, f, cy, 0.0], [0.0, 0.0, 1.0, 0.0]])
    p1 = p0.copy()
    p1[0, 3] = f * t_rect[0]
    return Rectification(r0, r1, p0, p1)


__all__ = ['Rectification', 'rectification']
