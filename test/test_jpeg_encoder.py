"""JPEG encoding in worker processes (formats/jpeg_encoder.py): the bytes Pillow makes in
the caller, through shared memory or the pipe, and workers that never outlive their use."""
from __future__ import annotations

import os
import signal
from typing import Any

import numpy as np
import pytest

from react_ros.formats import jpeg_encoder
from react_ros.formats.jpeg_encoder import JpegProcesses, WorkerError, encode


def _frames() -> list[tuple[Any, int, int, str, str]]:
    """Frames of three modes and growing sizes (the shared memory grows with them)."""
    rng = np.random.default_rng(3)
    out = []
    for (w, h), (mode, raw) in zip([(64, 48), (320, 240), (33, 17), (640, 480)] * 2,
                                   jpeg_encoder.MODES * 3):
        shape = (h, w, 3) if mode == 'RGB' else (h, w)
        out.append((rng.integers(0, 256, shape, dtype=np.uint8), w, h, mode, raw))
    return out


def _same_bytes_as_in_the_caller(pool: JpegProcesses) -> None:
    frames = _frames()
    futures = [pool.submit(*frame, 90) for frame in frames]  # more than there are workers
    assert [f.result(60) for f in futures] == [encode(*frame, 90) for frame in frames]


@pytest.mark.parametrize('shared', [True, False], ids=['shared-memory', 'pipe'])
def test_same_bytes_as_encoding_in_the_caller(shared: bool,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    if not shared:
        monkeypatch.delattr(os, 'memfd_create')  # as where the system has none
    elif not hasattr(os, 'memfd_create'):
        pytest.skip('no memfd here')
    pool = JpegProcesses(2)
    try:
        _same_bytes_as_in_the_caller(pool)
        assert all((w.memfd >= 0) == shared for w in pool._all)
    finally:
        pool.close()


def test_close_ends_the_workers_and_a_new_submit_starts_them_again() -> None:
    pool = JpegProcesses(2)
    pool.submit(*_frames()[0], 95).result(60)
    procs = [w.proc for w in pool._all]
    assert len(procs) == 2 and all(p.poll() is None for p in procs)
    pool.close()
    assert all(p.poll() is not None for p in procs)
    try:
        _same_bytes_as_in_the_caller(pool)
    finally:
        pool.close()


def test_a_worker_ignores_ctrl_c_and_a_dead_one_is_one_error() -> None:
    """A terminal's Ctrl-C reaches the workers too: they go on, the caller decides; a
    worker killed under it is a WorkerError (one line, exit 2), not a hang."""
    pool = JpegProcesses(1)
    try:
        frame = _frames()[1]
        want = encode(*frame, 95)
        assert pool.submit(*frame, 95).result(60) == want
        [worker] = pool._all
        worker.proc.send_signal(signal.SIGINT)
        assert pool.submit(*frame, 95).result(60) == want
        assert worker.proc.poll() is None
        worker.proc.kill()
        worker.proc.wait()
        with pytest.raises(WorkerError, match='JPEG encoder process ended'):
            pool.submit(*frame, 95).result(60)
    finally:
        pool.close()


def test_a_refused_frame_comes_back_as_the_encoders_error() -> None:
    pool = JpegProcesses(1)
    try:
        pixels, w, h, mode, raw = _frames()[0]
        with pytest.raises(ValueError, match='not enough image data'):
            pool.submit(pixels[: h // 2], w, h, mode, raw, 95).result(60)
        assert pool.submit(pixels, w, h, mode, raw, 95).result(60) == encode(
            pixels, w, h, mode, raw, 95)  # the worker goes on
    finally:
        pool.close()
