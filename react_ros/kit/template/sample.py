"""`react-ros sample <kind> DIR`: a small episode (or a release of them) faithful to the format.

The writer's signature is the same for every kind (DatasetKind.sample names it):
    fn(out_dir, *, seed, duration_s, width, height, episodes=None) -> Path
write_sample (react_ros/samples/writing.py) checks the request, lets `write` fill a hidden
sibling folder and renames it into place, so a sample is never left half-written.
"""
from __future__ import annotations

import math
import random
from pathlib import Path

from react_ros.errors import SinkError
from react_ros.samples.writing import write_sample

from .track import FILE, write_track

RATE_HZ = 50.0


def write_template_sample(out_dir: Path, *, seed: int = 0, duration_s: float = 2.0,
                          width: int = 64, height: int = 48,
                          episodes: int | None = None) -> Path:
    """`out_dir` an episode folder, or with `episodes=N` a release of episode_000...

    `width`/`height` are taken for the common signature (this format has no camera).
    """
    if episodes is not None and episodes < 1:
        raise SinkError(f'{out_dir}: a release holds at least one episode, got {episodes}')

    def write(tmp: Path) -> None:
        if episodes is None:
            _episode(tmp, seed, duration_s)
        for k in range(episodes or 0):
            (tmp / f'episode_{k:03d}').mkdir()
            _episode(tmp / f'episode_{k:03d}', seed + k, duration_s)
    # shortest duration 0.1 s, smallest frame 2x2 (what this format can hold)
    return write_sample(out_dir, duration_s, (width, height), 0.1, (2, 2), write)


def _episode(folder: Path, seed: int, duration_s: float) -> None:
    phase = random.Random(seed).uniform(0, 2 * math.pi)
    rows = []
    for i in range(round(duration_s * RATE_HZ)):
        t = i / RATE_HZ
        a = phase + t
        rows.append((t, 0.5 * math.cos(a), 0.5 * math.sin(a), 0.3, a + math.pi / 2))
    write_track(folder / FILE, rows)
