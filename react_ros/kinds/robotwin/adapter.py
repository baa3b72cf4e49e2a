"""RoboTwin 2.0 ground-truth episodes: `.../<task>/gt_export/data/episode<N>.hdf5` (+ `_extra`).

The path is the episode file, or any folder above it (the data folder, the
task, the embodiment, the release root) with `--episode` naming one episode
by its path below that folder without `gt_export/data` and `.hdf5`
(`agilex/beat_block_hammer/episode0` from the root, `episode0` from a task);
a folder holding one episode needs none.

Time base: frame i is stamped time_base_s (config.yaml beside this file, 1 s) +
i / --fps (default 10 Hz; the files record no rate). Colours: the stored
JPEGs have R and B swapped; they are decoded and swapped back, which the
point cloud's own colours confirm (a conformance line of `info`). Intrinsics:
SAPIEN's K has pixel centres at u + 0.5, so every CameraInfo carries cx, cy - 0.5
(ROS's centres at u): the depth then back-projects onto the release's point cloud.
Invalid poses: NaN rows are dropped with a warning; a zero or non-unit
quaternion refuses the episode (a simulator writes unit quaternions: another
norm means the file is damaged or misread).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator, cast

import numpy as np
from geometry_msgs.msg import PoseStamped
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import Image, JointState, PointCloud2, PointField
from std_msgs.msg import String

from react_ros.adapters.base import Episode, EpisodeOptions, EpisodeRef
from react_ros.adapters.poses import NON_UNIT, ZERO_QUATERNION, PosePolicy, PoseRule
from react_ros.adapters.still_frames import still_camera_info, still_size
from react_ros.errors import DatasetFormatError, ReactRosError
from react_ros.kinds.robotwin import endpose as ee
from react_ros.kinds.robotwin import hdf5 as rh
from react_ros.formats.times import LAST, MAX_NS, check_ns, seconds_to_ns
from react_ros.ros.image import array_image, rgb_image
from react_ros.ros.msgs import stamp
from react_ros.ros.tf import tf_message, transform_stamped
from react_ros.streams import Stream
from react_ros.kinds.robotwin.kind import KIND, RobotwinOptions

REPLAY_REPORT = 'reports/replay_success_check_failed.json'
CLOUD_FIELDS = ('x', 'y', 'z', 'rgb')
# How _per_row builds a row's message: from (row, t_ns), or with reader=True from
# (the open rh.Frames, row, t_ns).
_RowBuild = Callable[[int, int], Any]
_FrameBuild = Callable[[rh.Frames, int, int], Any]


def flow_steps(v: Any) -> list[int]:
    """--flow-step's words (repeated, or one comma-separated: 1,4) as sorted steps."""
    return sorted({int(s) for w in v for s in str(w).split(',') if s.strip()})


def _xyzw(wxyz_poses: np.ndarray) -> np.ndarray:
    """(N, 7) x y z qw qx qy qz -> x y z qx qy qz qw (ROS order)."""
    p = np.asarray(wxyz_poses, dtype=np.float64)
    return np.concatenate([p[..., :3], p[..., 4:7], p[..., 3:4]], axis=-1)


def episodes_below(folder: Path) -> dict[str, Path]:
    """Episode id -> episode file of every episode<N>.hdf5 at or below `folder`."""
    patterns = ['gt_export/data/*.hdf5', '*/gt_export/data/*.hdf5',
                '*/*/gt_export/data/*.hdf5']
    if folder.name == 'gt_export':
        patterns.append('data/*.hdf5')
    if folder.name == 'data' and folder.parent.name == 'gt_export':
        patterns.append('*.hdf5')
    out = {}
    for pattern in patterns:
        for f in sorted(folder.glob(pattern)):
            if rh.episode_number(f) is None or not f.is_file():
                continue
            rel = [p for p in f.relative_to(folder).parts if p not in ('gt_export', 'data')]
            out['/'.join(rel).removesuffix('.hdf5')] = f
    return out


def replay_report(episode_file: Path) -> Path | None:
    """The release's replay report for an episode file (RELEASE/<emb>/<task>/gt_export/data/)."""
    parents = episode_file.parents
    return parents[4] / REPLAY_REPORT if len(parents) >= 5 else None


