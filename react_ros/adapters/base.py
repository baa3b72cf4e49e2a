"""The adapter interface: small on purpose. Helpers live outside it."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Protocol

from react_ros.errors import ReactRosError
from react_ros.streams import Stream


@dataclass(frozen=True)
class EpisodeOptions:
    """What a user may choose about how an episode becomes messages."""

    image_scale: float = 1.0
    episode: str | None = None  # for releases holding many episodes
    # React: play one clean segment (index into segments.json), drop flagged rows,
    # pair view[i] with tactile[i + N], and which gel axis the force acts along.
    segment: int | None = None
    skip_bad: bool = False
    tactile_latency: int = 0
    gel_axis: str = 'local_y'  # or 'dual_ball'

    def __post_init__(self) -> None:
        # Checked here once for every adapter and entry point (CLI, node, launch).
        if not (math.isfinite(self.image_scale) and self.image_scale > 0):
            raise ReactRosError(f'image scale must be positive, got {self.image_scale}')


@dataclass
class Episode:
    kind: str
    path: Path
    start_ns: int
    end_ns: int
    streams: list[Stream]
    urdf: str | None = None  # robot_description, where the dataset has a robot
    warnings: list[str] = field(default_factory=list)
    # Conformance checks `info` prints: what was checked, and what each classic
    # mistake would have read.
    report: list[str] = field(default_factory=list)

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


class DatasetAdapter(Protocol):
    kind: ClassVar[str]

    @classmethod
    def probe(cls, path: Path) -> bool:
        """Answer whether `path` looks like this dataset; never raise."""

    def __init__(self, path: Path, options: EpisodeOptions) -> None: ...

    def open(self) -> Episode:
        """Validate the episode and describe its streams; read no bulk data.

        Raises DatasetFormatError naming the file and the problem.
        """
