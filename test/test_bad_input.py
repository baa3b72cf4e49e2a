"""Bad UMI input: the CLI exits 2 with one line naming the file; nothing written or changed."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
from conftest import rewrite_mcap, tree_digest

MP4 = 'data/{}.perception_interface.camera.state.mp4'


def _missing_video(ep: Path) -> None:
    (ep / MP4.format('center')).unlink()


def _truncated_video(ep: Path) -> None:
    path = ep / MP4.format('left')
    data = path.read_bytes()
    path.write_bytes(data[:len(data) * 2 // 5])


def _truncated_mcap(ep: Path) -> None:
    path = ep / 'data/episode.mcap'
    data = path.read_bytes()
    path.write_bytes(data[:len(data) * 3 // 5])


def _not_mcap(ep: Path) -> None:
    (ep / 'data/episode.mcap').write_bytes(b'#ROSBAG V2.0\n' + bytes(range(256)) * 8)


def _pointer_missing(ep: Path) -> None:
    topic = '/right/perception_interface/camera/state'
    total = sum(1 for _ in _pointers(ep, topic))
    seen = {'n': 0}

    def drop_last(t: str, msg: Any) -> Any:
        if t == topic:
            seen['n'] += 1
            if seen['n'] == total:
                return None
        return msg
    rewrite_mcap(ep / 'data/episode.mcap', drop_last)


def _pointers(ep: Path, topic: str) -> Any:
    from react_ros.formats.mcap_bag import McapBag
    return McapBag(ep / 'data/episode.mcap').messages([topic])


def _pointer_without_stamp(ep: Path) -> None:
    topic = '/left/perception_interface/camera/state'
    seen = {'n': 0}

    def unstamp(t: str, msg: Any) -> Any:
        if t == topic:
            seen['n'] += 1
            if seen['n'] == 3:
                msg.values = [kv for kv in msg.values if kv.key != 'header.stamp']
        return msg
    rewrite_mcap(ep / 'data/episode.mcap', unstamp)


def _broken_urdf(ep: Path) -> None:
    path = ep / 'meta/scene/robot_description.urdf'
    path.write_text(path.read_text()[:300])


def _missing_camera_info(ep: Path) -> None:
    (ep / 'meta/sensor/left.metadata_interface.camera_info.meta.yaml').unlink()


def _not_a_dataset(ep: Path) -> None:
    for p in sorted(ep.rglob('*'), reverse=True):
        p.rmdir() if p.is_dir() else p.unlink()
    (ep / 'README.txt').write_text('holiday photos\n')


CASES: dict[str, tuple[Callable[[Path], None], str, tuple[str, ...]]] = {
    # case: (break the copy, file the message must name, words it must contain)
    'missing video': (_missing_video, MP4.format('center'), ('missing',)),
    'truncated video': (_truncated_video, MP4.format('left'), ('video',)),
    'truncated mcap': (_truncated_mcap, 'data/episode.mcap', ('MCAP',)),
    'not mcap': (_not_mcap, 'data/episode.mcap', ('MCAP',)),
    'pointer count': (_pointer_missing, MP4.format('right'),
                      ('frames', 'pointers', '/right/perception_interface/camera/state')),
    'pointer without stamp': (_pointer_without_stamp, 'data/episode.mcap',
                              ('header.stamp', '/left/perception_interface/camera/state')),
    'broken urdf': (_broken_urdf, 'meta/scene/robot_description.urdf', ('URDF',)),
    'missing camera info': (_missing_camera_info,
                            'meta/sensor/left.metadata_interface.camera_info.meta.yaml',
                            ('missing',)),
    'not a dataset': (_not_a_dataset, '', ('not',)),
}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, '-m', 'react_ros.cli', *args], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ))


@pytest.mark.parametrize('case', list(CASES))
def test_bad_input_exits_2_with_one_line_and_touches_nothing(case: str, umi_copy: Path) -> None:
    breaker, named, words = CASES[case]
    breaker(umi_copy)
    before = tree_digest(umi_copy)
    workdir = umi_copy.parent
    entries = sorted(p.name for p in workdir.iterdir())
    out = workdir / 'out_bag'
    for args in (['info', str(umi_copy)], ['convert', str(umi_copy), '-o', str(out)]):
        proc = _cli(*args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        lines = proc.stderr.splitlines()
        assert len(lines) == 1, proc.stderr
        line = lines[0]
        assert 'Traceback' not in proc.stderr
        assert line.startswith(f'error: {umi_copy / named}'.rstrip('/') + ':'), line
        for word in words:
            assert word in line, line
        assert not out.exists()
        assert sorted(p.name for p in workdir.iterdir()) == entries
        assert tree_digest(umi_copy) == before
