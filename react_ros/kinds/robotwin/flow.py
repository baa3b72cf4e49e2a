"""Dense scene flow, 2D flow, visibility and point tracks of RoboTwin ground truth (numpy only).

The format document's `dense_flow` (补充 GT: 计算任意像素的 3D flow 和 2D 轨迹): back-project
every pixel of frame t with its depth and that frame's camera, move it by its entity's
pose_{t+k} · pose_t⁻¹ (the entity is `actor_id` at the pixel), project it into frame t+k
with that frame's camera. Visible = inside the image, in front of frame t+k's depth
(within a tolerance, 1 cm by default) and still on the same entity.

Pixel convention: `intrinsic_cv` is SAPIEN's K, under which pixel (u, v) is the ray through
(u + 0.5, v + 0.5) (PITFALLS row 30), so rays are cast and landing pixels found in that
convention (landing pixel = floor of the projection). Positions handed out (`u2`, `v2`, the
2D flow) are in ROS's convention, pixel centres at integers, the one the published
CameraInfo (cx, cy − 0.5) uses: u2 = projection − 0.5. A flow of (0, 0) is a pixel that
stays on its own pixel.

Poses are stored x y z qw qx qy qz (the document's order; scipy wants x y z w).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

PIXEL_CENTRE = 0.5  # SAPIEN: pixel u is rendered through u + 0.5
DEFAULT_TOLERANCE_M = 0.01


@dataclass(frozen=True)
class Camera:
    """One frame of a camera: SAPIEN intrinsics and extrinsic_cv (world -> camera, OpenCV)."""

    k: np.ndarray  # (3, 3)
    extrinsic: np.ndarray  # (3, 4)


@dataclass(frozen=True)
class Motion:
    """Per entity id, the rigid motion between two frames: p2 = rot[id] @ p1 + shift[id]."""

    rot: np.ndarray  # (L, 3, 3), L = largest id + 1
    shift: np.ndarray  # (L, 3)
    known: np.ndarray  # (L,) bool: an entity with finite poses at both frames


def pose_matrices(poses_wxyz: np.ndarray) -> np.ndarray:
    """(N, 7) x y z qw qx qy qz -> (N, 4, 4) entity -> world; NaN rows stay NaN."""
    p = np.asarray(poses_wxyz, dtype=np.float64)
    out = np.full((len(p), 4, 4), np.nan)
    ok = np.all(np.isfinite(p), axis=1) & (np.linalg.norm(p[:, 3:7], axis=1) > 0)
    out[:, 3] = [0.0, 0.0, 0.0, 1.0]
    if ok.any():
        xyzw = np.concatenate([p[ok, 4:7], p[ok, 3:4]], axis=1)
        out[ok, :3, :3] = Rotation.from_quat(xyzw).as_matrix()
        out[ok, :3, 3] = p[ok, :3]
    return out


def motion(entity_ids: np.ndarray, pose_t: np.ndarray, pose_t2: np.ndarray) -> Motion:
    """pose_{t2} · pose_t⁻¹ of every entity, indexed by entity id (poses x y z qw qx qy qz)."""
    ids = np.asarray(entity_ids, dtype=np.int64)
    a, b = pose_matrices(pose_t), pose_matrices(pose_t2)
    rel = b @ np.linalg.inv(np.where(np.isfinite(a), a, np.eye(4)))
    size = int(ids.max(initial=0)) + 1
    rot = np.tile(np.eye(3), (size, 1, 1))
    shift = np.zeros((size, 3))
    known = np.zeros(size, bool)
    ok = np.all(np.isfinite(a), axis=(1, 2)) & np.all(np.isfinite(b), axis=(1, 2))
    rot[ids[ok]] = rel[ok, :3, :3]
    shift[ids[ok]] = rel[ok, :3, 3]
    known[ids[ok]] = True
    return Motion(rot, shift, known)


def back_project(u: np.ndarray, v: np.ndarray, depth_m: np.ndarray, cam: Camera) -> np.ndarray:
    """World points (..., 3) of pixels (u, v) (integer indices) at camera z `depth_m`."""
    k = cam.k
    x = (u + PIXEL_CENTRE - k[0, 2]) / k[0, 0] * depth_m
    y = (v + PIXEL_CENTRE - k[1, 2]) / k[1, 1] * depth_m
    in_cam = np.stack([x, y, depth_m], axis=-1)
    r, t = cam.extrinsic[:, :3], cam.extrinsic[:, 3]
    return (in_cam - t) @ r  # R^T (c - t), row-wise


def project(points: np.ndarray, cam: Camera) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """World points -> (u, v) in SAPIEN's framebuffer coordinates and camera z."""
    r, t = cam.extrinsic[:, :3], cam.extrinsic[:, 3]
    c = points @ r.T + t
    z = c[..., 2]
    with np.errstate(divide='ignore', invalid='ignore'):
        u = cam.k[0, 0] * c[..., 0] / z + cam.k[0, 2]
        v = cam.k[1, 1] * c[..., 1] / z + cam.k[1, 2]
    return u, v, z


