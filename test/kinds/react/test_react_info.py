"""`react-ros info` on a React episode: the CLI options reach the adapter, and the
conformance report prints each check with what its classic mistake would have read."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from react_support import EPISODE, REACT_SIZE, column, react_release, replace_column, rewrite_parquet


def _info(root: Path, *args: str) -> str:
    proc = subprocess.run([sys.executable, '-m', 'react_ros.cli', 'info', str(root), '--episode',
                           EPISODE, *args], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _count(out: str, topic: str) -> int:
    m = re.search(rf'^\s+{re.escape(topic)}\s+\S+\s+(\d+)', out, re.M)
    assert m, out
    return int(m.group(1))


def _px(out: str, what: str) -> float:
    m = re.search(rf'would read: {what}.*? (\d+) px', out)
    assert m, out
    return float(m.group(1))


@pytest.fixture(scope='module')
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return react_release(tmp_path_factory)


def test_report_names_each_convention_and_its_negative_control(root: Path) -> None:
    out = _info(root)
    assert 'conformance: PASS' in out
    assert 'ok   median |position|' in out and 'expected metres' in out
    assert 'up axis: poses z (twm.world_frame)' in out
    assert 'cameras left z, middle z, right z' in out
    assert 'worst-camera fingerprint error 0.00 px' in out
    # what each mistake reads: far outside the rig's 6 px noise floor (hundreds of px at
    # the dataset's 640x480; the test sample is smaller)
    scale = REACT_SIZE[0] / 640
    assert _px(out, 'other up-axis') > 150 * scale
    assert _px(out, 'millimetres') > 150 * scale
    assert _px(out, 'quaternion as wxyz') > 6
    for side in ('left', 'right'):
        fresh = column(root, f'tactile_{side}_is_new').astype(bool)
        assert f'{side} {100 * fresh.mean():.1f} % ({fresh.sum()}/{len(fresh)} rows)' in out
        assert _count(out, f'/tactile_{side}/image_raw') == fresh.sum()
    hz = 1 / np.diff(column(root, 'timestamp'))
    assert f'frame rate {hz.min():.1f}-{hz.max():.1f} Hz' in out
    assert 'assuming 30 Hz' in out


def test_report_fails_where_the_data_disagrees_with_the_stiffness(root: Path,
                                                                  tmp_path: Path) -> None:
    copy = Path(shutil.copytree(root, tmp_path / 'release'))
    force = column(copy, 'force_left_normal_n')
    rewrite_parquet(copy, lambda t: replace_column(t, 'force_left_penetration_mm', force / 1.0))
    out = _info(copy)
    assert 'conformance: FAIL' in out
    assert re.search(r'^FAIL penetration_mm', out, re.M), out


def test_report_fails_where_is_new_was_coerced(root: Path, tmp_path: Path) -> None:
    """is_new strings read as all true (the old coercion): refused at read now, and the
    report itself would not say PASS on such a column (it disagrees with source_frame)."""
    copy = Path(shutil.copytree(root, tmp_path / 'release'))
    rewrite_parquet(copy, lambda t: replace_column(t, 'tactile_left_is_new',
                                                   [True] * t.num_rows))
    out = _info(copy)
    assert 'conformance: FAIL' in out
    assert re.search(r'^FAIL tactile_\*_is_new agrees with force_\*_source_frame', out, re.M), out
    assert 'stale rows published as fresh' in out


def test_react_options_reach_the_adapter(root: Path) -> None:
    n = len(column(root, 'timestamp'))
    segments = json.loads((root / 'segments.json').read_text())[EPISODE]
    bad = json.loads((root / 'bad_frames.json').read_text())[EPISODE]
    assert _count(_info(root, '--skip-bad'), '/tf') == n - len(bad)
    a, b = segments[2]
    out = _info(root, '--segment', '2', '--tactile-latency', '3', '--gel-axis', 'dual_ball')
    assert _count(out, '/view_right/image_raw') == b - a + 1
    fresh = column(root, 'tactile_left_is_new').astype(bool)
    assert _count(out, '/sensor_left/force') == fresh[a + 3:b + 4].sum()
