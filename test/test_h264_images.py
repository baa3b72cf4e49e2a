"""`--images h264`: camera videos as foxglove_msgs/CompressedVideo, in bags and live.

Read back with mcap + mcap_ros2 and decoded with PyAV's own h264 decoder fed the
messages in order, as a viewer does, and compared with what PyAV decodes from the
mp4 itself (UMI: packets passed through, so bit-identical frames) or with the raw
bag's Images (React: B-frames, so re-encoded, within encoder error). NAL units
are parsed here, not with the module under test.
"""
from __future__ import annotations

import math
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from live_support import PLAYER, Listener, spawn, spawn_player, stop
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from react_support import EPISODE, react_release
from release_support import write_release
from robotwin_support import EPISODE as ROBOTWIN_EPISODE
from robotwin_support import robotwin_release
from rosbag2_interfaces import srv

from react_ros.convert_options import ConvertOptions
from react_ros import cli
from react_ros.registry import open_episode
from react_ros.adapters.base import EpisodeOptions
from react_ros.adapters.video_streams import video_camera_streams
from react_ros.errors import SinkError
from react_ros.convert_options import ConvertAllOptions
from react_ros.rosbag2.writer import write_bag
from react_ros.sinks.compressed_video import compressed_video_streams
from react_ros.sinks.readahead import ReadAhead

pytestmark = pytest.mark.timeout(240)

UMI_CAMERAS = ('left', 'center', 'right')
REACT_CAMERAS = ('view_left', 'view_middle', 'view_right', 'tactile_left', 'tactile_right')
VIDEO_TYPE = 'foxglove_msgs/msg/CompressedVideo'
IMAGE_TYPE = 'sensor_msgs/msg/Image'
SPS, PPS, IDR = 7, 8, 5
# Mean over a frame of 10 log10(255^2 / MSE), re-encoded (crf 18) against the raw frames.
# Measured on the 160x120 React sample: 41.2-45.9 dB per frame over its 5 cameras (the
# worst frame of each: 41.2-44.5); the tactile frames paired one off give 18 dB (the views
# barely move from frame to frame: the stamps check their pairing); crf 40 gives 29.8 dB.
PSNR_BOUND = 38.0
Msgs = dict[str, list[tuple[int, Any, bytes]]]


def _read(bag: Path) -> Msgs:
    """topic -> [(log time, decoded message, CDR bytes)] of the bag's one MCAP file."""
    out: Msgs = {}
    (mcap,) = bag.glob('*.mcap')
    with open(mcap, 'rb') as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _, channel, message, msg in reader.iter_decoded_messages(log_time_order=True):
            out.setdefault(channel.topic, []).append((message.log_time, msg, message.data))
    return out


def _types(bag: Path) -> dict[str, str]:
    (mcap,) = bag.glob('*.mcap')
    with open(mcap, 'rb') as f:
        summary = make_reader(f).get_summary()
    assert summary is not None
    return {c.topic: summary.schemas[c.schema_id].name for c in summary.channels.values()}


def _ns(t: Any) -> int:
    return int(t.sec) * 1_000_000_000 + int(t.nanosec)


def _nal_types(data: bytes) -> list[int]:
    """h264 NAL unit types of an Annex B access unit (after each 00 00 01 start code)."""
    types, i = [], data.find(b'\x00\x00\x01')
    while i >= 0:
        types.append(data[i + 3] & 0x1F)
        i = data.find(b'\x00\x00\x01', i + 3)
    return types


def _pictures(data: bytes) -> int:
    """How many pictures begin in an access unit: slices with first_mb_in_slice 0.

    first_mb_in_slice is the slice header's first field, ue(v): 0 is the single bit 1.
    """
    count, i = 0, data.find(b'\x00\x00\x01')
    while i >= 0:
        if data[i + 3] & 0x1F in (1, IDR) and data[i + 4] & 0x80:
            count += 1
        i = data.find(b'\x00\x00\x01', i + 3)
    return count


