"""Kind benchmark: every kind's sample converted and played, against the figures it must reach.

For each kind whose folder's bench.yaml has a `kinds:` section (`--kind` picks one), its
sample is written at the size given there, then each measurement runs in a fresh process
(peak RSS is that process's own):
  convert  `react-ros convert` of the episode: seconds of data per second of wall time
           (and per CPU second: on a shared machine the wall clock counts neighbours too);
  fast     the real player at --rate 100, faster than it can go: real-time factor;
  1.0x     the real player at real time: real-time factor, p50/p99 lateness of every
           message against its scheduled time (and of `lateness_topic`'s alone);
  memory   (`memory: true`) convert and play peak RSS on a sample twice as long.
The player runs with bench/image_subscriber.py (reliable KEEP_ALL, another process) on
every image topic, and what it received is counted. The section's `checks` say what
each kind must reach (convert_rtf, fast_rtf, play_rtf, late_p99_ms, memory_growth).
Run it with `make bench` or `scripts/ros_env.sh python bench/bench_kinds.py [--kind K]`.
"""
from __future__ import annotations

import argparse
import heapq
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from support import (DISCOVERY_WAIT_S, Subscriber, add_cache_argument, bench_settings,
                     image_topics, in_child, log, print_table, sample)


def _published_topics(streams: list) -> list[str]:
    """The topic of each message in the order the player publishes them (its merge key:
    stamp, stream index, sequence), without decoding images: an image stream has the
    stamps of its camera_info."""
    stamps = {s.topic: [t for t, _ in s.open()] for s in streams if not s.heavy}
    keys = []
    for i, s in enumerate(streams):
        ts = stamps.get(s.topic.replace('image_raw', 'camera_info')) if s.heavy else \
            stamps[s.topic]
        if ts is None:
            return []
        keys += [(t, i, n) for n, t in enumerate(ts)]
    return [streams[i].topic for _, i, _ in heapq.nsmallest(len(keys), keys)]


