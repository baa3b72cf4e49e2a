"""The shared builders every adapter uses: video -> Image + CameraInfo, and the pose rule.

The builder runs on real mp4 files written here with PyAV; the pose rule on
plain arrays and through the UMI and React sample episodes.
"""
from __future__ import annotations

import math
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from conftest import rewrite_mcap
from react_support import EPISODE, react_release, replace_column, rewrite_parquet
from scipy.spatial.transform import Rotation

from react_ros.registry import open_episode
from react_ros.adapters.base import EpisodeOptions
from react_ros.adapters.poses import (FAULTS, NON_FINITE, NON_UNIT, ZERO_QUATERNION, PosePolicy,
                                      PoseRule, pose_faults)
from react_ros.adapters.video_streams import video_camera_streams
from react_ros.errors import DatasetFormatError
from react_ros.formats import video
from react_ros.info import describe
from react_ros.ros.msgs import to_ns

SIZE = (64, 48)
N = 10
T0 = 1_700_000_000_000_000_000
K = [50.0, 0.0, 32.0, 0.0, 48.0, 24.0, 0.0, 0.0, 1.0]
P = [50.0, 0.0, 32.0, -3.5, 0.0, 48.0, 24.0, 0.0, 0.0, 0.0, 1.0, 0.0]
CALIB = {'width': SIZE[0], 'height': SIZE[1], 'k': K, 'p': P,
         'd': [-0.04, 0.01, 0.0003, -0.0002, -0.002], 'distortion_model': 'plumb_bob'}


def _grey(n: int) -> int:
    return 10 + 20 * n


def write_video(path: Path, n: int = N, size: tuple[int, int] = SIZE) -> video.VideoInfo:
    """Frame i is flat grey _grey(i): which frame an Image holds is read from its pixels."""
    with av.open(str(path), mode='w') as out:
        stream = out.add_stream('libx264', rate=30, options={'preset': 'ultrafast', 'crf': '0'})
        stream.width, stream.height, stream.pix_fmt = size[0], size[1], 'yuv420p'
        stream.time_base = Fraction(1, 30)
        for i in range(n):
            frame = av.VideoFrame.from_ndarray(np.full((size[1], size[0], 3), _grey(i), np.uint8),
                                               format='rgb24')
            frame.pts = i
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return video.probe(path)


def frame_of(img: Any) -> int:
    pixels = np.frombuffer(img.data, np.uint8)
    return int(round((float(pixels.mean()) - 10) / 20))


@pytest.fixture(scope='module')
def clip(tmp_path_factory: pytest.TempPathFactory) -> video.VideoInfo:
    return write_video(tmp_path_factory.mktemp('video') / 'cam0.mp4')


def by_topic(streams: list[Any]) -> dict[str, Any]:
    return {s.topic: s for s in streams}


# -- video -> Image + CameraInfo -----------------------------------------------------------
def test_image_and_camera_info_carry_the_same_stamps_in_stamp_order(clip: video.VideoInfo
                                                                    ) -> None:
    # Frame 3 was stamped before frame 2 (a late pointer): both streams come out sorted.
    stamps = T0 + np.array([0, 10, 30, 20, 40, 50, 60, 70, 80, 90]) * 1_000_000
    s = by_topic(video_camera_streams(clip, stamps, '/cam0', 'cam0_optical_frame', CALIB))
    assert list(s) == ['/cam0/image_raw', '/cam0/camera_info']
    image, info = s['/cam0/image_raw'], s['/cam0/camera_info']
    assert image.msg_type == 'sensor_msgs/msg/Image'
    assert info.msg_type == 'sensor_msgs/msg/CameraInfo'
    assert image.heavy and not info.heavy and image.count == info.count == N
    assert image.approx_bytes == SIZE[0] * SIZE[1] * 3 + 200
    assert image.video is not None and info.video is None
    assert image.video.path == clip.path
    # what the image stream publishes, in its order: frame n at stamp n (for --images h264)
    assert image.video.frames.tolist() == [0, 1, 3, 2, 4, 5, 6, 7, 8, 9]
    assert image.video.stamps.tolist() == sorted(stamps.tolist())
    assert (image.video.frame_id, image.video.scale) == ('cam0_optical_frame', 1.0)
    imgs, infos = list(image.open()), list(info.open())
    assert [t for t, _ in imgs] == [t for t, _ in infos] == sorted(stamps.tolist())
    for (t, img), (_, cal) in zip(imgs, infos):
        assert to_ns(img.header.stamp) == to_ns(cal.header.stamp) == t
        assert img.header.frame_id == cal.header.frame_id == 'cam0_optical_frame'
        assert stamps[frame_of(img)] == t  # frame n <-> stamp n
        assert (img.width, img.height, img.encoding) == (*SIZE, 'rgb8')
    assert [frame_of(m) for _, m in imgs] == [0, 1, 3, 2, 4, 5, 6, 7, 8, 9]
    assert list(infos[0][1].k) == K and list(infos[0][1].p) == P


