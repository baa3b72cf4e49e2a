"""A synthetic UMI gripper episode, faithful to the dataset's format document.

Layout, topics, types, rates and the video-sync scheme are the document's;
motion and pictures are invented. Each video frame shows its own index as a
4x4 grid of black/white blocks (bit 0 top left, row-major) in the top half,
so a test can tell frame n from frame n+1 after lossy H.264.
"""
from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import yaml
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped
from mcap.writer import CompressionType, Writer
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from react_ros.errors import SinkError
from react_ros.formats.x264 import x264_options
from react_ros.ros.msgs import definition_text, stamp
from react_ros.ros.serialization import cdr_payload
from react_ros.samples.writing import write_sample
from react_ros.output import check_stop

CAMERAS = ('left', 'center', 'right')
CALIB_SIZE = (1920, 1200)
# Saturday 2024-06-15 10:00:00 UTC: the dataset keeps absolute capture time.
EPOCH_NS = 1_718_445_600_000_000_000
POSE_HZ, GRIPPER_HZ, CAMERA_HZ = 70.0, 200.0, 60.0
PATTERN_BITS = 16  # 4x4 blocks: frame indices up to 65535 (18 min at 60 Hz)
TASK = 'pick up the cup and place it on the plate'
FRAME_DROP_REASON = 'frame drop'
VERSION = '1.0.0'
# Where the tracker lost a body (fractions of the episode, and what it lost). The pose
# topics keep logging through a loss with what the headset reports then: the position at
# the reference origin, or a flipped orientation: finite unit quaternions that only the
# tracking status says are not valid (the pitfall the adapter must not miss).
TRACKING_LOSSES = {'left_aim': (0.30, 0.40, 'position'), 'right_aim': (0.55, 0.65, 'orientation'),
                   'head': (0.80, 0.86, 'both')}
POSE_BODY = {'center': 'head', 'left': 'left_aim', 'right': 'right_aim'}
BODIES = ('head', 'left_grip', 'left_aim', 'right_grip', 'right_aim')
LOST_ORIENTATION = (0.0, 1.0, 0.0, 0.0)  # upside down: x, y, z, w

POSE_TOPIC = '/{}/perception_interface/pose/state'
GRIPPER_TOPIC = '/{}/perception_interface/gripper/state'
CAMERA_TOPIC = '/{}/perception_interface/camera/state'
TRACKING_TOPIC = '/tracking/meta_interface/tracking_status/state'
VIDEO_NAME = '{}.perception_interface.camera.state.mp4'
_QOS = ('- history: 3\n  depth: 0\n  reliability: 1\n  durability: 2\n'
        '  deadline:\n    sec: 9223372036\n    nsec: 854775807\n'
        '  lifespan:\n    sec: 9223372036\n    nsec: 854775807\n  liveliness: 1\n'
        '  liveliness_lease_duration:\n    sec: 9223372036\n    nsec: 854775807\n'
        '  avoid_ros_namespace_conventions: false\n')


def frame_index_bits(index: int) -> list[int]:
    return [(index >> b) & 1 for b in range(PATTERN_BITS)]


def read_frame_index(rgb: np.ndarray) -> int:
    """Inverse of the pattern drawn by the generator (any scale)."""
    h, w = rgb.shape[:2]
    index = 0
    for b in range(PATTERN_BITS):
        r, c = divmod(b, 4)
        y0, y1 = r * h // 8, (r + 1) * h // 8
        x0, x1 = c * w // 4, (c + 1) * w // 4
        my, mx = (y1 - y0) // 4, (x1 - x0) // 4  # read the cell's middle only
        cell = rgb[y0 + my:y1 - my, x0 + mx:x1 - mx]
        if cell.mean() > 127:
            index |= 1 << b
    return index


