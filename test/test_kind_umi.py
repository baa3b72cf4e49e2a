"""UMI against the contract every kind meets (kind_contract.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from kind_contract import KindContract


class TestUmiKind(KindContract):
    kind = 'umi'
    counts = {'/left/image_raw': 121, '/center/camera_info': 119, '/joint_states': 802,
              '/left/perception_interface/pose/state': 141, '/robot_description': 1}

    @pytest.fixture(scope='class')
    @classmethod
    def source(cls, umi_episode: Path) -> Path:
        return umi_episode