class RobotwinAdapter:
    kind: ClassVar[str] = 'robotwin'

    @classmethod
    def probe(cls, path: Path) -> bool:
        try:
            path = Path(path)
            if path.is_file():  # an _extra file too: open() then says which file to give
                return rh.episode_number(path) is not None or \
                    rh.episode_number(path.with_name(path.name.replace('_extra', ''))) is not None
            if path.is_dir():
                return bool(episodes_below(path))
            return False
        except (OSError, ValueError):
            return False

    def __init__(self, path: Path, options: EpisodeOptions) -> None:
        self.given = Path(path)
        self.options = options
        self.own: RobotwinOptions = options.own or RobotwinOptions()  # type: ignore[assignment]
        self.config = KIND.config()
        self.warnings: list[str] = []
        self.report: list[str] = []

    # -- validation, all before any stream exists ----------------------------------------
    def open(self) -> Episode:
        self.path = self._episode_file()
        self.ep = rh.read_episode(self.path)
        self.number = rh.episode_number(self.path)
        self.task = self.path.parents[2].name if len(self.path.parents) > 2 else ''
        self.embodiment = self._embodiment()
        self.joint_names = self._joint_names()
        xp = rh.extra_path(self.path)
        self.extra = rh.read_extra(xp, self.ep.t, (self.ep.width, self.ep.height)) \
            if xp.is_file() else None
        if self.extra is None:
            self.warnings.append(f'{self.path.name}: no {xp.name} beside it: no entities, raw '
                                 'ids, wrist cameras or targets')
        self.rows = self._rows()
        self.t_ns = self._stamps()
        self._check_poses()
        self.entity_frames = self._entity_frames() if self.extra else []
        self.replay_failed = self._replay_failed()
        self._conformance()
        streams = self._streams()
        t0, t1 = int(self.t_ns[self.rows[0]]), int(self.t_ns[self.rows[-1]])
        parts = [f'{self.path.name}: head camera, depth, segmentation, point cloud, end '
                 'poses, joints']
        if self.extra:
            parts.append(f'{xp.name}: entities on /tf, raw actor/mesh ids, wrist cameras '
                         f'({", ".join(self.extra.wrist) or "none"}), targets')
        self.report[:0] = [f'sources: {"; ".join(parts)}',
                           f'frames: {len(self.rows)} of {self.ep.t} played'
                           + (' (the 33 aligned frames' + (
                               f', {len(self.rows)} distinct)' if len(self.rows) < 33 else ')')
                              if self.own.aligned_frames else '')
                           + f', stamped {self.config["time_base_s"]:g} s + i / '
                           f'{self.own.fps:g} Hz']
        return Episode(kind=self.kind, path=self.path, start_ns=t0, end_ns=t1, streams=streams,
                       warnings=self.warnings, report=self.report,
                       invalid_poses=self.pose_rule.counts)

    def _episode_file(self) -> Path:
        given = self.given
        if given.is_file():
            if given.name.endswith('_extra.hdf5'):
                raise DatasetFormatError(given, 'is the _extra file of an episode; give the '
                                         'episode<N>.hdf5 beside it')
            if rh.episode_number(given) is None:
                raise DatasetFormatError(given, 'not a RoboTwin episode (expected a file named '
                                         'episode<N>.hdf5)')
            return given
        if not given.is_dir():
            raise DatasetFormatError(given, 'no such file or directory')
        found = episodes_below(given)
        if not found:
            raise DatasetFormatError(given, 'no RoboTwin episode below it (expected '
                                     '<task>/gt_export/data/episode<N>.hdf5)')
        want = self.options.episode
        if want is None and len(found) == 1:
            want = next(iter(found))
        if want is None:
            example = next(iter(found))
            raise DatasetFormatError(given, f'holds {len(found)} RoboTwin episodes; choose one '
                                     f'with --episode (e.g. --episode {example})')
        want = want.strip('/').removesuffix('.hdf5')
        if want not in found:
            shown = ', '.join(list(found)[:5]) + (' ...' if len(found) > 5 else '')
            raise DatasetFormatError(given, f'no episode {want!r} below it (it holds {shown})')
        return found[want]

    def _embodiment(self) -> str:
        known = self.config['embodiments']
        if self.own.embodiment is not None:
            return self.own.embodiment
        for folder in self.path.parents[3:4]:
            if folder.name in known:
                return folder.name
        raise DatasetFormatError(self.path, 'cannot tell the embodiment: no agilex/ or franka/ '
                                 'folder above <task>/gt_export/data; say --embodiment')

    def _joint_names(self) -> list[str]:
        names: list[str] = list(self.config['embodiments'][self.embodiment]['joints'])
        width = self.ep.joints.shape[1]
        if width != len(names):
            raise DatasetFormatError(self.path, f'joint_action/vector has {width} columns; a '
                                     f'{self.embodiment} episode has {len(names)} '
                                     f'({", ".join(names[:3])}, ...): wrong embodiment?')
        return names

    def _rows(self) -> np.ndarray:
        if self.own.aligned_frames:
            return np.unique(rh.aligned_indices(self.ep.t))
        return np.arange(self.ep.t)

    def _stamps(self) -> np.ndarray:
        base = seconds_to_ns(float(self.config['time_base_s']), self.path, 'time_base_s')
        fps = self.own.fps
        # In Python floats first: a rate so small that the step overflows (--fps 1e-300)
        # must be refused in one line, not met by numpy's inf * 0 warnings.
        last_s = base / 1e9 + (self.ep.t - 1) / fps if self.ep.t > 1 else base / 1e9
        if not last_s <= MAX_NS / 1e9:
            raise ReactRosError(f'--fps {fps:g}: frame {self.ep.t - 1} of {self.path.name} '
                                f'would be stamped {last_s:.3g} s, after {LAST} (2038), the '
                                'last time a ROS 2 Time can hold')
        step = 1e9 / fps
        t_ns = base + np.round(np.arange(self.ep.t) * step).astype(np.int64)
        check_ns(int(t_ns[-1]), self.path, f'the stamp of the last frame at --fps '
                 f'{self.own.fps:g}')
        if self.ep.t > 1 and not np.all(np.diff(t_ns) > 0):
            raise ReactRosError(f'--fps {self.own.fps:g}: frames of {self.path.name} would '
                                'share stamps (less than 1 ns apart)')
        return t_ns

    def _check_poses(self) -> None:
        self.pose_rule = PoseRule(PosePolicy(float(self.config['max_quaternion_norm_error']),
                                             frozenset({ZERO_QUATERNION, NON_UNIT})),
                                  self.warnings)
        self.endpose = {s: _xyzw(self.ep.endpose[s]) for s in rh.SIDES}
        self.endpose_ok = {s: self.pose_rule.check(f'endpose/{s}_endpose', self.endpose[s],
                                                   self.path) for s in rh.SIDES}
        if self.extra is not None:
            self.entity_pose = _xyzw(self.extra.pose)  # (T, N, 7)
            n = self.entity_pose.shape[1]
            ok = np.ones((self.ep.t, n), bool)
            for j in range(n):
                ok[:, j] = self.pose_rule.check(
                    f'entities/pose[:, {j}] ({self.extra.name[j]})', self.entity_pose[:, j],
                    self.extra.path)
            self.entity_ok = ok

    def _entity_frames(self) -> list[str]:
        assert self.extra is not None
        given = self.extra.name
        # tf2 refuses a frame id that starts with '/' (ROS 1's global names); the
        # document's names never do (a model or link name), so such a name is mapped
        # to one without, with one warning, rather than published as tf2 cannot take it.
        names = [n.lstrip('/') for n in given]
        counts: dict[str, int] = {}
        for n in names:
            counts[n] = counts.get(n, 0) + 1
        frames = []
        for n, eid in zip(names, self.extra.entity_id.tolist()):
            if not n:
                frames.append(f'entity_{eid}')
            elif counts[n] > 1:
                frames.append(f'{n}_{eid}')
            else:
                frames.append(n)
        slashed = [(g, f) for g, f in zip(given, frames) if g.startswith('/')]
        if slashed:
            self.warnings.append(
                f'{self.extra.path}: entity name(s) starting with "/", which tf2 refuses in a '
                f'frame id, published without it: '
                f'{", ".join(f"{g} as {f}" for g, f in slashed)}')
        dupes = sorted(n for n, c in counts.items() if c > 1 and n)
        if dupes:
            self.report.append(f'entities: {len(names)}; names not unique in the episode, '
                               f'published as <name>_<entity_id>: {", ".join(dupes)}')
        reserved = {self.config['world_frame'], 'head_camera_optical_frame',
                    'left_camera_optical_frame', 'right_camera_optical_frame'}
        clash = sorted(set(frames) & reserved)
        if clash:
            raise DatasetFormatError(self.extra.path, f'entity name(s) {", ".join(clash)} '
                                     'collide with a frame react_ros publishes')
        return frames

    def _replay_failed(self) -> bool | None:
        """Whether the release's report lists this episode; None when it has no report."""
        report = replay_report(self.path)
        if report is None:
            return None
        if not report.is_file():
            self.report.append(f'replay check: the release has no {REPLAY_REPORT}')
            return None
        listed = rh.read_replay_failed(report)
        return any(task == self.task and ep == self.number and emb in (None, self.embodiment)
                   for emb, task, ep in listed)

    def _check(self, what: str, text: str, verdict: str, would: str) -> None:
        """One conformance line of `info`, and under it what the wrong reading would read."""
        self.report.append(f'conformance: {what}: {text}: {verdict}')
        self.report.append(f'  would read: {would}')

    def _conformance(self) -> None:
        """The document's own cross-checks, each with what the classic mistake would read."""
        cfg = self.config
        head = self.ep.head
        gl, gl_raw = head.gl_disagreement(), head.gl_disagreement(flip=False)
        ok = gl <= float(cfg['max_gl_disagreement'])
        self._check('head camera pose', f'cam2world_gl (GL->CV axes) vs inverse(extrinsic_cv) '
                    f'max {gl:.2g} over {self.ep.t} frames', 'OK' if ok else 'FAIL',
                    f'{gl_raw:.2g} with cam2world_gl taken as OpenCV axes (no axis flip)')
        if not ok:
            self.warnings.append(f'{self.path.name}: cam2world_gl disagrees with extrinsic_cv '
                                 f'by {gl:.2g} (the document: <= 2e-7); TF uses extrinsic_cv')
        if self.extra is not None:
            for cam, cal in self.extra.wrist.items():
                err = cal.gl_disagreement()
                if err > float(cfg['max_gl_disagreement']):
                    self.warnings.append(f'{self.extra.path.name}: {cam} cam2world_gl disagrees '
                                         f'with extrinsic_cv by {err:.2g}')
        i = int(self.rows[0])
        with rh.Frames(self.path) as fr:
            check = channel_check(fr, head, i)
            depth = depth_check(fr, head, i, self.ep.t)
        published, swapped = check
        ok = published < swapped
        self._check('head rgb channels', f'point-cloud colours vs the image (frame {i}) MAE '
                    f'{published:.2f}/255 as published (R and B swapped back)',
                    'OK' if ok else 'FAIL', f'{swapped:.2f}/255 as the JPEG decodes (no swap)')
        if not ok:
            self.warnings.append(f'{self.path.name}: the point cloud\'s colours match the '
                                 'image better as the JPEG decodes than swapped: this file\'s '
                                 'JPEGs may not have the documented R/B swap')
        same, later, as_mm = depth
        ok = same <= float(cfg['max_depth_median_mm'])
        later_text = f'{later:.1f} mm 4 frames later' if later is not None else \
            'no frame 4 later'
        self._check('depth', f'point cloud vs the same frame\'s depth median {same:.2f} mm '
                    f'(published in metres); {later_text}', 'OK' if ok else 'FAIL',
                    f'{as_mm:.0f} mm with the millimetres read as metres')
        if not ok:
            self.warnings.append(f'{self.path.name}: the point cloud lands {same:.0f} mm from '
                                 f'the depth of its own frame {i}: depth is not millimetres, '
                                 'or the modalities are not of one frame')
        self._joint_conformance()
        if self.extra is not None:
            for side in rh.SIDES:
                self._endpose_conformance(side)
            for side in rh.SIDES:
                self._arm_link_conformance(side)
            if self.extra.mesh_entity is not None:
                self._mesh_table_conformance(i)

    def _mesh_table_conformance(self, i: int) -> None:
        """The mesh id -> entity table turns frame i's mesh ids into its actor ids."""
        assert self.extra is not None and self.extra.mesh_entity is not None
        with rh.Frames(self.extra.path) as fr:
            actor = fr.get(f'{rh.HEAD}/actor_id', i).astype(np.int64)
            mesh = fr.get(f'{rh.HEAD}/mesh_id', i).astype(np.int64)
        seen = mesh != 0  # 0: nothing hit (background), in no table
        table = self.extra.mesh_entity
        mapped = np.array([table.get(int(m), -1) for m in mesh[seen]], dtype=np.int64)
        n = int(seen.sum())
        if n == 0:
            self.report.append(f'conformance: mesh id table: frame {i} shows no mesh: '
                               'not checked')
            return
        agree = float(np.mean(mapped == actor[seen]))
        raw = float(np.mean(mesh[seen] == actor[seen]))
        # the document: every actor id of the segmentation has an entry in entities
        unknown = sorted(set(np.unique(actor[actor != 0]).tolist())
                         - set(self.extra.entity_id.tolist()))
        ok = agree == 1.0 and not unknown
        self._check('mesh id table', f'segmentation/mesh_id -> mesh_entity_id maps frame {i}\'s '
                    f'mesh ids onto its actor ids at {agree:.1%} of {n} pixels; actor ids '
                    f'without an entity: {", ".join(map(str, unknown[:5])) or "none"}',
                    'OK' if ok else 'FAIL', f'mesh ids taken as entity ids: {raw:.1%} agree')
        if agree != 1.0:
            self.warnings.append(f'{self.extra.path.name}: the mesh id table gives another '
                                 f'entity than actor_id at {1 - agree:.1%} of frame {i}\'s '
                                 'pixels')
        if unknown:
            self.warnings.append(f'{self.extra.path.name}: actor id(s) {unknown[:5]} of frame '
                                 f'{i} are no entity of entities/entity_id')

    def _joint_conformance(self) -> None:
        """joint_action/vector is left arm, left gripper, right arm, right gripper (the names'
        order in config.yaml), and endpose/<side>_gripper is the same opening."""
        ep = self.ep
        parts = {s: np.concatenate([ep.arm[s], ep.joint_gripper[s][:, None]], axis=1)
                 for s in rh.SIDES}
        stored = np.abs(ep.joints - np.concatenate([parts['left'], parts['right']], axis=1))
        other = np.abs(ep.joints - np.concatenate([parts['right'], parts['left']], axis=1))
        grip = max(float(np.max(np.abs(ep.gripper[s] - ep.joint_gripper[s]))) for s in rh.SIDES)
        ok = float(stored.max()) <= 1e-9
        self._check('joint order', f'joint_action/vector = left_arm, left_gripper, right_arm, '
                    f'right_gripper (max diff {stored.max():.2g}); endpose/*_gripper vs '
                    f'joint_action/*_gripper max diff {grip:.2g}', 'OK' if ok else 'FAIL',
                    f'right side first: max diff {other.max():.2g}')
        if not ok:
            self.warnings.append(f'{self.path.name}: joint_action/vector is not left_arm, '
                                 'left_gripper, right_arm, right_gripper: the joint names of '
                                 '/joint_states may be on the wrong columns')

    def _arm_link_conformance(self, side: str) -> None:
        """Joint column k of the side's arm turns link k about link k-1 by its own change."""
        assert self.extra is not None
        links = self.config['embodiments'][self.embodiment].get('arm_links', {}).get(side)
        what = f'{side} arm joints'
        if not links:
            self.report.append(f'conformance: {what}: config.yaml names no links for '
                               f'{self.embodiment}: not checked')
            return
        index = {f: j for j, f in enumerate(self.entity_frames)}
        missing = [n for n in links if n not in index]
        if missing:
            self.report.append(f'conformance: {what}: {self.extra.path.name} has no link '
                               f'{", ".join(missing[:3])}: not checked')
            return
        cols = {s: list(range(k * (self.ep.arm['left'].shape[1] + 1),
                              k * (self.ep.arm['left'].shape[1] + 1) + self.ep.arm[s].shape[1]))
                for k, s in enumerate(rh.SIDES)}
        if len(links) != len(cols[side]) + 1:
            self.report.append(f'conformance: {what}: config.yaml names {len(links) - 1} '
                               f'links, the arm has {len(cols[side])} joints: not checked')
            return
        js = [index[n] for n in links]
        rows = self.entity_ok[:, js].all(axis=1)
        poses = self.entity_pose[rows][:, js]
        turned = ee.joint_turns(poses)  # (T, n) signed degrees
        tol = float(self.config['max_joint_link_error_deg'])

        def worst(columns: list[int]) -> float:
            return ee.joint_error_deg(turned, self.ep.joints[rows][:, columns])
        err = worst(cols[side])
        other_arm = worst(cols['right' if side == 'left' else 'left'])
        shifted = worst(list(np.roll(cols[side], 1)))
        other = min(other_arm, shifted)  # the nearest wrong naming must read worse
        names = [self.joint_names[c] for c in cols[side]]
        verdict = 'OK' if err <= tol < other else 'FAIL' if err > tol else 'CANNOT TELL'
        self._check(what, f'{names[0]}..{names[-1]} (columns {cols[side][0]}-{cols[side][-1]}) '
                    f'turn {links[1]}..{links[-1]} about their parents by the column\'s change '
                    f'since frame 0: worst {err:.2g}° over {int(rows.sum())} frames', verdict,
                    f'the other arm\'s columns: worst {other_arm:.2g}°; the names shifted '
                    f'by one joint: worst {shifted:.2g}°')
        if verdict == 'FAIL':
            self.warnings.append(f'{self.path.name}: the {side} arm\'s joint columns do not '
                                 f'turn {", ".join(links[1:3])}... as named (worst {err:.2g}°): '
                                 'the joint names of /joint_states may be wrong')

    def _endpose_conformance(self, side: str) -> None:
        """Which robot link the end pose rides on, in which quaternion order and frame."""
        assert self.extra is not None
        cfg = self.config
        tol_mm, tol_deg = float(cfg['max_endpose_offset_mm']), float(cfg['max_endpose_offset_deg'])
        robot = [j for j, r in enumerate(self.extra.is_robot) if r]
        ok_rows = self.endpose_ok[side]
        links = {}
        for j in robot:
            rows = ok_rows & self.entity_ok[:, j]
            if rows.sum() >= 2:
                links[self.entity_frames[j]] = (self.entity_pose[rows, j], rows)
        what = f'{side} end pose'
        if not links:
            self.report.append(f'conformance: {what}: no robot link pose in '
                               f'{self.extra.path.name}: order and frame not checked')
            return
        end = self.endpose[side]
        scored = [(s.mm / tol_mm + s.deg / tol_deg, name, s)
                  for name, (track, rows) in links.items() for s in [ee.spread(track, end[rows])]]
        _, link, best = min(scored, key=lambda x: x[0])
        track, rows = links[link]
        other = ee.spread(track, ee.as_stored_xyzw(self.ep.endpose[side])[rows])
        wrong = [f'x y z qx qy qz qw (the other order): the offset varies by {other.text()}']
        base = self._robot_base()
        if base is not None:
            name, pose = base
            in_base = ee.spread(track, ee.compose(pose[rows], end[rows]))
            wrong.append(f'relative to the robot base {name}: the offset varies by '
                         f'{in_base.text()}')
        told = not other.within(tol_mm, tol_deg)
        verdict = 'OK' if best.within(tol_mm, tol_deg) and told else \
            'FAIL' if not best.within(tol_mm, tol_deg) else 'CANNOT TELL'
        off = ', '.join(str(int(round(v))) for v in best.offset_mm)
        rot = ', '.join(str(int(round(v))) for v in best.offset_rotvec_deg)
        self._check(what, f'/{side}_endpose (stored x y z qw qx qy qz, world) = {link} · a '
                    f'fixed offset (translation [{off}] mm, rotation vector [{rot}]°): varies '
                    f'by {best.text()} over {int(rows.sum())} frames', verdict, '; '.join(wrong))
        if verdict == 'FAIL':
            self.warnings.append(f'{self.path.name}: endpose/{side}_endpose is no fixed offset '
                                 f'from any robot link of {self.extra.path.name} (closest '
                                 f'{link}: {best.text()}): not x y z qw qx qy qz in world?')

    def _robot_base(self) -> tuple[str, np.ndarray] | None:
        """The first robot link that stays put over the episode: the arms' base."""
        assert self.extra is not None
        for j, r in enumerate(self.extra.is_robot):
            if r and self.entity_ok[:, j].all() and ee.still(
                    self.entity_pose[:, j], 1e-3, 1e-3):
                return self.entity_frames[j], self.entity_pose[:, j]
        return None

    # -- streams --------------------------------------------------------------------------
    def _streams(self) -> list[Stream]:
        streams = [*self._tf_static(), self._tf()]
        streams += self._camera('head_camera', self.path, self.ep.head)
        streams += self._depth()
        for what in ('actor', 'mesh'):
            streams.append(self._segmentation(what))
        if self.extra is not None:
            for what in ('actor', 'mesh'):
                streams.append(self._raw_ids(what))
            for cam, cal in self.extra.wrist.items():
                streams += self._camera(cam, self.extra.path, cal)
        streams += [self._cloud(), self._joint_states()]
        streams += [self._endpose(s) for s in rh.SIDES]
        streams += [self._gripper(s) for s in rh.SIDES]
        if self.extra is not None and self.extra.mesh_entity is not None:
            streams.append(self._id_table())
        streams.append(self._annotations())
        return streams + self._flow()

    def _flow(self) -> list[Stream]:
        """--flow-step / --tracks streams (flow_streams.py); without _extra, a warning."""
        steps = flow_steps(self.own.flow_step)
        if not steps and not self.own.tracks:
            return []
        if self.extra is None:
            self.warnings.append(f'{self.path.name}: no flow or tracks: they need the actor ids '
                                 f'and entity poses of {rh.extra_path(self.path).name}, which '
                                 'is not beside it')
            return []
        from react_ros.kinds.robotwin import flow_streams as fs
        short = [k for k in steps if not np.any(self.rows + k < self.ep.t)]
        if short:  # a topic with no message would be a topic of unknown encoding
            self.warnings.append(f'{self.path.name}: no flow for --flow-step '
                                 f'{", ".join(map(str, short))}: no frame played has one that '
                                 f'many frames later (the episode has {self.ep.t})')
            steps = [k for k in steps if k not in short]
        poses = np.where(self.entity_ok[..., None], self.extra.pose, np.nan)
        src = fs.FlowSource(self.path, self.extra.path, self.ep.head, self.extra.entity_id,
                            poses, self.own.flow_tolerance_mm / 1000.0)
        size = (self.ep.width, self.ep.height)
        out = fs.flow_streams(src, self.rows, self.t_ns, steps, self.ep.t, size)
        if self.own.tracks:
            out += fs.track_streams(src, self.rows, self.t_ns, self.own.tracks, size,
                                    self.config['world_frame'])
        self.report.append(f'flow: steps {", ".join(map(str, steps)) or "none"}, occlusion '
                           f'tolerance {self.own.flow_tolerance_mm:g} mm; tracks: '
                           f'{self.own.tracks or "none"} (flow.py: the document\'s dense_flow)')
        return out

    def _per_row(self, topic: str, msg_type: str, build: _RowBuild | _FrameBuild,
                 rows: np.ndarray | None = None, approx: int = 200, heavy: bool = False,
                 source: Path | None = None, reader: bool = False,
                 labels: bool = False) -> Stream:
        """A stream with one message per played row; `reader` passes a rh.Frames to build.

        A heavy one is read, decoded and serialised ahead on a worker thread by the
        sink that consumes it (sinks/readahead.py), as every kind's video is.
        """
        rows = self.rows if rows is None else rows
        t_ns = self.t_ns
        path = source or self.path

        def gen() -> Iterator[tuple[int, Any]]:
            if reader:
                read = cast(_FrameBuild, build)
                with rh.Frames(path) as fr:
                    for r in rows:
                        t = int(t_ns[r])
                        yield t, read(fr, int(r), t)
            else:
                plain = cast(_RowBuild, build)
                for r in rows:
                    t = int(t_ns[r])
                    yield t, plain(int(r), t)
        return Stream(topic, msg_type, gen, count=len(rows), heavy=heavy, approx_bytes=approx,
                      labels=labels)

    def _tf_static(self) -> list[Stream]:
        if self.extra is None:
            return []
        statics = [j for j, k in enumerate(self.extra.kind) if k == 'static']
        if not statics:
            return []
        t0 = int(self.t_ns[self.rows[0]])
        transforms = []
        for j in statics:
            good = np.flatnonzero(self.entity_ok[self.rows, j])
            if not len(good):
                continue
            p = self.entity_pose[self.rows[good[0]], j]
            moved = np.abs(self.entity_pose[self.rows[good], j, :3] - p[:3]).max()
            if moved > 1e-3:
                self.warnings.append(f'{self.extra.path.name}: static entity '
                                     f'{self.extra.name[j]} moves by {moved * 1000:.0f} mm; '
                                     'published once, at its first pose')
            transforms.append(transform_stamped(self.config['world_frame'],
                                                self.entity_frames[j], t0, p[:3], p[3:7]))

        def gen() -> Iterator[tuple[int, Any]]:
            yield t0, tf_message(transforms)  # one merged message, as tf2_ros sends it
        return [Stream('/tf_static', 'tf2_msgs/msg/TFMessage', gen, latched=True, count=1,
                       approx_bytes=100 + 100 * len(transforms))]

    def _tf(self) -> Stream:
        world = self.config['world_frame']
        cams = [('head_camera_optical_frame', self.ep.head.camera_in_world())]
        if self.extra is not None:
            cams += [(f'{c}_optical_frame', cal.camera_in_world())
                     for c, cal in self.extra.wrist.items()]
        quats = [(name, m, Rotation.from_matrix(m[:, :3, :3]).as_quat()) for name, m in cams]
        moving = [] if self.extra is None else \
            [j for j, k in enumerate(self.extra.kind) if k != 'static']

        def build(r: int, t: int) -> Any:
            out = [transform_stamped(world, name, t, m[r, :3, 3], q[r]) for name, m, q in quats]
            for j in moving:
                if self.entity_ok[r, j]:
                    p = self.entity_pose[r, j]
                    out.append(transform_stamped(world, self.entity_frames[j], t, p[:3], p[3:7]))
            return tf_message(out)
        return self._per_row('/tf', 'tf2_msgs/msg/TFMessage', build,
                             approx=100 + 100 * (len(cams) + len(moving)))

    def _camera(self, cam: str, source: Path, cal: rh.Calibration) -> list[Stream]:
        frame_id = f'{cam}_optical_frame'
        w, h = cal.size
        size = still_size(w, h, self.options.image_scale, cam)
        # scaled by the JPEG decoder itself, then R and B swapped: the pixels of
        # still_frames.scale_still + swap_rb, without decoding at full size first
        scaled = size if size != (w, h) else None

        def image(fr: rh.Frames, r: int, t: int) -> Image:
            return rgb_image(fr.rgb(cam, r, scaled), t, frame_id)

        def info(r: int, t: int) -> Any:
            return ros_camera_info(cal, r, t, frame_id, size)
        return [self._per_row(f'/{cam}/image_raw', 'sensor_msgs/msg/Image', image,
                              approx=size[0] * size[1] * 3 + 200, heavy=True, source=source,
                              reader=True),
                self._per_row(f'/{cam}/camera_info', 'sensor_msgs/msg/CameraInfo', info,
                              approx=400)]

    def _depth(self) -> list[Stream]:
        frame_id = 'head_camera_optical_frame'
        key = f'{rh.HEAD}/depth'
        cal, w, h = self.ep.head, self.ep.width, self.ep.height

        def image(fr: rh.Frames, r: int, t: int) -> Image:
            metres = (fr.get(key, r) / 1000.0).astype(np.float32)  # stored millimetres
            return array_image(metres, '32FC1', t, frame_id)

        def info(r: int, t: int) -> Any:
            return ros_camera_info(cal, r, t, frame_id, (w, h))
        return [self._per_row('/head_camera/depth/image_raw', 'sensor_msgs/msg/Image', image,
                              approx=w * h * 4 + 200, heavy=True, reader=True),
                self._per_row('/head_camera/depth/camera_info', 'sensor_msgs/msg/CameraInfo',
                              info, approx=400)]

    def _segmentation(self, what: str) -> Stream:
        key = f'{rh.HEAD}/{what}_segmentation'
        w, h = self.ep.width, self.ep.height

        def image(fr: rh.Frames, r: int, t: int) -> Image:
            return rgb_image(np.ascontiguousarray(fr.get(key, r)), t,
                             'head_camera_optical_frame')
        # palette colours: labels, so --images jpeg keeps them lossless
        return self._per_row(f'/head_camera/segmentation/{what}/image_raw',
                             'sensor_msgs/msg/Image', image, approx=w * h * 3 + 200,
                             heavy=True, reader=True, labels=True)

    def _raw_ids(self, what: str) -> Stream:
        assert self.extra is not None
        key = f'{rh.HEAD}/{what}_id'
        w, h = self.ep.width, self.ep.height

        def image(fr: rh.Frames, r: int, t: int) -> Image:
            ids = fr.get(key, r)
            if ids.max(initial=0) > 65535:
                raise DatasetFormatError(fr.path, f'{key} frame {r} holds ids above 65535')
            return array_image(ids.astype(np.uint16), '16UC1', t, 'head_camera_optical_frame')
        # ids, not 16UC1 depth: labels, lossless, never compressedDepth
        return self._per_row(f'/head_camera/segmentation/{what}_id/image_raw',
                             'sensor_msgs/msg/Image', image, approx=w * h * 2 + 200,
                             heavy=True, source=self.extra.path, reader=True, labels=True)

    def _cloud(self) -> Stream:
        world = self.config['world_frame']

        def build(fr: rh.Frames, r: int, t: int) -> PointCloud2:
            return point_cloud(fr.get('pointcloud', r), t, world)
        return self._per_row('/pointcloud', 'sensor_msgs/msg/PointCloud2', build,
                             approx=1024 * 16 + 300, heavy=True, reader=True)

    def _joint_states(self) -> Stream:
        names = self.joint_names
        vec = self.ep.joints

        def build(r: int, t: int) -> JointState:
            msg = JointState()
            msg.header.stamp = stamp(t)
            msg.name = list(names)
            msg.position = [float(v) for v in vec[r]]
            return msg
        return self._per_row('/joint_states', 'sensor_msgs/msg/JointState', build,
                             approx=40 * len(names))

    def _endpose(self, side: str) -> Stream:
        poses, ok = self.endpose[side], self.endpose_ok[side]
        world = self.config['world_frame']
        return self._per_row(f'/{side}_endpose', 'geometry_msgs/msg/PoseStamped',
                             lambda r, t: pose_stamped(poses[r], t, world),
                             rows=self.rows[ok[self.rows]])

    def _gripper(self, side: str) -> Stream:
        """endpose/<side>_gripper: RoboTwin's normalised opening (0 closed .. 1 open)."""
        values = self.ep.gripper[side]
        name = f'{side}_gripper'

        def build(r: int, t: int) -> JointState:
            msg = JointState()
            msg.header.stamp = stamp(t)
            msg.name = [name]
            msg.position = [float(values[r])]
            return msg
        return self._per_row(f'/{side}_gripper', 'sensor_msgs/msg/JointState', build, approx=60)

    def _id_table(self) -> Stream:
        """segmentation/mesh_id -> entity, with each entity's name and TF frame (latched JSON).

        The values of /head_camera/segmentation/mesh_id/image_raw index `mesh_to_entity`;
        those of .../actor_id/image_raw (and the mesh table's values) index `entities`.
        """
        assert self.extra is not None and self.extra.mesh_entity is not None
        table = self.extra.mesh_entity
        meshes: dict[int, list[int]] = {}
        for m, e in sorted(table.items()):
            meshes.setdefault(e, []).append(m)
        doc = {'mesh_to_entity': {str(m): e for m, e in sorted(table.items())},
               'entities': {str(e): {'name': n, 'frame': fr, 'articulation': a, 'kind': k,
                                     'is_robot': bool(rb), 'mesh_ids': meshes.get(e, [])}
                            for e, n, fr, a, k, rb in zip(
                                self.extra.entity_id.tolist(), self.extra.name,
                                self.entity_frames, self.extra.articulation, self.extra.kind,
                                self.extra.is_robot)}}
        text = json.dumps(doc)
        t0 = int(self.t_ns[self.rows[0]])

        def gen() -> Iterator[tuple[int, Any]]:
            yield t0, String(data=text)
        return Stream('/head_camera/segmentation/id_table', 'std_msgs/msg/String', gen,
                      latched=True, count=1, approx_bytes=len(text) + 50)

    def _annotations(self) -> Stream:
        doc: dict[str, Any] = {
            'type': 'episode', 'embodiment': self.embodiment, 'task': self.task,
            'episode': self.number, 'frames': self.ep.t,
            'played_frames': [int(r) for r in self.rows] if self.own.aligned_frames else None,
            'replay_success_check_failed': self.replay_failed,
            'extra': self.extra is not None}
        if self.extra is not None:
            for key in ('targets', 'task_objects', 'task_attrs'):
                doc[key] = self.extra.attrs.get(key)
            doc['entities'] = [{'entity_id': int(e), 'name': n, 'frame': f, 'kind': k,
                                'articulation': a, 'is_robot': bool(rb)}
                               for e, n, f, k, a, rb in zip(
                                   self.extra.entity_id.tolist(), self.extra.name,
                                   self.entity_frames, self.extra.kind,
                                   self.extra.articulation, self.extra.is_robot)]
        t0 = int(self.t_ns[self.rows[0]])
        text = json.dumps(doc)

        def gen() -> Iterator[tuple[int, Any]]:
            yield t0, String(data=text)
        return Stream('/annotations', 'std_msgs/msg/String', gen, count=1,
                      approx_bytes=len(text) + 50)


