"""The RoboTwin sample the RoboTwin tests share, and helpers to read its files directly."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import written_once

from react_ros.kinds.robotwin.sample import TASK, write_robotwin_sample

SECONDS = 2.0  # episode0: 20 frames at 10 Hz, episode1: 14
SIZE = (160, 120)
EPISODE = f'agilex/{TASK}/episode0'
NO_EXTRA = f'agilex/{TASK}/episode1'
DATA = f'agilex/{TASK}/gt_export/data'
EP0 = f'{DATA}/episode0.hdf5'
EXTRA0 = f'{DATA}/episode0_extra.hdf5'
EP1 = f'{DATA}/episode1.hdf5'


def robotwin_release(factory: pytest.TempPathFactory) -> Path:
    """A 2 s, 160x120 release written once per test session (treat as read-only)."""
    return written_once(factory, 'robotwin_release', lambda root: write_robotwin_sample(
        root, seed=5, duration_s=SECONDS, width=SIZE[0], height=SIZE[1]))