def child(what: str, kind: str, root: str, settings: str) -> None:
    """One measurement in this (fresh) process; prints one JSON line."""
    import numpy as np

    from react_ros.registry import EpisodeOptions, open_episode
    spec = json.loads(settings)
    t0, c0 = time.perf_counter(), time.process_time()
    own = None
    if what == 'convert_flow':  # robotwin: the same episode converted with --flow-step 1
        from react_ros.registry import KINDS
        own = KINDS[kind].options(**{k: tuple(v) if isinstance(v, list) else v
                                     for k, v in spec['flow_options'].items()})
    episode = open_episode(Path(root), kind, EpisodeOptions(
        episode=spec.get('episode'), image_scale=spec.get('scale', 1.0), own=own))
    seconds = episode.duration_ns / 1e9
    if what in ('convert', 'convert_flow'):
        from react_ros.rosbag2.writer import write_bag
        with tempfile.TemporaryDirectory() as tmp:
            write_bag(episode, Path(tmp) / 'bag')
            size = sum(p.stat().st_size for p in (Path(tmp) / 'bag').iterdir())
        wall = time.perf_counter() - t0
        out: dict[str, Any] = {'rtf': seconds / wall, 'wall_s': wall, 'bag_mb': size / 2**20,
                               'messages': sum(s.count or 0 for s in episode.streams)}
    else:
        from react_ros.play_options import PlayOptions
        from react_ros.sinks.live import Player, PlayerRuntime
        from react_ros.sinks.tuning import freeze_heap, tune_for_playback
        tune_for_playback()
        images = image_topics(episode)
        sub = Subscriber(images) if images else None
        rate = 1.0 if what == 'realtime' else 100.0
        player = Player(episode, PlayOptions(rate=rate, quiet=True,
                                             wait_for_subscribers=DISCOVERY_WAIT_S),
                        PlayerRuntime(keyboard=False, record_lateness=what == 'realtime'))
        freeze_heap()
        player.run()
        stats = player.stats()
        received = sub.stop() if sub is not None else {}
        out = {'rtf': stats.played_ns / 1e9 / stats.span_s, 'wall_s': stats.span_s,
               'messages': stats.published, 'failed': stats.failed,
               'images': sum(stats.topics[t].count for t in images),
               'received': sum(received.values())}
        if what == 'realtime':
            late = np.asarray(player.lateness_ns(), dtype=np.float64) / 1e6
            out['late_p50_ms'] = float(np.percentile(late, 50))
            out['late_p99_ms'] = float(np.percentile(late, 99))
            topic = spec.get('lateness_topic')
            topics = _published_topics(list(episode.streams)) if topic else []
            if len(topics) == len(late):
                alone = late[np.array([t == topic for t in topics])]
                out['topic_p50_ms'] = float(np.percentile(alone, 50))
                out['topic_p99_ms'] = float(np.percentile(alone, 99))
    out['peak_rss_mb'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out['cpu_s'] = time.process_time() - c0
    out['rtf_cpu'] = seconds / out['cpu_s']
    out['seconds'] = seconds
    print(json.dumps(out))


def bench_kind(kind: str, spec: dict[str, Any], cache: Path,
               duration: float | None) -> tuple[str, list, list]:
    writer_args = dict(spec.get('sample', {}))
    if duration is not None:
        writer_args['duration_s'] = duration
    root = sample(kind, cache, **writer_args)
    runs = spec.get('runs', ['convert', 'realtime'])
    checks_wanted = spec.get('checks', {})
    rows: list[tuple[str, str, str]] = []
    results: dict[str, dict] = {}
    for scale in spec.get('scales', [1.0]):
        settings = json.dumps({**spec, 'scale': scale})
        at = '' if scale == 1.0 else f', --image-scale {scale:g}'
        for what in runs:
            if what in ('convert', 'convert_flow') and scale != 1.0:
                continue  # a bag keeps the recorded size
            log(f'{kind}: {what}{at}')
            r = results[f'{what}{at}'] = in_child(__file__, what, kind, str(root), settings)
            got = f'{r["received"]} of {r["images"]} images received; ' if r.get('images') \
                else ''
            if what == 'convert':
                rows.append((f'convert, {r["messages"]} messages',
                             f'RTF {r["rtf"]:.1f} (wall), {r["rtf_cpu"]:.1f} (CPU)',
                             f'{r["wall_s"]:.2f} s wall, bag {r["bag_mb"]:.0f} MB, peak RSS '
                             f'{r["peak_rss_mb"]:.0f} MB'))
            elif what == 'convert_flow':
                opts = ' '.join(f'--{k.replace("_", "-")} {",".join(map(str, v)) if isinstance(v, list) else v}'
                                for k, v in spec['flow_options'].items())
                rows.append((f'convert with {opts}, {r["messages"]} messages',
                             f'{r["wall_s"]:.2f} s per episode',
                             f'RTF {r["rtf"]:.1f} (wall), bag {r["bag_mb"]:.0f} MB, peak RSS '
                             f'{r["peak_rss_mb"]:.0f} MB'))
            elif what == 'fast':
                rows.append((f'player, as fast as it goes{at}', f'RTF {r["rtf"]:.2f}',
                             f'{got}{r["messages"] / r["wall_s"]:.0f} msgs/s, peak RSS '
                             f'{r["peak_rss_mb"]:.0f} MB'))
            else:
                alone = (f'; {spec["lateness_topic"]} alone p50 {r["topic_p50_ms"]:.1f} ms, '
                         f'p99 {r["topic_p99_ms"]:.1f} ms') if 'topic_p99_ms' in r else ''
                rows.append((f'player at 1.0x{at}', f'RTF {r["rtf"]:.2f}',
                             f'{got}lateness p50 {r["late_p50_ms"]:.1f} ms, p99 '
                             f'{r["late_p99_ms"]:.1f} ms{alone}'))
    checks = [('nothing lost by any player run',
               all(r['received'] == r['images'] and not r['failed']
                   for what, r in results.items() if not what.startswith('convert')))]
    if 'convert_rtf' in checks_wanted and 'convert' in results:
        r = results['convert']
        checks.append((f'convert >= {checks_wanted["convert_rtf"]}x real time '
                       '(the better of wall and CPU)',
                       max(r['rtf'], r['rtf_cpu']) >= checks_wanted['convert_rtf']))
    if 'fast_rtf' in checks_wanted and 'fast' in results:
        r = results['fast']
        checks.append((f'player as fast as it goes >= {checks_wanted["fast_rtf"]}x real time '
                       '(the better of wall and CPU)',
                       max(r['rtf'], r['rtf_cpu']) >= checks_wanted['fast_rtf']))
    for what, r in results.items():
        if what.startswith('realtime') and 'play_rtf' in checks_wanted:
            checks.append((f'{what}: player keeps real time (RTF >= {checks_wanted["play_rtf"]})',
                           r['rtf'] >= checks_wanted['play_rtf']))
        if what.startswith('realtime') and 'late_p99_ms' in checks_wanted:
            checks.append((f'{what}: p99 lateness < {checks_wanted["late_p99_ms"]} ms',
                           r['late_p99_ms'] < checks_wanted['late_p99_ms']))
    if spec.get('memory'):
        longer = sample(kind, cache, **{**writer_args, 'duration_s':
                                        2 * writer_args.get('duration_s', 3.0)})
        for what in (w for w in runs if w in ('convert', 'fast')):
            log(f'{kind}: {what}, twice as long')
            r = in_child(__file__, what, kind, str(longer), json.dumps(spec))
            growth = r['peak_rss_mb'] / results[what]['peak_rss_mb']
            rows.append((f'{what}, twice as long', f'peak RSS {r["peak_rss_mb"]:.0f} MB',
                         f'{growth:.2f}x for 2x the length'))
            if 'memory_growth' in checks_wanted:
                checks.append((f'{what} peak memory flat in episode length '
                               f'(< {checks_wanted["memory_growth"]}x)',
                               growth < checks_wanted['memory_growth']))
    seconds = next(iter(results.values()))['seconds']
    title = (f'{kind} benchmark: {seconds:.1f} s episode ({spec.get("about", "its sample")}), '
             f'{os.cpu_count()} cores')
    return title, rows, checks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--kind', help='only this kind (default: every kind with a kinds: section)')
    ap.add_argument('--duration', type=float, help="episode length (s; default: the kind's)")
    ap.add_argument('--child', nargs=4, help=argparse.SUPPRESS)
    add_cache_argument(ap)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return 0
    settings = bench_settings('kinds')
    if args.kind is not None and args.kind not in settings:
        print(f'error: --kind {args.kind}: no react_ros/kinds/{args.kind}/bench.yaml with a '
              f'kinds: section (have: {", ".join(settings)})', file=sys.stderr)
        return 2
    ok = True
    for kind, spec in settings.items():
        if args.kind in (None, kind):
            title, rows, checks = bench_kind(kind, spec, args.cache, args.duration)
            print_table(title, rows, checks)
            ok &= all(passed for _, passed in checks)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