# SAPIEN's intrinsic_cv puts pixel u's centre at u + 0.5 (the image edge at 0: its
# projection maps fx·X/Z + cx straight to Vulkan framebuffer coordinates, sampled at
# half-integers); ROS and OpenCV put it at u. The image plane is shifted half a pixel
# after scaling, so a scaled image keeps the same rays.
PIXEL_CENTRE = 0.5


def ros_camera_info(cal: rh.Calibration, r: int, t_ns: int, frame_id: str,
                    size: tuple[int, int]) -> Any:
    """Frame r's CameraInfo at `size`, K and P in ROS's pixel-centre convention."""
    width, height = cal.size
    k = cal.intrinsic[r].astype(np.float64)
    return still_camera_info({'width': width, 'height': height, 'k': k.ravel().tolist(),
                              'd': [0.0] * 5, 'distortion_model': 'plumb_bob'},
                             t_ns, frame_id, size, pixel_centre=PIXEL_CENTRE)


def channel_check(fr: rh.Frames, cal: rh.Calibration, i: int) -> tuple[float, float]:
    """MAE (/255) of the cloud's colours against frame i decoded as published, and unswapped."""
    cloud = fr.get('pointcloud', i)
    image = fr.rgb('head_camera', i)
    k, e = cal.intrinsic[i], cal.extrinsic[i]
    return rh.colour_error(cloud, image, k, e), rh.colour_error(cloud, rh.swap_rb(image), k, e)