def test_image_scale_scales_pixels_and_k_and_p(clip: video.VideoInfo) -> None:
    stamps = T0 + np.arange(N) * 33_000_000
    full = by_topic(video_camera_streams(clip, stamps, '/c', 'c', CALIB))
    half = by_topic(video_camera_streams(clip, stamps, '/c', 'c', CALIB, image_scale=0.5))
    _, img = next(iter(half['/c/image_raw'].open()))
    assert (img.width, img.height) == (SIZE[0] // 2, SIZE[1] // 2)
    assert half['/c/image_raw'].approx_bytes == 32 * 24 * 3 + 200
    _, a = next(iter(full['/c/camera_info'].open()))
    _, b = next(iter(half['/c/camera_info'].open()))
    assert (b.width, b.height) == (img.width, img.height)
    for i in (0, 2, 4, 5):
        assert b.k[i] == pytest.approx(a.k[i] / 2)
    for i in (0, 2, 3, 5, 6):  # P[3] = -fx*baseline scales with fx
        assert b.p[i] == pytest.approx(a.p[i] / 2)
    assert list(b.d) == list(a.d) and b.k[8] == 1.0 and b.p[10] == 1.0


def test_per_frame_calibration_rows_and_offset(clip: video.VideoInfo) -> None:
    """K of each CameraInfo is the one of the frame whose pixels the Image carries."""
    stamps = T0 + np.arange(N) * 33_000_000
    rows, offset = np.array([1, 2, 4, 6]), 3  # row r shows frame r + 3

    def calib(n: int) -> dict[str, Any]:
        return {**CALIB, 'k': [40.0 + n, 0.0, 32.0, 0.0, 40.0 + n, 24.0, 0.0, 0.0, 1.0], 'p': None}
    s = by_topic(video_camera_streams(clip, stamps, '/head', 'head', calib, rows=rows,
                                      offset=offset))
    imgs, infos = list(s['/head/image_raw'].open()), list(s['/head/camera_info'].open())
    assert s['/head/image_raw'].count == s['/head/camera_info'].count == len(rows)
    assert [t for t, _ in imgs] == [t for t, _ in infos] == stamps[rows].tolist()
    assert [frame_of(m) for _, m in imgs] == (rows + offset).tolist()
    assert [m.k[0] for _, m in infos] == [40.0 + r + offset for r in rows]
    assert [m.p[0] for _, m in infos] == [40.0 + r + offset for r in rows]  # P follows K
    with pytest.raises(ValueError):
        video_camera_streams(clip, stamps, '/head', 'head', calib, rows=rows, offset=4)


def test_equidistant_model_and_stereo_pair_on_cam0_stamps(clip: video.VideoInfo,
                                                          tmp_path: Path) -> None:
    """TrueTrace: Kannala-Brandt D=[k1..k4]; cam1 is stamped with cam0's frame times."""
    cam1 = write_video(tmp_path / 'cam1.mp4')
    stamps = T0 + np.cumsum(np.r_[0, np.full(N - 1, 16_000_000)])
    fisheye = {**CALIB, 'distortion_model': 'equidistant', 'd': [0.11, -0.02, 0.004, -0.0007]}
    left = by_topic(video_camera_streams(clip, stamps, '/cam0', 'cam0_optical_frame', fisheye,
                                         image_scale=0.5))
    right = by_topic(video_camera_streams(cam1, stamps, '/cam1', 'cam1_optical_frame',
                                          {**fisheye, 'd': [0.1, -0.01, 0.003, -0.0006]},
                                          image_scale=0.5))
    info0 = list(left['/cam0/camera_info'].open())
    info1 = list(right['/cam1/camera_info'].open())
    img1 = list(right['/cam1/image_raw'].open())
    assert [t for t, _ in info0] == [t for t, _ in info1] == [t for t, _ in img1]
    assert [frame_of(m) for _, m in img1] == list(range(N))
    for _, m in info0 + info1:
        assert m.distortion_model == 'equidistant' and len(m.d) == 4
    assert list(info0[0][1].d) == [0.11, -0.02, 0.004, -0.0007]
    assert info1[0][1].header.frame_id == 'cam1_optical_frame'
    assert info1[0][1].k[0] == pytest.approx(25.0)


def test_without_calibration_only_the_image(clip: video.VideoInfo) -> None:
    streams = video_camera_streams(clip.path, T0 + np.arange(N), '/tactile_left', 'gel')
    assert [s.topic for s in streams] == ['/tactile_left/image_raw']


# -- the pose rule --------------------------------------------------------------------------
def _poses(n: int = 8) -> np.ndarray:
    q = Rotation.random(n, random_state=2).as_quat()
    return np.hstack([np.random.default_rng(2).normal(0, 0.3, (n, 3)), q])


SPOIL = {  # fault: how a row gets it
    NON_FINITE: [(1, 0, math.nan), (2, 5, math.inf), (3, 3, -math.inf)],
    ZERO_QUATERNION: [(4, slice(3, 7), 0.0)],
    NON_UNIT: [(5, slice(3, 7), 0.8)],  # scaled, below
}


def _spoiled() -> np.ndarray:
    p = _poses()
    for fault, spots in SPOIL.items():
        for row, col, v in spots:
            if fault == NON_UNIT:
                p[row, col] *= v
            else:
                p[row, col] = v
    return p


def test_each_invalid_pose_kind_is_named() -> None:
    faults = pose_faults(_spoiled(), 0.01)
    assert faults.tolist() == ['', NON_FINITE, NON_FINITE, NON_FINITE, ZERO_QUATERNION,
                               NON_UNIT, '', '']
    nearly = _poses(2)
    nearly[0, 3:7] *= 1.009  # inside the tolerance
    nearly[1, 3:7] *= 1.011
    assert pose_faults(nearly, 0.01).tolist() == ['', NON_UNIT]


def test_dropped_rows_are_counted_per_source_with_one_warning(tmp_path: Path) -> None:
    warnings: list[str] = ['earlier']
    rule = PoseRule(PosePolicy(0.01), warnings)
    ok = rule.check('/left/pose', _spoiled(), tmp_path / 'episode.mcap', where=' on /tf')
    assert ok.tolist() == [True, False, False, False, False, False, True, True]
    assert rule.check('/right/pose', _poses(), tmp_path / 'episode.mcap').all()
    assert rule.counts == {'/left/pose': 5}
    assert warnings[1:] == ['episode.mcap: /left/pose: 5 pose(s) not published on /tf '
                            '(3 NaN or infinite, 1 zero quaternion, 1 non-unit quaternion)']


@pytest.mark.parametrize('fault', FAULTS)
def test_a_refused_fault_names_the_file_and_the_first_bad_row(fault: str,
                                                              tmp_path: Path) -> None:
    rule = PoseRule(PosePolicy(1e-3, frozenset({fault})))
    row = {NON_FINITE: 1, ZERO_QUATERNION: 4, NON_UNIT: 5}[fault]
    with pytest.raises(DatasetFormatError) as err:
        rule.check('object_pose', _spoiled(), tmp_path / 'episode.parquet')
    assert err.value.path == tmp_path / 'episode.parquet'
    assert f'object_pose row {row}:' in err.value.detail
    if fault == NON_UNIT:
        assert 'quaternion norm 0.8000, not a unit quaternion' in err.value.detail
    assert rule.counts == {}


# -- the rule in the adapters ---------------------------------------------------------------
POSE = '/left/perception_interface/pose/state'


def test_umi_drops_every_invalid_pose_kind_from_tf_and_info_counts_them(umi_copy: Path
                                                                        ) -> None:
    seen = {'n': 0}

    def spoil(topic: str, msg: Any) -> Any:
        if topic == POSE:
            seen['n'] += 1
            p, q = msg.pose.position, msg.pose.orientation
            if seen['n'] == 3:
                p.y = math.inf
            elif seen['n'] == 5:
                q.x = q.y = q.z = q.w = 0.0
            elif seen['n'] == 7:
                q.w *= 1.5
            elif seen['n'] == 9:
                q.z = math.nan
        return msg
    # the sample's tracking losses are held back too (the status rule): counted apart
    lost = open_episode(umi_copy).invalid_poses
    rewrite_mcap(umi_copy / 'data/episode.mcap', spoil)
    ep = open_episode(umi_copy)
    assert ep.invalid_poses == {**lost, POSE: lost.get(POSE, 0) + 4}
    left = [tr for s in ep.streams if s.topic == '/tf' for _, m in s.open()
            for tr in m.transforms if tr.child_frame_id == 'quest_left_aim']
    assert len(left) == seen['n'] - 4 - lost.get(POSE, 0)
    assert all(abs(np.linalg.norm([r.x, r.y, r.z, r.w]) - 1) < 0.01
               for r in (t.transform.rotation for t in left))
    (warning,) = [w for w in ep.warnings if POSE in w]
    assert '4 pose(s)' in warning and 'zero quaternion' in warning
    assert f'invalid poses: {POSE}: {lost.get(POSE, 0) + 4} not published' in \
        describe(ep).splitlines()


@pytest.fixture(scope='module')
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return react_release(tmp_path_factory)


def _edit_pose(root: Path, column: str, edit: Any) -> None:
    def change(table: Any) -> Any:
        p = np.asarray(table.column(column).to_pylist())
        edit(p)
        return replace_column(table, column, p.tolist())
    rewrite_parquet(root, change)


def test_react_drops_non_finite_rows_and_counts_them(release: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(release, tmp_path / 'release'))

    def spoil(p: np.ndarray) -> None:
        p[3, 0], p[7, 4] = math.nan, math.inf
    _edit_pose(copy, 'sensor_left_pose', spoil)
    ep = open_episode(copy, options=EpisodeOptions(episode=EPISODE))
    streams = by_topic(ep.streams)
    n = streams['/sensor_right/pose'].count
    assert ep.invalid_poses == {'sensor_left_pose': 2}
    assert streams['/sensor_left/pose'].count == len(list(streams['/sensor_left/pose'].open())) \
        == n - 2
    left = [tr for _, m in streams['/tf'].open() for tr in m.transforms
            if tr.child_frame_id == 'sensor_left']
    assert len(left) == n - 2 and all(math.isfinite(t.transform.translation.x) for t in left)
    assert 'invalid poses: sensor_left_pose: 2 not published' in describe(ep).splitlines()


def test_react_refuses_a_zero_quaternion(release: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(release, tmp_path / 'release'))

    def spoil(p: np.ndarray) -> None:
        p[12, 3:7] = 0.0
    _edit_pose(copy, 'force_right_target_pose', spoil)
    with pytest.raises(DatasetFormatError) as err:
        open_episode(copy, options=EpisodeOptions(episode=EPISODE))
    assert err.value.path.name == 'episode_000.parquet'
    assert 'force_right_target_pose row 12: zero quaternion' in err.value.detail
