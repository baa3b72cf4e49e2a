"""React task releases: one episode (`--episode DATE/episode_NNN`) of a LeRobot-like release.

Time base: header.stamp = the episode DATE at 00:00:00 UTC + the row's
`timestamp` column (seconds from the episode start). The table records no
absolute time, so the date anchors it; no stamp is zero and nothing assumes a
frame rate. Poses are published Z-up; a calibration in the other up axis is
converted as one piece with the poses or refused (see _reconcile_up_axes).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator

import numpy as np
from geometry_msgs.msg import PoseStamped, WrenchStamped
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from react_ros.adapters.base import Episode, EpisodeOptions, EpisodeRef
from react_ros.adapters.poses import NON_UNIT, ZERO_QUATERNION, PosePolicy, PoseRule
from react_ros.adapters.video_streams import video_camera_streams
from react_ros.errors import DatasetFormatError, FrameSyncError, ReactRosError
from react_ros.formats import video
from react_ros.kinds.react.parquet_video import (
    FINGERPRINT_TOLERANCE_PX, MAX_QUAT_NORM_ERROR, MM_SUSPECT_M, POSE_COLUMNS, SIDES,
    TACTILE_EARLY_FRAMES, TACTILE_FIX_DATE, VIDEO_KEYS, VIEWS, Table, convert_calibration_y_to_z,
    convert_poses_y_to_z, date_base_ns, fingerprint_problem, read_table,
    virtual_targets)
from react_ros.kinds.react.checks import conformance_report
from react_ros.kinds.react.files import (Camera, Gel, episode_record, fingerprint_error_px,
                                         read_bad_frames, read_camera, read_episode_lines,
                                         read_gel, read_info, read_segments, read_split)
from react_ros.formats.times import check_ns
from react_ros.ros.msgs import stamp
from react_ros.ros.tf import tf_message, transform_stamped
from react_ros.streams import Stream
from react_ros.kinds.react.kind import KIND, ReactOptions

# /tactile_<side>/values, one row: the tactile scalars, penetration, and provenance (the
# tactile row the force came from, the raw HDF5 camera frame of the row published). Sent as
# sensor_msgs/JointState (name = these labels, position = the values, velocity and effort
# empty): ROS 2 has no stamped array of named numbers, and of the standard types with a
# header and named float64 values it is the one every tool shows as numbers (echo, plots,
# bag readers), where a one-point PointCloud2 is opaque bytes. Its stamp is that of the
# tactile image and force of the same row, so message_filters pairs them. Not on
# /joint_states and naming no URDF joint: no robot_state_publisher acts on it.
VALUE_LABELS = ('intensity', 'area', 'mixed', 'penetration_mm', 'force_source_frame',
                'source_h5_frame')
POSE_FRAMES = {'sensor_left_pose': 'sensor_left', 'sensor_right_pose': 'sensor_right',
               'object_pose': 'object'}


@dataclass
class _Release:
    """Everything validated, in the published (Z-up) convention."""
    table: Table
    poses: dict[str, np.ndarray]  # column -> Nx7, Z-up
    targets: dict[str, np.ndarray]  # side -> Nx7, Z-up
    cameras: dict[str, Camera]
    gels: dict[str, Gel]
    videos: dict[str, video.VideoInfo]
    t_ns: np.ndarray
    poses_up: str


class ReactAdapter:
    kind: ClassVar[str] = 'react'

    @classmethod
    def probe(cls, path: Path) -> bool:
        try:
            path = Path(path)
            return (path / 'episodes.jsonl').is_file() and (path / 'meta' / 'info.json').is_file()
        except (OSError, ValueError):
            return False

    def __init__(self, path: Path, options: EpisodeOptions) -> None:
        self.root = Path(path)
        self.options = options
        self.own: ReactOptions = options.own or ReactOptions()  # type: ignore[assignment]
        self.config = KIND.config()
        self.warnings: list[str] = []

    # -- validation, all before any stream exists ----------------------------------------
    def open(self) -> Episode:
        if not self.probe(self.root):
            raise DatasetFormatError(self.root, 'not a React release root (needs '
                                     'episodes.jsonl and meta/info.json)')
        read_info(self.root, self.warnings)
        self.episode_id = self._episode_id()
        table = read_table(table_path(self.root, self.episode_id))
        if self.record.length is not None and self.record.length != table.n:
            raise DatasetFormatError(self.root / 'episodes.jsonl', f'line {self.record.line}: '
                                     f"'length' is {self.record.length} but "
                                     f'{table.path.relative_to(self.root)} has {table.n} rows')
        if table.n == 0:
            raise DatasetFormatError(table.path, 'table has no rows')
        t_ns = self._times(table)
        self._check_values(table)
        rel = self._reconcile_up_axes(table, t_ns)
        self.rel = rel
        self.rows = self._rows(table.n)
        self._check_latency(table)
        self._annotation_items = self._annotations(table.n)
        report = conformance_report(rel.table, rel.poses, rel.cameras, rel.gels, rel.poses_up,
                                    table.has_world_frame, rel.targets,
                                    self.record.world_frame_offset, self.episode_id.split('/')[0])
        # What info reports as FAIL, convert and play say too: every check reads the table.
        for line in report:
            if line.startswith('FAIL '):
                text = ' '.join(line[5:].split())
                self.warnings.append(f'{table.path}: conformance check failed: {text}')
        t0, t1 = int(t_ns[self.rows[0]]), int(t_ns[self.rows[-1]])
        return Episode(kind=self.kind, path=self.root, start_ns=t0, end_ns=t1,
                       streams=self._streams(), warnings=self.warnings, report=report,
                       invalid_poses=self.pose_rule.counts)

    def _episode_id(self) -> str:
        path = self.root / 'episodes.jsonl'
        records = read_episode_lines(self.root)
        ids = [r['episode'] for _, r in records]
        if not ids:
            raise DatasetFormatError(path, 'lists no episode')
        want = self.options.episode
        if not want and len(ids) == 1:
            want = ids[0]  # a release of one episode needs no --episode
        if not want:
            example = ids[0] if ids else 'DATE/episode_NNN'
            raise DatasetFormatError(self.root, f'a React release holds {len(ids)} episode(s); '
                                     f'choose one with --episode (e.g. --episode {example})')
        try:
            date_base_ns(want)
        except ValueError:
            raise DatasetFormatError(path, f'episode id {want!r} is not DATE/episode_NNN with a '
                                     'valid date') from None
        if want not in ids:
            shown = ', '.join(ids[:5]) + (' ...' if len(ids) > 5 else '')
            raise DatasetFormatError(path, f'no episode {want!r} (it lists {shown or "none"})')
        self.record = episode_record(path, *records[ids.index(want)])
        return want

    def _times(self, table: Table) -> np.ndarray:
        ts = table.timestamp_s
        if not np.all(np.isfinite(ts)):
            row = int(np.argmax(~np.isfinite(ts)))
            raise DatasetFormatError(table.path, f'column timestamp is {ts[row]} at row {row}, '
                                     'not a finite time')
        if table.n > 1 and not np.all(np.diff(ts) > 0):
            row = int(np.argmax(np.diff(ts) <= 0)) + 1
            raise DatasetFormatError(table.path, f'column timestamp does not increase at row '
                                     f'{row} ({float(ts[row - 1])!r} then {float(ts[row])!r})')
        if ts[0] < 0 or ts[-1] > 86_400:
            raise DatasetFormatError(table.path, 'column timestamp must be seconds from the '
                                     f'episode start (at most a day), found {ts[0]:.6g} .. '
                                     f'{ts[-1]:.6g}')
        # Stamps are the date + timestamp: both ends must fit a ROS 2 Time, never wrap.
        base = check_ns(date_base_ns(self.episode_id), self.root / 'episodes.jsonl',
                        f'line {self.record.line}: the date of episode {self.episode_id}')
        t_ns = base + np.round(ts * 1e9).astype(np.int64)
        check_ns(int(t_ns[-1]), table.path, f'the last row (the date of {self.episode_id} + '
                 'column timestamp)')
        return t_ns

    def _check_values(self, table: Table) -> None:
        """Millimetres and non-unit quaternions are refused; NaN rows are not published."""
        cols = {**table.poses, **{f'force_{s}_target_pose': table.target[s] for s in SIDES}}
        # Policy: a NaN row is a tracking dropout and is dropped; a zero or non-unit
        # quaternion means the table was written wrong (the format document's classic
        # unnormalised-quaternion mistake), so the episode is refused.
        self.pose_rule = PoseRule(PosePolicy(MAX_QUAT_NORM_ERROR,
                                             frozenset({ZERO_QUATERNION, NON_UNIT})),
                                  self.warnings)
        self.pose_ok: dict[str, np.ndarray] = {}  # column -> publishable rows
        for name, poses in cols.items():
            finite = np.all(np.isfinite(poses), axis=1)
            med = float(np.median(np.linalg.norm(poses[finite, :3], axis=1))) \
                if finite.any() else 0.0
            if med > MM_SUSPECT_M:
                raise DatasetFormatError(table.path, f'column {name}: median |position| = '
                                         f'{med:.1f}, which is millimetres; poses must be metres')
            self.pose_ok[name] = self.pose_rule.check(name, poses, table.path)
        for s in SIDES:
            if not table.is_new[s].any():
                self.warnings.append(f'{table.path.name}: tactile_{s}_is_new is false on every '
                                     f'row: no tactile_{s} image or force is published')

    def _reconcile_up_axes(self, table: Table, t_ns: np.ndarray) -> _Release:
        """Put poses and every calibration into Z-up together, or refuse; never mix.

        Poses declare their up axis in twm.world_frame (the release is Z-up when it
        says nothing); a camera calibration declares `up_axis`, and one that does
        not is the pre-conversion Y-up. A Y-up calibration with Z-up poses has its
        world side mapped; Y-up poses are converted only together with Y-up
        calibrations. Where the parquet stores a projection fingerprint, the
        result must reproduce it: a calibration whose declaration is wrong is
        refused rather than drawn hundreds of pixels off.
        """
        cam_dir = self.root / 'calibration' / 'cameras'
        cams = {v: read_camera(cam_dir / f'{v}.json', v) for v in VIEWS}
        gels = {s: read_gel(self.root / 'calibration' / f'gel_{s}.json') for s in SIDES}
        if not table.has_world_frame:
            self.warnings.append(f'{table.path.name}: no twm.world_frame metadata; poses taken '
                                 'as the release\'s Z-up')
        poses_up = table.world_frame.get('up_axis', 'z')  # checked by read_table
        poses = dict(table.poses)
        targets = dict(table.target)
        if poses_up == 'y':
            z_cams = [c for c in cams.values() if c.up_axis == 'z']
            if z_cams:
                raise DatasetFormatError(z_cams[0].path, 'calibration is Z-up but the poses of '
                                         f'{table.path.name} declare Y-up: refusing to mix '
                                         'conventions')
            poses = {k: convert_poses_y_to_z(v) for k, v in poses.items()}
            targets = {k: convert_poses_y_to_z(v) for k, v in targets.items()}
            self.warnings.append(f'{table.path.name}: Y-up poses and calibration converted '
                                 'together to Z-up')
        for cam in cams.values():
            if cam.up_axis == 'y':
                cam.t_mocap_to_cam = convert_calibration_y_to_z(cam.t_mocap_to_cam)
                cam.converted = True
                if poses_up == 'z':
                    self.warnings.append(f'{cam.path.name}: Y-up calibration ('
                                         f'{_declared(cam)}) converted to the poses\' Z-up')
        videos = self._videos(table)
        for cam in cams.values():
            _to_video_size(cam, videos[f'view_{cam.name}'], self.warnings)
        fp = table.world_frame.get('fingerprint')
        problem = None if fp is None else fingerprint_problem(fp, table.n)
        if problem:
            self.warnings.append(f'{table.path.name}: twm.world_frame fingerprint {problem}; '
                                 'not used')
            fp = None
        checked = False
        if fp is not None:
            sensor_poses = poses[f'sensor_{fp["sensor"]}_pose']
            for cam in cams.values():
                err = fingerprint_error_px(sensor_poses, gels[fp['sensor']], cam, fp)
                checked = checked or err is not None
                if err is not None and err > FINGERPRINT_TOLERANCE_PX:
                    raise DatasetFormatError(cam.path, f'with {_declared(cam)} its projections '
                                             f'land {err:.0f} px from the fingerprint stored in '
                                             f'{table.path.name} (tolerance '
                                             f'{FINGERPRINT_TOLERANCE_PX:g} px): calibration and '
                                             'poses are not in one up axis; refusing to mix')
        if not checked and any(c.converted for c in cams.values()):
            self.warnings.append('no usable projection fingerprint in twm.world_frame: the '
                                 'up-axis conversion could not be checked against the release')
        return _Release(table, poses, targets, cams, gels, videos, t_ns, poses_up)

    def _videos(self, table: Table) -> dict[str, video.VideoInfo]:
        out = {}
        for key in VIDEO_KEYS:
            info = video.probe(video_path(self.root, self.episode_id, key))
            if info.frame_count != table.n:
                what = 'shorter than' if info.frame_count < table.n else 'longer than'
                raise FrameSyncError(info.path, f'{info.frame_count} frames, {what} the '
                                     f'{table.n} rows of {table.path.name} (one frame per row)')
            out[key] = info
        return out

    def _rows(self, n: int) -> np.ndarray:
        """The rows played: all, one segment, minus flagged frames."""
        rows = np.arange(n)
        segments = read_segments(self.root, self.episode_id, n)
        bad = read_bad_frames(self.root, self.episode_id, n)
        for name, got in (('segments.json', segments), ('bad_frames.json', bad)):
            if got is None:
                self.warnings.append(f'{name} is missing')
        self.segments, self.bad = segments or [], bad or []
        self.split = read_split(self.root, self.episode_id, n, self.warnings)
        if self.own.segment is not None:
            k = self.own.segment
            if not 0 <= k < len(self.segments):
                raise DatasetFormatError(self.root / 'segments.json', f'--segment {k}: '
                                         f'{self.episode_id} has {len(self.segments)} '
                                         f'segment(s), numbered from 0')
            a, b = self.segments[k]
            rows = rows[a:b + 1]
        if self.own.skip_bad:
            rows = rows[~np.isin(rows, [r for r, _ in self.bad])]
        if len(rows) == 0:
            raise DatasetFormatError(self.root / 'bad_frames.json', 'no rows left to play')
        return rows

    def _check_latency(self, table: Table) -> None:
        """A latency that pairs no played row with a tactile row would publish no touch.

        An episode recorded before the fix played with no latency is said once: its
        tactile stream is early, and nothing else in the files shows it.
        """
        lat = self.own.tactile_latency
        date = self.episode_id.split('/')[0]
        if lat == 0 and date < TACTILE_FIX_DATE:  # ISO dates order as strings
            self.warnings.append(
                f'{self.episode_id}: recorded before {TACTILE_FIX_DATE}, so its tactile stream '
                f'is {TACTILE_EARLY_FRAMES} frames early (format document 5), and touch is '
                'published with the view of its own row: pass --tactile-latency '
                f'{TACTILE_EARLY_FRAMES} (launch argument tactile_latency:='
                f'{TACTILE_EARLY_FRAMES}) to pair view[i] with tactile[i+{TACTILE_EARLY_FRAMES}]')
        j = self.rows + lat
        if not np.any((j >= 0) & (j < table.n)):
            raise ReactRosError(f'--tactile-latency {lat}: no row i played (rows '
                                f'{self.rows[0]}..{self.rows[-1]}) has a tactile row i{lat:+d} '
                                f'among the {table.n} rows of {self.episode_id}')

    def _annotations(self, n: int) -> list[tuple[int, str]]:
        """(row, JSON) of every annotation, clipped to the rows played."""
        lo, hi = int(self.rows[0]), int(self.rows[-1])
        items: list[tuple[int, dict[str, Any]]] = []

        def interval(kind: str, a: int, b: int, **extra: Any) -> None:
            if b < lo or a > hi:
                return
            items.append((max(a, lo), {'type': kind, 'first_row': a, 'last_row': b,
                                       'start_ns': self._t(a), 'end_ns': self._t(b), **extra}))
        for k, (a, b) in enumerate(self.segments):
            interval('segment', a, b, index=k)
        if self.split is not None:
            guard = self.split.guard_frames
            for a, b in self.split.held_out:
                interval('held_out', a, b, guard_frames=guard)
                if guard and a > 0:
                    # A training window starting here would still see held-out rows.
                    interval('guard', max(0, a - guard), a - 1, held_out=[a, b])
        for row, reason in self.bad:
            if lo <= row <= hi:
                items.append((row, {'type': 'bad_frame', 'row': row, 'reason': reason,
                                    'time_ns': self._t(row),
                                    'skipped': self.own.skip_bad}))
        items.sort(key=lambda x: x[0])
        return [(row, json.dumps({'episode': self.episode_id, **d})) for row, d in items]

    def _t(self, row: int) -> int:
        return int(self.rel.t_ns[row])

    # -- streams --------------------------------------------------------------------------
    def _streams(self) -> list[Stream]:
        streams = [self._tf_static(), self._tf()]
        streams += [self._pose(col) for col in POSE_COLUMNS]
        for v in VIEWS:
            streams += self._view(v)
        tactile_rows = self._tactile_rows()
        for s in SIDES:
            streams += [self._tactile(s, tactile_rows[s]), self._force(s, tactile_rows[s]),
                        self._target(s, tactile_rows[s]), self._values(s, tactile_rows[s])]
        streams.append(self._annotation_stream())
        return streams

    def _rows_stream(self, topic: str, msg_type: str, rows: np.ndarray,
                     build: Callable[[int, int], Any], approx: int = 200) -> Stream:
        t_ns = self.rel.t_ns

        def gen() -> Iterator[tuple[int, Any]]:
            for r in rows:
                t = int(t_ns[r])
                yield t, build(int(r), t)
        return Stream(topic, msg_type, gen, count=len(rows), approx_bytes=approx)

    def _valid_rows(self, col: str) -> np.ndarray:
        return self.rows[self.pose_ok[col][self.rows]]

    def _tf_static(self) -> Stream:
        t0 = int(self.rel.t_ns[self.rows[0]])
        transforms = []
        for v in VIEWS:
            cam_in_world = np.linalg.inv(self.rel.cameras[v].t_mocap_to_cam)
            q = Rotation.from_matrix(cam_in_world[:3, :3]).as_quat()
            transforms.append(transform_stamped('world', f'view_{v}_optical_frame', t0,
                                                cam_in_world[:3, 3], q))
        for s in SIDES:
            # The gel centre, where the force acts; axes kept parallel to the sensor's, so
            # the force vector reads the same in both frames and only its point moves.
            transforms.append(transform_stamped(f'sensor_{s}', self.gel_frame(s), t0,
                                                self.rel.gels[s].centre_mm / 1000.0,
                                                [0.0, 0.0, 0.0, 1.0]))

        def gen() -> Iterator[tuple[int, Any]]:
            # One merged message, as tf2_ros's static broadcaster sends it.
            yield t0, tf_message(transforms)
        return Stream('/tf_static', 'tf2_msgs/msg/TFMessage', gen, latched=True, count=1,
                      approx_bytes=300)

    def _tf(self) -> Stream:
        poses = self.rel.poses
        t_ns = self.rel.t_ns
        rows = self.rows
        ok = self.pose_ok
        keep = rows[np.any(np.stack([ok[c][rows] for c in POSE_COLUMNS]), axis=0)]

        def gen() -> Iterator[tuple[int, Any]]:
            for r in keep:
                t = int(t_ns[r])
                yield t, tf_message([
                    transform_stamped('world', POSE_FRAMES[c], t, poses[c][r, :3],
                                      poses[c][r, 3:7]) for c in POSE_COLUMNS if ok[c][r]])
        return Stream('/tf', 'tf2_msgs/msg/TFMessage', gen, count=len(keep), approx_bytes=400)

    def _pose(self, col: str) -> Stream:
        poses = self.rel.poses[col]
        topic = '/' + col.replace('_pose', '') + '/pose'
        return self._rows_stream(topic, 'geometry_msgs/msg/PoseStamped',
                                 self._valid_rows(col),
                                 lambda r, t: _pose_stamped(poses[r], t))

    def _view(self, v: str) -> list[Stream]:
        cam = self.rel.cameras[v]
        info = self.rel.videos[f'view_{v}']
        meta = {'width': cam.width, 'height': cam.height, 'k': cam.k.ravel().tolist(),
                'd': cam.dist, 'distortion_model': 'plumb_bob'}
        return video_camera_streams(info, self.rel.t_ns, f'/view_{v}', f'view_{v}_optical_frame',
                                    meta, image_scale=self.options.image_scale, rows=self.rows)

    def _tactile_rows(self) -> dict[str, np.ndarray]:
        """Rows i that publish tactile/force: row i + latency exists and is fresh."""
        lat = self.own.tactile_latency
        n = self.rel.table.n
        out = {}
        for s in SIDES:
            j = self.rows + lat
            inside = (j >= 0) & (j < n)
            rows = self.rows[inside]
            out[s] = rows[self.rel.table.is_new[s][rows + lat]]
        return out

    def _tactile(self, s: str, rows: np.ndarray) -> Stream:
        frame_id = self.config['tactile_frame'].format(side=s)
        (image,) = video_camera_streams(self.rel.videos[f'tactile_{s}'], self.rel.t_ns,
                                        f'/tactile_{s}', frame_id,
                                        image_scale=self.options.image_scale, rows=rows,
                                        offset=self.own.tactile_latency)
        return image

    def gel_axis(self, s: str) -> np.ndarray:
        if self.own.gel_axis == 'dual_ball':
            return self.rel.gels[s].axis_in_rigid
        return np.asarray(self.config['gel_axis_local'], dtype=float)

    def gel_frame(self, s: str) -> str:
        return self.config['gel_frame'].format(side=s)

    def _force(self, s: str, rows: np.ndarray) -> Stream:
        force = self.rel.table.force_n[s]
        axis = self.gel_axis(s)
        lat = self.own.tactile_latency
        frame_id = self.gel_frame(s)

        def build(r: int, t: int) -> WrenchStamped:
            msg = WrenchStamped()
            msg.header.stamp = stamp(t)
            msg.header.frame_id = frame_id
            f = float(force[r + lat]) * axis
            msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = (float(v) for v in f)
            return msg
        finite = np.isfinite(force[rows + lat])
        if not finite.all():
            # A fresh row without an estimate: no message, said rather than silent.
            first = int(rows[~finite][0] + lat)
            self.warnings.append(f'{self.rel.table.path.name}: force_{s}_normal_n is NaN or '
                                 f'infinite on {int((~finite).sum())} fresh row(s) (the first '
                                 f'row {first}); no force published for them')
        ok = rows[finite]
        return self._rows_stream(f'/sensor_{s}/force', 'geometry_msgs/msg/WrenchStamped', ok,
                                 build)

    def _target(self, s: str, rows: np.ndarray) -> Stream:
        """The virtual target of row i: row i's sensor pose pushed F/k along the force's axis.

        F is the force published at row i's stamp (tactile row i+N), n-hat the gel axis
        turned by the pose on /tf at that stamp. The stored column pairs each row's pose
        with that row's force, so it is published as is only where that is the same thing:
        no latency and the local -y it was built along. Otherwise it is rebuilt: under
        --tactile-latency the stored target of row i+N sits on the pose of row i+N, N camera
        frames after the pose its force belongs to; under --gel-axis dual_ball it would sit
        ~21 deg off the force.
        """
        lat = self.own.tactile_latency
        if lat == 0 and self.own.gel_axis == 'local_y':
            target = self.rel.targets[s]
            ok = rows[self.pose_ok[f'force_{s}_target_pose'][rows]]
        else:
            force = np.full(self.rel.table.n, np.nan)
            force[rows] = self.rel.table.force_n[s][rows + lat]
            pose_col = f'sensor_{s}_pose'
            target = virtual_targets(self.rel.poses[pose_col], force, self.gel_axis(s))
            ok = rows[self.pose_ok[pose_col][rows] & np.all(np.isfinite(target[rows]), axis=1)]
        return self._rows_stream(f'/sensor_{s}/force_target', 'geometry_msgs/msg/PoseStamped',
                                 ok, lambda r, t: _pose_stamped(target[r], t))

    def _values(self, s: str, rows: np.ndarray) -> Stream:
        """Fresh tactile scalars and where they came from, in VALUE_LABELS order.

        Same rows and stamps as the tactile image (and the force, where it is finite): a
        subscriber pairs them by an exact header.stamp match. The frame is the tactile
        image's, whose scalars these are.
        """
        table, lat = self.rel.table, self.own.tactile_latency
        columns = [table.tactile[f'{s}_intensity'], table.tactile[f'{s}_area'],
                   table.tactile[f'{s}_mixed'], table.penetration_mm[s],
                   table.source_frame[s].astype(float), table.source_h5_frame.astype(float)]
        values = np.stack(columns, axis=1)
        names = list(VALUE_LABELS)
        frame_id = self.config['tactile_frame'].format(side=s)

        def build(r: int, t: int) -> JointState:
            msg = JointState()
            msg.header.stamp = stamp(t)
            msg.header.frame_id = frame_id
            msg.name = names
            msg.position = values[r + lat].tolist()
            return msg
        return self._rows_stream(f'/tactile_{s}/values', 'sensor_msgs/msg/JointState', rows,
                                 build)

    def _annotation_stream(self) -> Stream:
        items = self._annotation_items
        t_ns = self.rel.t_ns

        def gen() -> Iterator[tuple[int, Any]]:
            for row, text in items:
                yield int(t_ns[row]), String(data=text)
        return Stream('/annotations', 'std_msgs/msg/String', gen, count=len(items),
                      approx_bytes=200)


def _to_video_size(cam: Camera, info: video.VideoInfo, warnings: list[str]) -> None:
    """Scale K of a calibration made at another image size to the video's pixels.

    Done before the fingerprint check (whose pixels are the video's), so what is
    checked is what is published. A different aspect ratio is refused: the video
    may be a crop, and no scaling of K would then be right.
    """
    size = (info.width, info.height)
    if size == (cam.width, cam.height):
        return
    sx, sy = info.width / cam.width, info.height / cam.height
    if abs(sx / sy - 1) > 0.01:
        raise DatasetFormatError(cam.path, f'calibrated at {cam.width}x{cam.height} but '
                                 f'{info.path.name} is {info.width}x{info.height}, another '
                                 'aspect ratio: K cannot be scaled to it')
    warnings.append(f'{cam.path.name}: calibrated at {cam.width}x{cam.height}, video is '
                    f'{info.width}x{info.height}; K scaled to the video')
    cam.k = cam.k * np.array([[sx], [sy], [1.0]])
    cam.width, cam.height = size


def _declared(cam: Camera) -> str:
    return f'up_axis {cam.up_axis!r}' if cam.declared else 'no up_axis, so Y-up'


def _pose_stamped(p: np.ndarray, t_ns: int) -> PoseStamped:
    msg = PoseStamped()
    msg.header.stamp = stamp(t_ns)
    msg.header.frame_id = 'world'
    pos, q = msg.pose.position, msg.pose.orientation
    pos.x, pos.y, pos.z = float(p[0]), float(p[1]), float(p[2])
    q.x, q.y, q.z, q.w = float(p[3]), float(p[4]), float(p[5]), float(p[6])
    return msg


def table_path(root: Path, episode_id: str) -> Path:
    date, name = episode_id.split('/')
    return root / 'data' / date / f'{name}.parquet'


def video_path(root: Path, episode_id: str, key: str) -> Path:
    return root / 'videos' / episode_id / f'{key}.mp4'


def find_episodes(root: Path) -> list[EpisodeRef] | None:
    """Every episode episodes.jsonl lists, sorted by id; None: `root` is no release root.

    Only `root` itself is looked at: a React release is one task's root (its
    episodes.jsonl and meta/info.json), never searched for below. The id is the
    episode's DATE/episode_NNN, opened as `root` with --episode. An episodes.jsonl
    that cannot be read raises DatasetFormatError naming it: the release is
    claimed but cannot be listed. Sources: the files every episode shares
    (meta/info.json, episodes.jsonl, the calibration, segments/splits/bad_frames)
    and the episode's own parquet and five videos, those that exist.
    """
    root = Path(root)
    if not ReactAdapter.probe(root):
        return None
    calibration = root / 'calibration'
    shared = [root / 'meta' / 'info.json', root / 'episodes.jsonl',
              *(calibration / 'cameras' / f'{v}.json' for v in VIEWS),
              *(calibration / f'gel_{s}.json' for s in SIDES),
              *(root / name for name in ('segments.json', 'splits.json', 'bad_frames.json'))]
    refs = []
    for episode_id in sorted(rec['episode'] for _, rec in read_episode_lines(root)):
        own = [table_path(root, episode_id),
               *(video_path(root, episode_id, key) for key in VIDEO_KEYS)]
        refs.append(EpisodeRef(id=episode_id, path=root, episode=episode_id,
                               sources=tuple(p for p in shared + own if p.is_file())))
    return refs


__all__ = ['KIND', 'ReactAdapter', 'ReactOptions', 'find_episodes']