def depth_check(fr: rh.Frames, cal: rh.Calibration, i: int, t: int
                ) -> tuple[float, float | None, float]:
    """Median cloud-vs-depth error (mm): same frame in metres, 4 frames later, mm read as m."""
    key = f'{rh.HEAD}/depth'
    cloud = fr.get('pointcloud', i)
    depth_mm = fr.get(key, i)
    same = rh.depth_error_mm(cloud, depth_mm / 1000.0, cal.intrinsic[i], cal.extrinsic[i])
    later = None
    if i + 4 < t:
        later = rh.depth_error_mm(cloud, fr.get(key, i + 4) / 1000.0, cal.intrinsic[i + 4],
                                  cal.extrinsic[i + 4])
    as_mm = rh.depth_error_mm(cloud, depth_mm, cal.intrinsic[i], cal.extrinsic[i])
    return same, later, as_mm


def point_cloud(cloud: np.ndarray, t_ns: int, frame_id: str) -> PointCloud2:
    """x y z float32 + rgb packed as RViz reads it (0x00RRGGBB as float32); padding dropped."""
    pts = cloud[rh.cloud_valid(cloud)]
    n = len(pts)
    rec = np.zeros(n, dtype=[('x', '<f4'), ('y', '<f4'), ('z', '<f4'), ('rgb', '<u4')])
    rec['x'], rec['y'], rec['z'] = pts[:, 0], pts[:, 1], pts[:, 2]
    c = np.clip(np.round(pts[:, 3:6].astype(np.float64) * 255.0), 0, 255).astype(np.uint32)
    rec['rgb'] = (c[:, 0] << 16) | (c[:, 1] << 8) | c[:, 2]
    msg = PointCloud2()
    msg.header.stamp = stamp(t_ns)
    msg.header.frame_id = frame_id
    msg.height, msg.width = 1, n
    msg.fields = [PointField(name=name, offset=4 * i, datatype=PointField.FLOAT32, count=1)
                  for i, name in enumerate(CLOUD_FIELDS)]
    msg.is_bigendian = False
    msg.point_step = 16
    msg.row_step = 16 * n
    msg.is_dense = True
    msg.data = rec.tobytes()
    return msg