class _Scene:
    """Camera-like frames: a textured scene panning under the camera, sensor noise,
    and the frame index drawn as 4x4 bright/dark cells in the top half.

    Flat synthetic frames decode several times faster than footage, which would
    make the playback benchmark measure the wrong bottleneck; texture, motion
    and noise give the decoder a real camera's work.
    """

    def __init__(self, w: int, h: int, seed: int, cam: str) -> None:
        rng = np.random.default_rng(seed)
        self.w, self.h = w, h
        self.pan = max(8, w // 8)
        tint = np.array({'left': (1.0, 0.7, 0.6), 'center': (0.7, 1.0, 0.7),
                         'right': (0.6, 0.7, 1.0)}[cam], np.float32)
        # Coarse blobs plus fine grain, like a cluttered table seen by a fisheye.
        coarse: np.ndarray = rng.uniform(
            0, 1, ((h + self.pan) // 16 + 2, (w + self.pan) // 16 + 2, 1))
        coarse = np.kron(coarse, np.ones((16, 16, 1)))[:h + self.pan, :w + self.pan]
        fine = rng.uniform(0, 1, (h + self.pan, w + self.pan, 1))
        self.texture = ((0.7 * coarse + 0.3 * fine) * 200 * tint).astype(np.uint8)
        self.noise = [rng.integers(0, 6, (h, w, 3), dtype=np.uint8) for _ in range(4)]

    def frame(self, n: int) -> np.ndarray:
        w, h, pan = self.w, self.h, self.pan
        dx = int((pan - 1) * (0.5 + 0.5 * math.sin(n / 40.0)))
        dy = int((pan - 1) * (0.5 + 0.5 * math.cos(n / 55.0)))
        img = self.texture[dy:dy + h, dx:dx + w].copy()
        img += self.noise[n % 4]
        # Index cells keep their texture but stay dark (<= 51) or bright (>= 180).
        for b, bit in enumerate(frame_index_bits(n)):
            r, c = divmod(b, 4)
            cell = img[r * h // 8:(r + 1) * h // 8, c * w // 4:(c + 1) * w // 4]
            np.right_shift(cell, 2, out=cell)
            if bit:
                cell += 180
        return img


def write_umi_sample(out_dir: Path, *, seed: int = 0, duration_s: float = 3.0,
                     width: int = 1920, height: int = 1200, episodes: int | None = None) -> Path:
    """Write one episode folder at `out_dir` and return it.

    Written under a temporary name and renamed at the end, so an interrupted
    run leaves no half episode behind. The calibration is written for the
    video resolution (scaled from a 1920x1200 one) so the two agree.
    `episodes=N` writes a folder of N episodes instead, `episodeNNNN/` as the
    dataset names them, episode k with seed + k (an hour later each).
    """
    if episodes is not None and episodes < 1:
        raise SinkError(f'{out_dir}: a release holds at least one episode, got {episodes}')

    def write(tmp: Path) -> None:
        if episodes is None:
            _Episode(tmp, seed, duration_s, width, height).write()
        for k in range(episodes or 0):
            _Episode(tmp / f'episode{k:04d}', seed + k, duration_s, width, height).write()
    return write_sample(out_dir, duration_s, (width, height), 0.1, (16, 16), write)


class _Episode:
    def __init__(self, root: Path, seed: int, duration_s: float, width: int, height: int):
        self.root = root
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.duration_ns = int(duration_s * 1e9)
        self.size = (width, height)
        self.start_ns = EPOCH_NS + seed * 3_600_000_000_000 + int(self.rng.integers(0, 10**9))
        self.messages: list[tuple[int, str, Any, int]] = []  # (log, topic, msg, publish)
        self.flags: list[dict[str, Any]] = []

    def write(self) -> None:
        (self.root / 'data').mkdir(parents=True)
        for sub in ('sensor', 'scene', 'system'):
            (self.root / 'meta' / sub).mkdir(parents=True)
        (self.root / '.__version__').write_text(VERSION + '\n')
        self._poses_and_tracking()
        self._grippers()
        drop_cam = CAMERAS[int(self.rng.integers(0, 3))]
        for cam in CAMERAS:
            stamps = self._camera_stamps(cam, drop=cam == drop_cam)
            self._pointers(cam, stamps)
            self._video(cam, stamps)
            self._camera_info(cam)
        counts = self._mcap()
        self._meta(counts)
        (self.root / 'meta/scene/robot_description.urdf').write_text(robot_description_urdf())

    # -- motion ---------------------------------------------------------------------------
    def _times(self, hz: float, jitter: float) -> np.ndarray:
        period = 1e9 / hz
        n = int(self.duration_ns / period) + 1
        offsets = np.arange(n) * period + self.rng.normal(0, jitter * period, n)
        offsets[0] = self.rng.uniform(0, period)
        # Offsets in float, the epoch in int: float64 alone would round to 256 ns.
        return self.start_ns + np.maximum.accumulate(offsets.astype(np.int64))

    def _latency(self) -> int:
        return int(self.rng.uniform(0.5e6, 3e6))

    def _poses_and_tracking(self) -> None:
        t = self._times(POSE_HZ, 0.05)
        s = (t - self.start_ns) / 1e9
        ph = self.rng.uniform(0, 2 * math.pi, 6)
        # (position, its sway in m, orientation as fixed-axis roll/pitch/yaw, their sway):
        # a person standing at a table, head bent down at the hands (the head camera
        # looks at the workspace), grippers held over it pointing forward and down.
        bodies = {
            'center': ([0.0, 0.0, 1.55], 0.03, [0.0, 0.9, 0.0], [0.05, 0.1, 0.12]),
            'left': ([0.42, 0.2, 1.0], 0.08, [0.0, 0.5, 0.0], [0.2, 0.2, 0.25]),
            'right': ([0.42, -0.2, 1.0], 0.08, [0.0, 0.5, 0.0], [0.2, 0.2, 0.25]),
        }
        for k, (cam, (base, amp, tilt, ang)) in enumerate(bodies.items()):
            pos = np.stack([base[i] + amp * np.sin(2 * math.pi * (0.3 + 0.1 * i) * s + ph[k + i])
                            for i in range(3)], axis=1)
            euler = np.stack([tilt[i] + ang[i] * np.sin(2 * math.pi * (0.2 + 0.07 * i) * s
                                                        + ph[i + k])
                              for i in range(3)], axis=1)
            quat = Rotation.from_euler('xyz', euler).as_quat()  # x, y, z, w
            lost_pos, lost_rot = self._lost(POSE_BODY[cam], s)
            pos[lost_pos] = 0.0
            quat[lost_rot] = LOST_ORIENTATION
            for ti, p, q in zip(t, pos, quat):
                msg = PoseStamped()
                msg.header.stamp = stamp(int(ti))
                msg.header.frame_id = 'quest_origin'
                msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, p)
                o = msg.pose.orientation
                o.x, o.y, o.z, o.w = map(float, q)
                self._add(int(ti) + self._latency(), POSE_TOPIC.format(cam), msg)
        for seq, (ti, si) in enumerate(zip(t, s)):
            self._add(int(ti) + self._latency(), TRACKING_TOPIC,
                      String(data=json.dumps(self._tracking(seq, float(si)),
                                             separators=(',', ':'))))

    def _lost(self, body: str, s: np.ndarray | float) -> tuple[Any, Any]:
        """(position lost, orientation lost) of a body at times s (seconds into the episode)."""
        # a grip pose is tracked by the same controller as its aim pose
        start, end, what = TRACKING_LOSSES.get(body.replace('_grip', '_aim'), (0, 0, ''))
        frac = np.asarray(s) * 1e9 / self.duration_ns
        lost = (frac >= start) & (frac < end)
        return lost & (what in ('position', 'both')), lost & (what in ('orientation', 'both'))

    def _tracking(self, seq: int, s: float) -> dict[str, Any]:
        def body(name: str) -> dict[str, Any]:
            pos_lost, rot_lost = (bool(v) for v in self._lost(name, s))
            # OpenXR's XrSpaceLocationFlags / XrSpaceVelocityFlags bits, as the headset logs
            flags = (0 if rot_lost else 1 | 4) | (0 if pos_lost else 2 | 8)
            lin = [round(float(v), 4) for v in self.rng.normal(0, 0.05, 3)]
            ang = [round(float(v), 4) for v in self.rng.normal(0, 0.1, 3)]
            lost = pos_lost or rot_lost
            return {'state': 'not_tracked' if lost else 'tracked',
                    'position_valid': not pos_lost, 'orientation_valid': not rot_lost,
                    'position_tracked': not pos_lost, 'orientation_tracked': not rot_lost,
                    'location_flags': flags, 'velocity_flags': 0 if lost else 3,
                    'linear_velocity': [0.0] * 3 if lost else lin,
                    'angular_velocity': [0.0] * 3 if lost else ang}
        doc: dict[str, Any] = {'stale': False, 'session_id': f'session-{self.seed:04d}',
                               'sequence': seq, 'frame_index': seq, 'sequence_gap': 0,
                               'reference_space': 'local_floor'}
        for name in BODIES:
            doc[name] = body(name)
        frac = s * 1e9 / self.duration_ns
        # Buttons and touches are bitmasks: two buttons held at once read 5, not 2.
        buttons = (1 if 0.2 <= frac < 0.5 else 0) | (4 if 0.4 <= frac < 0.7 else 0)
        touches = (1 if 0.1 <= frac < 0.6 else 0) | (2 if 0.5 <= frac < 0.9 else 0)
        wave = 0.5 + 0.5 * math.sin(2 * math.pi * 0.5 * s)
        doc['input'] = {'left_index_trigger': round(wave, 4),
                        'left_grip_trigger': round(1.0 - wave, 4),
                        'right_index_trigger': round(wave * wave, 4),
                        'right_grip_trigger': 1.0 if frac >= 0.5 else 0.0,
                        'left_joystick': [round(0.5 * math.cos(s), 4),
                                          round(0.5 * math.sin(s), 4)],
                        'right_joystick': [round(-0.3 * math.sin(s), 4), 0.0],
                        'buttons': buttons, 'touches': touches}
        return doc

    def _grippers(self) -> None:
        t = self._times(GRIPPER_HZ, 0.05)
        s = (t - self.start_ns) / 1e9
        for k, side in enumerate(('left', 'right')):
            # Opening angle in radians from a 14-bit encoder: 2*pi / 16384 per tick.
            angle = 0.35 + 0.3 * np.sin(2 * math.pi * 0.4 * s + k)
            ticks = np.clip(np.round(angle / (2 * math.pi) * 16384), 0, 16383)
            for ti, tick in zip(t, ticks):
                msg = JointState()
                msg.header.stamp = stamp(int(ti))
                msg.name = [f'{side}_gripper']
                msg.position = [float(tick) * 2 * math.pi / 16384]
                self._add(int(ti) + self._latency(), GRIPPER_TOPIC.format(side), msg)

    # -- cameras --------------------------------------------------------------------------
    def _camera_stamps(self, cam: str, drop: bool) -> list[int]:
        period = 1e9 / CAMERA_HZ
        gaps = np.clip(self.rng.normal(period, 0.04 * period, int(self.duration_ns / period)),
                       0.85 * period, 1.15 * period)
        i = len(gaps) // 2
        if drop:
            # A frame the camera failed to deliver: one gap spans two periods.
            gaps[i] += period
        t0 = self.start_ns + 2_000_000 + int(self.rng.uniform(0, 4e6))
        stamps = t0 + np.concatenate([[0], np.cumsum(gaps)]).astype(np.int64)
        if drop:
            self.flags.append({'time': int(stamps[i] + period), 'reason': FRAME_DROP_REASON,
                               'camera': cam})
        return [int(v) for v in stamps if v < self.start_ns + self.duration_ns]

    def _pointers(self, cam: str, stamps: list[int]) -> None:
        w, h = self.size
        for ts in stamps:
            msg = DiagnosticStatus()
            msg.level = DiagnosticStatus.OK
            msg.name = VIDEO_NAME.format(cam)
            msg.hardware_id = f'{cam}_camera'
            msg.values = [KeyValue(key='header.stamp', value=str(ts)),
                          KeyValue(key='video.stamp', value=str((ts - stamps[0]) // 1000)),
                          KeyValue(key='height', value=str(h)),
                          KeyValue(key='width', value=str(w)),
                          KeyValue(key='encoding', value='uyvy'),
                          KeyValue(key='is_bigendian', value='false')]
            self._add(ts + self._latency() + 4_000_000, CAMERA_TOPIC.format(cam), msg)

    def _video(self, cam: str, stamps: list[int]) -> None:
        w, h = self.size
        scene = _Scene(w, h, self.seed * 3 + CAMERAS.index(cam), cam)
        path = self.root / 'data' / VIDEO_NAME.format(cam)
        with av.open(str(path), mode='w') as container:
            # No B-frames, as a camera's live encoder writes them (nothing reordered):
            # so --images h264 passes these videos through.
            stream = container.add_stream('libx264', rate=60, options=x264_options({
                'preset': 'veryfast', 'crf': '18', 'bf': '0'}))
            stream.width, stream.height, stream.pix_fmt = w, h, 'yuv420p'
            # Microsecond PTS (the pointers' video.stamp) make the container VFR.
            stream.time_base = Fraction(1, 1_000_000)
            stream.codec_context.time_base = Fraction(1, 1_000_000)
            for n, ts in enumerate(stamps):
                check_stop()
                frame = av.VideoFrame.from_ndarray(scene.frame(n), format='rgb24')
                frame.pts = (ts - stamps[0]) // 1000
                frame.time_base = Fraction(1, 1_000_000)
                container.mux(stream.encode(frame))
            container.mux(stream.encode(None))

    def _camera_info(self, cam: str) -> None:
        w, h = self.size
        sx, sy = w / CALIB_SIZE[0], h / CALIB_SIZE[1]
        i = CAMERAS.index(cam)
        fx, fy = (915.0 + 7 * i) * sx, (913.5 + 7 * i) * sy
        cx, cy = (961.2 - 3 * i) * sx, (598.7 + 2 * i) * sy
        info = {'width': w, 'height': h, 'distortion_model': 'plumb_bob',
                'd': [-0.0412 + 0.002 * i, 0.0127, 0.0003, -0.0002, -0.0021],
                'k': [fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0],
                'r': [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
                'p': [fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0]}
        path = self.root / f'meta/sensor/{cam}.metadata_interface.camera_info.meta.yaml'
        path.write_text(yaml.safe_dump(info, sort_keys=False))

    # -- files ----------------------------------------------------------------------------
    def _add(self, log_ns: int, topic: str, msg: Any) -> None:
        self.messages.append((log_ns, topic, msg, log_ns))

    def _mcap(self) -> dict[str, tuple[str, int]]:
        self.messages.sort(key=lambda m: m[0])
        types: dict[str, str] = {}
        counts: dict[str, tuple[str, int]] = {}
        with (self.root / 'data/episode.mcap').open('wb') as f:
            writer = Writer(f, compression=CompressionType.ZSTD)
            writer.start(profile='ros2', library='react_ros sample')
            schemas: dict[str, int] = {}
            channels: dict[str, int] = {}
            for log_ns, topic, msg, pub_ns in self.messages:
                if topic not in channels:
                    mod = type(msg).__module__.split('.')[0]
                    msg_type = f'{mod}/msg/{type(msg).__name__}'
                    types[topic] = msg_type
                    if msg_type not in schemas:
                        schemas[msg_type] = writer.register_schema(
                            msg_type, 'ros2msg', definition_text(msg_type).encode())
                    channels[topic] = writer.register_channel(
                        topic, 'cdr', schemas[msg_type], {'offered_qos_profiles': _QOS})
                msg_type = types[topic]
                name, n = counts.get(topic, (msg_type, 0))
                counts[topic] = (name, n + 1)
                # padding zeroed: a seed gives the same file
                writer.add_message(channels[topic], log_ns, bytes(cdr_payload(msg)), pub_ns,
                                   sequence=n)
            writer.finish()  # type: ignore[no-untyped-call]
        return counts

    def _meta(self, counts: dict[str, tuple[str, int]]) -> None:
        w, h = self.size
        first, last = self.messages[0][0], self.messages[-1][0]
        mcap_info = {'rosbag2_bagfile_information': {
            'version': 5, 'storage_identifier': 'mcap',
            'duration': {'nanoseconds': last - first},
            'starting_time': {'nanoseconds_since_epoch': first},
            'message_count': len(self.messages),
            'topics_with_message_count': [
                {'topic_metadata': {'name': topic, 'type': msg_type,
                                    'serialization_format': 'cdr',
                                    'offered_qos_profiles': _QOS},
                 'message_count': n} for topic, (msg_type, n) in sorted(counts.items())],
            'compression_format': '', 'compression_mode': '',
            'relative_file_paths': ['episode.mcap'],
            'files': [{'path': 'episode.mcap', 'starting_time':
                       {'nanoseconds_since_epoch': first},
                       'duration': {'nanoseconds': last - first},
                       'message_count': len(self.messages)}]}}
        system = self.root / 'meta/system'
        (system / 'mcap.yaml').write_text(yaml.safe_dump(mcap_info, sort_keys=False))
        encoder = {cam: {'lib': 'libx264', 'codec': 'h264', 'container': 'mp4',
                         'settings': {'preset': 'veryfast', 'crf': 18, 'bf': 0,
                                      'pix_fmt': 'yuv420p',
                                      'time_base': '1/1000000', 'variable_frame_rate': True},
                         'input_encoding': 'uyvy', 'width': w, 'height': h, 'fps': 60,
                         'note': (f'synthetic sample written at {w}x{h}; calibration in '
                                  'meta/sensor is scaled from 1920x1200 to match')}
                   for cam in CAMERAS}
        (system / 'video_encoder.yaml').write_text(yaml.safe_dump(encoder, sort_keys=False))
        ann = {'annotations': [{'time': first, 'annotation': TASK}]}
        (system / 'annotation.yaml').write_text(yaml.safe_dump(ann, sort_keys=False))
        flags = [{'time': f['time'], 'reason': f['reason']} for f in self.flags]
        (system / 'flag.yaml').write_text(
            yaml.safe_dump({'flags': flags}, sort_keys=False) if flags else 'flags: ~\n')
        devices: dict[str, Any] = {}
        for cam in CAMERAS:
            devices[f'{cam}_camera'] = {
                'type': 'sensor_msgs/msg/Image', 'interface': CAMERA_TOPIC.format(cam),
                'frame': f'{cam}_color_optical_frame', 'frequency': CAMERA_HZ}
            devices[f'{cam}_pose'] = {
                'type': 'geometry_msgs/msg/PoseStamped', 'interface': POSE_TOPIC.format(cam),
                'frame': 'quest_origin', 'frequency': POSE_HZ}
        for side in ('left', 'right'):
            devices[f'{side}_gripper'] = {
                'type': 'sensor_msgs/msg/JointState', 'interface': GRIPPER_TOPIC.format(side),
                'frame': f'{side}_base_link', 'frequency': GRIPPER_HZ}
        devices['tracking_status'] = {'type': 'std_msgs/msg/String', 'interface': TRACKING_TOPIC,
                                      'frame': 'quest_origin', 'frequency': POSE_HZ}
        (self.root / 'meta/scene/workcell_description.yaml').write_text(
            yaml.safe_dump({'workcell': 'umi_gripper_sample', 'devices': devices},
                           sort_keys=False))


# -- URDF ---------------------------------------------------------------------------------
def _inertial(mass: float, size: tuple[float, float, float]) -> str:
    x, y, z = size
    ixx, iyy, izz = (mass * (b * b + c * c) / 12 for b, c in ((y, z), (x, z), (x, y)))
    return (f'    <inertial><mass value="{mass}"/><origin xyz="0 0 0" rpy="0 0 0"/>'
            f'<inertia ixx="{ixx:.6g}" ixy="0" ixz="0" iyy="{iyy:.6g}" iyz="0" izz="{izz:.6g}"/>'
            '</inertial>\n')


def _link(name: str, box: tuple[float, float, float] | None = None, mass: float = 0.05,
          rgba: str = '0.6 0.6 0.6 1', cylinder: tuple[float, float] | None = None,
          at: str = '0 0 0') -> str:
    if box is not None:
        geom, extent = f'<box size="{box[0]} {box[1]} {box[2]}"/>', box
    elif cylinder is not None:
        radius, length = cylinder
        geom = f'<cylinder radius="{radius}" length="{length}"/>'
        extent = (2 * radius, 2 * radius, length)
    else:
        return f'  <link name="{name}"/>\n'
    return (f'  <link name="{name}">\n' + _inertial(mass, extent)
            + f'    <visual><origin xyz="{at}" rpy="0 0 0"/><geometry>{geom}</geometry>'
            f'<material name="{name}_material"><color rgba="{rgba}"/></material></visual>\n'
            f'    <collision><origin xyz="{at}" rpy="0 0 0"/><geometry>{geom}</geometry>'
            '</collision>\n  </link>\n')


def _joint(name: str, kind: str, parent: str, child: str, xyz: str = '0 0 0',
           rpy: str = '0 0 0', extra: str = '') -> str:
    return (f'  <joint name="{name}" type="{kind}">\n    <parent link="{parent}"/>'
            f'<child link="{child}"/>\n    <origin xyz="{xyz}" rpy="{rpy}"/>\n{extra}  </joint>\n')


_OPTICAL_RPY = f'{-math.pi / 2:.6f} 0 {-math.pi / 2:.6f}'  # x fwd/z up -> z fwd/y down


def _optical_rpy(pitch_down: float) -> str:
    """URDF rpy of an optical frame (z forward, y down) on a link, tilted `pitch_down` rad."""
    r = Rotation.from_euler('y', pitch_down) * Rotation.from_euler('xyz', [-math.pi / 2, 0,
                                                                          -math.pi / 2])
    return ' '.join(f'{v:.6f}' for v in r.as_euler('xyz'))


# The gripper as the rig builds it: the camera on top of the base link, behind the finger
# pivots and tilted down, so the fingers and the ArUco tags between their tips (the frame
# the camera detects them in) are in its view, about 0.1 m ahead and a little below.
GRIPPER_CAMERA_XYZ, GRIPPER_CAMERA_PITCH = '-0.03 0 0.055', 0.35
FINGER_PIVOT_X, FINGER_PIVOT_Y, FINGER_LENGTH = 0.06, 0.025, 0.09
ARUCO_XYZ = '0.11 0 0'


def robot_description_urdf() -> str:
    """Return the document's TF tree as URDF, simple geometry (no mesh files)."""
    parts = ['<?xml version="1.0"?>\n<robot name="umi_gripper_rig">\n',
             _link('world'), _link('quest_origin'),
             _joint('world_to_quest_origin', 'fixed', 'world', 'quest_origin'),
             _link('quest_hmd', box=(0.1, 0.19, 0.11), mass=0.5, rgba='0.15 0.15 0.15 1'),
             _joint('quest_origin_to_quest_hmd', 'floating', 'quest_origin', 'quest_hmd')]
    for i, y in enumerate((0.045, -0.045)):
        parts += [_link(f'quest_camera_{i}'),
                  _joint(f'quest_hmd_to_quest_camera_{i}', 'fixed', 'quest_hmd',
                         f'quest_camera_{i}', xyz=f'0.05 {y} 0.0',
                         rpy=f'0 {0.35:.2f} {0.6 if y > 0 else -0.6:.2f}')]
    parts += [_link('center_color_optical_frame'),
              _joint('center_color_optical_frame_joint', 'fixed', 'quest_hmd',
                     'center_color_optical_frame', xyz='0.06 0 0.02', rpy=_OPTICAL_RPY)]
    for side, sign in (('left', 1), ('right', -1)):
        aim = f'quest_{side}_aim'
        base = f'{side}_base_link'
        parts += [
            _link(aim), _joint(f'quest_origin_to_{aim}', 'floating', 'quest_origin', aim),
            _link(f'{aim}_visual', cylinder=(0.035, 0.12), mass=0.15, rgba='0.2 0.2 0.2 1'),
            _joint(f'{aim}_to_{aim}_visual', 'fixed', aim, f'{aim}_visual',
                   xyz='0 0 -0.04', rpy='0.4 0 0'),
            _link(base, box=(0.12, 0.08, 0.05), mass=0.4, rgba='0.9 0.5 0.1 1'),
            _joint(f'{aim}_to_{base}', 'fixed', aim, base, xyz='0.02 0 -0.09', rpy='0 0.3 0'),
            _link(f'{side}_color_optical_frame'),
            _joint(f'{side}_color_optical_frame_joint', 'fixed', base,
                   f'{side}_color_optical_frame', xyz=GRIPPER_CAMERA_XYZ,
                   rpy=_optical_rpy(GRIPPER_CAMERA_PITCH)),
            _link(f'{side}_aruco_detect'),
            _joint(f'{side}_aruco_detect_joint', 'fixed', base, f'{side}_aruco_detect',
                   xyz=ARUCO_XYZ, rpy='0 0 0'),
        ]
        for finger, fsign in (('left', 1), ('right', -1)):
            name = f'{side}_{finger}_finger'
            limit = '    <limit lower="0" upper="1.2" effort="5" velocity="3"/>\n'
            extra = ('    <axis xyz="0 0 1"/>\n' + (limit if fsign > 0 else
                     limit.replace('lower="0" upper="1.2"', 'lower="-1.2" upper="0"')))
            if fsign < 0:
                extra += f'    <mimic joint="{side}_left_finger" multiplier="-1" offset="0"/>\n'
            # a finger reaches forward from its pivot
            parts += [_link(name, box=(FINGER_LENGTH, 0.012, 0.02), mass=0.03,
                            rgba='0.7 0.7 0.75 1', at=f'{FINGER_LENGTH / 2} 0 0'),
                      _joint(name, 'revolute', base, name,
                             xyz=f'{FINGER_PIVOT_X} {FINGER_PIVOT_Y * fsign * sign:.3f} 0',
                             extra=extra)]
    parts.append('</robot>\n')
    return ''.join(parts)
