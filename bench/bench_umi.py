"""UMI playback benchmark: the player against its decode and publish limits, side by side.

One run, one machine, one UMI sample episode at the dataset's own 1920x1200:
  decode   the three videos decoded together on three threads, no ROS (frames/s);
  publish  1920x1200 rgb8 Images published as fast as possible to one subscriber
           in another process (Images/s);
  player   the real player at a rate it cannot keep up with, the same subscriber
           attached to the three image topics: images/s and real-time factor,
           at full resolution and at --image-scale 0.5;
  1.0x     the player at real time: p50/p99 lateness against scheduled wall time;
  memory   the player's peak RSS (a subprocess) on an episode and one twice as long;
  seek     on a 60 s episode, opening a camera's Image stream at 10 % and at 90 % of
           it (the player's seek: from the keyframe before), against decoding the
           part skipped (what a seek cost before). `--seek-only` runs just these rows.
Run it with `make bench` (it needs the DDS environment of scripts/ros_env.sh).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from react_ros.sinks.tuning import freeze_heap, tune_for_playback

ROOT = Path(__file__).resolve().parents[1]
CAMS = ('left', 'center', 'right')
IMAGE_TOPICS = [f'/{c}/image_raw' for c in CAMS]


def log(msg: str) -> None:
    print(f'[bench] {msg}', file=sys.stderr, flush=True)


def sample(cache: Path, duration: float) -> Path:
    from react_ros.samples.umi import write_umi_sample
    ep = cache / f'umi_1920x1200_{duration:g}s'
    if not (ep / 'data' / 'episode.mcap').exists():
        log(f'writing a {duration:g} s 1920x1200 UMI sample to {ep}')
        write_umi_sample(ep, seed=1, duration_s=duration, width=1920, height=1200)
    return ep


def videos(ep: Path) -> list[Path]:
    return [ep / 'data' / f'{c}.perception_interface.camera.state.mp4' for c in CAMS]


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


def decode_limit(ep: Path, scale: float) -> float:
    return decode_together(videos(ep), scale)[0]


class Subscriber:
    """bench/image_subscriber.py in its own process."""

    def __init__(self, topics: list[str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / 'bench' / 'image_subscriber.py'), *topics, '--idle', '600'],
            stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != 'ready':
            raise RuntimeError('subscriber did not start')
        time.sleep(1.0)  # discovery

    def stop(self) -> dict[str, int]:
        self.proc.send_signal(2)
        out, _ = self.proc.communicate(timeout=30)
        return json.loads(out.strip().splitlines()[-1])


def publish_limit(video: Path, n: int) -> tuple[float, int]:
    """Images/s publishing pre-built rgb8 Images (a frame of `video`) to one subscriber."""
    import rclpy
    from rclpy.context import Context
    from sensor_msgs.msg import Image

    from react_ros.formats.video import decode_rgb
    from react_ros.ros.image import rgb_image
    from react_ros.ros.qos import DEFAULT

    frame = next(iter(decode_rgb(video)))
    sub = Subscriber(['/bench/image'])
    ctx = Context()
    rclpy.init(args=[], context=ctx)
    node = rclpy.create_node('bench_publisher', context=ctx)
    pub = node.create_publisher(Image, '/bench/image', DEFAULT)
    deadline = time.monotonic() + 10
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    msgs = [rgb_image(frame, i, 'cam') for i in range(4)]
    from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
    sent = 0
    t = time.perf_counter()
    for i in range(n):
        try:  # Fast DDS refuses a publish now and then when the reader lags (as in the player)
            pub.publish(msgs[i % 4])
            sent += 1
        except _rclpy.RCLError:
            pass
    rate = sent / (time.perf_counter() - t)
    time.sleep(1.0)
    node.destroy_node()
    rclpy.shutdown(context=ctx)
    received = sub.stop()['/bench/image']
    return rate, received


def publish_limit_in(mode: str, ep: Path, n: int) -> tuple[float, int]:
    """publish_limit() in a child process whose Fast DDS publishes in `mode`.

    SYNCHRONOUS: publish() returns once the image is handed to the transport,
    so the rate is what delivering an image costs. ASYNCHRONOUS (the player's
    mode): publish() returns once the image is queued, and Fast DDS's own
    thread delivers it later.
    """
    env = dict(os.environ, RMW_FASTRTPS_PUBLICATION_MODE=mode)
    out = subprocess.run([sys.executable, __file__, '--publish-only', str(n), '--episode', str(ep)],
                         env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return result['rate'], result['received']


def run_player(ep: Path, scale: float, rate: float, record: bool = False,
               subscriber: bool = True) -> dict:
    from react_ros.adapters import EpisodeOptions, open_episode
    from react_ros.sinks.live import Player, PlayOptions

    episode = open_episode(ep, 'umi', EpisodeOptions(image_scale=scale))
    sub = Subscriber(IMAGE_TOPICS) if subscriber else None
    player = Player(episode, PlayOptions(rate=rate, quiet=True, keyboard=False,
                                         record_lateness=record))
    freeze_heap()
    player.run()
    stats = player.stats()
    # From the first to the last message published: start-up (opening videos,
    # DDS discovery) and shut-down are not playback.
    wall = stats.span_s
    received = sub.stop() if sub is not None else {}
    images = sum(stats.topics[tp].count for tp in IMAGE_TOPICS)
    out = {'wall_s': wall, 'images': images, 'images_per_s': images / wall,
           'rtf': stats.played_ns / 1e9 / wall, 'received': sum(received.values()),
           'failed': stats.failed}
    if record:
        late = np.asarray(player.lateness_ns(), dtype=np.float64) / 1e6
        out['late_p50_ms'] = float(np.percentile(late, 50))
        out['late_p99_ms'] = float(np.percentile(late, 99))
    return out


SEEK_SECONDS = 60.0


def seek_rows(cache: Path) -> tuple[list[tuple[str, str, str]], list[tuple[str, bool]]]:
    """Seek to 10 % and 90 % of a 60 s 1920x1200 episode vs decoding the skipped part.

    On the center camera's Image stream as the adapter builds it (`open_from`,
    what the player's read-ahead opens after a seek): seconds to the first image.
    The skipped part is decoded the way a seek worked before (every frame from
    the start, converted), one thread, as the player's reader does.
    """
    from react_ros.adapters import open_episode
    from react_ros.formats.video import decode_rgb, frame_table

    ep = sample(cache, SEEK_SECONDS)
    episode = open_episode(ep, 'umi')
    (cam,) = [st for st in episode.streams if st.topic == '/center/image_raw']
    (info,) = [st for st in episode.streams if st.topic == '/center/camera_info']
    stamps = [t for t, _ in info.open()]  # the images' stamps, read without decoding
    t = time.perf_counter()
    keys = frame_table(videos(ep)[1]).keyframes
    table_s = time.perf_counter() - t
    warm = cam.open_from(stamps[1])  # the stream reads its frame table at its first seek
    next(warm)
    warm.close()
    out = {}
    for pct in (10, 90):
        n = len(stamps) * pct // 100
        t = time.perf_counter()
        it = cam.open_from(stamps[n])
        first_t, _ = next(it)
        seek_s = time.perf_counter() - t
        it.close()
        assert first_t == stamps[n]
        key = max(k for k in keys if k <= n)
        t = time.perf_counter()
        for i, _ in enumerate(decode_rgb(videos(ep)[1])):
            if i >= n:
                break
        skip_s = time.perf_counter() - t
        out[pct] = (seek_s, skip_s, n, key)
    (s10, k10, n10, key10), (s90, k90, n90, key90) = out[10], out[90]
    # one GOP's worth: the longest stretch between keyframes, decoded from the start
    gop = max(b - a for a, b in zip(keys, [*keys[1:], len(stamps)]))
    t = time.perf_counter()
    for i, _ in enumerate(decode_rgb(videos(ep)[1])):
        if i + 1 >= gop:
            break
    gop_s = time.perf_counter() - t
    rows = [
        ('frame table of a 60 s video (PTS, keyframes; read once, at the first seek)',
         f'{table_s:.2f} s', f'{len(stamps)} frames, {len(keys)} keyframes'),
        (f'seek to 10 % of a {SEEK_SECONDS:g} s 1920x1200 episode, first image', f'{s10:.2f} s',
         f'frame {n10}, decoded from keyframe {key10}'),
        ('seek to 90 %, first image', f'{s90:.2f} s',
         f'frame {n90}, decoded from keyframe {key90}; {s90 / s10:.2f}x the 10 % seek'),
        ('decoding the skipped 10 % instead (a seek before)', f'{k10:.2f} s',
         f'{k10 / s10:.1f}x the seek'),
        ('decoding the skipped 90 % instead', f'{k90:.2f} s', f'{k90 / s90:.1f}x the seek'),
        ('decoding one GOP (the longest: frames between keyframes)', f'{gop_s:.2f} s',
         f'{gop} frames'),
    ]
    checks = [('each seek costs at most about one GOP of decoding (< 1.3x)',
               max(s10, s90) < 1.3 * gop_s),
              ('both seeks well under decoding the skipped part (< 1/2)',
               s10 < 0.5 * k10 and s90 < 0.5 * k90)]
    return rows, checks


def peak_rss_mb(ep: Path) -> float:
    """Peak RSS of `react-ros play` (a child process) on this episode, at a high rate."""
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, '-m', 'react_ros.cli', 'play', str(ep), '--rate', '50',
                             '--quiet', '--no-state-publisher'], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError('player failed')
    return usage.ru_maxrss / 1024.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--duration', type=float, default=6.0, help='episode length (s)')
    ap.add_argument('--cache', type=Path, default=Path(os.environ.get(
        'XDG_CACHE_HOME', Path.home() / '.cache')) / 'react_ros' / 'bench')
    ap.add_argument('--seek-only', action='store_true', help='only the seek rows')
    ap.add_argument('--publish-only', type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument('--episode', type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.publish_only:
        rate, received = publish_limit(videos(args.episode)[0], args.publish_only)
        print(json.dumps({'rate': rate, 'received': received}))
        return 0
    # The player's process-wide settings (DDS publication mode, allocator), for the
    # decode and publish limits too.
    tune_for_playback()
    if args.seek_only:
        log('seek')
        rows, checks = seek_rows(args.cache)
        _print_table(f'UMI seek benchmark: {SEEK_SECONDS:g} s episode, {os.cpu_count()} cores',
                     rows, checks)
        return 0
    ep = sample(args.cache, args.duration)
    ep_long = sample(args.cache, 2 * args.duration)

    log('decode limit')
    dec_full = decode_limit(ep, 1.0)
    dec_half = decode_limit(ep, 0.5)
    log('publish limit')
    pub_full, pub_received = publish_limit_in('SYNCHRONOUS', ep, 300)
    pub_async, async_received = publish_limit_in('ASYNCHRONOUS', ep, 300)
    log('player, full resolution, as fast as it goes')
    p_full = run_player(ep, 1.0, 100.0)
    log('player, --image-scale 0.5, as fast as it goes')
    p_half = run_player(ep, 0.5, 100.0)
    p_half_alone = run_player(ep, 0.5, 100.0, subscriber=False)
    log('player at 1.0x')
    rt_full = run_player(ep, 1.0, 1.0, record=True)
    rt_half = run_player(ep, 0.5, 1.0, record=True)
    log('peak memory')
    rss = peak_rss_mb(ep)
    rss_long = peak_rss_mb(ep_long)
    log('seek')
    seek_table, seek_checks = seek_rows(args.cache)

    combined = 1.0 / (1.0 / dec_full + 1.0 / pub_full)
    need = 180.0  # 3 cameras x ~60 fps
    rows = [
        ('decode only, 3 videos together, 1920x1200', f'{dec_full:.0f} frames/s', ''),
        ('decode only, 3 videos together, scaled 0.5', f'{dec_half:.0f} frames/s', ''),
        ('publish only, 1920x1200 rgb8, 1 subscriber, synchronous', f'{pub_full:.0f} Images/s',
         f'returns once delivered to the transport; {pub_received} of 300 received'),
        ('publish only, the same, asynchronous (as the player)', f'{pub_async:.0f} Images/s',
         f'returns once queued; {async_received} of 300 received'),
        ('limit 1/(1/decode + 1/publish), 1920x1200', f'{combined:.0f} Images/s', ''),
        ('player, 1920x1200, as fast as it goes', f'{p_full["images_per_s"]:.0f} Images/s',
         f'{p_full["images_per_s"] / combined:.0%} of the limit; RTF {p_full["rtf"]:.2f}'),
        ('player, --image-scale 0.5, as fast as it goes', f'{p_half["images_per_s"]:.0f} Images/s',
         f'{p_half["images_per_s"] / dec_half:.0%} of decode; RTF {p_half["rtf"]:.2f}'),
        ('the same with no subscriber', f'{p_half_alone["images_per_s"]:.0f} Images/s',
         f'{p_half_alone["images_per_s"] / dec_half:.0%} of decode'),
        ('player at 1.0x, 1920x1200', f'RTF {rt_full["rtf"]:.2f}',
         f'lateness p50 {rt_full["late_p50_ms"]:.1f} ms, p99 {rt_full["late_p99_ms"]:.1f} ms'),
        ('player at 1.0x, --image-scale 0.5', f'RTF {rt_half["rtf"]:.2f}',
         f'lateness p50 {rt_half["late_p50_ms"]:.1f} ms, p99 {rt_half["late_p99_ms"]:.1f} ms'),
        (f'player peak RSS, {args.duration:g} s episode', f'{rss:.0f} MB', ''),
        (f'player peak RSS, {2 * args.duration:g} s episode', f'{rss_long:.0f} MB',
         f'{rss_long / rss:.2f}x for 2x the length'),
        *seek_table,
    ]
    checks = [
        ('player at 0.5 >= 85% of decode-only', p_half['images_per_s'] >= 0.85 * dec_half),
        ('player at full >= 85% of 1/(1/decode+1/publish)',
         p_full['images_per_s'] >= 0.85 * combined),
        ('peak memory does not grow with episode length', rss_long <= 1.15 * rss),
        *seek_checks,
    ]
    _print_table(f'UMI benchmark: {args.duration:g} s episode, real time needs {need:.0f} '
                 f'Images/s, {os.cpu_count()} cores', rows, checks)
    return 0


def _print_table(title: str, rows: list[tuple[str, str, str]],
                 checks: list[tuple[str, bool]]) -> None:
    print(title)
    print('| measurement | figure | ratio / note |')
    print('|---|---|---|')
    for r in rows:
        print(f'| {r[0]} | {r[1]} | {r[2]} |')
    for name, ok in checks:
        print(f'{"PASS" if ok else "FAIL"}: {name}')


if __name__ == '__main__':
    sys.exit(main())
