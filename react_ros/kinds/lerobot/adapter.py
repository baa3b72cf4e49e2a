"""LeRobot datasets (codebase v2.1 and v3.0): one episode of a dataset root (`--episode N`).

Time base: header.stamp = time_base_s (config.yaml) + the row's `timestamp` column, one
base for every episode; a video frame is the one LeRobot itself reads for the row (at
from_timestamp + timestamp, within its tolerance), never i / fps. docs/lerobot.md.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator

import numpy as np
import yaml
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String

from react_ros.adapters.base import Episode, EpisodeOptions, EpisodeRef
from react_ros.adapters.still_frames import still_camera_streams, still_size
from react_ros.errors import DatasetFormatError, ReactRosError
from react_ros.formats import video
from react_ros.formats.urdf import parse_urdf
from react_ros.kinds.lerobot.frames import check_codec, frame_times_s, match_rows
from react_ros.kinds.lerobot.meta import (BOOKKEEPING, EpisodeMeta, Info, episode_files,
                                          looks_like, read_episodes, read_info, read_tasks)
from react_ros.kinds.lerobot.table import Rows, image_size, images, numeric, read_rows
from react_ros.ros.image import rgb_image
from react_ros.ros.msgs import stamp
from react_ros.ros.robot_state import robot_state_streams
from react_ros.streams import Stream, VideoSource
from react_ros.kinds.lerobot.kind import KIND, LeRobotOptions

STATE, ACTION = 'observation.state', 'action'


class LeRobotAdapter:
    kind: ClassVar[str] = 'lerobot'

    @classmethod
    def probe(cls, path: Path) -> bool:
        try:
            return looks_like(Path(path))
        except (OSError, ValueError):
            return False

    def __init__(self, path: Path, options: EpisodeOptions) -> None:
        self.root = Path(path)
        self.options = options
        self.own: LeRobotOptions = options.own  # type: ignore[assignment]
        self.config = KIND.config()
        self.warnings: list[str] = []

    def open(self) -> Episode:
        if not self.probe(self.root):
            raise DatasetFormatError(self.root, 'not a LeRobot dataset root (needs '
                                     'meta/info.json with codebase_version and features)')
        info = read_info(self.root)
        ep = self._episode(info)
        rows = read_rows(info, ep)
        base = round(float(self.config['time_base_s']) * 1e9)
        self.t_ns = base + np.round(rows.timestamp_s * 1e9).astype(np.int64)
        self.info, self.ep, self.rows = info, ep, rows
        streams = self._cameras()
        joint_states = self._vector(STATE, '/joint_states', '/observation/state')
        streams += [joint_states, self._vector(ACTION, '/action/joint_states', '/action')]
        for key, f in info.features.items():
            if key in (STATE, ACTION) or key in BOOKKEEPING or f.is_video or f.is_image:
                continue
            if numeric(f.dtype):
                topic = '/' + key.replace('.', '/')
                streams.append(self._vector(key, topic, topic))
            else:
                self.warnings.append(f'{info.path}: feature {key!r} ({f.dtype}) has no numeric '
                                     'values: not published')
        streams.append(self._annotations(read_tasks(self.root, info)))
        urdf = self._robot(joint_states, streams)
        report = [f'LeRobot {info.version}, {info.fps:g} fps, episode {ep.index} of '
                  f'{ep.listed_in.relative_to(self.root)}: {rows.n} rows; video frames matched '
                  f'at from_timestamp + timestamp within {self._tolerance():g} s']
        return Episode(kind=self.kind, path=self.root, start_ns=int(self.t_ns[0]),
                       end_ns=int(self.t_ns[-1]), streams=[s for s in streams if s.count != 0],
                       urdf=urdf, warnings=self.warnings, report=report)

    def _tolerance(self) -> float:
        return float(self.config['tolerance_s'])

    def _episode(self, info: Info) -> EpisodeMeta:
        episodes = read_episodes(self.root, info)
        if not episodes:
            raise DatasetFormatError(self.root, 'lists no episode')
        want = self.options.episode
        if want is None:
            if len(episodes) == 1:
                return episodes[0]
            raise DatasetFormatError(self.root, f'a LeRobot dataset of {len(episodes)} episodes; '
                                     f'choose one with --episode (e.g. --episode '
                                     f'{episodes[0].index})')
        k = parse_episode(want)
        found = [e for e in episodes if e.index == k]
        if k is None or not found:
            raise DatasetFormatError(self.root, f'no episode {want!r} (it holds '
                                     f'{episodes[0].index}..{episodes[-1].index})')
        return found[0]

    # -- cameras -----------------------------------------------------------------------------
    def _cameras(self) -> list[Stream]:
        out = []
        for key, f in self.info.features.items():
            if f.is_video:
                out.append(self._video(key, f.is_depth))
            elif f.is_image:
                name = key.split('.')[-1]
                prefix = '/' + camera_name(key)

                # A def, not a lambda: mypy cannot infer a lambda with a default argument.
                def frames(key: str = key) -> Iterator[np.ndarray]:
                    return images(self.info, self.ep, key)
                out += still_camera_streams(
                    prefix, self._frame_id(name), self.t_ns, frames,
                    image_size(self.info, self.ep, key), image_scale=self.options.image_scale,
                    what=f'{key} of {self.ep.data.name}')
        return out

    def _frame_id(self, camera: str) -> str:
        return str(self.config['camera_frame']).format(camera=camera)

    def _video(self, key: str, depth: bool) -> Stream:
        part = self.ep.videos[key]
        check_codec(part.path)
        vinfo = video.probe(part.path)
        times, end = frame_times_s(part.path)
        frames = match_rows(part, times, end, self.rows.timestamp_s, self._tolerance(),
                            self.ep.listed_in, self.ep.data, self.ep.index, key)
        if len(frames) > 1 and not np.all(np.diff(frames) > 0):
            row = int(np.argmax(np.diff(frames) <= 0)) + 1
            raise DatasetFormatError(self.ep.data, f'episode {self.ep.index} rows {row - 1} and '
                                     f'{row} show the same frame of {part.path.name}')
        scale = 1.0 if depth else self.options.image_scale
        size = still_size(vinfo.width, vinfo.height, scale, part.path.name)
        frame_id = self._frame_id(key.split('.')[-1])
        stamps = self.t_ns
        table: list[video.FrameTable] = []

        def from_row(first: int) -> Iterator[tuple[int, Any]]:
            if first >= len(frames):
                return
            if not table:
                table.append(video.frame_table(part.path))
            wanted = {int(f): r for r, f in enumerate(frames[first:], first)}
            last = int(frames[-1])
            for n, img in video.decode_rgb_from(part.path, int(frames[first]), scale,
                                                table=table[0]):
                if n in wanted:
                    t = int(stamps[wanted[n]])
                    yield t, _mono8(img, t, frame_id) if depth else rgb_image(img, t, frame_id)
                if n >= last:
                    break
        topic = f'/{camera_name(key)}' + ('/depth' if depth else '') + '/image_raw'
        source = None if depth else VideoSource(part.path, frames, stamps, frame_id, scale)
        return Stream(topic, 'sensor_msgs/msg/Image', lambda: from_row(0), count=len(frames),
                      heavy=True, approx_bytes=size[0] * size[1] * 3 + 200, video=source,
                      open_from=lambda t: from_row(int(np.searchsorted(stamps, t))))

    # -- vectors ------------------------------------------------------------------------------
    def _vector(self, key: str, named_topic: str, array_topic: str) -> Stream:
        f = self.info.features.get(key)
        values = self.rows.values.get(key)
        if f is None or values is None:
            return Stream(named_topic, 'sensor_msgs/msg/JointState', lambda: iter(()), count=0)
        t_ns = self.t_ns
        if f.names is not None:
            names = list(f.names)

            def joints() -> Iterator[tuple[int, Any]]:
                for t, row in zip(t_ns.tolist(), values.tolist()):
                    msg = JointState()
                    msg.header.stamp = stamp(t)
                    msg.name, msg.position = names, row
                    yield t, msg
            return Stream(named_topic, 'sensor_msgs/msg/JointState', joints, count=len(t_ns),
                          approx_bytes=40 * len(names) + 60)

        def arrays() -> Iterator[tuple[int, Any]]:
            dim = [MultiArrayDimension(label=key, size=values.shape[1], stride=values.shape[1])]
            for t, row in zip(t_ns.tolist(), values.tolist()):
                msg = Float64MultiArray()
                msg.layout.dim = dim
                msg.data = row
                yield t, msg
        return Stream(array_topic, 'std_msgs/msg/Float64MultiArray', arrays, count=len(t_ns),
                      approx_bytes=8 * values.shape[1] + 60)

    def _annotations(self, tasks: dict[int, str]) -> Stream:
        idx = self.rows.task_index
        items: list[tuple[int, str]] = []
        if idx is not None:
            for r in range(len(idx)):
                if r == 0 or idx[r] != idx[r - 1]:
                    items.append((r, json.dumps({
                        'type': 'task', 'episode_index': self.ep.index, 'row': r,
                        'task_index': int(idx[r]), 'task': tasks.get(int(idx[r]))})))
        elif self.ep.tasks:
            items.append((0, json.dumps({'type': 'task', 'episode_index': self.ep.index,
                                         'row': 0, 'task': self.ep.tasks[0]})))
        t_ns = self.t_ns

        def gen() -> Iterator[tuple[int, Any]]:
            for r, text in items:
                yield int(t_ns[r]), String(data=text)
        # latched (INTERFACE.md): a viewer joining late still learns the task
        return Stream('/annotations', 'std_msgs/msg/String', gen, count=len(items),
                      latched=True, approx_bytes=200)

    # -- robot model --------------------------------------------------------------------------
    def _robot(self, joint_states: Stream, streams: list[Stream]) -> str | None:
        if self.own.urdf is None:
            self.warnings.append(f'{self.root}: no robot model (a LeRobot dataset holds none; '
                                 f'robot_type {self.info.robot_type!r}): give --urdf FILE for '
                                 '/robot_description and the robot on /tf')
            return None
        path = Path(self.own.urdf)
        try:
            text = path.read_text(encoding='utf-8')
        except (OSError, UnicodeDecodeError) as err:
            why = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            raise ReactRosError(f'--urdf {path}: cannot be read ({why})') from None
        robot = parse_urdf(text, path)
        mapping = self._joint_map(set(robot.joints))
        if joint_states.msg_type != 'sensor_msgs/msg/JointState' or joint_states.count == 0:
            self.warnings.append(f'{self.info.path}: {STATE} names no joints: the robot of '
                                 f'{path.name} does not move')
            return text
        mapped = _mapped(joint_states, mapping)
        if not any(m[0] in robot.joints for m in mapping.values()):
            self.warnings.append(f'{path}: no name of {STATE} is a joint of the URDF '
                                 '(give --joint-map FILE)')
        streams += robot_state_streams(text, mapped, int(self.t_ns[0]), path)
        return text

    def _joint_map(self, joints: set[str]) -> dict[str, tuple[str, float, float]]:
        names = self.info.features[STATE].names if STATE in self.info.features else None
        out = {}
        for name in names or ():
            base = name[:-4] if name.endswith('.pos') else name
            if base in joints:
                out[name] = (base, 1.0, 0.0)
        if self.own.joint_map is None:
            return out
        path = Path(self.own.joint_map)
        try:
            doc = yaml.safe_load(path.read_text(encoding='utf-8'))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
            raise DatasetFormatError(path, f'joint map is not readable YAML '
                                     f'({" ".join(str(err).split())[:160]})') from None
        if not isinstance(doc, dict):
            raise DatasetFormatError(path, 'joint map must map state names to joints')
        for name, to in doc.items():
            if isinstance(to, str):
                out[str(name)] = (to, 1.0, 0.0)
            elif isinstance(to, dict) and isinstance(to.get('joint'), str):
                out[str(name)] = (to['joint'], float(to.get('scale', 1.0)),
                                  float(to.get('offset', 0.0)))
            else:
                raise DatasetFormatError(path, f'{name!r}: expected a joint name or '
                                         '{joint, scale, offset}')
            if names is not None and name not in names:
                raise DatasetFormatError(path, f'{name!r} is no name of {STATE}')
            if out[str(name)][0] not in joints:
                raise DatasetFormatError(path, f'{name!r} -> {out[str(name)][0]!r}: no such '
                                         'joint in the URDF')
        return out


def _mapped(states: Stream, mapping: dict[str, tuple[str, float, float]]) -> Stream:
    """The JointStates the state publisher reads: mapped names, scaled (degrees -> rad)."""
    def gen() -> Iterator[tuple[int, Any]]:
        for t, msg in states.open():
            out = JointState()
            out.header = msg.header
            pairs = [(mapping[n], v) for n, v in zip(msg.name, msg.position) if n in mapping]
            out.name = [j for (j, _, _), _ in pairs]
            out.position = [v * s + o for (_, s, o), v in pairs]
            yield t, out
    return Stream(states.topic, states.msg_type, gen, count=states.count)


def _mono8(img: Any, t_ns: int, frame_id: str) -> Image:
    msg = Image()
    msg.header.stamp, msg.header.frame_id = stamp(t_ns), frame_id
    plane = np.ascontiguousarray(img[..., 0])
    msg.height, msg.width = int(plane.shape[0]), int(plane.shape[1])
    msg.encoding, msg.is_bigendian, msg.step = 'mono8', 0, msg.width
    msg.data = plane.tobytes()
    return msg


def camera_name(key: str) -> str:
    """observation.images.top -> top (INTERFACE.md); another image key: its dots as slashes."""
    prefix = 'observation.images.'
    return (key[len(prefix):] if key.startswith(prefix) else key).replace('.', '/')


def parse_episode(text: str) -> int | None:
    """'3', 'episode_000003' -> 3."""
    text = str(text).strip()
    text = text[len('episode_'):] if text.startswith('episode_') else text
    return int(text) if text.isdigit() else None


def find_episodes(root: Path) -> list[EpisodeRef] | None:
    """Every episode the dataset lists, by index; None: `root` is no LeRobot root.

    Sources: info.json, the episode and task tables (shared), the episode's data file
    and its video files (v3.0: shared with the episodes in the same file)."""
    root = Path(root)
    if not LeRobotAdapter.probe(root):
        return None
    info = read_info(root)
    shared = episode_files(root, info)
    refs = []
    for ep in read_episodes(root, info):
        own = [ep.data, *(v.path for v in ep.videos.values())]
        refs.append(EpisodeRef(id=f'episode_{ep.index:06d}', path=root, episode=str(ep.index),
                               sources=tuple(dict.fromkeys(p for p in [*shared, *own]
                                                           if p.is_file()))))
    return refs


__all__ = ['KIND', 'LeRobotAdapter', 'LeRobotOptions', 'find_episodes', 'parse_episode']
