"""UMI gripper episodes: one MCAP of poses/grippers/frame pointers + three mp4 videos.

Frame n of a camera is the n-th DiagnosticStatus on its camera/state topic in
log-time order, stamped with that pointer's `header.stamp` value (never n/60:
the videos are variable frame rate).
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator, Sequence

import numpy as np
from rclpy.serialization import deserialize_message
from geometry_msgs.msg import TwistStamped
from sensor_msgs.msg import Joy
from std_msgs.msg import String

from react_ros.adapters.base import Episode, EpisodeOptions, EpisodeRef
from react_ros.adapters.poses import PosePolicy, PoseRule
from react_ros.adapters.video_streams import in_stamp_order, video_camera_streams
from react_ros.errors import DatasetFormatError, FrameSyncError
from react_ros.formats import video
from react_ros.formats.mcap_bag import McapBag, RawMessage
from react_ros.formats.camera_info_yaml import read_camera_info
from react_ros.formats.text_files import read_yaml
from react_ros.formats.times import check_ns, ns_value, seconds_to_ns
from react_ros.formats.urdf import parse_urdf
from react_ros.kinds.umi import checks
from react_ros.kinds.umi.tracking import (BODIES, TrackingStatus, invalid_pose_offsets,
                                          mask_bits, pose_validity, read_status)
from react_ros.ros.cdr import CdrReader, header_stamp
from react_ros.ros.msgs import message_class, stamp
from react_ros.ros.robot_state import robot_state_streams
from react_ros.ros.tf import tf_message, transform_stamped
from react_ros.streams import Stream
from react_ros.kinds.umi.kind import KIND

CAMERA_TOPIC = '/{}/perception_interface/camera/state'
GRIPPER_TOPIC = '/{}/perception_interface/gripper/state'
CAMERA_INFO = 'meta/sensor/{}.metadata_interface.camera_info.meta.yaml'
VIDEO = 'data/{}.perception_interface.camera.state.mp4'
ANNOTATIONS = ('meta/system/annotation.yaml', 'meta/system/flag.yaml')
URDF = 'meta/scene/robot_description.urdf'
JOY_TOPIC = '/tracking/input/joy'
TWIST_TOPIC = '/tracking/{}/twist'


def _has_header(msg_type: str) -> bool:
    """Whether the type starts with a std_msgs/Header (its stamp is then CDR bytes 4..12)."""
    cls: Any = message_class(msg_type)
    fields: dict[str, str] = cls.get_fields_and_field_types()
    first = next(iter(fields.items()), ('', ''))
    return first == ('header', 'std_msgs/Header')


@dataclass
class _Camera:
    name: str
    video: video.VideoInfo
    stamps: np.ndarray  # header.stamp of each pointer, in log-time order
    meta: dict[str, Any]


class UmiAdapter:
    kind: ClassVar[str] = 'umi'

    @classmethod
    def probe(cls, path: Path) -> bool:
        try:
            path = Path(path)
            return (path / 'data' / 'episode.mcap').is_file() and (path / 'meta').is_dir()
        except (OSError, ValueError):
            return False

    def __init__(self, path: Path, options: EpisodeOptions) -> None:
        self.root = Path(path)
        self.options = options
        self.config = KIND.config()
        self.warnings: list[str] = []
        self.report = checks.Report()

    # -- validation, all before any stream exists ----------------------------------------
    def open(self) -> Episode:
        if not self.probe(self.root):
            raise DatasetFormatError(self.root, 'not a UMI episode folder '
                                     '(needs data/episode.mcap and meta/)')
        self.bag = McapBag(self.root / 'data' / 'episode.mcap')
        self.types = {c.topic: c.schema_name for c in self.bag.channels()}
        for c in self.bag.channels():
            if c.encoding != 'cdr':
                raise DatasetFormatError(self.bag.path, f'topic {c.topic} is encoded '
                                         f'{c.encoding!r}, expected cdr')
            try:
                message_class(c.schema_name)
            except (ImportError, AttributeError, ValueError):
                raise DatasetFormatError(self.bag.path, f'topic {c.topic} has a type this '
                                         f'ROS 2 install does not know: {c.schema_name!r}'
                                         ) from None
        for topic, want in self._document_types().items():
            if topic in self.types and self.types[topic] != want:
                raise DatasetFormatError(self.bag.path, f'{topic} is {self.types[topic]!r}, '
                                         f'the format document says {want!r}')
        self._scan()
        self.cameras = [self._camera(cam) for cam in self.config['cameras']]
        urdf_path = self.root / URDF
        if not urdf_path.is_file():
            raise DatasetFormatError(urdf_path, 'file is missing')
        try:
            self.urdf = urdf_path.read_text()
        except UnicodeDecodeError:
            raise DatasetFormatError(urdf_path, 'URDF is not UTF-8 text') from None
        robot = parse_urdf(self.urdf, urdf_path)
        self._check_urdf(robot)
        self._check_grippers(robot)
        for topic, cam_stamps in sorted(self.pointers.items()):
            video_us = self.video_stamps[topic]
            checks.video_lines(self.report, topic, np.asarray(cam_stamps, np.int64),
                               np.asarray(video_us, np.int64) if len(video_us) == len(
                                   cam_stamps) else None)
        annotations = self._annotations()

        joint_states = self._joint_states()
        streams = [*self._recorded(), self._tf(), joint_states, *self._tracking_streams()]
        for cam in self.cameras:
            streams += self._camera_streams(cam)
        streams.append(annotations)
        times = [t for t in (self.t_min, self.t_max) if t is not None]
        times += [int(cam.stamps[i]) for cam in self.cameras for i in (0, -1) if len(cam.stamps)]
        times += [t for t, _ in self._annotation_items]
        if not times:
            raise DatasetFormatError(self.bag.path, 'episode holds no messages')
        start_ns, end_ns = min(times), max(times)
        streams += robot_state_streams(self.urdf, joint_states, start_ns, urdf_path)
        return Episode(kind=self.kind, path=self.root, start_ns=start_ns, end_ns=end_ns,
                       streams=streams, urdf=self.urdf, warnings=self.warnings,
                       invalid_poses=self.pose_rule.counts, report=self.report.lines)

    def _check_urdf(self, robot: Any) -> None:
        """Warn where the data names frames or joints the URDF lacks (TF would break)."""
        frames = set(self.config['pose_frames'].values())
        frames |= {f'{c}_color_optical_frame' for c in self.config['cameras']}
        missing = sorted(frames - set(robot.links))
        if missing:
            self.warnings.append(f'{URDF}: no link for frame(s) {", ".join(missing)}')
        joints = sorted(set(self.config['joint_names'].values()) - set(robot.joints))
        if joints:
            self.warnings.append(f'{URDF}: no joint(s) {", ".join(joints)} for /joint_states')

    def _check_grippers(self, robot: Any) -> None:
        """Gripper values are radians (the encoder's ticks normalised) within the joint's limits.

        What is outside them is published as recorded (robot_state_publisher clamps
        nothing): `info` says FAIL, convert and play warn.
        """
        names: dict[str, str] = self.config['joint_names']
        for topic, by_name in sorted(self.gripper_values.items()):
            for name, values in sorted(by_name.items()):
                joint = robot.joints.get(names.get(name, name))
                limits = None if joint is None or joint.limits is None else \
                    (joint.limits.lower, joint.limits.upper)
                before = len(self.report.failures)
                checks.gripper_lines(self.report, names.get(name, name), topic,
                                     np.asarray(values, float), limits)
                self.warnings += [f'{self.bag.path.name}: {f}'
                                  for f in self.report.failures[before:]]

    def _scan(self) -> None:
        """One pass over the MCAP: every message's time, poses and pointers decoded.

        The bag is small (no images); what is learnt here lets each stream know
        its count and order without reading again, and lets a damaged file fail
        now rather than halfway through a conversion.
        """
        headered = {t: _has_header(ty) for t, ty in self.types.items()}
        pose_topics = set(self.config['pose_frames'])
        pointer_topics = {CAMERA_TOPIC.format(c) for c in self.config['cameras']}
        topics: list[str] = []
        stamps: list[int] = []
        self.pointers: dict[str, list[int]] = {t: [] for t in pointer_topics}
        self.video_stamps: dict[str, list[int]] = {t: [] for t in pointer_topics}
        self.first_pointer: dict[str, tuple[str, dict[str, str]]] = {}
        poses: dict[str, list[tuple[int, int, tuple[float, ...]]]] = {t: [] for t in pose_topics}
        tracking_topic = self.config['tracking_topic']
        status_texts: list[str] = []
        status_ns: list[int] = []
        gripper_topics = {GRIPPER_TOPIC.format(s) for s in ('left', 'right')}
        self.gripper_values: dict[str, dict[str, list[float]]] = {}
        for i, raw in enumerate(self.bag.messages()):
            topics.append(raw.topic)
            try:
                t = header_stamp(raw.data) if headered[raw.topic] else raw.log_time_ns
                if raw.topic in pose_topics:
                    poses[raw.topic].append((i, raw.log_time_ns,
                                             CdrReader(raw.data).pose_stamped()))
                elif raw.topic in pointer_topics:
                    self.pointers[raw.topic].append(self._pointer_stamp(raw))
                elif raw.topic == tracking_topic:
                    status_texts.append(CdrReader(raw.data).string())
                    status_ns.append(raw.log_time_ns)
                elif raw.topic in gripper_topics:
                    by_name = self.gripper_values.setdefault(raw.topic, {})
                    for name, value in _joint_positions(raw.data):
                        by_name.setdefault(name, []).append(value)
            except (struct.error, IndexError):
                raise DatasetFormatError(self.bag.path, f'message {i} on {raw.topic} is '
                                         'truncated') from None
            stamps.append(t)
        for topic, pointer_stamps in self.pointers.items():
            self._check_capture_order(topic, pointer_stamps)
        self.scan_topics = np.array(topics, dtype=object)
        self.scan_stamps = np.array(stamps, dtype=np.int64)
        self.t_min = int(self.scan_stamps.min()) if stamps else None
        self.t_max = int(self.scan_stamps.max()) if stamps else None
        # Policy: an invalid pose is one lost tracking sample, so it is dropped from /tf
        # (the recorded pose topics are still republished unchanged) and the episode plays.
        self.pose_rule = PoseRule(PosePolicy(
            float(self.config.get('max_quaternion_norm_error', 0.01))), self.warnings)
        self.bad_pose: set[int] = set()  # indices (in the scan) of unpublishable poses
        self.status: TrackingStatus | None = None
        if status_texts:
            self.status = read_status(status_texts, status_ns, self.bag.path, tracking_topic)
        else:
            self.report.skipped(f'no message on {tracking_topic}: pose validity not known, '
                                'every finite unit pose published')
        for topic, items in sorted(poses.items()):
            if items:
                values = np.array([v for _, _, v in items], float)
                ok = self.pose_rule.check(topic, values, self.bag.path,
                                          unit='message', where=' on /tf')
                if self.status is not None:
                    ok &= self._tracked(topic, np.array([n for _, n, _ in items]), values, ok)
                self.bad_pose.update(i for (i, _, _), good in zip(items, ok) if not good)

    def _tracked(self, topic: str, log_ns: np.ndarray, values: np.ndarray,
                 finite: np.ndarray) -> np.ndarray:
        """Mask of the poses the tracking status says are valid; counted and reported."""
        assert self.status is not None
        body = self.config['pose_bodies'][topic]
        gap_ns = int(float(self.config['max_status_gap_ms']) * 1e6)
        ok, why = pose_validity(self.status, body, log_ns, gap_ns)
        # counted here only where the norm rule has not already refused the pose
        dropped = int(np.sum(finite & ~ok))
        if dropped:
            self.pose_rule.counts[topic] = self.pose_rule.counts.get(topic, 0) + dropped
        checks.tracking_lines(self.report, topic, body, len(values), int(np.sum(finite & ok)),
                              dropped, why, invalid_pose_offsets(values[finite], ok[finite]))
        return ok

    def _check_capture_order(self, topic: str, stamps: list[int]) -> None:
        """Frame n is the n-th pointer: its capture times must strictly increase."""
        gaps = np.diff(np.asarray(stamps, dtype=np.int64))
        if len(gaps) and gaps.min() <= 0:
            i = int(np.argmax(gaps <= 0)) + 1
            how = ('repeats the header.stamp of the one before (a frame recorded twice?)'
                   if gaps[i - 1] == 0 else 'has a header.stamp that decreases')
            raise DatasetFormatError(self.bag.path, f'frame pointer {i} on {topic} {how}: '
                                     f'{stamps[i - 1]} then {stamps[i]} ns')

    def _document_types(self) -> dict[str, str]:
        types = {t: 'geometry_msgs/msg/PoseStamped' for t in self.config['pose_frames']}
        types.update({CAMERA_TOPIC.format(c): 'diagnostic_msgs/msg/DiagnosticStatus'
                      for c in self.config['cameras']})
        types.update({GRIPPER_TOPIC.format(s): 'sensor_msgs/msg/JointState'
                      for s in ('left', 'right')})
        return types

    def _pointer_stamp(self, raw: RawMessage) -> int:
        name, values = CdrReader(raw.data).diagnostic_status()
        self.first_pointer.setdefault(raw.topic, (name, values))
        what = f'frame pointer on {raw.topic} at log time {raw.log_time_ns}'
        if values.get('video.stamp', '').isdigit():
            self.video_stamps[raw.topic].append(int(values['video.stamp']))
        if 'header.stamp' not in values:
            raise DatasetFormatError(self.bag.path, f'{what} has no header.stamp value')
        return ns_value(values['header.stamp'], self.bag.path, f'{what}: header.stamp')

    def _camera(self, cam: str) -> _Camera:
        topic = CAMERA_TOPIC.format(cam)
        if topic not in self.types:
            raise DatasetFormatError(self.bag.path, f'no frame pointer topic {topic}')
        path = self.root / VIDEO.format(cam)
        info = video.probe(path)
        stamps = np.array(self.pointers[topic], dtype=np.int64)
        if info.frame_count != len(stamps):
            raise FrameSyncError(path, f'{info.frame_count} frames in the video but '
                                 f'{len(stamps)} frame pointers on {topic}')
        self._compare_pointer(topic, info)
        meta = read_camera_info(self.root / CAMERA_INFO.format(cam))
        self._check_calibrated_size(self.root / CAMERA_INFO.format(cam), meta, info)
        before = len(self.report.failures)
        checks.camera_lines(self.report, CAMERA_INFO.format(cam), list(meta['k']),
                            list(meta['p']))
        self.warnings += self.report.failures[before:]
        return _Camera(cam, info, stamps, meta)

    def _check_calibrated_size(self, path: Path, meta: dict[str, Any],
                               info: video.VideoInfo) -> None:
        """A calibration of another size than its video: rescaled when that is a clean scale.

        CameraInfo says the video's size (every Image must fit it), and K and P follow
        the pixels (ros/camera_info.py). That is only right when both axes scale alike;
        another aspect ratio means the calibration is of another image: refused.
        """
        w, h = int(meta['width']), int(meta['height'])
        if (w, h) == (info.width, info.height):
            return
        sx, sy = info.width / w, info.height / h
        # a clean scale up to one pixel's rounding of the smaller side
        if abs(sx - sy) > max(sx, sy) / min(info.width, info.height):
            raise DatasetFormatError(path, f'calibrated at {w}x{h}, but {info.path} is '
                                     f'{info.width}x{info.height}: another aspect ratio, so K '
                                     'cannot be rescaled to the video')
        self.warnings.append(f'{path.name}: calibrated at {w}x{h}, {info.path.name} is '
                             f'{info.width}x{info.height}: K and P scaled by {sx:.6g} to the '
                             'video')

    def _compare_pointer(self, topic: str, info: video.VideoInfo) -> None:
        """Warn where the pointers describe another file or size than the video's."""
        if topic not in self.first_pointer:
            return
        name, values = self.first_pointer[topic]
        if name != info.path.name:
            self.warnings.append(f'{topic}: frame pointers name {name!r}, '
                                 f'read from {info.path.name}')
        size = (values.get('width'), values.get('height'))
        if size != (str(info.width), str(info.height)):
            self.warnings.append(f'{topic}: frame pointers say {size[0]}x{size[1]}, '
                                 f'{info.path.name} is {info.width}x{info.height}')

    def _annotations(self) -> Stream:
        system = self.root / 'meta' / 'system'
        items: list[tuple[int, str]] = []
        ann = read_yaml(system / 'annotation.yaml', required=False) or {}
        for e in _entries(ann, 'annotations', system / 'annotation.yaml'):
            t = _time_ns(e.get('time'), system / 'annotation.yaml')
            items.append((t, json.dumps({'type': 'label', 'label': str(e.get('annotation')),
                                         'time_ns': t, 'source': 'annotation.yaml'})))
        flags = read_yaml(system / 'flag.yaml', required=False) or {}
        for e in _entries(flags, 'flags', system / 'flag.yaml'):
            t = _time_ns(e.get('time'), system / 'flag.yaml')
            items.append((t, json.dumps({'type': 'flag', 'reason': str(e.get('reason')),
                                         'time_ns': t, 'source': 'flag.yaml'})))
        items.sort(key=lambda x: x[0])
        self._annotation_items = items

        def gen() -> Iterator[tuple[int, Any]]:
            for t, text in items:
                yield t, String(data=text)
        return Stream('/annotations', 'std_msgs/msg/String', gen, count=len(items),
                      approx_bytes=200)

    # -- streams --------------------------------------------------------------------------
    def _scan_mask(self, topics: Sequence[str]) -> np.ndarray:
        return np.isin(self.scan_topics, list(topics))

    def _ordered_raw(self, topics: Sequence[str]
                     ) -> Callable[[], Iterator[tuple[int, RawMessage]]]:
        mask = self._scan_mask(topics)
        stamps = self.scan_stamps[mask]
        bag = self.bag

        def gen() -> Iterator[tuple[int, RawMessage]]:
            return in_stamp_order(bag.messages(topics), stamps)
        return gen

    def _recorded(self) -> list[Stream]:
        streams = []
        for topic, msg_type in sorted(self.types.items()):
            mask = self._scan_mask([topic])
            stamps = self.scan_stamps[mask]
            # The pose rule holds here too: an invalid pose is never published,
            # not even as the recorded message.
            good = ~np.isin(np.flatnonzero(mask), list(self.bad_pose))

            def gen(topic: str = topic, stamps: np.ndarray = stamps, good: np.ndarray = good,
                    ) -> Iterator[tuple[int, Any]]:
                # Unchanged: the recorded CDR bytes themselves.
                flagged = zip(self.bag.messages([topic]), good)
                for t, (raw, ok) in in_stamp_order(flagged, stamps):
                    if ok:
                        yield t, bytes(raw.data)
            streams.append(Stream(topic, msg_type, gen, count=int(good.sum()),
                                  approx_bytes=300))
        return streams

    def _tf(self) -> Stream:
        frames: dict[str, str] = self.config['pose_frames']
        topics = [t for t in frames if t in self.types]
        mask = self._scan_mask(topics)
        keep = mask.copy()
        keep[list(self.bad_pose)] = False
        stamps = self.scan_stamps[keep]
        skip = set(np.flatnonzero(~keep[mask]).tolist())  # k-th pose message, rejected
        bag = self.bag

        def gen() -> Iterator[tuple[int, Any]]:
            def good() -> Iterator[Any]:
                # The same scan order as _scan, so its indices mark the bad poses.
                for k, raw in enumerate(bag.messages(topics)):
                    if k not in skip:
                        yield raw.topic, deserialize_message(raw.data,
                                                             message_class(raw.schema_name))
            for t, (topic, msg) in in_stamp_order(good(), stamps):
                p, q = msg.pose.position, msg.pose.orientation
                yield t, tf_message([transform_stamped(
                    msg.header.frame_id, frames[topic], t, (p.x, p.y, p.z),
                    (q.x, q.y, q.z, q.w))])
        return Stream('/tf', 'tf2_msgs/msg/TFMessage', gen, count=int(keep.sum()),
                      approx_bytes=150)

    def _joint_states(self) -> Stream:
        names: dict[str, str] = self.config['joint_names']
        topics = [t for t in (GRIPPER_TOPIC.format('left'), GRIPPER_TOPIC.format('right'))
                  if t in self.types]
        raw_iter = self._ordered_raw(topics)

        def gen() -> Iterator[tuple[int, Any]]:
            for t, raw in raw_iter():
                msg: Any = deserialize_message(raw.data, message_class(raw.schema_name))
                msg.name = [names.get(n, n) for n in msg.name]
                yield t, msg
        return Stream('/joint_states', 'sensor_msgs/msg/JointState', gen,
                      count=int(self._scan_mask(topics).sum()), approx_bytes=100)

    def _tracking_streams(self) -> list[Stream]:
        """The status's input block as sensor_msgs/Joy, each body's velocity as TwistStamped.

        Stamped with the status's log time (a String has no header); in the status's
        reference space, `tracking_frame`. Velocities the status flags as not valid
        are not published.
        """
        status = self.status
        if status is None:
            return []
        frame = str(self.config['tracking_frame'])

        def joy() -> Iterator[tuple[int, Any]]:
            for t, axes, buttons, touches in zip(status.log_ns.tolist(), status.axes,
                                                 status.buttons, status.touches):
                msg = Joy(axes=[float(a) for a in axes],
                          buttons=mask_bits(buttons) + mask_bits(touches))
                msg.header.stamp, msg.header.frame_id = stamp(t), frame
                yield t, msg
        streams = [Stream(JOY_TOPIC, 'sensor_msgs/msg/Joy', joy, count=len(status.log_ns),
                          approx_bytes=400)]
        checks.mask_lines(self.report, JOY_TOPIC, status.buttons, status.touches)

        for body in BODIES:
            def twist(body: str = body) -> Iterator[tuple[int, Any]]:
                values, ok = status.twist[body], status.twist_ok[body]
                for i in np.flatnonzero(ok).tolist():
                    t = int(status.log_ns[i])
                    msg = TwistStamped()
                    msg.header.stamp, msg.header.frame_id = stamp(t), frame
                    v = values[i].tolist()
                    lin, ang = msg.twist.linear, msg.twist.angular
                    lin.x, lin.y, lin.z, ang.x, ang.y, ang.z = v
                    yield t, msg
            streams.append(Stream(TWIST_TOPIC.format(body), 'geometry_msgs/msg/TwistStamped',
                                  twist, count=int(status.twist_ok[body].sum()),
                                  approx_bytes=120))
        return streams

    def _camera_streams(self, cam: _Camera) -> list[Stream]:
        return video_camera_streams(cam.video, cam.stamps, f'/{cam.name}',
                                    f'{cam.name}_color_optical_frame', cam.meta,
                                    image_scale=self.options.image_scale)


def _joint_positions(data: bytes) -> list[tuple[str, float]]:
    """(name, position) pairs of a sensor_msgs/JointState's CDR, without rclpy."""
    r = CdrReader(data)
    r.pos = 8  # header.stamp
    r.string()  # header.frame_id
    names = [r.string() for _ in range(r.u32())]
    positions = r.doubles(r.u32())
    return list(zip(names, positions))


def _entries(doc: Any, key: str, path: Path) -> list[dict[str, Any]]:
    if doc is None:
        return []
    if not isinstance(doc, dict):
        raise DatasetFormatError(path, f'expected a mapping with {key!r}')
    entries = doc.get(key)
    if entries is None:  # '~' when the episode has none
        return []
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise DatasetFormatError(path, f'{key!r} must be a list of {{time, ...}} entries')
    return entries


def _time_ns(value: Any, path: Path) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DatasetFormatError(path, f'time {value!r} is not a number')
    # The document says ns since epoch; a value this small can only be seconds.
    if abs(value) < 1e11:
        return check_ns(seconds_to_ns(value, path, f'time {value!r}'), path, f'time {value!r}')
    return ns_value(value, path, 'time')


# A folder of episodes may group them (by day, by operator): ROOT/<episode>/ and
# ROOT/<group>/<episode>/ are searched, nothing deeper.
SEARCH_DEPTH = 2


def find_episodes(root: Path) -> list[EpisodeRef] | None:
    """Every UMI episode folder of a folder of episodes, sorted by path; None: not one.

    `root` itself an episode folder gives that one episode (its id: the folder's
    name). Otherwise the episode folders ROOT/<episode>/ and ROOT/<group>/<episode>/
    (SEARCH_DEPTH), their id the path below ROOT; an episode's own folders and
    hidden folders are never searched. A UMI episode is self-contained: its
    sources are its own files only.
    """
    root = Path(root)
    if UmiAdapter.probe(root):
        return [_ref(root, root.resolve().name or 'episode')]
    found = sorted(_episode_folders(root, SEARCH_DEPTH))
    if not found:
        return None
    return [_ref(p, p.relative_to(root).as_posix()) for p in found]


def _episode_folders(folder: Path, depth: int) -> list[Path]:
    try:
        children = [c for c in folder.iterdir() if c.is_dir() and not c.name.startswith('.')]
    except OSError:  # unreadable: not an episode folder of ours, never an error
        return []
    found = []
    for child in children:
        if UmiAdapter.probe(child):
            found.append(child)
        elif depth > 1:
            found += _episode_folders(child, depth - 1)
    return found


def _ref(folder: Path, episode_id: str) -> EpisodeRef:
    cams = KIND.config()['cameras']
    files = [folder / 'data' / 'episode.mcap', *(folder / VIDEO.format(c) for c in cams),
             *(folder / CAMERA_INFO.format(c) for c in cams), folder / URDF,
             *(folder / rel for rel in ANNOTATIONS)]
    return EpisodeRef(id=episode_id, path=folder,
                      sources=tuple(p for p in files if p.is_file()))


__all__ = ['KIND', 'UmiAdapter', 'find_episodes']