def _decode_messages(datas: list[bytes]) -> list[np.ndarray]:
    """Feed one message a packet, in order, to a fresh h264 decoder; RGB frames out."""
    ctx = av.CodecContext.create('h264', 'r')
    frames = []
    for data in datas:
        frames += ctx.decode(av.Packet(data))
    frames += ctx.decode(None)
    return [f.to_ndarray(format='rgb24') for f in frames]


def _decode_file(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as c:
        return [f.to_ndarray(format='rgb24') for f in c.decode(c.streams.video[0])]


def _raw_pixels(msg: Any) -> np.ndarray:
    return np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.width, 3)


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return math.inf if mse == 0 else 10 * math.log10(255.0 ** 2 / mse)


def _umi_video(episode: Path, cam: str) -> Path:
    return episode / 'data' / f'{cam}.perception_interface.camera.state.mp4'


def _tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob('*') if p.is_file())


# -- UMI: no B-frames, passed through -----------------------------------------------------
@pytest.fixture(scope='module')
def umi_bags(umi_episode: Path, tmp_path_factory: pytest.TempPathFactory,
             ) -> dict[str, Any]:
    out = tmp_path_factory.mktemp('h264')
    episode = open_episode(umi_episode)
    write_bag(episode, out / 'raw')
    code = subprocess.run([sys.executable, '-m', 'react_ros.cli', 'convert', str(umi_episode),
                           '-o', str(out / 'h264'), '--images', 'h264', '--no-reencode',
                           '--quiet'], capture_output=True, text=True, timeout=120)
    assert code.returncode == 0, code.stderr
    images = [f'/{c}/image_raw' for c in UMI_CAMERAS]
    write_bag(episode, out / 'rest', ConvertOptions(exclude_topics=images))
    return {'raw': _read(out / 'raw'), 'h264': _read(out / 'h264'), 'dirs': out,
            'stderr': code.stderr}


def test_umi_h264_decodes_to_the_frames_of_the_videos(umi_episode: Path,
                                                      umi_bags: dict[str, Any]) -> None:
    assert umi_bags['stderr'] == ''  # all passed through: nothing re-encoded, nothing kept
    for cam in UMI_CAMERAS:
        msgs = umi_bags['h264'][f'/{cam}/image_raw/compressed_video']
        got = _decode_messages([bytes(m.data) for _, m, _ in msgs])
        want = _decode_file(_umi_video(umi_episode, cam))
        assert len(got) == len(msgs) == len(want), cam
        for n, (a, b) in enumerate(zip(got, want)):
            assert np.array_equal(a, b), f'{cam}: frame {n}'


def test_umi_h264_message_n_has_raw_image_n_stamp_and_frame_id(umi_bags: dict[str, Any]
                                                               ) -> None:
    for cam in UMI_CAMERAS:
        video = umi_bags['h264'][f'/{cam}/image_raw/compressed_video']
        raw = umi_bags['raw'][f'/{cam}/image_raw']
        assert len(video) == len(raw), cam
        for (t, v, _), (t_raw, r, _) in zip(video, raw):
            assert t == t_raw == _ns(v.timestamp) == _ns(r.header.stamp), cam
            assert v.frame_id == r.header.frame_id == f'{cam}_color_optical_frame'
            assert v.format == 'h264'


def _check_keyframes(msgs: list[Any], what: str) -> list[int]:
    """Every keyframe message starts with SPS and PPS; one picture a message. The keyframes."""
    types = [_nal_types(bytes(m.data)) for m in msgs]
    keyframes = [n for n, ts in enumerate(types) if IDR in ts]
    assert keyframes and keyframes[0] == 0, (what, keyframes)
    for n in keyframes:
        assert SPS in types[n] and PPS in types[n], (what, n, types[n])
        assert types[n].index(SPS) < types[n].index(PPS) < types[n].index(IDR), (what, n)
    # one frame a message: one coded picture (which may have several slices) in each
    assert all(_pictures(bytes(m.data)) == 1 for m in msgs), what
    return keyframes


