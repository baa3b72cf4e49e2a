"""React playback benchmark: the player against its decode and publish limits.

One run, one machine, one React sample release at the dataset's own 640x480:
three colour views at the recorded ~29.9 Hz plus two tactile videos (decoded
whole, published on their ~29 % fresh rows only).
  decode   the five videos decoded together on five threads, no ROS (frames/s);
  publish  the delivered publish limit: 640x480 rgb8 Images through the player's
           flow-controlled writer to one subscriber in another process, every one
           received (Images/s);
  player   the real player at a rate it cannot keep up with, the same subscriber
           (reliable KEEP_ALL) on the five image topics: Images/s received, lost,
           and the real-time factor;
  1.0x     the player at real time: real-time factor, lost, p50/p99 lateness.
Every rate counts what the subscriber received. The limits and the player run
with the player's process-wide DDS settings (sinks/tuning.py).
Run it with `scripts/ros_env.sh python bench/bench_react.py` (the UMI benchmark's
helpers are imported from bench_umi.py).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_umi import (DISCOVERY_WAIT_S, Subscriber, decode_together, log,  # noqa: E402
                       publish_limit)

from react_ros.sinks.tuning import freeze_heap, tune_for_playback  # noqa: E402

EPISODE = '2026-05-10/episode_000'
KEYS = ('view_left', 'view_middle', 'view_right', 'tactile_left', 'tactile_right')
IMAGE_TOPICS = [f'/{k}/image_raw' for k in KEYS]


def sample(cache: Path, duration: float) -> Path:
    from react_ros.kinds.react.sample import write_react_sample
    root = cache / f'react_640x480_{duration:g}s'
    if not (root / 'episodes.jsonl').exists():
        log(f'writing a {duration:g} s 640x480 React sample to {root}')
        write_react_sample(root, seed=1, duration_s=duration, width=640, height=480)
    return root


def videos(root: Path) -> list[Path]:
    return [root / 'videos' / EPISODE / f'{k}.mp4' for k in KEYS]


def decode_limit(root: Path) -> tuple[float, int]:
    """Frames/s decoding the five videos at once, and the views' frame count."""
    fps, counts = decode_together(videos(root))
    return fps, counts[0]


def small_limit(root: Path) -> tuple[float, int]:
    """Messages/s publishing the episode's light messages (poses, TF, camera_info, force,
    annotations), pre-built, in merged order, with the player's QoS and no subscriber."""
    import rclpy
    from rclpy.context import Context

    from react_ros.adapters import EpisodeOptions, open_episode
    from react_ros.ros import qos
    from react_ros.ros.msgs import message_class
    from react_ros.streams import merge

    episode = open_episode(root, 'react', EpisodeOptions(episode=EPISODE))
    light = [st for st in episode.streams if not st.heavy]
    events = [(light[e.stream_idx].topic, e.msg) for e in merge([st.open() for st in light])]
    ctx = Context()
    rclpy.init(args=[], context=ctx)
    node = rclpy.create_node('bench_small_publisher', context=ctx)
    pubs = {st.topic: node.create_publisher(message_class(st.msg_type), st.topic,
                                            qos.live_writer(st.latched)) for st in light}
    t = time.perf_counter()
    for topic, msg in events:
        pubs[topic].publish(msg)
    rate = len(events) / (time.perf_counter() - t)
    node.destroy_node()
    rclpy.shutdown(context=ctx)
    return rate, len(events)


