"""What a preview draws, read from an Episode's streams by message type (not by kind).

So a bag someone else wrote previews as a react_ros episode does. One pass over every
stream collects: each topic's message times (the strip), /tf and /tf_static (the TF
buffer), and the small messages that are drawn (CameraInfo, Marker(Array), WrenchStamped,
PoseArray, PoseStamped). Images and point clouds are only located here (topic, frame,
encoding); they are read at the moments drawn, from their streams (a video seeks).
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from react_ros.adapters.base import Episode
from react_ros.preview.tf_buffer import TfBuffer
from react_ros.streams import Stream, open_at

IMAGE = 'sensor_msgs/msg/Image'
COMPRESSED_IMAGE = 'sensor_msgs/msg/CompressedImage'
COMPRESSED_VIDEO = 'foxglove_msgs/msg/CompressedVideo'
IMAGE_TYPES = (IMAGE, COMPRESSED_IMAGE, COMPRESSED_VIDEO)
CAMERA_INFO = 'sensor_msgs/msg/CameraInfo'
TF = 'tf2_msgs/msg/TFMessage'
MARKER_ARRAY = 'visualization_msgs/msg/MarkerArray'
MARKER = 'visualization_msgs/msg/Marker'
WRENCH = 'geometry_msgs/msg/WrenchStamped'
POSE_ARRAY = 'geometry_msgs/msg/PoseArray'
POSE = 'geometry_msgs/msg/PoseStamped'
CLOUD = 'sensor_msgs/msg/PointCloud2'
KEPT = (CAMERA_INFO, MARKER_ARRAY, MARKER, WRENCH, POSE_ARRAY, POSE)
# Image encodings and topic words that make an image a companion of a colour camera
# (drawn beside it, colour-mapped), not a camera of its own.
AUX_ENCODINGS = ('32FC1', '16UC1', 'mono16', '16SC1', '32SC1', '8SC1')
AUX_WORDS = ('depth', 'segmentation', 'label', 'mask', 'disparity')


def deserialize(msg: Any, msg_type: str) -> Any:
    """A message object from what a stream yields (an object, or its CDR bytes)."""
    if isinstance(msg, (bytes, bytearray, memoryview)):
        from rclpy.serialization import deserialize_message

        from react_ros.ros.msgs import message_class
        return deserialize_message(bytes(msg), message_class(msg_type))
    return msg


def stamp_ns(msg: Any, default: int) -> int:
    """A message's header stamp (a CompressedVideo's timestamp), or `default` without one."""
    st = getattr(getattr(msg, 'header', None), 'stamp', None)
    if st is None:
        st = getattr(msg, 'timestamp', None)
    if st is None:
        return default
    ns = int(st.sec) * 10**9 + int(st.nanosec)
    return ns if ns else default


def frame_of(msg: Any) -> str:
    header = getattr(msg, 'header', None)
    return str(header.frame_id if header is not None else getattr(msg, 'frame_id', ''))


@dataclass
class Series:
    """One topic's kept messages in time order: (t_ns, message)."""

    times: list[int] = field(default_factory=list)
    msgs: list[Any] = field(default_factory=list)
    _stale: int | None = None

    def add(self, t: int, msg: Any) -> None:
        self.times.append(t)
        self.msgs.append(msg)

    @property
    def stale_ns(self) -> int:
        """How long a message stays current: 3 of its median intervals (50 ms - 2 s)."""
        if self._stale is None:
            dt = np.diff(np.asarray(self.times, dtype=np.int64))
            dt = dt[dt > 0]
            self._stale = (2**62 if not len(dt) else
                           int(np.clip(3 * np.median(dt), 5e7, 2e9)))
        return self._stale

    def latest(self, t: int) -> tuple[int, Any] | None:
        """The last message at or before t that is still current."""
        i = bisect.bisect_right(self.times, t)
        if i == 0 or t - self.times[i - 1] > self.stale_ns:
            return None
        return self.times[i - 1], self.msgs[i - 1]

    def nearest(self, t: int) -> Any | None:
        if not self.times:
            return None
        i = bisect.bisect_left(self.times, t)
        best = min((j for j in (i - 1, i) if 0 <= j < len(self.times)),
                   key=lambda j: abs(self.times[j] - t))
        return self.msgs[best]


@dataclass
class Camera:
    """An image topic; a camera when it has a CameraInfo (overlays are drawn into it)."""

    stream: Stream
    frame_id: str
    encoding: str
    info: str | None = None  # its CameraInfo topic
    aux: list['Camera'] = field(default_factory=list)  # depth, segmentation beside it

    @property
    def topic(self) -> str:
        return self.stream.topic


@dataclass
class Scene:
    kind: str
    path: str
    start_ns: int
    end_ns: int
    tf: TfBuffer
    timelines: dict[str, tuple[str, np.ndarray]]  # topic -> (type, log times)
    series: dict[str, Series]  # kept small messages by topic
    types: dict[str, str]
    cameras: list[Camera]  # overlay cameras and plain images, in stream order
    clouds: list[Stream]
    warnings: list[str] = field(default_factory=list)

    def of_type(self, *types: str) -> list[tuple[str, Series]]:
        return [(t, s) for t, s in self.series.items() if self.types[t] in types]