def test_umi_h264_every_keyframe_carries_sps_and_pps(umi_bags: dict[str, Any]) -> None:
    for cam in UMI_CAMERAS:
        _check_keyframes([m for _, m, _ in umi_bags['h264'][f'/{cam}/image_raw/compressed_video']],
                         cam)


def test_umi_h264_bag_replaces_only_the_images(umi_bags: dict[str, Any]) -> None:
    raw, h264 = umi_bags['raw'], umi_bags['h264']
    images = {f'/{c}/image_raw' for c in UMI_CAMERAS}
    videos = {f'{t}/compressed_video' for t in images}
    assert set(h264) == (set(raw) - images) | videos
    types = _types(umi_bags['dirs'] / 'h264')
    assert {types[t] for t in videos} == {VIDEO_TYPE}
    assert IMAGE_TYPE not in types.values()
    for topic in set(raw) - images:  # CameraInfo and everything else: the same bytes
        assert [(t, d) for t, _, d in h264[topic]] == [(t, d) for t, _, d in raw[topic]], topic
    assert all(f'/{c}/camera_info' in h264 for c in UMI_CAMERAS)


def test_umi_h264_bag_is_about_the_size_of_the_videos(umi_episode: Path,
                                                      umi_bags: dict[str, Any]) -> None:
    dirs = umi_bags['dirs']
    videos = sum(_umi_video(umi_episode, c).stat().st_size for c in UMI_CAMERAS)
    rest = _tree_bytes(dirs / 'rest')  # the same bag without its image topics
    h264 = _tree_bytes(dirs / 'h264')
    assert h264 < 1.5 * videos + rest, (h264, videos, rest)
    assert h264 > videos, (h264, videos)  # the packets are all there
    assert h264 * 20 < _tree_bytes(dirs / 'raw')


# -- seeks ---------------------------------------------------------------------------------
GOP = 12
FRAMES = 40


