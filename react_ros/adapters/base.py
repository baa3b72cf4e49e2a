"""The adapter interface: small on purpose. Helpers live outside it."""
from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Callable, ClassVar, Generic, Mapping, Protocol, TypeVar, cast, overload

import yaml

from react_ros.errors import ReactRosError
from react_ros.options import KindOptions, NoOptions
from react_ros.streams import Stream

T = TypeVar('T')


@dataclass(frozen=True)
class EpisodeOptions:
    """What a user may choose about how an episode becomes messages, for every kind."""

    image_scale: float = 1.0
    episode: str | None = None  # for releases holding many episodes
    # The kind's own options (its DatasetKind.options dataclass); None = its defaults.
    # open_episode fills it in, so an adapter always finds its own type here.
    own: KindOptions | None = None

    def __post_init__(self) -> None:
        # Checked here once for every adapter and entry point (CLI, node, launch).
        if not (math.isfinite(self.image_scale) and self.image_scale > 0):
            raise ReactRosError(f'image scale must be positive, got {self.image_scale}')


@dataclass(frozen=True)
class EpisodeRef:
    """One episode of a release, as `react-ros convert-all` finds it."""

    id: str  # unique in the release, '/'-separated; its bag goes to OUTDIR/<id>/
    path: Path  # what open_episode takes
    episode: str | None = None  # EpisodeOptions.episode, for releases holding many
    # Every file its conversion reads, shared ones too: what the resume fingerprint covers.
    sources: tuple[Path, ...] = ()
    # The files its kind's own --verify reads besides (TrueTrace: all MANIFEST.sha256
    # lists, other episodes' too): covered by the fingerprint of a --verify run.
    verified: tuple[Path, ...] = ()


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
    # Pose source (topic or column) -> poses the pose rule kept off the wire (adapters/poses.py).
    invalid_poses: dict[str, int] = field(default_factory=dict)

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


class DatasetAdapter(Protocol):
    kind: ClassVar[str]

    @classmethod
    def probe(cls, path: Path) -> bool:
        """Answer whether `path` looks like this dataset; never raise."""

    def __init__(self, path: Path, options: EpisodeOptions) -> None:
        """`options.own` is an instance of the kind's options dataclass, never None."""

    def open(self) -> Episode:
        """Validate the episode and describe its streams; read no bulk data.

        Raises DatasetFormatError naming the file and the problem.
        """


class ImportedOnUse(Generic[T]):
    """A field given either the thing itself or where it lives, 'module:name', imported
    the first time it is read. A kind's kind.py names its adapter so: the CLI lists the
    kinds, their options and help without importing any kind's readers (PyAV, scipy,
    pyarrow, rclpy's message types)."""

    def __init__(self, *default: T) -> None:
        self.default = default  # () when the field must be given

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f'_{name}_given'

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> T: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> T:
        if obj is None:  # dataclass asks the class for the field's default
            if not self.default:
                raise AttributeError(self.slot)
            return self.default[0]
        value = obj.__dict__[self.slot]
        if isinstance(value, str):
            module, _, name = value.partition(':')
            value = getattr(importlib.import_module(module), name)
            obj.__dict__[self.slot] = value
        return cast(T, value)

    def __set__(self, obj: object, value: T | str) -> None:
        if isinstance(value, str) and not value.partition(':')[2]:
            raise ValueError(f'{value!r}: give the object or "module:name"')
        obj.__dict__[self.slot] = value  # a frozen dataclass's __init__ comes here too


@dataclass(frozen=True)
class DatasetKind:
    """Everything the package knows about one dataset kind, in one place.

    The registry (react_ros.registry) holds one per kind; the CLI, the player
    node, the launch file, `sample` and `demo` read everything from it.
    """

    name: str  # 'umi': --kind, the config and RViz file names
    title: str  # one line for help texts
    # The adapter class, or 'module:Class' (imported when first used).
    adapter: ImportedOnUse[type[DatasetAdapter]] = ImportedOnUse()
    options: type[KindOptions] = NoOptions
    # 'module:function' writing a sample episode (imported only when used):
    # fn(out_dir, seed=, duration_s=, width=, height=) -> Path
    sample: str | None = None
    # For kinds whose sample is a release of many episodes: the one the demo plays.
    demo_episode: str | None = None
    # The episodes of a release of this kind below `root`, in a stable order, or None
    # when `root` is not one (never raises for that; a release it claims but cannot
    # list raises DatasetFormatError naming the file). Used by convert-all. The function
    # or 'module:function'.
    find_episodes: ImportedOnUse[Callable[[Path], list[EpisodeRef] | None] | None] = \
        ImportedOnUse(None)
    # Where the kind sits in lists (help groups, `known: ...`): lower first.
    order: int = 100
    # The demo's video size where the kind's own would not play in real time on a
    # 2-core machine; None plays the sample at its own size.
    demo_resolution: tuple[int, int] | None = None
    # A sample small enough for tests of many episodes (kwargs of the sample writer).
    small_sample: Mapping[str, Any] = field(default_factory=dict)
    # Which of an episode's own source files is read first when it opens (its table or
    # metadata, not a video): what a test truncates to get a refusal before any output.
    read_first: Callable[[Path], bool] | None = None

    @property
    def folder(self) -> Path:
        """react_ros/kinds/<name>/ (or <dir>/<name>/ of REACT_ROS_KINDS_PATH): its code and files."""
        package = importlib.import_module(f'react_ros.kinds.{self.name}')
        return Path(next(iter(package.__path__)))

    @property
    def rviz_file(self) -> str:
        """config/<name>.rviz in the package's share directory (installed from the kind's folder)."""
        return f'config/{self.name}.rviz'

    @property
    def rviz_source(self) -> Path:
        """The RViz config in the kind's folder (what a kind outside the package uses)."""
        return self.folder / f'{self.name}.rviz'

    def config(self) -> dict[str, Any]:
        return kind_config(self.name)

    def sample_writer(self) -> Callable[..., Path] | None:
        if self.sample is None:
            return None
        module, _, name = self.sample.partition(':')
        writer: Callable[..., Path] = getattr(importlib.import_module(module), name)
        return writer


@lru_cache(maxsize=None)
def kind_config(name: str) -> dict[str, Any]:
    """<kind folder>/config.yaml, shipped as package data (pip and colcon) beside the code."""
    text = resources.files(f'react_ros.kinds.{name}').joinpath('config.yaml').read_text()
    config: dict[str, Any] = yaml.safe_load(text) or {}
    return config
