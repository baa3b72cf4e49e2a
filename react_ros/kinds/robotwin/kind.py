"""RoboTwin: what the registry reads at start-up, without importing the readers: `KIND`
(its adapter named as 'module:Class', imported when an episode is opened) and its
options."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from react_ros.adapters.base import DatasetKind, kind_config
from react_ros.options import KindOptions, option

EMBODIMENTS = ('agilex', 'franka')
DEFAULT_FPS = float(kind_config('robotwin')['fps'])


def _positive(v: Any) -> str | None:
    return None if v is None or v > 0 else f'must be > 0, got {v}'


def _steps(v: Any) -> str | None:
    bad = [s for w in v for s in str(w).split(',') if not (s.strip().isdigit()
                                                           and int(s) > 0)]
    return f'each step must be a whole number of frames > 0, got {", ".join(bad)}' if bad \
        else None


@dataclass(frozen=True)
class RobotwinOptions(KindOptions):
    fps: float = option(DEFAULT_FPS, 'frame rate the stamps are made with: frame i at 1 s + '
                        'i/FPS (the files record none; default in config.yaml beside the adapter)',
                        metavar='FPS', check=_positive)
    aligned_frames: bool = option(False, 'play only the 33 aligned frames (arange(33)*4, or '
                                  'linspace(0, T-1, 33) when T < 129)')
    embodiment: str | None = option(None, 'joint names of this embodiment (default: the '
                                    'agilex/ or franka/ folder above the task)',
                                    choices=EMBODIMENTS)
    flow_step: tuple[str, ...] = option(
        (), 'publish scene flow, 2D flow and visibility from each frame to K frames later '
        '(several: 1,4); needs _extra; none by default', metavar='K', check=_steps)
    flow_tolerance_mm: float = option(10.0, 'a flowed point is hidden when it lies further '
                                      'than this from the later frame\'s depth (default 10)',
                                      metavar='MM', check=_positive)
    tracks: int | None = option(None, 'follow N pixels seeded on a grid of the first frame '
                                'to every frame (/head_camera/tracks); needs _extra',
                                metavar='N', check=_positive)


KIND = DatasetKind(
    name='robotwin', title='RoboTwin 2.0 ground-truth episodes: HDF5 with JPEG frames, depth, '
    'segmentation, point clouds (+ _extra)',
    adapter='react_ros.kinds.robotwin.adapter:RobotwinAdapter', options=RobotwinOptions,
    sample='react_ros.kinds.robotwin.sample:write_robotwin_sample',
    demo_episode='agilex/beat_block_hammer/episode0',
    find_episodes='react_ros.kinds.robotwin.adapter:find_episodes', order=4,
    small_sample={'duration_s': 0.3, 'width': 32, 'height': 24},
    read_first=lambda p: p.suffix == '.hdf5' and not p.name.endswith('_extra.hdf5'))
