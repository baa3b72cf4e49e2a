"""What the benchmarks share: a kind's bench settings and cached sample, a subscriber in
another process, decode and publish limits, one measurement in a fresh process, the table.

No benchmark names a dataset kind: each reads the section it runs from the kind's folder
(react_ros/kinds/<kind>/bench.yaml), so a new kind is benchmarked by adding that file.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from react_ros.registry import KINDS

BENCH = Path(__file__).resolve().parent
# How long the player waits for discovery in every benchmark. Its participant starts
# in the benchmark's process with no head start; with the default 2 s, the first
# images of a camera (68 of 360 here, 38 of 300 for TrueTrace) went out unmatched.
DISCOVERY_WAIT_S = 4.0
# A subscriber as a user runs it: without the player's process-wide DDS settings.
USER_ENV = {k: v for k, v in os.environ.items()
            if k not in ('FASTDDS_DEFAULT_PROFILES_FILE', 'RMW_FASTRTPS_PUBLICATION_MODE')}


def log(msg: str) -> None:
    print(f'[bench] {msg}', file=sys.stderr, flush=True)


def add_cache_argument(ap: argparse.ArgumentParser) -> None:
    ap.add_argument('--cache', type=Path, default=Path(os.environ.get(
        'XDG_CACHE_HOME', Path.home() / '.cache')) / 'react_ros' / 'bench')


def bench_settings(section: str) -> dict[str, dict[str, Any]]:
    """kind -> its bench.yaml's `section`, for every registered kind that has one."""
    found = {}
    for name, kind in KINDS.items():
        path = kind.folder / 'bench.yaml'
        spec = (yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}
        if section in spec:
            found[name] = spec[section]
    return found


def sample(kind: str, cache: Path, **kwargs: Any) -> Path:
    """The kind's sample written with these writer arguments, kept in `cache` between runs."""
    key = '_'.join(f'{k}{v:g}' if isinstance(v, float) else f'{k}{v}'
                   for k, v in sorted(kwargs.items()))
    root = cache / f'{kind}_{key}'
    done = cache / f'{root.name}.done'  # the writer finished: a cut-short one is redone
    if not done.exists():
        log(f'writing a {kind} sample ({key}) to {root}')
        writer = KINDS[kind].sample_writer()
        assert writer is not None, f'{kind} has no sample writer'
        if root.exists():
            shutil.rmtree(root)
        cache.mkdir(parents=True, exist_ok=True)
        writer(root, seed=1, **kwargs)
        done.touch()
    return root


def image_topics(episode: Any) -> list[str]:
    return [s.topic for s in episode.streams if s.msg_type == 'sensor_msgs/msg/Image']


class Subscriber:
    """bench/image_subscriber.py in its own process: reliable KEEP_ALL, counting what it takes."""

    def __init__(self, topics: list[str], msg_type: str = 'sensor_msgs/msg/Image') -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(BENCH / 'image_subscriber.py'), *topics, '--idle', '3',
             '--keep-all', '--type', msg_type], stdout=subprocess.PIPE, text=True,
            env=USER_ENV)
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != 'ready':
            raise RuntimeError('subscriber did not start')
        time.sleep(1.0)  # discovery (a bench, not a test)

    def stop(self) -> dict[str, int]:
        """Its counts once it has taken what it holds (3 s without a message)."""
        self.proc.send_signal(signal.SIGUSR1)
        out, _ = self.proc.communicate(timeout=30)
        return json.loads(out.strip().splitlines()[-1])