@pytest.fixture(scope='module')
def gop_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 64x48 H.264 mp4 without B-frames, a keyframe every GOP frames."""
    path = tmp_path_factory.mktemp('gop') / 'cam.mp4'
    with av.open(str(path), 'w') as c:
        s = c.add_stream('libx264', rate=30, options={
            'preset': 'veryfast', 'bf': '0', 'g': str(GOP), 'keyint_min': str(GOP),
            'sc_threshold': '0'})
        s.width, s.height, s.pix_fmt = 64, 48, 'yuv420p'
        s.time_base = s.codec_context.time_base = Fraction(1, 30)
        for n in range(FRAMES):
            img = np.full((48, 64, 3), (n * 7) % 256, np.uint8)
            img[:, :n] = 255 - img[:, :n]
            frame = av.VideoFrame.from_ndarray(img, format='rgb24')
            frame.pts = n
            c.mux(s.encode(frame))
        c.mux(s.encode(None))
    return path


def test_a_seek_starts_at_the_keyframe_before_and_keeps_each_stamp(gop_video: Path) -> None:
    stamps = 1_000_000_000 + np.arange(FRAMES) * 33_000_000
    image = video_camera_streams(gop_video, stamps, '/cam', 'cam_frame')[0]
    (stream,) = compressed_video_streams([image], reencode=False)
    whole = list(stream.open())
    assert [t for t, _ in whole] == stamps.tolist()
    assert _check_keyframes([m for _, m in whole], 'gop') == list(range(0, FRAMES, GOP))
    target = 17  # frames 12..16 are needed to decode it
    from_ns = int(stamps[target])
    # through the player's read-ahead, which drops what is stamped before its start
    reader = ReadAhead(stream, from_ns, 1 << 20, lambda: False)
    try:
        after = list(reader)
    finally:
        reader.close()
    assert [_ns(m.timestamp) for _, m in after] == stamps[12:].tolist()
    assert [t for t, _ in after] == [from_ns] * (target - 12) + stamps[target:].tolist()
    assert IDR in _nal_types(bytes(after[0][1].data))
    assert [bytes(m.data) for _, m in after] == [bytes(m.data) for _, m in whole[12:]]
    frames = _decode_messages([bytes(m.data) for _, m in after])
    assert len(frames) == FRAMES - 12
    assert np.array_equal(frames[target - 12], _decode_file(gop_video)[target])
    # on a keyframe, nothing before it
    on_key = list(stream.open_from(int(stamps[24])))
    assert [t for t, _ in on_key] == stamps[24:].tolist()


def test_what_cannot_pass_through_is_named_or_refused(gop_video: Path) -> None:
    stamps = 1_000_000_000 + np.arange(FRAMES) * 33_000_000
    cases = {
        'which is not a keyframe': video_camera_streams(gop_video, stamps, '/a', 'a',
                                                        rows=np.arange(FRAMES - 3),
                                                        offset=3)[0],
        'not one run of the video': video_camera_streams(gop_video, stamps, '/b', 'b',
                                                         rows=np.arange(0, FRAMES, 2))[0],
        '--image-scale 0.5': video_camera_streams(gop_video, stamps, '/c', 'c',
                                                  image_scale=0.5)[0],
        'not stamped in frame order': video_camera_streams(
            gop_video, stamps[[1, 0, *range(2, FRAMES)]], '/d', 'd')[0],
    }
    for why, image in cases.items():
        with pytest.raises(SinkError, match=f'^{gop_video}: .*{why}.*--no-reencode refuses'):
            compressed_video_streams([image], reencode=False)
        notes: list[str] = []
        (stream,) = compressed_video_streams([image], notes=notes.append)
        assert len(notes) == 1 and image.topic in notes[0] and why in notes[0], notes
        got = list(stream.open())
        raw = list(image.open())
        assert [_ns(m.timestamp) for _, m in got] == [t for t, _ in raw], why
        frames = _decode_messages([bytes(m.data) for _, m in got])
        assert len(frames) == len(raw), why
        assert min(_psnr(f, _raw_pixels(r)) for f, (_, r) in zip(frames, raw)) > PSNR_BOUND
        assert len(notes) == 2 and f'{len(raw)} frames' in notes[1], notes  # the cost


# -- RoboTwin: images that are no video --------------------------------------------------
def test_images_not_from_a_video_stay_raw_with_one_note_a_topic(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    root = robotwin_release(tmp_path_factory)
    episode = open_episode(root, 'robotwin', EpisodeOptions(episode=ROBOTWIN_EPISODE))
    images = sorted({s.topic for s in episode.streams if s.msg_type == IMAGE_TYPE})
    assert len(images) >= 5  # head colour, depth, segmentations, wrist cameras
    notes: list[str] = []
    streams = compressed_video_streams(episode.streams, reencode=False, notes=notes.append)
    assert streams == episode.streams
    assert sorted(notes) == [f'note: --images h264: {t} is not from a video; it stays '
                             'sensor_msgs/Image' for t in images]


# -- React: B-frames, re-encoded -----------------------------------------------------------
@pytest.fixture(scope='module')
def react_bags(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = react_release(tmp_path_factory)
    out = tmp_path_factory.mktemp('react_h264')
    raw = subprocess.run([sys.executable, '-m', 'react_ros.cli', 'convert', str(root),
                          '--episode', EPISODE, '-o', str(out / 'raw'), '--quiet'],
                         capture_output=True, text=True, timeout=120)
    assert raw.returncode == 0, raw.stderr
    h264 = subprocess.run([sys.executable, '-m', 'react_ros.cli', 'convert', str(root),
                           '--episode', EPISODE, '-o', str(out / 'h264'), '--images', 'h264',
                           '--quiet'], capture_output=True, text=True, timeout=120)
    assert h264.returncode == 0, h264.stderr
    return {'root': root, 'raw': _read(out / 'raw'), 'h264': _read(out / 'h264'),
            'stderr': h264.stderr}


def test_react_h264_is_reencoded_within_encoder_error(react_bags: dict[str, Any]) -> None:
    raw, h264 = react_bags['raw'], react_bags['h264']
    for cam in REACT_CAMERAS:
        video = h264[f'/{cam}/image_raw/compressed_video']
        images = raw[f'/{cam}/image_raw']
        assert len(video) == len(images) > 0, cam
        for (t, v, _), (t_raw, r, _) in zip(video, images):
            assert t == t_raw == _ns(v.timestamp) == _ns(r.header.stamp), cam
            assert v.frame_id == r.header.frame_id and v.format == 'h264'
        _check_keyframes([m for _, m, _ in video], cam)
        frames = _decode_messages([bytes(m.data) for _, m, _ in video])
        assert len(frames) == len(images), cam
        worst = min(_psnr(f, _raw_pixels(r)) for f, (_, r, _) in zip(frames, images))
        assert worst > PSNR_BOUND, (cam, worst)
        assert f'/{cam}/image_raw' not in h264
    for topic in set(raw) - {f'/{c}/image_raw' for c in REACT_CAMERAS}:
        assert [(t, d) for t, _, d in h264[topic]] == [(t, d) for t, _, d in raw[topic]], topic


def _without_tactile_warning(stderr: str) -> list[str]:
    """The lines but the one warning the sample's episode earns by its date (recorded before
    2026-06-27 and played with latency 0: docs/react.md), which these tests are not about."""
    lines = stderr.splitlines()
    early = [ln for ln in lines if ln.startswith('warning:') and '15 frames early' in ln]
    assert len(early) <= 1, lines
    return [ln for ln in lines if ln not in early]


def test_react_h264_says_what_it_reencodes_and_what_it_cost(react_bags: dict[str, Any]
                                                            ) -> None:
    lines = _without_tactile_warning(react_bags['stderr'])
    assert len(lines) == 2 * len(REACT_CAMERAS), lines
    for cam in REACT_CAMERAS:
        video = react_bags['root'] / 'videos' / EPISODE / f'{cam}.mp4'
        said = [ln for ln in lines if f'/{cam}/image_raw' in ln]
        assert len(said) == 2, (cam, lines)
        why, cost = sorted(said, key=lambda ln: 're-encoded' in ln)
        assert f're-encoding /{cam}/image_raw ({video})' in why and 'B-frames' in why, why
        n = len(react_bags['h264'][f'/{cam}/image_raw/compressed_video'])
        assert f'{n} frames' in cost and 'CPU s' in cost and 's a frame' in cost, cost


def test_react_no_reencode_refuses_with_one_line_and_writes_nothing(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = react_release(tmp_path_factory)
    out = tmp_path / 'bag'
    code = cli.main(['convert', str(root), '--episode', EPISODE, '-o', str(out), '--images',
                     'h264', '--no-reencode', '--quiet'])
    _, err = capsys.readouterr()
    assert code == 2
    lines = _without_tactile_warning(err)
    assert len(lines) == 1, err
    video = root / 'videos' / EPISODE
    assert lines[0].startswith(f'error: {video}/view_left.mp4: has B-frames'), err
    assert '--no-reencode refuses to re-encode it' in lines[0], err
    assert list(tmp_path.iterdir()) == []


def test_node_no_reencode_refuses_before_playing(tmp_path_factory: pytest.TempPathFactory,
                                                 tmp_path: Path) -> None:
    root = react_release(tmp_path_factory)
    log = tmp_path / 'player.log'
    proc = spawn_player(root, log, episode_id=EPISODE, images='h264', no_reencode=True)
    try:
        code = proc.wait(60)
    except subprocess.TimeoutExpired:  # once in a fresh run (2026-12-06): say what it did
        where = subprocess.run(['py-spy', 'dump', '--pid', str(proc.pid)], capture_output=True,
                               text=True).stdout if shutil.which('py-spy') else ''
        proc.kill()
        proc.wait()
        pytest.fail(f'the player did not refuse within 60 s; its log:\n{log.read_text()}'
                    f'\n{where}')
    assert code == 2, log.read_text()
    assert 'has B-frames' in log.read_text() and 'view_left.mp4' in log.read_text()


def test_launch_arguments_and_node_parameters_carry_images(umi_episode: Path) -> None:
    from react_ros.errors import ReactRosError
    from react_ros.launch_args import episode_and_parameters, launch_arguments
    from react_ros.node import parameter_defaults
    assert parameter_defaults()['images'] == 'raw' and not parameter_defaults()['no_reencode']
    values = {name: default for name, (default, _) in launch_arguments().items()}
    assert (values['images'], values['no_reencode']) == ('raw', 'false')
    _, _, params = episode_and_parameters(dict(values, episode=str(umi_episode),
                                               images='h264', no_reencode='true'))
    assert (params['images'], params['no_reencode']) == ('h264', True)
    with pytest.raises(ReactRosError, match="images:='jpeg' must be raw or h264"):
        episode_and_parameters(dict(values, episode=str(umi_episode), images='jpeg'))


# -- live ----------------------------------------------------------------------------------
@pytest.fixture
def listener():
    node = Listener()
    yield node
    node.close()


def test_play_h264_publishes_every_message_of_a_camera_decodable(
        umi_episode: Path, umi_bags: dict[str, Any], listener: Listener,
        tmp_path: Path) -> None:
    topic = '/left/image_raw/compressed_video'
    listener.subscribe(topic, VIDEO_TYPE)
    log = tmp_path / 'player.log'
    player = spawn(['-m', 'react_ros.cli', 'play', str(umi_episode), '--images', 'h264',
                    '--no-reencode', '--start-paused', '--quiet', '--no-state-publisher'], log)
    try:
        assert listener.wait_for_publishers([topic]), log.read_text()
        published = dict(listener.node.get_topic_names_and_types())
        assert published[topic] == [VIDEO_TYPE]
        assert '/left/image_raw' not in published and '/left/camera_info' in published
        listener.call(f'/{PLAYER}/resume', srv.Resume)
        assert listener.spin_until(lambda: player.poll() is not None, 120), 'player never ended'
        listener.spin_for(0.5)
    finally:
        assert stop(player) == 0, log.read_text()
    got = listener.msgs[topic]
    want = [m for _, m, _ in umi_bags['h264'][topic]]
    assert [_ns(m.timestamp) for m in got] == [_ns(m.timestamp) for m in want], log.read_text()
    assert [bytes(m.data) for m in got] == [bytes(m.data) for m in want]
    frames = _decode_messages([bytes(m.data) for m in got])
    video = _decode_file(_umi_video(umi_episode, 'left'))
    assert len(frames) == len(video) and all(np.array_equal(a, b)
                                             for a, b in zip(frames, video))


# -- convert-all ---------------------------------------------------------------------------
def test_convert_all_h264_converts_again_and_its_bags_carry_video(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert 'no_reencode' not in ConvertAllOptions().key({})  # raw runs resume as before
    assert ConvertAllOptions(images='h264').key({}) != ConvertAllOptions().key({})
    assert ConvertAllOptions(images='h264').key({}) != \
        ConvertAllOptions(images='h264', no_reencode=True).key({})
    write_release('umi', tmp_path / 'release', n=2)
    root, out = tmp_path / 'release', tmp_path / 'bags'

    def run(*args: str) -> int:
        capfd.readouterr()
        code = cli.main(['convert-all', str(root), '-o', str(out), '--workers', '1', *args])
        stdout, err = capfd.readouterr()
        assert code == 0, stdout + err
        return int(stdout.split(': ', 1)[1].split(' to convert')[0])
    assert run() == 2
    assert run('--images', 'h264') == 2
    assert run('--images', 'h264') == 0
    assert run('--images', 'h264', '--no-reencode') == 2  # it could have refused them
    bags = sorted(out.rglob('metadata.yaml'))
    assert len(bags) == 2
    for meta in bags:
        types = _types(meta.parent)
        assert {types[f'/{c}/image_raw/compressed_video'] for c in UMI_CAMERAS} == {VIDEO_TYPE}
        assert IMAGE_TYPE not in types.values()
