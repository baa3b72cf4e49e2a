"""Mocap object sessions: 120 Hz object instance poses, meshes, validity, raw markers.

One session folder `RELEASE/<session>/` (meshes under `RELEASE/objects/<Object>/`),
or a release root with `--episode <session>` (no option needed when it holds one).

Time base: header.stamp = `time_base_s` (react_ros/kinds/objects/config.yaml, 1 s) +
the npz's `t` (seconds from the session start). The files record no absolute
time; the offset keeps a first frame at t = 0 from being stamp 0, which tf2
reads as "latest".

Frames: `world` -> `<instance>` on /tf, only on frames whose pose is usable.
`<instance>` is the scanned mesh's frame for `pose_frame = mesh` instances and
the Nokov rigid-body frame for `pose_frame = rigid_body` ones. For mocap mesh
instances /tf_static also carries `<instance>` -> `<instance>_rigid_body`
(the inverse of T_rb_obj): the issue asked for `<instance>_rigid_body ->
<instance>`, which would give `<instance>` a second parent beside `world`, a
tree tf2 cannot hold.

Meshes travel inside /objects/markers as TRIANGLE_LISTs of their PLY's
triangles, live and in bags alike: a bag stays whole when the release is moved
or deleted, and a viewer on another machine needs no file (docs/objects.md).

Validity is computed, not trusted: a frame marked valid whose matrix holds NaN
is dropped with a warning (the one invalid-pose rule, adapters/poses.py); one
whose matrix is finite but not a rigid transform (rotation not orthonormal or
a reflection, last row not [0 0 0 1]) means the file was written wrong and the
session is refused.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Iterator, Sequence, cast

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from scipy.spatial.transform import Rotation
from std_msgs.msg import String

from react_ros.adapters.base import Episode, EpisodeOptions, EpisodeRef
from react_ros.adapters.poses import NON_UNIT, ZERO_QUATERNION, PosePolicy, PoseRule
from react_ros.errors import DatasetFormatError
from react_ros.kinds.objects.session import (
    HELD_BY, MARKERS_NPZ, MOTION, OBJECTS_JSON, OBJECTS_NPZ, QUALITY, Instance,
    frames_of, marker_residual_mm, read_session, rigid_faults, scan_markers, scan_poses)
from react_ros.kinds.objects.marker_cdr import CUBE, TRIANGLE_LIST, MeshGeometry, write_marker
from react_ros.kinds.objects.ply_mesh import ply_triangles
from react_ros.formats.ply import ply_bounds
from react_ros.formats.times import check_ns, seconds_to_ns
from react_ros.ros.cdr import CdrWriter, SphereLists, delete_marker_cdr, tf_message_cdr
from react_ros.ros.msgs import stamp
from react_ros.ros.tf import tf_message, transform_stamped
from react_ros.streams import Stream
from react_ros.kinds.objects.kind import KIND, ObjectsOptions

# Colours are float32 on the wire: values exact in float32 read back equal.
MARKER_NS = 'objects'
MESH_RGBA = (0.75, 0.625, 0.5, 1.0)
BOX_RGBA = (0.375, 0.625, 0.875, 0.625)
RAW_NS = 'raw_markers'


def _session_folder(root: Path) -> bool:
    return (root / OBJECTS_NPZ).is_file()


def _sessions(root: Path) -> list[str]:
    if not (root / 'objects').is_dir():
        return []
    return sorted(c.name for c in root.iterdir() if c.is_dir() and _session_folder(c))


def _instance_values(inst: Instance) -> list[KeyValue]:
    """What an instance is, beside its per-frame state: the file's own words.

    calib_rms_mm as Python writes the float ('nan' where the instance has no
    calibration); mesh as stored, a path from the release root ('' without one).
    """
    return [KeyValue(key='pose_frame', value=inst.pose_frame),
            KeyValue(key='source', value=inst.source),
            KeyValue(key='calib_rms_mm', value=repr(inst.calib_rms_mm)),
            KeyValue(key='mesh', value=inst.mesh)]


def _level(valid: bool, quality: int) -> tuple[bytes, str]:
    if not valid:
        return DiagnosticStatus.STALE, 'no valid pose'
    if quality == 5:
        return DiagnosticStatus.WARN, 'vision bridged: a guess (moved with the hand or ' \
            'previous pose kept)'
    return DiagnosticStatus.OK, QUALITY.get(quality, 'unknown quality')


class ObjectsAdapter:
    kind: ClassVar[str] = 'objects'

    @classmethod
    def probe(cls, path: Path) -> bool:
        try:
            path = Path(path)
            return _session_folder(path) or bool(_sessions(path))
        except (OSError, ValueError):
            return False

    def __init__(self, path: Path, options: EpisodeOptions) -> None:
        self.path = Path(path)
        self.options = options
        self.own: ObjectsOptions = options.own or ObjectsOptions()  # type: ignore[assignment]
        self.config = KIND.config()
        self.warnings: list[str] = []
        self.chunk = int(self.config.get('chunk_frames', 600))
        self.mesh_cache: dict[Path, MeshGeometry] = {}

    # -- validation, all before any stream exists ----------------------------------------
    def open(self) -> Episode:
        root = self._root()
        s = self.session = read_session(root)
        tol = float(self.config.get('rigid_tolerance', 1e-4))
        for inst in s.instances:
            if inst.source == 'mocap' and inst.pose_frame == 'mesh':
                fault = rigid_faults(inst.t_rb_obj, tol)[()]
                if fault:
                    raise DatasetFormatError(s.objects.path, f"key 'T_rb_obj': mocap mesh "
                                             f'instance {inst.name}: {fault}, not a rigid '
                                             'transform (rigid body -> mesh)')
            if inst.pose_frame == 'rigid_body' and inst.mesh:
                self.warnings.append(f'{OBJECTS_NPZ}: {inst.name} is posed in its rigid-body '
                                     f'frame but names mesh {inst.mesh}: the mesh is not '
                                     'aligned with that frame, drawn as a box')
        scan = scan_poses(s, self.chunk, tol)
        self.ok = scan.finite  # (n, T): publishable poses
        for inst in s.instances:
            held = int(scan.posed_invalid[inst.index])
            if held:  # the document has NaN there; a writer that kept a pose is still not valid
                self.warnings.append(f'{OBJECTS_NPZ}: T_world_obj[{inst.name}]: {held} '
                                     'frame(s) marked not valid hold a finite pose, where the '
                                     'format has NaN: not published (`valid` decides)')
        # Policy: NaN on a frame marked valid is one lost sample: dropped, counted, warned.
        self.pose_rule = PoseRule(PosePolicy(1e-3, frozenset({ZERO_QUATERNION, NON_UNIT})),
                                  self.warnings)
        for inst in s.instances:
            marked = s.valid[inst.index]
            rows = np.zeros((int(marked.sum()), 7))
            rows[:, 6] = 1.0
            rows[~self.ok[inst.index][marked]] = np.nan
            self.pose_rule.check(f'T_world_obj[{inst.name}]', rows, s.objects.path,
                                 unit='frame', where=' (marked valid, not a pose)')
        self.seen = None
        if s.markers is not None and self.own.raw_markers:
            self.seen = scan_markers(s, self.chunk)
        elif s.markers is None and any(i.source == 'mocap' for i in s.instances):
            self.warnings.append(f'{root.name}: no {MARKERS_NPZ}: no /objects/raw_markers')
        for name in sorted(set(s.absent) & {i.name for i in s.instances}):
            self.warnings.append(f'{OBJECTS_JSON}: {name} is listed as absent but has poses '
                                 f'in {OBJECTS_NPZ}')
        base_s = float(self.config.get('time_base_s', 1.0))
        base = seconds_to_ns(base_s, self.path, 'time_base_s')
        seconds_to_ns(base_s + float(s.t_s[-1]), s.objects.path,  # before any int64 overflow
                      "the last frame (time_base_s + key 't')")
        self.t_ns = base + np.round(s.t_s * 1e9).astype(np.int64)
        check_ns(int(self.t_ns[-1]), s.objects.path, "the last frame (time_base_s + key 't')")
        self.boxes = {i.name: self._box_size(i) for i in s.instances if i.mesh_path is None}
        self.meshes = {i.name: self._geometry(i.mesh_path) for i in s.instances
                       if i.mesh_path is not None}
        return Episode(kind=self.kind, path=root, start_ns=int(self.t_ns[0]),
                       end_ns=int(self.t_ns[-1]), streams=self._streams(),
                       warnings=self.warnings, report=self._report(scan.median_m),
                       invalid_poses=self.pose_rule.counts)

    def _root(self) -> Path:
        if not self.probe(self.path):
            raise DatasetFormatError(self.path, f'not a mocap object session (needs '
                                     f'{OBJECTS_NPZ}) nor a release root of sessions')
        want = self.options.episode
        if _session_folder(self.path):
            if want:
                raise DatasetFormatError(self.path, f'is one session; --episode {want} is for '
                                         'a release root')
            return self.path
        sessions = _sessions(self.path)
        if not want and len(sessions) == 1:
            return self.path / sessions[0]
        if not want:
            raise DatasetFormatError(self.path, f'a release of {len(sessions)} sessions; '
                                     f'choose one with --episode (e.g. --episode {sessions[0]})')
        if want not in sessions:
            raise DatasetFormatError(self.path, f'no session {want!r} (it holds '
                                     f'{", ".join(sessions[:5])})')
        return self.path / want

    def _box_size(self, inst: Instance) -> list[float]:
        """Box of a rigid_body instance: its object's mesh bounds, or the default."""
        folder = self.session.release / 'objects' / inst.object_type
        meshes = sorted(folder.glob('*.ply')) if folder.is_dir() else []
        if meshes:
            try:
                lo, hi = ply_bounds(meshes[0])
                return [float(max(v, 0.005)) for v in hi - lo]
            except DatasetFormatError as exc:
                self.warnings.append(f'{exc}; {inst.name} drawn as the default box')
        return [float(v) for v in self.config.get('default_box_m', [0.3, 0.3, 0.3])]

    def _geometry(self, path: Path) -> MeshGeometry:
        """A mesh read once however many instances draw it."""
        if path not in self.mesh_cache:
            self.mesh_cache[path] = MeshGeometry.of(ply_triangles(path))
        return self.mesh_cache[path]

    def _report(self, median_m: float) -> list[str]:
        s = self.session
        lines = [f'objects: {s.n} instance(s), {s.frames} frames at '
                 f'{(s.frames - 1) / max(s.t_s[-1] - s.t_s[0], 1e-9):.1f} Hz; poses in metres '
                 f'(median |translation| {median_m:.2f} m)']
        fi = s.frame_index
        lines.append(f'  time: stamp = time_base_s + t ({self.t_ns[0] / 1e9:.3f} .. '
                     f'{self.t_ns[-1] / 1e9:.3f} s); frame_index / 120 Hz would read '
                     f'{int(fi[0]) / 120:.3f} .. {int(fi[-1]) / 120:.3f} s (it counts the '
                     'body grid, not the session)')
        lines.append(f'  units: T_world_obj translations are metres (median {median_m:.2f} m); '
                     f'read as the vendor exports\' millimetres they would be '
                     f'{median_m / 1000:.5f} m')
        for inst in s.instances:
            i = inst.index
            valid = s.valid[i]
            verified = 100 * np.mean(s.quality[i][valid] == 1) if valid.any() else 0.0
            frame = 'mesh frame' if inst.pose_frame == 'mesh' else 'Nokov rigid-body frame'
            extra = f', static {inst.name} -> {inst.name}_rigid_body' if self._has_rb(inst) \
                else ''
            lines.append(
                f'  {inst.name}: {inst.object_type}, source {inst.source}, pose_frame '
                f'{inst.pose_frame} (TF {inst.name} is its {frame}{extra}), mesh '
                f'{inst.mesh or "-"}, valid {100 * valid.mean():.1f} % (published '
                f'{100 * self.ok[i].mean():.1f} %), verified {verified:.1f} %, moving '
                f'{100 * np.mean(s.motion[i] == 2):.1f} %, calib_rms_mm '
                f'{inst.calib_rms_mm:.2f}')
        lines += self._marker_check()
        for inst in s.instances:
            geometry = self.meshes.get(inst.name)
            if geometry is not None:
                lines.append(f'  mesh {inst.name}: {inst.mesh}, {geometry.triangles} triangles '
                             f'carried in /objects/markers as a TRIANGLE_LIST '
                             f'({geometry.rows.nbytes / 1e3:.1f} kB a message; no file:// '
                             'path, the bag needs no release)')
        lines.append(f'  absent (objects.json, not in the npz): {", ".join(s.absent) or "none"}')
        lines.append(f'  files present but not read (undocumented here, never guessed at): '
                     f'{", ".join(s.unread) or "none"}')
        lines.append('  raw vendor files raw/mocap/*.{csv,trc} (millimetres, Y-up) are never '
                     f'used for poses; /objects/raw_markers comes from {MARKERS_NPZ}')
        return lines

    def _marker_check(self) -> list[str]:
        """Self-check of the frame conventions: raw markers against the poses."""
        s = self.session
        if s.markers is None:
            return ['  marker check: no object_markers.npz (a vision session?)']
        limit = float(self.config.get('marker_residual_warn_mm', 10.0))
        lines = []
        # A few frames spread over the session, read in one pass for every instance.
        frames = np.unique(np.linspace(0, s.frames - 1, min(s.frames, 120)).astype(int))
        poses = frames_of(s.objects, 'T_world_obj', frames, self.chunk)
        pts = frames_of(s.markers, 'markers_m', frames, self.chunk)
        agree = frames_of(s.markers, 'consistent', frames, self.chunk)
        template = np.asarray(s.markers.load('template_m'), dtype=float)
        for inst in s.instances:
            if inst.source != 'mocap':
                continue
            i = inst.index
            use = self.ok[i, frames]
            got = marker_residual_mm(inst, template[i], poses[i, use], pts[i, use],
                                     agree[i, use]) if use.any() else None
            if got is None:
                lines.append(f'  marker check: {inst.name}: no consistent marker to compare')
                continue
            right = got.right
            how = 'T_world_obj @ inv(T_rb_obj)' if inst.pose_frame == 'mesh' else 'T_world_obj'
            other = f'inv(T_world_obj) taken as the pose would read {got.pose_inverted:.1f} mm'
            if got.rb_other_way is not None:
                other += f'; T_world_obj @ T_rb_obj would read {got.rb_other_way:.1f} mm'
            lines.append(f'  marker check: {inst.name}: template_m through {how} lands '
                         f'{right:.1f} mm from markers_m ({other})')
            if right > limit:
                self.warnings.append(f'{MARKERS_NPZ}: {inst.name}: template_m through {how} '
                                     f'lands {right:.1f} mm from markers_m (more than '
                                     f'{limit:g} mm): its pose and markers disagree')
        return lines

    def _has_rb(self, inst: Instance) -> bool:
        return inst.source == 'mocap' and inst.pose_frame == 'mesh'

    # -- streams --------------------------------------------------------------------------
    def _streams(self) -> list[Stream]:
        streams = [self._tf(), self._markers(), self._status()]
        static = self._tf_static()
        if static is not None:
            streams.insert(0, static)
        if self.seen is not None:
            streams.append(self._raw_markers())
        if (self.session.root / OBJECTS_JSON).is_file():
            streams.append(self._annotations())
        return streams

    def _annotations(self) -> Stream:
        """objects.json's `absent` rigid bodies (and how the object list was decided), once."""
        s, t0 = self.session, int(self.t_ns[0])
        item: dict[str, Any] = {'type': 'absent', 'time_ns': t0, 'source': OBJECTS_JSON,
                                'absent': s.absent,
                                'meaning': 'mocap rigid bodies with under 1 s of valid pose: '
                                'defined in the capture software, not in the take, left out '
                                f'of {OBJECTS_NPZ}'}
        if 'object_list' in s.doc:
            item['object_list'] = s.doc['object_list']
        text = json.dumps(item, sort_keys=True)

        def gen() -> Iterator[tuple[int, Any]]:
            yield t0, String(data=text)
        return Stream('/annotations', 'std_msgs/msg/String', gen, count=1,
                      approx_bytes=len(text) + 8)

    def _tf_static(self) -> Stream | None:
        t0 = int(self.t_ns[0])
        transforms = []
        for inst in self.session.instances:
            if self._has_rb(inst):
                rb_in_obj = np.linalg.inv(inst.t_rb_obj)
                q = Rotation.from_matrix(rb_in_obj[:3, :3]).as_quat()
                # transform_stamped takes any sequence of numbers; a numpy row is one
                translation = cast(Sequence[float], rb_in_obj[:3, 3])
                transforms.append(transform_stamped(inst.name, f'{inst.name}_rigid_body', t0,
                                                    translation, q))
        if not transforms:
            return None

        def gen() -> Iterator[tuple[int, Any]]:
            yield t0, tf_message(transforms)
        return Stream('/tf_static', 'tf2_msgs/msg/TFMessage', gen, latched=True, count=1,
                      approx_bytes=100 * len(transforms))

    def _tf(self) -> Stream:
        npz, ok, t_ns, chunk = self.session.objects, self.ok, self.t_ns, self.chunk
        names = [i.name for i in self.session.instances]

        def gen() -> Iterator[tuple[int, Any]]:
            for a, block in npz.chunks('T_world_obj', chunk):
                b = a + block.shape[1]
                good = ok[:, a:b]
                quats = np.zeros(good.shape + (4,))
                if good.any():
                    quats[good] = Rotation.from_matrix(
                        np.asarray(block[good][:, :3, :3], dtype=float)).as_quat()
                for k in np.flatnonzero(good.any(axis=0)):
                    t = int(t_ns[a + k])
                    rows = np.flatnonzero(good[:, k])
                    # CDR written directly: 120 Hz x every instance (ros/cdr.py)
                    yield t, tf_message_cdr(t, 'world', [names[i] for i in rows],
                                            block[rows, k, :3, 3], quats[rows, k])
        return Stream('/tf', 'tf2_msgs/msg/TFMessage', gen,
                      count=int(ok.any(axis=0).sum()), approx_bytes=90 * len(names))

    def marker_frames(self) -> np.ndarray:
        """Frames that carry /objects/markers: the first, validity edges, refreshes."""
        ok = self.ok
        edges = np.concatenate([[True], np.any(ok[:, 1:] != ok[:, :-1], axis=0)])
        period = self.own.marker_refresh
        if period > 0:
            slot = np.floor((self.session.t_s - self.session.t_s[0]) / period).astype(np.int64)
            edges |= np.concatenate([[True], slot[1:] != slot[:-1]])
        return np.flatnonzero(edges)

    def _write_instance_marker(self, w: CdrWriter, inst: Instance, t: int) -> None:
        """The instance's marker: its mesh's triangles, or a box; no file is named."""
        geometry = self.meshes.get(inst.name)
        if geometry is not None:
            write_marker(w, t, inst.name, MARKER_NS, inst.index, TRIANGLE_LIST,
                         (1.0, 1.0, 1.0), MESH_RGBA, inst.name, geometry)
        else:
            size = self.boxes[inst.name]
            write_marker(w, t, inst.name, MARKER_NS, inst.index, CUBE,
                         (size[0], size[1], size[2]), BOX_RGBA, inst.name)

    def _markers(self) -> Stream:
        frames = self.marker_frames()
        ok, t_ns, instances = self.ok, self.t_ns, self.session.instances

        def gen() -> Iterator[tuple[int, Any]]:
            for k in frames:
                t = int(t_ns[k])
                w = CdrWriter()
                w.u32(len(instances))
                for inst in instances:
                    if ok[inst.index, k]:
                        self._write_instance_marker(w, inst, t)
                    else:
                        delete_marker_cdr(w, t, inst.name, MARKER_NS, inst.index)
                yield t, w.bytes()
        points = sum(g.rows.nbytes for g in self.meshes.values())
        return Stream('/objects/markers', 'visualization_msgs/msg/MarkerArray', gen,
                      count=len(frames), approx_bytes=300 * len(instances) + points)

    def status_frames(self) -> np.ndarray:
        """Frames where any instance's (valid, quality, motion, held_by) changes, and the first."""
        s = self.session
        state = np.stack([self.ok, s.quality, s.motion, s.held_by])  # (4, n, T)
        change = np.any(state[:, :, 1:] != state[:, :, :-1], axis=(0, 1))
        return np.flatnonzero(np.concatenate([[True], change]))

    def _status(self) -> Stream:
        frames = self.status_frames()
        s, ok, t_ns = self.session, self.ok, self.t_ns
        fixed = [_instance_values(inst) for inst in s.instances]

        def gen() -> Iterator[tuple[int, Any]]:
            for k in frames:
                t = int(t_ns[k])
                out = DiagnosticArray()
                out.header.stamp = stamp(t)
                for inst in s.instances:
                    i = inst.index
                    valid, q = bool(ok[i, k]), int(s.quality[i, k])
                    level, text = _level(valid, q)
                    m, h = int(s.motion[i, k]), int(s.held_by[i, k])
                    if s.valid[i, k] and not valid:
                        text = 'marked valid but its pose is NaN: not published'
                    out.status.append(DiagnosticStatus(
                        level=level, name=inst.name, hardware_id=inst.object_type,
                        message=f'{text}; {MOTION[m]}; held by {HELD_BY[h]}',
                        values=[KeyValue(key='valid', value='true' if valid else 'false'),
                                KeyValue(key='quality', value=str(q)),
                                KeyValue(key='motion', value=str(m)),
                                KeyValue(key='held_by', value=str(h)),
                                *fixed[i]]))
                yield t, out
        return Stream('/objects/status', 'diagnostic_msgs/msg/DiagnosticArray', gen,
                      count=len(frames), approx_bytes=120 * s.n)

    def raw_marker_frames(self) -> np.ndarray:
        """Frames with a seen marker, or where an instance's last marker went unseen."""
        seen = self.seen
        if seen is None:
            return np.empty(0, dtype=np.int64)
        lost = np.concatenate([np.zeros((seen.shape[0], 1), bool),
                               seen[:, :-1] & ~seen[:, 1:]], axis=1)
        return np.flatnonzero(seen.any(axis=0) | lost.any(axis=0))

    def _raw_markers(self) -> Stream:
        npz = self.session.markers
        if npz is None or self.seen is None:
            raise ValueError('no object_markers.npz')
        frames = self.raw_marker_frames()
        keep = np.zeros(self.session.frames, dtype=bool)
        keep[frames] = True
        seen, t_ns, chunk, n = self.seen, self.t_ns, self.chunk, self.session.n
        diameter = float(self.config.get('raw_marker_diameter_m', 0.015))
        good = np.array([0.25, 0.875, 0.25, 1.0])  # consistent with the pose
        bad = np.array([1.0, 0.375, 0.125, 1.0])

        spheres = SphereLists('world', RAW_NS, range(n), diameter)

        def gen() -> Iterator[tuple[int, Any]]:
            consistent = npz.chunks('consistent', chunk)
            for a, block in npz.chunks('markers_m', chunk):
                _, agree = next(consistent)
                vis = np.all(np.isfinite(block), axis=-1)  # (n, m, k)
                colours = np.where(agree[..., None] != 0, good, bad).astype('<f4')
                points = np.ascontiguousarray(block, dtype='<f8')
                for k in np.flatnonzero(keep[a:a + block.shape[1]]):
                    f = a + k
                    t = int(t_ns[f])
                    # CDR written directly: 120 Hz x every instance (ros/cdr.py)
                    now, before = seen[:, f], seen[:, f - 1] if f > 0 else np.zeros(n, bool)
                    w = CdrWriter()
                    w.u32(int(now.sum() + (before & ~now).sum()))
                    for i in range(n):
                        if now[i]:
                            v = vis[i, k]
                            if v.all():
                                spheres.write(w, t, i, points[i, k], colours[i, k])
                            else:
                                spheres.write(w, t, i, points[i, k][v], colours[i, k][v])
                        elif before[i]:
                            delete_marker_cdr(w, t, 'world', RAW_NS, i)
                    yield t, w.bytes()
        return Stream('/objects/raw_markers', 'visualization_msgs/msg/MarkerArray', gen,
                      count=len(frames), approx_bytes=100 * n)


