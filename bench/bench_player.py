"""Player benchmark: the player against its decode and publish limits, side by side.

One run, one machine, one sample episode of each kind whose bench.yaml has a `player:`
section (its videos, the size to write them at, the camera to seek in); today the UMI
sample at the dataset's own 1920x1200.
Every rate counts what a subscriber in another process received (reliable
KEEP_ALL, bench/image_subscriber.py), with the loss beside it:
  decode   the three videos decoded together on three threads, no ROS (frames/s);
  copy     the memory-copy limit: copying the bytes of one image, in this process;
  publish  the delivered publish limit: pre-built rgb8 Images of the sample's size through a
           flow-controlled writer as the player's (KEEP_ALL, ack window), all received;
           published as Image messages through rclpy and as CDR the way the player sends
           a camera's frames (ros/cdr_publish.py), the faster kept;
  player   the real player at a rate it cannot keep up with, the subscriber on the
           three image topics: received/s, lost, real-time factor, at full
           resolution and at --image-scale 0.5;
  1.0x     the player at real time: RTF, lost, p50/p99 lateness against schedule;
           and with --drop-late 0.05: RTF, received/s and the frames it dropped;
  h264     the player with --images h264 at 1.0x: CompressedVideo received/s, RTF
           and CPU seconds of the player per episode second;
  memory   the player's peak RSS (a subprocess) on an episode and one twice as long;
  seek     on a 60 s episode, opening a camera's Image stream at 10 % and at 90 % of
           it (the player's seek: from the keyframe before), against decoding the
           part skipped (what a seek cost before). `--seek-only` runs just these rows.
Run it with `make bench` (it needs the DDS environment of scripts/ros_env.sh).
`--kind K` picks one kind.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from support import (DISCOVERY_WAIT_S, Subscriber, add_cache_argument, bench_settings,
                     decode_together, image_topics, log, print_table, publish_limit)
from support import sample as write_sample

from react_ros.sinks.tuning import freeze_heap, tune_for_playback

ROOT = Path(__file__).resolve().parents[1]
FULL_TARGET = 0.85  # of min(decode, delivered publish limit), at full resolution (issue 43)
DROP_LATE_RTF = 0.95  # with --drop-late 0.05, at 1.0x (issue 43)
# The kind benchmarked and its bench.yaml's player: section (set by use())
KIND = ''
SPEC: dict = {}


def use(kind: str, spec: dict) -> None:
    global KIND, SPEC
    KIND, SPEC = kind, spec


def size() -> str:
    return f'{SPEC["sample"]["width"]}x{SPEC["sample"]["height"]}'


def sample(cache: Path, duration: float) -> Path:
    return write_sample(KIND, cache, duration_s=duration, **SPEC['sample'])


def videos(ep: Path) -> list[Path]:
    return [ep / v for v in SPEC['videos']]



ROOT = Path(__file__).resolve().parents[1]
FULL_TARGET = 0.85  # of min(decode, delivered publish limit), at full resolution (issue 43)
DROP_LATE_RTF = 0.95  # with --drop-late 0.05, at 1.0x (issue 43)
def decode_limit(ep: Path, scale: float) -> float:
    return decode_together(videos(ep), scale)[0]


def copy_limit(video: Path, seconds: float = 2.0) -> float:
    """Images/s copying the bytes of one rgb8 image of the sample's size (the memory-copy ceiling)."""
    from react_ros.formats.video import decode_rgb
    frame = next(iter(decode_rgb(video)))
    src = frame.tobytes()
    n, t = 0, time.perf_counter()
    while time.perf_counter() - t < seconds:
        bytearray(src)
        n += 1
    return n / (time.perf_counter() - t)


def publish_limit_in(ep: Path, n: int) -> dict:
    """publish_limit() in a child process with the player's process-wide DDS settings, both
    ways (Image messages through rclpy; CDR as the player sends a camera's frames): the
    faster, as a limit is what can be reached, with both rates."""
    runs = {}
    for how in ('messages', 'cdr'):
        out = subprocess.run([sys.executable, __file__, '--publish-only', str(n), '--episode',
                              str(ep), '--kind', KIND] + (['--cdr'] if how == 'cdr' else []),
                             check=True, stdout=subprocess.PIPE, text=True).stdout
        runs[how] = json.loads(out.strip().splitlines()[-1])
    best = max(runs.values(), key=lambda r: r['rate'])
    return {**best, 'ways': {how: r['rate'] for how, r in runs.items()},
            'received': min(r['received'] for r in runs.values()),
            'sent': max(r['sent'] for r in runs.values())}


