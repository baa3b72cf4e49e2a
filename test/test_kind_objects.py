"""Mocap object sessions against the contract every kind meets (kind_contract.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from kind_contract import KindContract

from react_ros.kinds.objects.sample import SESSION, write_objects_sample


class TestObjectsKind(KindContract):
    kind = 'objects'
    # 360 frames at 120 Hz; markers: the first frame, 4 validity edges, refreshes at 1 s, 2 s.
    counts = {'/tf': 360, '/tf_static': 1, '/objects/markers': 6, '/objects/raw_markers': 360}

    @pytest.fixture(scope='class')
    @classmethod
    def source(cls, tmp_path_factory: pytest.TempPathFactory) -> Path:
        return write_objects_sample(tmp_path_factory.mktemp('objects') / 'release') / SESSION
