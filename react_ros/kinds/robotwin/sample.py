"""A synthetic RoboTwin 2.0 ground-truth release, faithful to its format document.

`OUT/agilex/<task>/gt_export/data/episode0.hdf5` with its `episode0_extra.hdf5`,
a shorter `episode1.hdf5` without one, `scene_info.json`, and
`OUT/reports/replay_success_check_failed.json` (which lists Franka episodes
only, as the release's does). The scene is ray-cast, so every modality comes
from one rendering: a textured table and moving spheres (two `001_bottle`
with one name, a hammer, a laptop lid link whose id needs the extended
palette, and the robot's two end links) seen by a head camera whose
intrinsics change a little every frame and which sways by centimetres, and by
two wrist cameras riding on the end poses. The shapes are ellipsoids turning
with their entity's pose (and their two meshes are the body's upper and lower
halves), so a point moved by the wrong motion or the other quaternion order
leaves the depth: the document's flow check (pose_{t+4} · pose_t⁻¹ lands on frame
t+4's depth) can fail on the sample. Each arm is a small serial chain driven by
joint_action: its links' poses are in _extra, and the end pose is the end
link's pose times RoboTwin's fixed rotation, so the data-driven checks of the
end poses and joint names have what the release has.

The document's pitfalls are reproduced: JPEG bytes with R and B swapped
(RoboTwin handed an RGB array to cv2.imencode), stored as NUL-padded
fixed-length byte strings; depth as float64 millimetres; a point cloud in
world coordinates with correct 0..1 colours, padded with zero rows;
segmentations as palette colours of a 256-colour palette; quaternions
x y z qw qx qy qz; numeric datasets gzip level 1 + shuffle; intrinsics in
SAPIEN's pixel convention (pixel u's centre at u + 0.5, not at u as in ROS).
"""
from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import h5py
import numpy as np
from scipy.spatial.transform import Rotation

from react_ros.errors import SinkError
from react_ros.kinds.robotwin.hdf5 import GL_TO_CV
from react_ros.samples.writing import write_sample
from react_ros.output import check_stop

TASK = 'beat_block_hammer'
RELEASE_TASKS = (TASK, 'place_shoe')  # the tasks a sample release of many spreads over
EMBODIMENT = 'agilex'
FPS = 10.0
MAX_FRAMES = 132
CLOUD_POINTS = 1024
ARM_JOINTS = {'agilex': 6, 'franka': 7}
# Semi-axes of an entity's ellipsoid in its own frame, per unit of its radius below.
AXES = np.array([1.3, 0.75, 1.0])
# (entity id, name, articulation, kind, is_robot, radius m, colour)
ENTITIES = [
    (1, 'table', '', 'static', False, 0.0, (150, 110, 60)),
    (2, '001_bottle', '', 'rigid', False, 0.07, (30, 80, 220)),
    (3, '001_bottle', '', 'rigid', False, 0.07, (40, 200, 90)),
    (5, '020_hammer', '', 'rigid', False, 0.08, (230, 40, 40)),
    (150, 'link_lid', '015_laptop', 'link', False, 0.08, (200, 200, 40)),
    (20, 'fl_link6', 'aloha', 'link', True, 0.05, (60, 60, 60)),
    (21, 'fr_link6', 'aloha', 'link', True, 0.05, (90, 90, 90)),
    (19, 'footprint', 'aloha', 'link', True, 0.0, (0, 0, 0)),  # the robot's base, not drawn
    # the arms' other links (not drawn): base link, then the link each arm joint turns
    *[(30 + 10 * side + k, f'{arm}_base_link' if k == 0 else f'{arm}_link{k}', 'aloha', 'link',
       True, 0.0, (0, 0, 0)) for side, arm in enumerate(('fl', 'fr')) for k in range(6)],
]
# A small serial arm per side: joint k turns link k about its parent link k-1 (the base
# link for k = 1) at a fixed origin, about a fixed axis; link 6 (7 on Franka) is the end
# link, fl_link6 / fr_link6 above. The link poses of _extra are this chain's, so which
# link a joint_action column moves can be read from them (`info`'s arm joints check).
ARM_BASES = [np.array([-0.05, -0.22, 0.16]), np.array([-0.05, 0.22, 0.16])]
ARM_CHAIN = [((0.0, 0.0, 0.03), 'z'), ((0.0, 0.0, 0.02), 'y'), ((0.05, 0.0, 0.0), 'y'),
             ((0.05, 0.0, 0.0), 'x'), ((0.02, 0.0, 0.0), 'y'), ((0.02, 0.0, 0.0), 'x'),
             ((0.01, 0.0, 0.0), 'z')]
