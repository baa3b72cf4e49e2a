"""A kind's adapter: its options, how an episode becomes Streams, how a release is listed.

Copy this folder to <dir>/<kind>/ (docs/kinds.md, "Adding a dataset kind"): the kind's
name is its folder's name, read below, so the copy registers as <kind> with no edit;
rename template.rviz to <kind>.rviz and the option (options share one namespace over all
kinds). Then replace the CSV reader (track.py) and the streams with the dataset's own.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Iterator

from geometry_msgs.msg import PoseStamped

from react_ros.adapters.base import DatasetKind, Episode, EpisodeOptions, EpisodeRef
from react_ros.errors import DatasetFormatError
from react_ros.options import KindOptions, option
from react_ros.ros.msgs import stamp
from react_ros.ros.tf import tf_message, transform_stamped
from react_ros.streams import Stream

from .track import FILE, Pose, read_track

NAME = __name__.split('.')[-2]  # react_ros.kinds.<kind>.adapter: the folder's name


def _positive(value: float) -> str | None:
    return None if value > 0 else f'must be > 0, got {value}'


@dataclass(frozen=True)
class TemplateOptions(KindOptions):
    # One field, one flag (--template-scale), node parameter and launch argument.
    template_scale: float = option(1.0, 'multiply the positions by F (a unit fix)',
                                   metavar='F', check=_positive)


class TemplateAdapter:
    kind: ClassVar[str] = NAME

    @classmethod
    def probe(cls, path: Path) -> bool:
        """Whether `path` looks like this kind's episode: cheap, and never raises."""
        try:
            return (Path(path) / FILE).is_file()
        except (OSError, ValueError):
            return False

    def __init__(self, path: Path, options: EpisodeOptions) -> None:
        self.root = Path(path)
        self.scale = options.own.template_scale  # type: ignore[union-attr]
        self.config = KIND.config()  # config.yaml beside this file

    def open(self) -> Episode:
        """Validate everything the streams will need, read no bulk data, describe them."""
        if not self.probe(self.root):
            raise DatasetFormatError(self.root, f'not an episode folder of {NAME} '
                                     f'(needs {FILE})')
        path = self.root / FILE
        poses = read_track(path)
        kept = [p for p in poses if p.finite]
        warnings = []
        if len(kept) < len(poses):
            lost = [p.line for p in poses if not p.finite]
            if not kept:
                raise DatasetFormatError(path, 'no row has a finite pose')
            warnings.append(f'{path}: {len(lost)} row(s) with a non-finite pose left out '
                            f'(first: line {lost[0]})')
        # One time base for every stream; never 0 (tf2 reads stamp 0 as "latest").
        base_ns = round(float(self.config['time_base_s']) * 1e9)
        stamped = [(base_ns + round(p.t_s * 1e9), p) for p in kept]
        streams = [self._tf(stamped), self._poses(stamped)]
        return Episode(kind=self.kind, path=self.root, start_ns=stamped[0][0],
                       end_ns=stamped[-1][0], streams=streams, warnings=warnings)

    def _position(self, pose: Pose) -> tuple[float, float, float]:
        return (pose.xyz[0] * self.scale, pose.xyz[1] * self.scale, pose.xyz[2] * self.scale)

    # A Stream's open() yields (t_ns, msg) from the start each time it is called, lazily.
    def _tf(self, stamped: list[tuple[int, Pose]]) -> Stream:
        world, body = self.config['world_frame'], self.config['body_frame']

        def gen() -> Iterator[tuple[int, Any]]:
            for t, pose in stamped:
                yield t, tf_message([transform_stamped(world, body, t, self._position(pose),
                                                       _yaw_quaternion(pose.yaw))])
        return Stream('/tf', 'tf2_msgs/msg/TFMessage', gen, count=len(stamped),
                      approx_bytes=150)

    def _poses(self, stamped: list[tuple[int, Pose]]) -> Stream:
        world = self.config['world_frame']

        def gen() -> Iterator[tuple[int, Any]]:
            for t, pose in stamped:
                msg = PoseStamped()
                msg.header.stamp, msg.header.frame_id = stamp(t), world
                p, q = msg.pose.position, msg.pose.orientation
                p.x, p.y, p.z = self._position(pose)
                q.x, q.y, q.z, q.w = _yaw_quaternion(pose.yaw)
                yield t, msg
        return Stream(f'/{NAME}/pose', 'geometry_msgs/msg/PoseStamped', gen,
                      count=len(stamped), approx_bytes=100)


def _yaw_quaternion(yaw: float) -> tuple[float, float, float, float]:
    return (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))


def find_episodes(root: Path) -> list[EpisodeRef] | None:
    """`root` itself an episode, or the episode folders right below it; None: neither.

    Never raises for a folder that is not a release of this kind (convert-all asks every
    kind); `sources` are every file an episode's conversion reads (the resume fingerprint).
    """
    root = Path(root)
    if TemplateAdapter.probe(root):
        return [_ref(root, root.resolve().name or 'episode')]
    try:
        found = sorted(c for c in root.iterdir() if TemplateAdapter.probe(c))
    except OSError:
        return None
    return [_ref(c, c.name) for c in found] or None


def _ref(folder: Path, episode_id: str) -> EpisodeRef:
    return EpisodeRef(id=episode_id, path=folder, sources=(folder / FILE,))


KIND = DatasetKind(
    name=NAME, title='a kind folder to copy: poses in one CSV per episode folder',
    adapter=TemplateAdapter, options=TemplateOptions,
    sample=f'{__package__}.sample:write_template_sample',
    find_episodes=find_episodes,
    small_sample={'duration_s': 0.5},
    read_first=lambda p: p.name == FILE)
