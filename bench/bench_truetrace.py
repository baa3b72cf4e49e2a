"""TrueTrace playback benchmark: 2 x 1920x1080 at 30 Hz + IMU at ~477 Hz, at 1.0x.

One run, one machine, one TrueTrace sample at the dataset's own 1920x1080:
  decode   both videos decoded together on two threads, no ROS (frames/s);
  1.0x     the real player at real time, one subscriber process on both image topics:
           real-time factor, p50/p99 lateness of every message and of the IMU rows
           alone (against each message's scheduled wall time).
Run it with `scripts/ros_env.sh python bench/bench_truetrace.py [--duration S]` (the UMI
benchmark's helpers are imported from bench_umi.py).
"""
from __future__ import annotations

import argparse
import heapq
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_umi import DISCOVERY_WAIT_S, Subscriber, decode_together, log  # noqa: E402

from react_ros.sinks.tuning import freeze_heap, tune_for_playback  # noqa: E402

IMAGE_TOPICS = ['/cam0/image_raw', '/cam1/image_raw']


def sample(cache: Path, duration: float) -> Path:
    from react_ros.kinds.truetrace.sample import write_truetrace_sample
    root = cache / f'truetrace_1920x1080_{duration:g}s'
    if not (root / 'MANIFEST.sha256').exists():
        log(f'writing a {duration:g} s 1920x1080 TrueTrace sample to {root}')
        write_truetrace_sample(root, seed=1, duration_s=duration, width=1920, height=1080)
    return root


def _published_topics(streams: list) -> list[str]:
    """The topic of each message in the order the player publishes them (its merge key:
    stamp, stream index, sequence), without decoding video: an image stream has the
    stamps of its camera_info."""
    keys = []
    stamps = {}
    for s in streams:
        if not s.heavy:
            stamps[s.topic] = [t for t, _ in s.open()]
    for i, s in enumerate(streams):
        ts = stamps[s.topic.replace('image_raw', 'camera_info')] if s.heavy else stamps[s.topic]
        keys += [(t, i, n) for n, t in enumerate(ts)]
    return [streams[i].topic for _, i, _ in heapq.nsmallest(len(keys), keys)]


def run_player(root: Path, rate: float, scale: float = 1.0) -> dict:
    from react_ros.adapters import EpisodeOptions, open_episode
    from react_ros.sinks.live import Player, PlayOptions

    episode = open_episode(root, 'truetrace', EpisodeOptions(image_scale=scale))
    sub = Subscriber(IMAGE_TOPICS)
    tune_for_playback()
    player = Player(episode, PlayOptions(rate=rate, quiet=True, keyboard=False,
                                         record_lateness=True,
                                         wait_for_subscribers_s=DISCOVERY_WAIT_S))
    freeze_heap()
    player.run()
    stats = player.stats()
    wall = stats.span_s
    received = sub.stop()
    late = np.asarray(player.lateness_ns(), dtype=np.float64) / 1e6
    out = {'rtf': stats.played_ns / 1e9 / wall, 'received': received,
           'late_p50_ms': float(np.percentile(late, 50)),
           'late_p99_ms': float(np.percentile(late, 99)), 'imu_p99_ms': None,
           'images': sum(stats.topics[t].count for t in IMAGE_TOPICS),
           'imu': stats.topics['/imu/data'].count}
    topics = _published_topics(list(player.streams)) if hasattr(player, 'streams') else []
    if len(topics) == len(late):
        imu = late[np.array([t == '/imu/data' for t in topics])]
        out['imu_p50_ms'] = float(np.percentile(imu, 50))
        out['imu_p99_ms'] = float(np.percentile(imu, 99))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--duration', type=float, default=5.0, help='episode length (s)')
    ap.add_argument('--cache', type=Path, default=Path(os.environ.get(
        'XDG_CACHE_HOME', Path.home() / '.cache')) / 'react_ros' / 'bench')
    args = ap.parse_args()
    root = sample(args.cache, args.duration)
    ep = root / 'episodes' / 'episode_000000'
    log('decode limit')
    dec, counts = decode_together([ep / 'cam0.mp4', ep / 'cam1.mp4'])
    seconds = counts[0] / 30.0
    log('player at 1.0x')
    rt = run_player(root, 1.0)
    log('player at 1.0x, --image-scale 0.5')
    half = run_player(root, 1.0, 0.5)

    def imu(r: dict) -> str:
        return ('-' if r['imu_p99_ms'] is None else
                f'IMU lateness p50 {r["imu_p50_ms"]:.1f} ms, p99 {r["imu_p99_ms"]:.1f} ms')
    rows = [('decode only, 2 videos together, 1920x1080', f'{dec:.0f} frames/s',
             'real time needs 60 frames/s')]
    for what, r in (('1920x1080', rt), ('--image-scale 0.5', half)):
        rows.append((f'player at 1.0x, 2 x {what} + IMU', f'RTF {r["rtf"]:.2f}',
                     f'all messages: lateness p50 {r["late_p50_ms"]:.1f} ms, '
                     f'p99 {r["late_p99_ms"]:.1f} ms; {imu(r)}; '
                     f'{sum(r["received"].values())} of {r["images"]} Images received'))
    print(f'TrueTrace benchmark: {seconds:.1f} s episode, 2 x 1920x1080 at 30 Hz + IMU at '
          f'{rt["imu"] / seconds:.0f} Hz, {os.cpu_count()} cores')
    print('| measurement | figure | ratio / note |')
    print('|---|---|---|')
    for r in rows:
        print(f'| {r[0]} | {r[1]} | {r[2]} |')
    ok = rt['rtf'] >= 0.98
    print(f'{"PASS" if ok else "FAIL"}: player keeps real time at 1.0x')
    whole = all(sum(r['received'].values()) == r['images'] for r in (rt, half))
    print(f'{"PASS" if whole else "FAIL"}: the subscriber received every image')
    return 0


if __name__ == '__main__':
    sys.exit(main())
