"""RoboTwin against the contract every kind meets (kind_contract.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from kind_contract import KindContract
from robotwin_support import EPISODE, robotwin_release


class TestRobotwinKind(KindContract):
    kind = 'robotwin'
    episode_id = EPISODE
    counts = {'/head_camera/image_raw': 20, '/head_camera/camera_info': 20, '/pointcloud': 20,
              '/left_camera/image_raw': 20, '/tf_static': 1, '/annotations': 1}

    @pytest.fixture(scope='class')
    @classmethod
    def source(cls, tmp_path_factory: pytest.TempPathFactory) -> Path:
        return robotwin_release(tmp_path_factory)