def load_scene(episode: Episode, progress: Callable[[str], None] | None = None) -> Scene:
    """One pass over every stream of `episode` (see the module's docstring)."""
    tf = TfBuffer()
    timelines: dict[str, tuple[str, np.ndarray]] = {}
    series: dict[str, Series] = defaultdict(Series)
    types: dict[str, str] = {}
    images: list[Camera] = []
    clouds: list[Stream] = []
    warnings: list[str] = []
    for n, stream in enumerate(episode.streams):
        if progress is not None:
            progress(f'reading {stream.topic} ({n + 1}/{len(episode.streams)} topics)')
        kind = stream.msg_type
        types[stream.topic] = kind
        times: list[int] = []
        if kind in IMAGE_TYPES or kind == CLOUD:
            stamps = stream.video.stamps if stream.video is not None else None
            first = _first(stream)
            if first is None:
                continue
            if stamps is not None:
                times = [int(t) for t in stamps]
            else:
                times = [t for t, _ in stream.open()]
            if kind == CLOUD:
                clouds.append(stream)
            else:
                msg = deserialize(first[1], kind)
                images.append(Camera(stream, frame_of(msg), _encoding(msg, kind)))
        else:
            for t, raw in stream.open():
                times.append(t)
                if kind == TF:
                    tf.add_message(deserialize(raw, kind), static=stream.latched
                                   or stream.topic.endswith('tf_static'))
                elif kind in KEPT:
                    series[stream.topic].add(t, deserialize(raw, kind))
        if not times:
            continue
        arr = np.asarray(times, dtype=np.int64)
        if stream.topic in timelines:  # one topic from two streams (UMI's /tf): merged
            arr = np.sort(np.concatenate([timelines[stream.topic][1], arr]))
        timelines[stream.topic] = (kind, arr)
    if tf.bad:
        warnings.append(f'{tf.bad} transform(s) with NaN or a zero quaternion not drawn')
    scene = Scene(episode.kind, str(episode.path), episode.start_ns, episode.end_ns, tf,
                  timelines, dict(series), types, [], clouds, warnings)
    scene.cameras = _group_cameras(images, scene)
    return scene


def _first(stream: Stream) -> tuple[int, Any] | None:
    it = stream.open()
    try:
        return next(it, None)
    finally:
        close = getattr(it, 'close', None)
        if close is not None:
            close()


def _encoding(msg: Any, kind: str) -> str:
    if kind == IMAGE:
        return str(msg.encoding)
    return str(msg.format)


def _namespace(topic: str) -> str:
    parts = topic.rstrip('/').split('/')
    while len(parts) > 1 and parts[-1] in ('compressed', 'compressedDepth', 'compressed_video',
                                           'theora', 'zstd'):
        parts.pop()
    return '/'.join(parts[:-1])


def is_aux(cam: Camera) -> bool:
    enc = cam.encoding.split(';')[0].strip()
    return enc in AUX_ENCODINGS or 'compressedDepth' in cam.encoding or \
        any(w in cam.topic for w in AUX_WORDS)


def _group_cameras(images: list[Camera], scene: Scene) -> list[Camera]:
    infos = {t: s for t, s in scene.series.items() if scene.types[t] == CAMERA_INFO}
    info_frames = {t: frame_of(s.msgs[0]) for t, s in infos.items()}
    for cam in images:
        ns = _namespace(cam.topic)
        if f'{ns}/camera_info' in infos:
            cam.info = f'{ns}/camera_info'
        else:
            same = [t for t, f in info_frames.items() if f and f == cam.frame_id]
            cam.info = same[0] if len(same) == 1 else None
    out: list[Camera] = []
    main = [c for c in images if not is_aux(c)]
    for cam in images:
        if not is_aux(cam):
            out.append(cam)
            continue
        host = [m for m in main if m.frame_id and m.frame_id == cam.frame_id] or \
            [m for m in main if _namespace(cam.topic).startswith(_namespace(m.topic) + '/')]
        if host:
            host[0].aux.append(cam)
        else:
            out.append(cam)
    return out


def nearest_message(stream: Stream, t_ns: int, lookback_ns: int = 500_000_000
                    ) -> tuple[int, Any] | None:
    """The message of `stream` nearest t (by the stream's time), reading from t - lookback."""
    best: tuple[int, Any] | None = None
    it: Iterator[tuple[int, Any]] = open_at(stream, max(0, t_ns - lookback_ns))
    try:
        for t, msg in it:
            if best is None or abs(t - t_ns) < abs(best[0] - t_ns):
                best = (t, msg)
            if t >= t_ns:
                break
    finally:
        close = getattr(it, 'close', None)
        if close is not None:
            close()
    if best is None:  # t after the stream's last message by more than the lookback
        last = None
        for last in stream.open():
            pass
        best = last
    return best


__all__ = ['CAMERA_INFO', 'CLOUD', 'COMPRESSED_IMAGE', 'COMPRESSED_VIDEO', 'IMAGE',
           'IMAGE_TYPES', 'Camera', 'Scene', 'Series', 'deserialize', 'frame_of', 'is_aux',
           'load_scene', 'nearest_message', 'stamp_ns']