def run_player(ep: Path, scale: float, rate: float, record: bool = False,
               subscriber: bool = True, images: str = 'raw',
               drop_late: float | None = None) -> dict:
    from react_ros.registry import EpisodeOptions, open_episode
    from react_ros.sinks.compressed_video import episode_with_images
    from react_ros.play_options import PlayOptions
    from react_ros.sinks.live import Player, PlayerRuntime

    episode = open_episode(ep, KIND, EpisodeOptions(image_scale=scale))
    cameras = image_topics(episode)
    topics, msg_type = cameras, 'sensor_msgs/msg/Image'
    if images == 'h264':
        episode = episode_with_images(episode, 'h264')
        topics = [f'{t}/compressed_video' for t in cameras]
        msg_type = 'foxglove_msgs/msg/CompressedVideo'
    sub = Subscriber(topics, msg_type) if subscriber else None
    player = Player(episode, PlayOptions(rate=rate, quiet=True,
                                         wait_for_subscribers=DISCOVERY_WAIT_S,
                                         drop_late=drop_late),
                    PlayerRuntime(keyboard=False, record_lateness=record))
    freeze_heap()
    cpu = time.process_time()
    player.run()
    cpu = time.process_time() - cpu
    stats = player.stats()
    # From the first to the last message published: start-up (opening videos,
    # DDS discovery) and shut-down are not playback.
    wall = stats.span_s
    received = sum(sub.stop().values()) if sub is not None else 0
    images = sum(stats.topics[tp].count for tp in topics)
    dropped = sum(stats.topics[tp].dropped for tp in topics)
    played_s = stats.played_ns / 1e9
    out = {'wall_s': wall, 'images': images, 'received': received,
           'received_per_s': (received if sub else images) / wall, 'rtf': played_s / wall,
           'lost': images - received if sub else 0, 'failed': stats.failed,
           'cpu_per_s': cpu / played_s, 'waited_s': stats.waited_s, 'dropped': dropped}
    if record:
        late = np.asarray(player.lateness_ns(), dtype=np.float64) / 1e6
        out['late_p50_ms'] = float(np.percentile(late, 50))
        out['late_p99_ms'] = float(np.percentile(late, 99))
    return out


SEEK_SECONDS = 60.0


