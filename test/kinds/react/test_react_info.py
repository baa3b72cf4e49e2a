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
    # the fingerprint's rows are the whole table's: counted from a subset (a --segment's first
    # row), the same poses miss it by more than its tolerance
    subset = re.search(r'worst-camera fingerprint error 0\.00 px.*\n\s+would read: a row subset '
                       r'([\d.]+) px', out)
    assert subset, out
    assert float(subset.group(1)) > 6
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


def test_report_says_gel_calibration_world_offset_and_what_mixing_them_reads(
        root: Path) -> None:
    out = _info(root)
    gels = {s: json.loads((root / f'calibration/gel_{s}.json').read_text()) for s in
            ('left', 'right')}
    assert (gels['left']['depth_offset_mm'], gels['right']['depth_offset_mm']) == (-5.0, 0.0)
    assert 'depth_offset_mm left -5, right 0; right: ball centre never backed off' in out
    assert 'gel_axis_in_rigid from local -y: left 21.2 deg, right 22.4 deg' in out
    assert re.search(r'^ok   force_\*_target_pose = pose \+ F/k along local -y to 0 mm', out, re.M)
    m = re.search(r'stored target with a dual_ball force: left ([\d.]+) deg, right ([\d.]+) deg',
                  out)
    assert m and float(m.group(1)) > 20 and float(m.group(2)) > 20, out
    assert re.search(r'^ok   world_frame_offset \[0.23, 0.0, 0.175\] m', out, re.M), out
    assert _px(out, 'offset applied twice') > 6
    assert 'world frame of 2026-05-10: the reference' in out


def test_report_gives_the_05_19_world_frame_residuals(root: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(root, tmp_path / 'release'))
    new_id = '2026-05-19/episode_000'
    for sub in ('data', 'videos'):
        (copy / sub / '2026-05-10').rename(copy / sub / '2026-05-19')
    for rel in ('episodes.jsonl', 'segments.json', 'bad_frames.json', 'splits.json'):
        path = copy / rel
        path.write_text(path.read_text().replace(EPISODE, new_id))
    proc = subprocess.run([sys.executable, '-m', 'react_ros.cli', 'info', str(copy),
                           '--episode', new_id], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert 'translation-only correction (230, 0, 175) mm' in proc.stdout
    assert '20-26 mm from the reference frame' in proc.stdout and 'yaw' in proc.stdout
    assert 'world frame of 2026-05-10' not in proc.stdout


def test_report_fails_where_the_stored_target_is_not_along_minus_y(root: Path,
                                                                   tmp_path: Path) -> None:
    """A release whose targets were built with dual_ball (the earlier published values)."""
    from scipy.spatial.transform import Rotation
    copy = Path(shutil.copytree(root, tmp_path / 'release'))
    axis = np.array(json.loads((copy / 'calibration/gel_left.json').read_text())
                    ['gel_axis_in_rigid'])
    pose = column(copy, 'sensor_left_pose')
    target = pose.copy()
    target[:, :3] += (column(copy, 'force_left_normal_n') / 2000.0)[:, None] * \
        Rotation.from_quat(pose[:, 3:7]).apply(axis)
    rewrite_parquet(copy, lambda t: replace_column(t, 'force_left_target_pose', target.tolist()))
    out = _info(copy)
    assert 'conformance: FAIL' in out
    assert re.search(r'^FAIL force_\*_target_pose = pose \+ F/k along local -y', out, re.M), out


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


EARLY = 'tactile stream is 15 frames early'


def _cli(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, '-m', 'react_ros.cli', *args], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    return proc


def test_a_pre_fix_episode_without_latency_is_warned_once_naming_the_option(
        root: Path, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Format document 5: recordings before 2026-06-27 have the tactile stream 15 frames
    early (every motherboard episode). With the default latency 0 nothing else shows it, so
    info, convert (and play, through the same opening) say it once, naming the option and the
    launch argument; not with --tactile-latency 15, and not for an episode after the fix."""
    from conftest import written_once

    from react_ros.kinds.react.sample import write_react_sample
    later = written_once(tmp_path_factory, 'react_release_after_fix', lambda out: (
        write_react_sample(out, seed=3, duration_s=1.0, width=REACT_SIZE[0],
                           height=REACT_SIZE[1], date='2026-07-02')))
    later_id = '2026-07-02/episode_000'
    assert json.loads((later / 'meta/info.json').read_text())['task'] == 'pushT'  # not motherboard

    def said(src: Path, episode: str, *args: str) -> list[str]:
        info = _cli('info', str(src), '--episode', episode, *args)
        out = tmp_path / f'bag{len(list(tmp_path.iterdir()))}'
        convert = _cli('convert', str(src), '--episode', episode, '-o', str(out), *args)
        lines = [line for line in info.stdout.splitlines() + convert.stderr.splitlines()
                 if EARLY in line]
        assert all(line.startswith('warning: ') for line in lines), lines
        return lines

    before = said(root, EPISODE)
    assert len(before) == 2  # once in info, once in convert
    assert all(EPISODE in w and '--tactile-latency 15' in w and 'tactile_latency:=15' in w
               for w in before), before
    assert said(root, EPISODE, '--tactile-latency', '15') == []
    assert said(later, later_id) == []


def test_the_player_node_says_the_episodes_warnings_too(root: Path) -> None:
    """Under ros2 launch the player is the node: its log must carry what `react-ros play`
    prints (here the pre-fix episode's tactile warning), once."""
    proc = subprocess.run([sys.executable, '-m', 'react_ros.node', '--ros-args',
                           '-p', f'episode:={root}', '-p', f'episode_id:={EPISODE}',
                           '-p', 'rate:=20.0', '-p', 'quiet:=true',
                           '-p', 'wait_for_subscribers:=0.0', '-p', 'playback_duration:=0.2'],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if EARLY in line]
    assert len(lines) == 1 and 'WARN' in lines[0] and '--tactile-latency 15' in lines[0], lines
