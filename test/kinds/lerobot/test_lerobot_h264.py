"""`--images h264` on LeRobot (issue 41): an H.264 dataset's video is passed through.

The sample written with codec='h264' (no B-frames) holds several episodes in one video file;
episode 1 starts mid-file. Converted with `--images h264 --no-reencode`, its camera becomes
foxglove_msgs/CompressedVideo with nothing re-encoded, and the messages, fed in order to a
fresh decoder as a viewer does, decode to exactly the raw bag's Images of that episode, one
message per Image at the same stamps.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory

from react_ros.kinds.lerobot.sample import write_lerobot_sample
from react_ros.ros.msgs import to_ns

pytestmark = pytest.mark.timeout(300)
TOP = '/top/image_raw'
EPISODE = '1'  # starts mid-file


def _convert(root: Path, out: Path, *flags: str) -> str:
    run = subprocess.run([sys.executable, '-m', 'react_ros.cli', 'convert', str(root),
                          '--episode', EPISODE, '-o', str(out), '--quiet', *flags],
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    return run.stderr


def _messages(bag: Path, topic: str) -> list[Any]:
    (mcap,) = bag.glob('*.mcap')
    with open(mcap, 'rb') as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        return [msg for _, _, _, msg in reader.iter_decoded_messages(topics=[topic],
                                                                     log_time_order=True)]


def test_an_h264_dataset_is_passed_through_frame_for_frame(tmp_path: Path) -> None:
    root = write_lerobot_sample(tmp_path / 'ds', seed=4, codec='h264')
    said = _convert(root, tmp_path / 'h264', '--images', 'h264', '--no-reencode')
    # passed through: nothing said of the top camera (the wrist's images are embedded in
    # the parquet, not a video, and stay raw, with a note; and no URDF was given)
    assert [ln for ln in said.splitlines() if TOP in ln or 're-encod' in ln] == [], said
    _convert(root, tmp_path / 'raw')
    raw = _messages(tmp_path / 'raw', TOP)
    video = _messages(tmp_path / 'h264', f'{TOP}/compressed_video')
    assert len(video) == len(raw) > 10
    assert [to_ns(m.timestamp) for m in video] == [to_ns(m.header.stamp) for m in raw]
    assert {m.format for m in video} == {'h264'}
    decoder = av.CodecContext.create('h264', 'r')
    frames = []
    for m in video:
        frames += decoder.decode(av.Packet(bytes(m.data)))
    frames += decoder.decode(None)
    assert len(frames) == len(raw)
    for n, (frame, img) in enumerate(zip(frames, raw)):
        want = np.frombuffer(bytes(img.data), np.uint8).reshape(img.height, img.width, 3)
        assert np.array_equal(frame.to_ndarray(format='rgb24'), want), f'frame {n}'
