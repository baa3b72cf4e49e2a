"""Bad React input: exit 2, one line naming the file and the problem, nothing written or changed."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Callable

import av
import numpy as np
import pytest
from conftest import tree_digest
from react_support import (EPISODE, PARQUET, VIDEOS, edit_json, react_release, replace_column,
                           rewrite_parquet)

from react_ros.formats.video import decode_rgb


def _millimetres(root: Path) -> None:
    def edit(table):
        poses = np.asarray(table.column('sensor_left_pose').to_pylist())
        poses[:, :3] *= 1000.0
        return replace_column(table, 'sensor_left_pose', poses.tolist())
    rewrite_parquet(root, edit)


def _non_unit_quaternion(root: Path) -> None:
    def edit(table):
        poses = np.asarray(table.column('object_pose').to_pylist())
        poses[10:, 3:7] *= 1.3
        return replace_column(table, 'object_pose', poses.tolist())
    rewrite_parquet(root, edit)


def _missing_column(root: Path) -> None:
    rewrite_parquet(root, lambda t: t.drop_columns(['tactile_right_is_new']))


def _short_video(root: Path) -> None:
    path = root / VIDEOS / 'view_middle.mp4'
    frames = list(decode_rgb(path))[:-4]
    with av.open(str(path), mode='w') as out:
        stream = out.add_stream('libx264', rate=30, options={'preset': 'ultrafast'})
        stream.width, stream.height, stream.pix_fmt = frames[0].shape[1], frames[0].shape[0], \
            'yuv420p'
        stream.time_base = Fraction(1, 30)
        for i, img in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(img, format='rgb24')
            frame.pts = i
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))


def _calibration_flipped(root: Path) -> None:
    edit_json(root / 'calibration/cameras/middle.json', lambda d: d.update(up_axis='y'))


def _calibration_without_up_axis(root: Path) -> None:
    edit_json(root / 'calibration/cameras/left.json', lambda d: d.pop('up_axis'))


def _poses_declared_y_up(root: Path) -> None:
    import json

    import pyarrow.parquet as pq
    key = b'twm.world_frame'

    def edit(table):
        world = json.loads(table.schema.metadata[key])
        world['up_axis'] = 'y'
        return table.replace_schema_metadata({key: json.dumps(world)})
    del pq
    rewrite_parquet(root, edit)


def _second_episode(root: Path) -> None:
    # A release of two episodes: which one to play is then the user's choice.
    import json
    path = root / 'episodes.jsonl'
    first = json.loads(path.read_text().splitlines()[0])
    first.update(episode='2026-05-11/episode_000', episode_index=1)
    path.write_text(path.read_text() + json.dumps(first) + '\n')


ID = ['--episode', EPISODE]
CASES: dict[str, tuple[Callable[[Path], None] | None, list[str], str, tuple[str, ...]]] = {
    # case: (break the copy, extra CLI args, file the message must name, words it must contain)
    'millimetres': (_millimetres, ID, PARQUET, ('sensor_left_pose', 'millimetres')),
    'non-unit quaternion': (_non_unit_quaternion, ID, PARQUET, ('object_pose', 'unit')),
    'missing column': (_missing_column, ID, PARQUET, ('tactile_right_is_new', 'missing')),
    'short video': (_short_video, ID, f'{VIDEOS}/view_middle.mp4', ('shorter', 'rows')),
    'unknown episode': (None, ['--episode', '2026-05-10/episode_042'], 'episodes.jsonl',
                        ('2026-05-10/episode_042',)),
    'no episode chosen of two': (_second_episode, [], '', ('2 episode(s)', '--episode')),
    'calibration up axis flipped': (_calibration_flipped, ID, 'calibration/cameras/middle.json',
                                    ("up_axis 'y'", 'px', 'fingerprint')),
    'calibration without up axis': (_calibration_without_up_axis, ID,
                                    'calibration/cameras/left.json', ('no up_axis', 'px')),
    'poses Y-up, calibration Z-up': (_poses_declared_y_up, ID, 'calibration/cameras/left.json',
                                     ('Y-up', 'mix')),
}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, '-m', 'react_ros.cli', *args], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ))


@pytest.mark.parametrize('case', list(CASES))
def test_bad_react_input_exits_2_naming_the_file(case: str, tmp_path: Path,
                                                 tmp_path_factory: pytest.TempPathFactory) -> None:
    breaker, extra, named, words = CASES[case]
    root = Path(shutil.copytree(react_release(tmp_path_factory), tmp_path / 'release'))
    if breaker is not None:
        breaker(root)
    before = tree_digest(root)
    entries = sorted(p.name for p in tmp_path.iterdir())
    out = tmp_path / 'out_bag'
    runs = [['convert', str(root), *extra, '-o', str(out)]]
    if case in ('millimetres', 'calibration up axis flipped'):
        runs.append(['info', str(root), *extra])
    for args in runs:
        proc = _cli(*args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        lines = proc.stderr.splitlines()
        assert len(lines) == 1, proc.stderr
        assert lines[0].startswith(f'error: {root / named}'.rstrip('/') + ':'), lines[0]
        for word in words:
            assert word in lines[0], lines[0]
        assert not out.exists()
        assert sorted(p.name for p in tmp_path.iterdir()) == entries
        assert tree_digest(root) == before