def run_player(root: Path, rate: float, record: bool = False) -> dict:
    from react_ros.adapters import EpisodeOptions, open_episode
    from react_ros.sinks.live import Player, PlayOptions

    episode = open_episode(root, 'react', EpisodeOptions(episode=EPISODE))
    sub = Subscriber(IMAGE_TOPICS)
    player = Player(episode, PlayOptions(rate=rate, quiet=True, keyboard=False,
                                         record_lateness=record,
                                         wait_for_subscribers_s=DISCOVERY_WAIT_S))
    freeze_heap()
    player.run()
    stats = player.stats()
    wall = stats.span_s  # first to last message published: playback only
    received = sum(sub.stop().values())
    images = sum(stats.topics[tp].count for tp in IMAGE_TOPICS)
    out = {'images': images, 'images_per_s': received / wall,
           'rtf': stats.played_ns / 1e9 / wall, 'received': received,
           'lost': images - received, 'failed': stats.failed}
    if record:
        late = np.asarray(player.lateness_ns(), dtype=np.float64) / 1e6
        out['late_p50_ms'] = float(np.percentile(late, 50))
        out['late_p99_ms'] = float(np.percentile(late, 99))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--duration', type=float, default=10.0, help='episode length (s)')
    ap.add_argument('--cache', type=Path, default=Path(os.environ.get(
        'XDG_CACHE_HOME', Path.home() / '.cache')) / 'react_ros' / 'bench')
    args = ap.parse_args()
    tune_for_playback()  # before rclpy starts: the limits run with the player's settings
    root = sample(args.cache, args.duration)

    from react_ros.adapters import EpisodeOptions, open_episode
    episode = open_episode(root, 'react', EpisodeOptions(episode=EPISODE))
    counts = {s.topic: s.count or 0 for s in episode.streams}
    seconds = episode.duration_ns / 1e9
    need_publish = sum(counts[t] for t in IMAGE_TOPICS) / seconds
    log('decode limit')
    dec, rows = decode_limit(root)
    need_decode = len(KEYS) * rows / seconds  # tactile videos decode every row
    log('publish limit')
    delivered = publish_limit(videos(root)[1], 600)
    pub = delivered['rate']
    log('light-message publish limit')
    small, n_small = small_limit(root)
    log('player, as fast as it goes')
    fast = run_player(root, 100.0)
    log('player at 1.0x')
    rt = run_player(root, 1.0, record=True)

    # Seconds of work per second of episode, one thing after another: decode every
    # frame (tactile too), publish the images played, publish the light messages.
    need_small = n_small / seconds
    rtf_limit = 1.0 / (need_decode / dec + need_publish / pub + need_small / small)
    limit = need_publish * rtf_limit
    rows_out = [
        ('decode only, 5 videos together, 640x480', f'{dec:.0f} frames/s',
         f'real time needs {need_decode:.0f} frames/s'),
        ('delivered publish limit, 640x480 rgb8, flow-controlled, 1 subscriber',
         f'{pub:.0f} Images/s', f'{delivered["received"]} of {delivered["sent"]} received'),
        ('publish only, the light messages (TF, poses, camera_info, force)',
         f'{small:.0f} msgs/s', f'real time needs {need_small:.0f} msgs/s'),
        # The player overlaps these on two cores and five writers (each with its own
        # window), so it can pass this figure: it is a floor to compare runs against.
        ('decode and both publishes one after another, React mix', f'{limit:.0f} Images/s',
         f'RTF {rtf_limit:.2f}; real time needs {need_publish:.0f} Images/s'),
        ('player, React 640x480, as fast as it goes', f'{fast["images_per_s"]:.0f} Images/s',
         f'{fast["lost"]} of {fast["images"]} lost; {fast["images_per_s"] / limit:.0%} of one '
         f'after another; RTF {fast["rtf"]:.2f}'),
        ('player at 1.0x, React 640x480', f'RTF {rt["rtf"]:.2f}',
         f'{rt["lost"]} of {rt["images"]} lost; lateness p50 {rt["late_p50_ms"]:.1f} ms, '
         f'p99 {rt["late_p99_ms"]:.1f} ms'),
    ]
    print(f'React benchmark: {seconds:.1f} s episode, 3 views at '
          f'{counts["/view_middle/image_raw"] / seconds:.1f} Hz + 2 tactile at '
          f'{counts["/tactile_left/image_raw"] / seconds:.1f} Hz fresh, '
          f'{os.cpu_count()} cores')
    print('| measurement | figure | ratio / note |')
    print('|---|---|---|')
    for r in rows_out:
        print(f'| {r[0]} | {r[1]} | {r[2]} |')
    checks = [('nothing lost by either player run', fast['lost'] == 0 and rt['lost'] == 0),
              ('player as fast as it goes >= 85% of one after another',
               fast['images_per_s'] >= 0.85 * limit),
              ('player keeps real time at 1.0x', rt['rtf'] >= 0.98)]
    for name, ok in checks:
        print(f'{"PASS" if ok else "FAIL"}: {name}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