def seek_rows(cache: Path) -> tuple[list[tuple[str, str, str]], list[tuple[str, bool]]]:
    """Seek to 10 % and 90 % of a 60 s episode vs decoding the skipped part.

    On the `seek:` camera's Image stream as the adapter builds it (`open_from`,
    what the player's read-ahead opens after a seek): seconds to the first image.
    The skipped part is decoded the way a seek worked before (every frame from
    the start, converted), one thread, as the player's reader does.
    """
    from react_ros.registry import open_episode
    from react_ros.formats.video import decode_rgb, frame_table

    ep = sample(cache, SEEK_SECONDS)
    episode = open_episode(ep, KIND)
    seek = SPEC['seek']
    (cam,) = [st for st in episode.streams if st.topic == seek['image']]
    (info,) = [st for st in episode.streams if st.topic == seek['info']]
    stamps = [t for t, _ in info.open()]  # the images' stamps, read without decoding
    t = time.perf_counter()
    keys = frame_table(ep / seek['video']).keyframes
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
        for i, _ in enumerate(decode_rgb(ep / seek['video'])):
            if i >= n:
                break
        skip_s = time.perf_counter() - t
        out[pct] = (seek_s, skip_s, n, key)
    (s10, k10, n10, key10), (s90, k90, n90, key90) = out[10], out[90]
    # one GOP's worth: the longest stretch between keyframes, decoded from the start
    gop = max(b - a for a, b in zip(keys, [*keys[1:], len(stamps)]))
    t = time.perf_counter()
    for i, _ in enumerate(decode_rgb(ep / seek['video'])):
        if i + 1 >= gop:
            break
    gop_s = time.perf_counter() - t
    rows = [
        ('frame table of a 60 s video (PTS, keyframes; read once, at the first seek)',
         f'{table_s:.2f} s', f'{len(stamps)} frames, {len(keys)} keyframes'),
        (f'seek to 10 % of a {SEEK_SECONDS:g} s {size()} episode, first image', f'{s10:.2f} s',
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
    ap.add_argument('--kind', help='only this kind (default: every kind with a player: section)')
    ap.add_argument('--duration', type=float, default=6.0, help='episode length (s)')
    add_cache_argument(ap)
    ap.add_argument('--seek-only', action='store_true', help='only the seek rows')
    ap.add_argument('--publish-only', type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument('--cdr', action='store_true', help=argparse.SUPPRESS)
    ap.add_argument('--episode', type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    settings = bench_settings('player')
    if args.kind is not None and args.kind not in settings:
        print(f'error: --kind {args.kind}: no react_ros/kinds/{args.kind}/bench.yaml with a '
              f'player: section (have: {", ".join(settings)})', file=sys.stderr)
        return 2
    # The player's process-wide settings (DDS publication mode and profile, allocator),
    # for the limits too.
    tune_for_playback()
    for kind, spec in settings.items():
        if args.kind in (None, kind):
            use(kind, spec)
            bench_kind(args)
    return 0


def bench_kind(args: argparse.Namespace) -> None:
    if args.publish_only:
        print(json.dumps(publish_limit(videos(args.episode)[0], args.publish_only, args.cdr)))
        return
    if args.seek_only:
        log('seek')
        rows, checks = seek_rows(args.cache)
        print_table(f'{KIND} seek benchmark: {SEEK_SECONDS:g} s episode, {os.cpu_count()} cores',
                    rows, checks)
        return
    ep = sample(args.cache, args.duration)
    ep_long = sample(args.cache, 2 * args.duration)

    log('decode limit')
    dec_full = decode_limit(ep, 1.0)
    dec_half = decode_limit(ep, 0.5)
    log('memory-copy limit')
    copy = copy_limit(videos(ep)[0])
    log('delivered publish limit')
    pub = publish_limit_in(ep, 300)
    log('player, full resolution, as fast as it goes')
    p_full = run_player(ep, 1.0, 100.0)
    log('player, --image-scale 0.5, as fast as it goes')
    p_half = run_player(ep, 0.5, 100.0)
    log('player at 1.0x')
    rt_full = run_player(ep, 1.0, 1.0, record=True)
    rt_half = run_player(ep, 0.5, 1.0, record=True)
    rt_drop = run_player(ep, 1.0, 1.0, drop_late=0.05)
    log('player --images h264 at 1.0x and as fast as it goes')
    h264 = run_player(ep, 1.0, 1.0, images='h264')
    h264_fast = run_player(ep, 1.0, 100.0, images='h264')
    log('peak memory')
    rss = peak_rss_mb(ep)
    rss_long = peak_rss_mb(ep_long)
    log('seek')
    seek_table, seek_checks = seek_rows(args.cache)

    limit = min(dec_full, pub['rate'])
    # Decoding and delivery take turns on the same cores (issue 43's convert yardstick):
    # neither limit was measured with the other running.
    shared = 1 / (1 / dec_full + 1 / pub['rate'])
    from react_ros.registry import open_episode
    episode = open_episode(ep, KIND)
    need = sum(s.count or 0 for s in episode.streams
               if s.msg_type == 'sensor_msgs/msg/Image') / (episode.duration_ns / 1e9)
    frame_mb = SPEC['sample']['width'] * SPEC['sample']['height'] * 3 / 1e6

    def lost(r: dict) -> str:
        return f'{r["lost"]} of {r["images"]} lost'
    rows = [
        (f'decode only, {len(SPEC["videos"])} videos together, {size()}', f'{dec_full:.0f} frames/s', ''),
        (f'decode only, {len(SPEC["videos"])} videos together, scaled 0.5', f'{dec_half:.0f} frames/s', ''),
        (f'memory copy of one {size()} rgb8 image ({frame_mb:.1f} MB), one thread', f'{copy:.0f} copies/s',
         f'{copy / need:.1f}x what real time needs'),
        (f'delivered publish limit, {size()} rgb8, flow-controlled, 1 subscriber',
         f'{pub["rate"]:.0f} Images/s', f'{pub["received"]} of {pub["sent"]} received in each; '
         f'the faster of Image messages through rclpy {pub["ways"]["messages"]:.0f}/s and CDR '
         f'as the player sends it {pub["ways"]["cdr"]:.0f}/s'),
        (f'player, {size()}, as fast as it goes', f'{p_full["received_per_s"]:.0f} Images/s',
         f'{lost(p_full)}; {p_full["received_per_s"] / limit:.0%} of min(decode, publish); '
         f'{p_full["received_per_s"] / shared:.0%} of the shared-cores limit '
         f'1/(1/decode + 1/publish) = {shared:.0f}; RTF {p_full["rtf"]:.2f}'),
        ('player, --image-scale 0.5, as fast as it goes',
         f'{p_half["received_per_s"]:.0f} Images/s',
         f'{lost(p_half)}; {p_half["received_per_s"] / dec_half:.0%} of decode; '
         f'RTF {p_half["rtf"]:.2f}'),
        (f'player at 1.0x, {size()}', f'RTF {rt_full["rtf"]:.2f}',
         f'{lost(rt_full)}; lateness p50 {rt_full["late_p50_ms"]:.1f} ms, '
         f'p99 {rt_full["late_p99_ms"]:.1f} ms'),
        ('player at 1.0x, --image-scale 0.5', f'RTF {rt_half["rtf"]:.2f}',
         f'{lost(rt_half)}; lateness p50 {rt_half["late_p50_ms"]:.1f} ms, '
         f'p99 {rt_half["late_p99_ms"]:.1f} ms'),
        (f'player at 1.0x, {size()}, --drop-late 0.05', f'RTF {rt_drop["rtf"]:.2f}',
         f'{rt_drop["received_per_s"]:.0f} Images/s received; {rt_drop["dropped"]} of '
         f'{rt_drop["images"] + rt_drop["dropped"]} dropped late (reported), {lost(rt_drop)}'),
        ('player --images h264 at 1.0x', f'{h264["received_per_s"]:.0f} msgs/s',
         f'{lost(h264)}; RTF {h264["rtf"]:.2f}; {h264["cpu_per_s"]:.2f} CPU s per episode s'),
        ('player --images h264, as fast as it goes', f'{h264_fast["received_per_s"]:.0f} msgs/s',
         f'{lost(h264_fast)}; RTF {h264_fast["rtf"]:.2f}'),
        (f'player peak RSS, {args.duration:g} s episode', f'{rss:.0f} MB', ''),
        (f'player peak RSS, {2 * args.duration:g} s episode', f'{rss_long:.0f} MB',
         f'{rss_long / rss:.2f}x for 2x the length'),
        *seek_table,
    ]
    checks = [
        ('nothing lost by any player run',
         all(r['lost'] == 0 for r in (p_full, p_half, rt_full, rt_half, rt_drop, h264,
                                      h264_fast))),
        ('delivered publish limit received everything', pub['received'] == pub['sent']),
        ('--images h264 keeps real time (RTF >= 0.95)', h264['rtf'] >= 0.95),
        (f'player at {size()} >= {FULL_TARGET:g} of min(decode, publish) (issue 43): '
         f'{p_full["received_per_s"] / limit:.2f}',
         p_full['received_per_s'] >= FULL_TARGET * limit),
        (f'--drop-late 0.05 keeps real time (RTF >= {DROP_LATE_RTF:g}: {rt_drop["rtf"]:.2f}) '
         f'delivering at least half the publish limit ({rt_drop["received_per_s"]:.0f} of '
         f'{pub["rate"]:.0f} Images/s) (issue 43)',
         rt_drop['rtf'] >= DROP_LATE_RTF and rt_drop['received_per_s'] >= pub['rate'] / 2),
        ('peak memory does not grow with episode length', rss_long <= 1.15 * rss),
        *seek_checks,
    ]
    print_table(f'{KIND} player benchmark: {args.duration:g} s episode, real time needs {need:.0f} '
                 f'Images/s, {os.cpu_count()} cores', rows, checks)


if __name__ == '__main__':
    sys.exit(main())