@dataclass
class Flow:
    """Of pixels (u, v) of frame t, where they are at frame t2 (arrays of the pixels' shape)."""

    p1: np.ndarray  # (..., 3) world point at t (NaN: no depth or no entity with a pose)
    p2: np.ndarray  # (..., 3) the same point moved to t2
    u2: np.ndarray  # position at t2, ROS pixel coordinates (centres at integers)
    v2: np.ndarray
    z2: np.ndarray  # camera z at t2 (m)
    landed_depth: np.ndarray  # frame t2's depth at the landing pixel (NaN: outside)
    entity_id: np.ndarray  # actor id at (u, v) in frame t
    inside: np.ndarray  # lands inside frame t2 in front of the camera
    visible: np.ndarray  # inside, not occluded, on the same entity


def track(u: np.ndarray, v: np.ndarray, depth1_m: np.ndarray, ids1: np.ndarray, cam1: Camera,
          depth2_m: np.ndarray, ids2: np.ndarray, cam2: Camera, move: Motion,
          tolerance_m: float = DEFAULT_TOLERANCE_M) -> Flow:
    """Pixels (u, v) (integer index arrays) of frame t, followed to frame t2.

    `depth*_m` and `ids*` are whole frames (H, W): depth in metres (0: nothing hit),
    actor ids. A pixel with no depth, or whose entity has no pose at either frame, has
    NaN positions and is not visible.
    """
    h, w = depth2_m.shape
    d1 = depth1_m[v, u].astype(np.float64)
    eid = ids1[v, u].astype(np.int64)
    in_table = eid < len(move.known)
    eid_c = np.where(in_table, eid, 0)
    ok = (d1 > 0) & np.isfinite(d1) & in_table & move.known[eid_c]
    p1 = back_project(u, v, np.where(ok, d1, np.nan), cam1)
    rot, shift = move.rot[eid_c], move.shift[eid_c]
    p2 = np.einsum('...ij,...j->...i', rot, p1) + shift
    fu, fv, z2 = project(p2, cam2)
    with np.errstate(invalid='ignore'):
        inside = ok & (z2 > 0) & (fu >= 0) & (fv >= 0) & (fu < w) & (fv < h)
    col = np.where(inside, np.floor(np.where(inside, fu, 0)), 0).astype(np.int64)
    row = np.where(inside, np.floor(np.where(inside, fv, 0)), 0).astype(np.int64)
    d2 = np.where(inside, depth2_m[row, col], np.nan)
    with np.errstate(invalid='ignore'):
        seen = inside & (d2 > 0) & (np.abs(d2 - z2) <= tolerance_m)
    visible = seen & (ids2[row, col].astype(np.int64) == eid)
    return Flow(p1, p2, fu - PIXEL_CENTRE, fv - PIXEL_CENTRE, z2, d2, eid, inside, visible)


def dense(depth1_m: np.ndarray, ids1: np.ndarray, cam1: Camera, depth2_m: np.ndarray,
          ids2: np.ndarray, cam2: Camera, move: Motion,
          tolerance_m: float = DEFAULT_TOLERANCE_M) -> Flow:
    """Every pixel of frame t followed to frame t2 (arrays (H, W, ...))."""
    h, w = depth1_m.shape
    v, u = np.mgrid[0:h, 0:w]
    return track(u, v, depth1_m, ids1, cam1, depth2_m, ids2, cam2, move, tolerance_m)


def flow_images(f: Flow) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(H, W, 3) scene flow in metres (world frame, NaN where not visible), (H, W, 2) 2D flow
    in pixels (du, dv; NaN where the point cannot be followed), (H, W) uint8 mask 0/255."""
    h, w = f.visible.shape
    v, u = np.mgrid[0:h, 0:w]
    scene = np.where(f.visible[..., None], f.p2 - f.p1, np.nan).astype(np.float32)
    flow2d = np.stack([f.u2 - u, f.v2 - v], axis=-1).astype(np.float32)
    flow2d[~np.isfinite(f.z2) | ~(f.z2 > 0)] = np.nan
    return scene, flow2d, (f.visible.astype(np.uint8) * 255)


def grid_seeds(n: int, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """About n pixels (u, v) on a regular grid of the image, as close to square cells as fits."""
    cols = max(1, int(round(np.sqrt(n * width / height))))
    rows = max(1, int(np.ceil(n / cols)))
    us = np.floor((np.arange(cols) + 0.5) * width / cols).astype(np.int64)
    vs = np.floor((np.arange(rows) + 0.5) * height / rows).astype(np.int64)
    uu, vv = np.meshgrid(us, vs)
    return uu.ravel()[:n], vv.ravel()[:n]


__all__ = ['Camera', 'DEFAULT_TOLERANCE_M', 'Flow', 'Motion', 'PIXEL_CENTRE', 'back_project',
           'dense', 'flow_images', 'grid_seeds', 'motion', 'pose_matrices', 'project', 'track']