def pose_stamped(p: np.ndarray, t_ns: int, frame_id: str) -> PoseStamped:
    """From x y z qx qy qz qw."""
    msg = PoseStamped()
    msg.header.stamp = stamp(t_ns)
    msg.header.frame_id = frame_id
    pos, q = msg.pose.position, msg.pose.orientation
    pos.x, pos.y, pos.z = float(p[0]), float(p[1]), float(p[2])
    q.x, q.y, q.z, q.w = float(p[3]), float(p[4]), float(p[5]), float(p[6])
    return msg


def find_episodes(root: Path) -> list[EpisodeRef] | None:
    """Every episode<N>.hdf5 below `root`, sorted by id; None: there is none.

    `root` is the release root, an embodiment, a task, its gt_export/ or data/
    folder: the search goes down to <embodiment>/<task>/gt_export/data/ and no
    deeper (episodes_below). The id is the episode's --episode from `root`
    (`agilex/beat_block_hammer/episode0` from the release root, `episode0` from a
    task); the episode is opened by its file. Sources: the episode file, its
    _extra.hdf5 and the release's reports/replay_success_check_failed.json,
    those that exist.
    """
    try:
        found = episodes_below(Path(root))
    except OSError:  # unreadable: not a tree of ours, never an error
        return None
    refs = []
    for episode_id, path in sorted(found.items()):
        files = [path, rh.extra_path(path), replay_report(path)]
        refs.append(EpisodeRef(id=episode_id, path=path, sources=tuple(
            p for p in files if p is not None and p.is_file())))
    return refs or None


__all__ = ['KIND', 'RobotwinAdapter', 'RobotwinOptions', 'channel_check', 'depth_check',
           'episodes_below', 'find_episodes', 'point_cloud', 'replay_report']