def find_episodes(root: Path) -> list[EpisodeRef] | None:
    """Every session folder of a mocap release root, sorted by name; None: `root` is not one.

    A release root holds objects/ and its sessions RELEASE/<session>/ (each with
    motions/objects.npz); nothing deeper is searched. `root` itself a session
    folder gives that one session (its id: the folder's name). Sources: the
    session's motions/objects.npz, objects.json and object_markers.npz, and
    every file under the release's objects/: the meshes are shared, and which of
    them a session draws is written inside its objects.npz, which is read only
    when converting.
    """
    root = Path(root)
    try:
        if _session_folder(root):
            return [_session_ref(root, root.resolve().name or 'session', _meshes(root.parent))]
        sessions = _sessions(root)
        meshes = _meshes(root) if sessions else ()
    except OSError:  # unreadable: not a release of ours, never an error
        return None
    return [_session_ref(root / name, name, meshes) for name in sessions] or None


def _meshes(release: Path) -> tuple[Path, ...]:
    return tuple(sorted(p for p in (release / 'objects').rglob('*') if p.is_file()))


def _session_ref(folder: Path, episode_id: str, meshes: tuple[Path, ...]) -> EpisodeRef:
    own = tuple(p for p in (folder / rel for rel in (OBJECTS_NPZ, OBJECTS_JSON, MARKERS_NPZ))
                if p.is_file())
    return EpisodeRef(id=episode_id, path=folder, sources=own + meshes)


__all__ = ['KIND', 'ObjectsAdapter', 'ObjectsOptions', 'find_episodes']
