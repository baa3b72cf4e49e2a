"""RoboTwin's two self-checks (colours against the point cloud, depth against the point cloud)
and the cam2world_gl cross-check: they pass on the sample and fail on their negative controls.
"""
from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import Image
from robotwin_support import EP0, EPISODE, robotwin_release

from react_ros import cli
from react_ros.registry import open_episode
from react_ros.kinds.robotwin import hdf5 as rh
from react_ros.kinds.robotwin.sample import write_episode


def _episode(tmp_path: Path, **kwargs: object) -> Path:
    data = tmp_path / 'agilex' / 'task' / 'gt_export' / 'data'
    data.mkdir(parents=True)
    return write_episode(data, 0, 8, seed=4, size=(96, 72), extra=False, **kwargs)


def _message(raw: object) -> Image:
    """Heavy streams yield their messages serialised (built on a worker thread)."""
    return raw if isinstance(raw, Image) else deserialize_message(raw, Image)


def _line(report: list[str], what: str) -> str:
    (line,) = [r for r in report if r.startswith(f'conformance: {what}')]
    return line


def test_info_prints_the_checks_passing_on_the_sample(tmp_path_factory: pytest.TempPathFactory,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    root = robotwin_release(tmp_path_factory)
    assert cli.main(['info', str(root), '--episode', EPISODE]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for what in ('head camera pose', 'head rgb channels', 'depth', 'joint order',
                 'left end pose', 'right end pose', 'left arm joints', 'right arm joints',
                 'mesh id table'):
        assert _line(lines, what).endswith(': OK'), out
    # every check is followed by what its wrong reading would read
    for i, line in enumerate(lines):
        if line.startswith('conformance: '):
            assert lines[i + 1].startswith('  would read: '), (line, lines[i + 1])


def test_the_colour_check_tells_published_from_swapped(tmp_path_factory: pytest.TempPathFactory
                                                       ) -> None:
    root = robotwin_release(tmp_path_factory)
    ep = rh.read_episode(root / EP0)
    with rh.Frames(root / EP0) as fr:
        for i in (0, 5, 12):
            cloud = fr.get('pointcloud', i)
            k, e = ep.head.intrinsic[i], ep.head.extrinsic[i]
            published = rh.colour_error(cloud, fr.rgb('head_camera', i), k, e)
            as_decoded = rh.colour_error(cloud, rh.decode_jpeg(
                fr.jpeg(f'{rh.HEAD}/rgb', i), fr.path, 'x'), k, e)
            # the document: 1.46/255 decoded right vs 2.82/255 swapped (against the mp4)
            assert published < 12 < as_decoded, (i, published, as_decoded)


def test_a_release_without_the_swap_fails_the_colour_check(tmp_path: Path) -> None:
    path = _episode(tmp_path, swap=False)  # JPEGs in true colours: swapping back is wrong
    episode = open_episode(path, 'robotwin')
    assert _line(episode.report, 'head rgb channels').endswith(': FAIL')
    assert any('R/B swap' in w for w in episode.warnings)
    good = open_episode(_episode(tmp_path / 'good'), 'robotwin')
    assert _line(good.report, 'head rgb channels').endswith(': OK')


def test_the_depth_check_fails_for_millimetres_and_for_another_frame(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    root = robotwin_release(tmp_path_factory)
    ep = rh.read_episode(root / EP0)
    with h5py.File(root / EP0) as f:
        for i in (0, 8):
            cloud = f['pointcloud'][i]
            k, e = ep.head.intrinsic[i], ep.head.extrinsic[i]
            mm = f[f'{rh.HEAD}/depth'][i]
            assert rh.depth_error_mm(cloud, mm / 1000.0, k, e) < 1.0  # metres, as published
            assert rh.depth_error_mm(cloud, mm, k, e) > 100_000  # left in millimetres
            k4, e4 = ep.head.intrinsic[i + 4], ep.head.extrinsic[i + 4]
            later = rh.depth_error_mm(cloud, f[f'{rh.HEAD}/depth'][i + 4] / 1000.0, k4, e4)
            assert later > 10.0  # the document: tens of millimetres 4 frames apart


def test_depth_stored_in_metres_fails_the_depth_check(tmp_path: Path) -> None:
    episode = open_episode(_episode(tmp_path, depth_scale=1e-3), 'robotwin')
    assert _line(episode.report, 'depth').endswith(': FAIL')
    assert any('not millimetres' in w for w in episode.warnings)


def test_cam2world_gl_is_checked_against_extrinsic_cv(tmp_path: Path) -> None:
    path = _episode(tmp_path)
    good = open_episode(path, 'robotwin')
    line = _line(good.report, 'head camera pose')
    assert line.endswith(': OK')
    with h5py.File(path, 'r+') as f:
        gl = f[f'{rh.HEAD}/cam2world_gl']
        gl[3, 0, 3] = gl[3, 0, 3] + 0.05
    bad = open_episode(path, 'robotwin')
    assert _line(bad.report, 'head camera pose').endswith(': FAIL')
    assert any('cam2world_gl disagrees' in w for w in bad.warnings)
    # Without the GL -> CV flip the two never agree: the flip is what makes the check.
    ep = rh.read_episode(path)
    fresh = rh.read_episode(_episode(tmp_path / 'again')).head
    assert fresh.gl_disagreement() < 1e-4 and ep.head.gl_disagreement(flip=False) > 0.5


def test_the_published_depth_is_what_the_check_measures(tmp_path: Path) -> None:
    """The adapter's depth stream feeds the check: metres in, ~0 mm out."""
    path = _episode(tmp_path)
    episode = open_episode(path, 'robotwin')
    (depth,) = [s for s in episode.streams if s.topic == '/head_camera/depth/image_raw']
    ep = rh.read_episode(path)
    with h5py.File(path) as f:
        for i, (_, raw) in enumerate(depth.open()):
            msg = _message(raw)
            metres = np.frombuffer(bytes(msg.data), np.float32).reshape(msg.height, msg.width)
            err = rh.depth_error_mm(f['pointcloud'][i], metres.astype(np.float64),
                                    ep.head.intrinsic[i], ep.head.extrinsic[i])
            assert err < 1.0, (i, err)
