"""React against the contract every kind meets (kind_contract.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from kind_contract import KindContract
from react_support import EPISODE, react_release


class TestReactKind(KindContract):
    kind = 'react'
    episode_id = EPISODE
    counts = {'/view_middle/image_raw': 59, '/view_middle/camera_info': 59, '/tf_static': 1}

    @pytest.fixture(scope='class')
    @classmethod
    def source(cls, tmp_path_factory: pytest.TempPathFactory) -> Path:
        return react_release(tmp_path_factory)