def decode_together(paths: list[Path], scale: float = 1.0) -> tuple[float, list[int]]:
    """Frames/s decoding these videos at once, one thread each, as the player does."""
    from react_ros.formats.video import decode_rgb
    counts = [0] * len(paths)

    def work(i: int, path: Path) -> None:
        for _ in decode_rgb(path, scale):
            counts[i] += 1

    threads = [threading.Thread(target=work, args=(i, p)) for i, p in enumerate(paths)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return sum(counts) / (time.perf_counter() - t), counts


def publish_limit(video: Path, n: int, cdr: bool = False) -> dict:
    """Pre-built rgb8 Images (a frame of `video`) through the player's flow-controlled writer.

    The writer is the player's (KEEP_ALL, sinks/flow.py's window, its Fast DDS
    profile): the rate is images received per second until every one was
    acknowledged, so it is the highest rate delivered with nothing lost. `cdr`: the
    Images pre-serialised and published as the player sends a camera's frames
    (ros/cdr_publish.py), else as Image messages through rclpy.
    """
    import rclpy
    from rclpy.context import Context
    from rclpy.duration import Duration
    from sensor_msgs.msg import Image

    from react_ros.formats.video import decode_rgb
    from react_ros.ros import qos
    from react_ros.ros.image import rgb_image
    from react_ros.sinks.flow import POLL_S, AckWindow

    frame = next(iter(decode_rgb(video)))
    sub = Subscriber(['/bench/image'])
    ctx = Context()
    rclpy.init(args=[], context=ctx)
    node = rclpy.create_node('bench_publisher', context=ctx)
    pub = node.create_publisher(Image, '/bench/image', qos.live_writer(False))
    window = AckWindow(pub, qos.window(True, frame.nbytes))
    deadline = time.monotonic() + 10
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # the subscriber's side of discovery (a bench, not a test)
    msgs = [rgb_image(frame, i, 'cam') for i in range(4)]
    if cdr:
        from rclpy.serialization import serialize_message

        from react_ros.ros.cdr_publish import publish_cdr
        payloads = [bytes(serialize_message(m)) for m in msgs]
    t = time.perf_counter()
    for i in range(n):
        while not window.has_room():
            time.sleep(POLL_S)
        if cdr:
            publish_cdr(pub, payloads[i % 4])
        else:
            pub.publish(msgs[i % 4])
        window.sent()
    pub.wait_for_all_acked(Duration(seconds=60))
    elapsed = time.perf_counter() - t
    node.destroy_node()
    rclpy.shutdown(context=ctx)
    received = sub.stop()['/bench/image']
    return {'rate': received / elapsed, 'received': received, 'sent': n}


def in_child(script: str, *args: str) -> dict:
    """`script --child args...` in a fresh process (its own peak RSS, its own DDS settings):
    the last line it prints, as JSON."""
    proc = subprocess.run([sys.executable, script, '--child', *args],
                          stdout=subprocess.PIPE, text=True, check=True)
    result: dict = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def print_table(title: str, rows: list[tuple[str, str, str]],
                checks: list[tuple[str, bool]]) -> None:
    print(title)
    print('| measurement | figure | ratio / note |')
    print('|---|---|---|')
    for r in rows:
        print(f'| {r[0]} | {r[1]} | {r[2]} |')
    for name, ok in checks:
        print(f'{"PASS" if ok else "FAIL"}: {name}')


def first_frames(paths: list[Path], per_video: int, planes: bool = False) -> list[Any]:
    """The first `per_video` decoded RGB frames of each video (with `planes`, the decoder's
    Yuv420 planes, formats/video.py), held in memory: distinct frames to reuse when a limit
    is measured on more images than it is worth keeping."""
    from dataclasses import replace

    from react_ros.formats.video import decode_rgb, decode_yuv420
    frames = []
    for path in paths:
        decoded = decode_yuv420(path) if planes else decode_rgb(path)
        try:
            for _, frame in zip(range(per_video), decoded):
                frames.append(replace(frame, y=frame.y.copy(), u=frame.u.copy(),
                                      v=frame.v.copy()) if hasattr(frame, 'y') else frame.copy())
        finally:
            decoded.close()  # type: ignore[attr-defined]
    return frames


def cpu_s() -> float:
    """This process's CPU seconds so far (all its threads, user and system)."""
    t = os.times()
    return t.user + t.system


WRITE_WAYS = ('plain', 'behind', 'direct')


def plain_write_s(folder: Path, nbytes: int, piece: int = 4 * 1024 * 1024,
                  how: str = 'plain') -> tuple[float, float]:
    """Seconds and CPU seconds to write `nbytes` to a new file in `folder` with plain
    write calls of `piece` bytes from one preallocated buffer, the file removed after.

    No fsync, as the converter does none: `plain` and `behind` measure what the page cache
    and the kernel's writeback allow, not the disk alone. `behind`: with the write-behind
    (react_ros/rosbag2/write_behind.py) dropping what was written; `direct`: the way
    convert writes a bag (react_ros/rosbag2/direct_file.py: past the page cache, through
    aligned buffers).
    """
    from react_ros.rosbag2.direct_file import open_bag_file
    from react_ros.rosbag2.write_behind import WriteBehind
    buf = memoryview(os.urandom(piece))
    path = folder / 'plain_write.bin'
    t, cpu = time.perf_counter(), cpu_s()
    with (open_bag_file(path) if how == 'direct' else open(path, 'wb')) as f:
        wb = WriteBehind.of(f, 0) if how == 'behind' else None
        left = nbytes
        while left > 0:
            f.write(buf[:min(piece, left)])
            left -= piece
            if wb is not None:
                wb.written(f.tell())
    elapsed, cpu = time.perf_counter() - t, cpu_s() - cpu
    path.unlink()
    return elapsed, cpu


def disk_free(path: Path) -> str:
    """Free space of the filesystem holding `path`, for the log before and after a run."""
    return f'{shutil.disk_usage(path).free / 1e9:,.1f} GB free on the filesystem of {path}'