# RoboTwin's end pose is the end link's world pose times a fixed rotation (the
# embodiment's global_trans_matrix: diag(1, -1, -1) for the Agilex arms) and a shift
# along the gripper (gripper_bias - 0.12 = 0 m for endpose/). The sample keeps that
# relation, so the end-pose check (endpose.py) has something to find.
LINK_TO_ENDPOSE = Rotation.from_matrix(np.diag([1.0, -1.0, -1.0]))
BASE_POSE = (np.array([0.0, -0.65, 0.0]), Rotation.from_euler('z', np.pi / 2))
GZIP = {'compression': 'gzip', 'compression_opts': 1, 'shuffle': True}


def palette() -> np.ndarray:
    """256 colours (upstream RoboTwin had 139; the release extended it to 256)."""
    rng = np.random.default_rng(139)
    colours = rng.integers(0, 256, size=(256, 3), dtype=np.uint8)
    colours[0] = 0
    return colours


def look_at(position: np.ndarray, target: np.ndarray) -> np.ndarray:
    """4x4 camera (optical: z forward, x right, y down) -> world."""
    z = (target - position) / np.linalg.norm(target - position)
    x = np.cross(z, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    m = np.eye(4)
    m[:3, :3] = np.stack([x, y, z], axis=1)
    m[:3, 3] = position
    return m


def _quat_wxyz(rot: Rotation) -> np.ndarray:
    x, y, z, w = rot.as_quat()
    return np.array([w, x, y, z])


class _Scene:
    def __init__(self, t: int, fps: float, seed: int, size: tuple[int, int],
                 arm_joints: int = 6) -> None:
        self.t, self.fps, self.arm_joints = t, fps, arm_joints
        self.sx, self.sy = size[0] / 320.0, size[1] / 240.0  # K is made for 320x240
        rng = np.random.default_rng(seed)
        self.phase = rng.uniform(0, 2 * np.pi, size=len(ENTITIES))
        self.palette = palette()

    def centre(self, j: int, i: int) -> np.ndarray:
        """World position of entity j (an ellipsoid's centre) at frame i."""
        s = i / self.fps
        ph = self.phase[j]
        eid = ENTITIES[j][0]
        if eid in (20, 21):
            return self.endpose(0 if eid == 20 else 1, i)[:3]
        r = ENTITIES[j][5]
        base = np.array([0.15 * np.cos(ph) + 0.02 * j, 0.12 * np.sin(ph) - 0.05, r])
        return base + np.array([0.08 * np.sin(2.5 * s + ph), 0.07 * np.cos(3.1 * s + ph), 0.0])

    def rotation(self, j: int, i: int) -> Rotation:
        return Rotation.from_euler('zyx', [0.4 * i / self.fps + self.phase[j], 0.1 * j, 0.0])

    def orientation(self, j: int, i: int) -> Rotation:
        """Entity j's orientation at frame i, the one _extra stores (end links: the chain's)."""
        eid = ENTITIES[j][0]
        if eid in (20, 21):
            return self.links(0 if eid == 20 else 1, i)[-1][1]
        return self.rotation(j, i)

    def arm(self, side: int, i: int) -> np.ndarray:
        """joint_action/<side>_arm at frame i (radians)."""
        s = i / self.fps
        return np.array([0.3 * np.sin(0.5 * s + j + 1.7 * side)
                         for j in range(self.arm_joints)])

    def links(self, side: int, i: int) -> list[tuple[np.ndarray, Rotation]]:
        """World (position, rotation) of the side's base link and of each link its joints turn."""
        p, r = ARM_BASES[side], Rotation.identity()
        out = [(p, r)]
        for q, (origin, axis) in zip(self.arm(side, i), ARM_CHAIN):
            p = p + r.apply(origin)
            r = r * Rotation.from_euler(axis, q)
            out.append((p, r))
        return out

    def endpose(self, side: int, i: int) -> np.ndarray:
        """The end link's pose times RoboTwin's fixed rotation, x y z qw qx qy qz."""
        p, r = self.links(side, i)[-1]
        return np.concatenate([p, _quat_wxyz(r * LINK_TO_ENDPOSE)])

    def head(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(K, camera -> world) of the head camera at frame i: both move a little."""
        s = i / self.fps
        # Sways by centimetres a frame (the release's files hold a pose per frame): a
        # flow projected with another frame's camera then misses the depth.
        ahead = np.array([0.6, 0.0, -0.62]) / np.hypot(0.6, 0.62)  # towards the table
        pos = np.array([-0.55, 0.10 * np.sin(0.9 * s), 0.62 + 0.02 * np.sin(1.1 * s)]) \
            + 0.10 * np.sin(1.7 * s) * ahead
        pose = look_at(pos, np.array([0.05, 0.0, 0.0]))
        f = 262.0 + 3.0 * np.sin(0.5 * s)
        return self._k(f, 160.0 + 1.5 * np.cos(0.3 * s), 120.0), pose

    def _k(self, f: float, cx: float, cy: float) -> np.ndarray:
        return np.array([[f * self.sx, 0.0, cx * self.sx], [0.0, f * self.sy, cy * self.sy],
                         [0.0, 0.0, 1.0]])

    def wrist(self, side: int, i: int) -> tuple[np.ndarray, np.ndarray]:
        ep = self.endpose(side, i)
        rot = Rotation.from_quat([ep[4], ep[5], ep[6], ep[3]])
        pose = np.eye(4)
        pose[:3, :3] = rot.as_matrix()
        pose[:3, 3] = ep[:3] + rot.apply([0.0, 0.0, -0.04])
        return self._k(230.0, 160.0, 120.0), pose

    def render(self, k: np.ndarray, pose: np.ndarray, i: int, size: tuple[int, int]
               ) -> dict[str, np.ndarray]:
        """rgb (true colours), depth (mm), actor and mesh ids by ray casting."""
        w, h = size
        # As SAPIEN renders: K maps a ray to Vulkan framebuffer coordinates (image edge at
        # 0), and pixel (u, v) is sampled at its centre (u + 0.5, v + 0.5). intrinsic_cv
        # is stored that way; the adapter shifts cx, cy for ROS (centres at integers).
        us, vs = np.meshgrid(np.arange(w) + 0.5, np.arange(h) + 0.5)
        dirs_cam = np.stack([(us - k[0, 2]) / k[0, 0], (vs - k[1, 2]) / k[1, 1],
                             np.ones_like(us)], axis=-1)
        dirs = dirs_cam @ pose[:3, :3].T
        origin = pose[:3, 3]
        to_cam = np.linalg.inv(pose)
        best = np.full((h, w), np.inf)  # ray parameter = camera z (dirs have z_cam = 1)
        actor = np.zeros((h, w), np.uint16)
        mesh = np.zeros((h, w), np.uint16)
        with np.errstate(divide='ignore', invalid='ignore'):
            tt = -origin[2] / dirs[..., 2]
        hit = (tt > 0) & np.isfinite(tt)
        best[hit] = tt[hit]
        actor[hit] = 1
        mesh[hit] = 1
        for j, (eid, _, _, _, _, radius, _) in enumerate(ENTITIES):
            if radius == 0.0:
                continue
            c = self.centre(j, i)
            body = self.orientation(j, i).as_matrix()
            axes = AXES * radius
            cc = to_cam[:3, :3] @ c + to_cam[:3, 3]
            reach = float(axes.max())
            if cc[2] <= reach:
                continue
            # Only the window around the ellipsoid's image is ray cast.
            pu, pv = k[0, 0] * cc[0] / cc[2] + k[0, 2], k[1, 1] * cc[1] / cc[2] + k[1, 2]
            rad = 1.6 * k[0, 0] * reach / (cc[2] - reach) + 2
            c0, c1 = int(max(0, pu - rad)), int(min(w, pu + rad + 1))
            r0, r1 = int(max(0, pv - rad)), int(min(h, pv + rad + 1))
            if c0 >= c1 or r0 >= r1:
                continue
            win = (slice(r0, r1), slice(c0, c1))
            # In the body frame scaled to a unit sphere: same ray parameter (camera z).
            d = (dirs[win] @ body) / axes
            oc = (body.T @ (origin - c)) / axes
            a = np.einsum('hwk,hwk->hw', d, d)
            b = 2 * (d @ oc)
            disc = b * b - 4 * a * (oc @ oc - 1.0)
            ok = disc > 0
            root = np.where(ok, (-b - np.sqrt(np.where(ok, disc, 0))) / (2 * a), np.inf)
            near = ok & (root > 0) & (root < best[win])
            best[win][near] = root[near]
            actor[win][near] = eid
            upper = (oc[2] + d[..., 2] * root) > 0  # the body's upper half: a mesh of its own
            mesh[win][near] = (2 * eid + upper[near]).astype(np.uint16)
        world = origin + dirs * np.where(np.isfinite(best), best, 0)[..., None]
        rgb = np.zeros((h, w, 3), np.float64)
        colours = {e[0]: np.array(e[6], float) for e in ENTITIES}
        for eid, col in colours.items():
            m = actor == eid
            if eid == 1:  # table: a checker texture, so colours vary across the image
                check = (np.floor(world[..., 0] / 0.05) + np.floor(world[..., 1] / 0.05)) % 2
                shade = np.where(check[m] > 0, 1.0, 0.6)[:, None]
                rgb[m] = col * shade
            else:
                rgb[m] = col * (0.75 + 0.25 * np.clip(dirs_cam[m][:, 1], -1, 1)[:, None])
        rgb[actor == 0] = (20, 30, 40)
        depth = np.where(np.isfinite(best), best, 0.0) * 1000.0
        return {'rgb': np.clip(rgb, 0, 255).astype(np.uint8), 'depth': depth,
                'actor': actor, 'mesh': mesh, 'world': world}


def encode_jpeg(rgb: np.ndarray, swap: bool = True) -> bytes:
    """JPEG bytes as RoboTwin wrote them: an RGB array given to cv2.imencode (which takes BGR).

    `swap=False` writes the true colours (a release without the defect, for tests).
    """
    arr = np.ascontiguousarray(rgb[..., ::-1] if swap else rgb)
    codec = av.CodecContext.create('mjpeg', 'w')
    codec.width, codec.height = arr.shape[1], arr.shape[0]
    codec.pix_fmt = 'yuvj420p'
    codec.time_base = Fraction(1, 10)
    codec.options = {'qmin': '1', 'qmax': '2'}
    frame = av.VideoFrame.from_ndarray(arr, format='rgb24').reformat(format='yuvj420p')
    packets = codec.encode(frame) + codec.encode(None)
    return bytes(packets[0])


def _jpeg_dataset(group: h5py.Group, name: str, jpegs: list[bytes]) -> None:
    """Fixed-length byte strings padded with NULs, as RoboTwin's images_encoding stores them."""
    width = max(len(j) for j in jpegs)
    group.create_dataset(name, data=np.array([j.ljust(width, b'\0') for j in jpegs],
                                             dtype=f'S{width}'))


def _cloud(view: dict[str, np.ndarray], i: int, rng: np.random.Generator) -> np.ndarray:
    """Workspace-cropped, down-sampled points with correct colours, zero-padded to 1024.

    RoboTwin crops to the workspace and down-samples by farthest point sampling;
    one point per 1 cm voxel, then a random subset, spreads the points as evenly
    at a fraction of the cost. The crop keeps what stands on the table (objects,
    robot links), so fewer than 1024 points remain on some frames.
    """
    world = view['world'].reshape(-1, 3)
    rgb = view['rgb'].reshape(-1, 3)
    ok = (view['actor'].reshape(-1) > 1) & (np.abs(world[:, 0]) < 0.4) & \
        (np.abs(world[:, 1]) < 0.4) & (world[:, 2] > 0.005)
    idx = np.flatnonzero(ok)
    _, first = np.unique(np.floor(world[idx] / 0.01).astype(np.int64), axis=0,
                         return_index=True)
    idx = idx[np.sort(first)]
    keep = min(len(idx), CLOUD_POINTS - (i * 13) % 150)
    sel = np.sort(rng.choice(idx, size=keep, replace=False))
    out = np.zeros((CLOUD_POINTS, 6), np.float32)
    out[:keep, :3] = world[sel]
    out[:keep, 3:] = rgb[sel] / 255.0
    return out


def _calibration(group: h5py.Group, ks: list[np.ndarray], poses: list[np.ndarray]) -> None:
    ext = np.stack([np.linalg.inv(p)[:3, :] for p in poses]).astype(np.float32)
    gl = np.stack([p @ GL_TO_CV for p in poses]).astype(np.float32)
    group.create_dataset('intrinsic_cv', data=np.stack(ks).astype(np.float32), **GZIP)
    group.create_dataset('extrinsic_cv', data=ext, **GZIP)
    group.create_dataset('cam2world_gl', data=gl, **GZIP)


def write_episode(data_dir: Path, number: int, t: int, seed: int, size: tuple[int, int],
                  extra: bool, embodiment: str = EMBODIMENT, fps: float = FPS,
                  swap: bool = True, depth_scale: float = 1.0) -> Path:
    """episode<number>.hdf5 (and its _extra.hdf5 when `extra`) of `t` frames.

    `swap=False` and `depth_scale` (1e-3: metres) write the defect-free or
    wrong-unit variants that the self-check tests need.
    """
    scene = _Scene(t, fps, seed, size, ARM_JOINTS[embodiment])
    rng = np.random.default_rng(seed + 1)
    pal = scene.palette
    w, h = size
    head_k, head_pose = [], []
    wrist: dict[str, dict[str, list[Any]]] = {c: {'k': [], 'pose': [], 'jpeg': []}
                                              for c in ('left_camera', 'right_camera')}
    path = data_dir / f'episode{number}.hdf5'
    with h5py.File(path, 'w') as f:
        cam = f.create_group('observation/head_camera')
        depth = cam.create_dataset('depth', shape=(t, h, w), dtype=np.float64,
                                   chunks=(1, h, w), **GZIP)
        aseg = cam.create_dataset('actor_segmentation', shape=(t, h, w, 3), dtype=np.uint8,
                                  chunks=(1, h, w, 3), **GZIP)
        mseg = cam.create_dataset('mesh_segmentation', shape=(t, h, w, 3), dtype=np.uint8,
                                  chunks=(1, h, w, 3), **GZIP)
        cloud = f.create_dataset('pointcloud', shape=(t, CLOUD_POINTS, 6), dtype=np.float32,
                                 chunks=(1, CLOUD_POINTS, 6), **GZIP)
        jpegs = []
        ids: dict[str, list[np.ndarray]] = {'actor': [], 'mesh': []}
        for i in range(t):
            check_stop()
            k, pose = scene.head(i)
            view = scene.render(k, pose, i, size)
            head_k.append(k)
            head_pose.append(pose)
            jpegs.append(encode_jpeg(view['rgb'], swap))
            depth[i] = view['depth'] * depth_scale
            aseg[i] = pal[view['actor'] % 256]
            mseg[i] = pal[view['mesh'] % 256]
            cloud[i] = _cloud(view, i, rng)
            if extra:
                ids['actor'].append(view['actor'])
                ids['mesh'].append(view['mesh'])
                for side, c in enumerate(wrist):
                    wk, wpose = scene.wrist(side, i)
                    wrist[c]['k'].append(wk)
                    wrist[c]['pose'].append(wpose)
                    wrist[c]['jpeg'].append(encode_jpeg(scene.render(wk, wpose, i, size)['rgb']))
        _jpeg_dataset(cam, 'rgb', jpegs)
        _calibration(cam, head_k, head_pose)
        n_arm = ARM_JOINTS[embodiment]
        steps = np.arange(t) / fps
        parts = []
        for side, s in enumerate(('left', 'right')):
            ep = np.stack([scene.endpose(side, i) for i in range(t)])
            grip = 0.5 + 0.5 * np.cos(0.8 * steps + side)
            f.create_dataset(f'endpose/{s}_endpose', data=ep, **GZIP)
            f.create_dataset(f'endpose/{s}_gripper', data=grip, **GZIP)
            arm = np.stack([scene.arm(side, i) for i in range(t)])
            assert arm.shape[1] == n_arm
            f.create_dataset(f'joint_action/{s}_arm', data=arm, **GZIP)
            f.create_dataset(f'joint_action/{s}_gripper', data=grip, **GZIP)
            parts += [arm, grip[:, None]]
        f.create_dataset('joint_action/vector', data=np.concatenate(parts, axis=1), **GZIP)
    if extra:
        _write_extra(data_dir / f'episode{number}_extra.hdf5', scene, t, ids, wrist)
    return path


def _write_extra(path: Path, scene: _Scene, t: int, ids: dict[str, list[np.ndarray]],
                 wrist: dict[str, dict[str, list[Any]]]) -> None:
    n = len(ENTITIES)
    pose = np.zeros((t, n, 7), np.float32)
    for i in range(t):
        for j, e in enumerate(ENTITIES):
            if e[0] == 19:
                pose[i, j, :3], pose[i, j, 3:] = BASE_POSE[0], _quat_wxyz(BASE_POSE[1])
            elif 30 <= e[0] < 50:  # an arm's base link or one of its first five links
                p, r = scene.links((e[0] - 30) // 10, i)[(e[0] - 30) % 10]
                pose[i, j, :3], pose[i, j, 3:] = p, _quat_wxyz(r)
            elif e[5] == 0.0:
                pose[i, j] = [0, 0, 0, 1, 0, 0, 0]
            elif e[0] in (20, 21):  # the end links
                p, r = scene.links(0 if e[0] == 20 else 1, i)[-1]
                pose[i, j, :3], pose[i, j, 3:] = p, _quat_wxyz(r)
            else:
                pose[i, j, :3] = scene.centre(j, i)
                pose[i, j, 3:] = _quat_wxyz(scene.rotation(j, i))
    text = h5py.string_dtype('utf-8')
    with h5py.File(path, 'w') as f:
        f.create_dataset('entities/entity_id', data=np.array([e[0] for e in ENTITIES], np.uint32))
        f.create_dataset('entities/name', data=[e[1] for e in ENTITIES], dtype=text)
        f.create_dataset('entities/articulation', data=[e[2] for e in ENTITIES], dtype=text)
        f.create_dataset('entities/kind', data=[e[3] for e in ENTITIES], dtype=text)
        f.create_dataset('entities/is_robot', data=np.array([e[4] for e in ENTITIES]))
        f.create_dataset('entities/pose', data=pose, **GZIP)
        cam = f.create_group('observation/head_camera')
        for key in ('actor', 'mesh'):
            cam.create_dataset(f'{key}_id', data=np.stack(ids[key]).astype(np.uint16),
                               chunks=(1, *ids[key][0].shape), **GZIP)
        for c, v in wrist.items():
            g = f.create_group(f'observation/{c}')
            _jpeg_dataset(g, 'rgb', v['jpeg'])
            _calibration(g, v['k'], v['pose'])
        seg = f.create_group('segmentation')
        mesh_ids = [m for e in ENTITIES for m in ((1,) if e[0] == 1 else (2 * e[0], 2 * e[0] + 1))]
        owner = [1 if m == 1 else m // 2 for m in mesh_ids]
        seg.create_dataset('mesh_id', data=np.array(mesh_ids, np.uint32))
        seg.create_dataset('mesh_entity_id', data=np.array(owner, np.uint32))
        seg.attrs['actor_table'] = json.dumps({str(e[0]): {
            'name': e[1], 'articulation': e[2], 'kind': e[3],
            'mesh_ids': [m for m, o in zip(mesh_ids, owner) if o == e[0]]} for e in ENTITIES})
        seg.attrs['targets'] = json.dumps({
            '{A}': {'status': 'unique', 'value': '020_hammer/base0', 'entity_id': 5},
            '{B}': {'status': 'mapped', 'value': '001_bottle/base1', 'task_attr': 'bottle2',
                    'entity_id': 3}})
        seg.attrs['scene_info'] = json.dumps({'{A}': '020_hammer/base0',
                                              '{B}': '001_bottle/base1'})
        seg.attrs['task_objects'] = json.dumps({'hammer': 5, 'bottle1': 2, 'bottle2': 3})
        seg.attrs['task_attrs'] = json.dumps({'target_height': 0.12})


def write_robotwin_sample(out_dir: str | Path, seed: int = 0, duration_s: float = 3.0,
                          width: int = 320, height: int = 240, embodiment: str = EMBODIMENT,
                          swap: bool = True, depth_scale: float = 1.0,
                          episodes: int | None = None) -> Path:
    """The release root; the episodes are under `<embodiment>/<task>/gt_export/data/`.

    episode0 has min(132, duration * 10 Hz) frames and an _extra file;
    episode1 is 70 % as long (as RoboTwin's short episodes) and has none.
    `episodes=N`: N episodes over RELEASE_TASKS in turn (release_episodes),
    episode k written with seed + 7 k; in each task the even episodes are long
    with an _extra file and the odd ones short without, as episode0 and episode1.
    """
    t0 = max(2, min(MAX_FRAMES, round(duration_s * FPS)))
    t1 = max(2, round(t0 * 0.7))
    if episodes is not None:
        if episodes < 1:
            raise SinkError(f'{out_dir}: a release holds at least one episode, got {episodes}')
        return write_sample(out_dir, duration_s, (width, height), 0.2, (32, 24),
                            lambda tmp: _write_release(tmp, episodes, seed, (t0, t1),
                                                       (width, height), embodiment,
                                                       swap=swap, depth_scale=depth_scale))

    def write(tmp: Path) -> None:
        data = tmp / embodiment / TASK / 'gt_export' / 'data'
        data.mkdir(parents=True)
        write_episode(data, 0, t0, seed, (width, height), extra=True, embodiment=embodiment,
                      swap=swap, depth_scale=depth_scale)
        write_episode(data, 1, t1, seed + 7, (width, height), extra=False,
                      embodiment=embodiment, swap=swap, depth_scale=depth_scale)
        (data.parent / 'scene_info.json').write_text(json.dumps(
            {'episode0': {'info': {'{A}': '020_hammer/base0', '{B}': '001_bottle/base1'}},
             'episode1': {'info': {'{A}': '020_hammer/base0', '{B}': '001_bottle/base0'}}},
            indent=1))
        _replay_report(tmp)
    return write_sample(out_dir, duration_s, (width, height), 0.2, (32, 24), write)


def release_episodes(n: int) -> list[tuple[str, int]]:
    """(task, episode number) of the n episodes of a sample release."""
    tasks = len(RELEASE_TASKS)
    return [(RELEASE_TASKS[k % tasks], k // tasks) for k in range(n)]


def _write_release(root: Path, n: int, seed: int, frames: tuple[int, int],
                   size: tuple[int, int], embodiment: str, **variant: Any) -> None:
    scene_info: dict[str, dict[str, Any]] = {}
    for k, (task, number) in enumerate(release_episodes(n)):
        data = root / embodiment / task / 'gt_export' / 'data'
        data.mkdir(parents=True, exist_ok=True)
        write_episode(data, number, frames[number % 2], seed + 7 * k, size,
                      extra=number % 2 == 0, embodiment=embodiment, **variant)
        scene_info.setdefault(task, {})[f'episode{number}'] = {
            'info': {'{A}': '020_hammer/base0', '{B}': f'001_bottle/base{(number + 1) % 2}'}}
    for task, info in scene_info.items():
        (root / embodiment / task / 'gt_export' / 'scene_info.json').write_text(
            json.dumps(info, indent=1))
    _replay_report(root)


def _replay_report(root: Path) -> None:
    """Lists Franka episodes only, as the release's does."""
    reports = root / 'reports'
    reports.mkdir()
    (reports / 'replay_success_check_failed.json').write_text(json.dumps(
        [{'embodiment': 'franka', 'task': 'place_shoe', 'episode': 12},
         {'embodiment': 'franka', 'task': 'adjust_bottle', 'episode': 3}], indent=1))


__all__ = ['ENTITIES', 'RELEASE_TASKS', 'TASK', 'encode_jpeg', 'palette', 'release_episodes',
           'write_episode', 'write_robotwin_sample']
