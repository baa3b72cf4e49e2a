"""TrueTrace against the contract every kind meets (kind_contract.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from kind_contract import KindContract
from truetrace_support import truetrace_package


class TestTrueTraceKind(KindContract):
    kind = 'truetrace'
    counts = {'/cam0/image_raw': 60, '/cam1/camera_info': 60, '/imu/data': 953,
              '/hands/left/keypoints': 51, '/hands/markers': 60, '/tf_static': 1,
              '/annotations': 2}

    @pytest.fixture(scope='class')
    @classmethod
    def source(cls, tmp_path_factory: pytest.TempPathFactory) -> Path:
        return truetrace_package(tmp_path_factory)
