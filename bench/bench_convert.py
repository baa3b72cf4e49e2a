"""Conversion benchmark: bag size and speed per image mode and chunk compression, side by side.

One run, one machine, for each kind whose bench.yaml has a `convert:` section (today the
UMI sample at the dataset's own 1920x1200), the same sample episode for every row:
  modes     `convert` with --images raw / jpeg / png x --compression none / zstd
            (and raw x lz4): bytes per episode, seconds, images/s;
  limits    decoding the three videos alone (what every mode must do first), and the
            MCAP writer alone writing the same records (what the writer costs
            without us);
  read      reading every message back from the bag (MCAP only, no image decode);
  h264      `convert --images h264` (the recorded packets passed through) against the
            source videos' bytes; its time against converting the episode without its
            cameras and reading the videos' packets alone (demux, no decode);
  release   convert-all on a small release with 1 and 2 worker processes and on a
            local Ray: episodes/s, and the ratios between them.
Run it with `make bench` or `scripts/ros_env.sh python bench/bench_convert.py [--kind K]`.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from mcap.reader import make_reader
from mcap.writer import CompressionType, Writer

from react_ros.adapters import open_episode
from react_ros.sinks.bag import write_bag

from support import add_cache_argument, bench_settings, decode_together, image_topics, log, sample

MODES = [('raw', 'none'), ('raw', 'zstd'), ('raw', 'lz4'), ('jpeg', 'none'),
         ('jpeg', 'zstd'), ('png', 'none'), ('png', 'zstd')]
_MCAP_COMPRESSION = {'none': CompressionType.NONE, 'zstd': CompressionType.ZSTD,
                     'lz4': CompressionType.LZ4}


KIND = ''  # the kind benchmarked (set by main)


def videos(ep: Path) -> list[Path]:
    """The episode's source videos (what --images h264 passes through)."""
    return sorted(ep.rglob('*.mp4'))


def bag_bytes(bag: Path) -> int:
    return sum(p.stat().st_size for p in bag.rglob('*') if p.is_file())


def convert(ep: Path, out: Path, images: str, compression: str,
            exclude: tuple[str, ...] = ()) -> tuple[float, dict[str, int]]:
    t = time.perf_counter()
    summary = write_bag(open_episode(ep, KIND), out, images=images, compression=compression,
                        exclude=exclude)
    return time.perf_counter() - t, summary.topic_counts


def read_packets(paths: list[Path]) -> float:
    """Seconds to read every packet of these videos as --images h264 does (no decoding)."""
    from react_ros.formats.video_packets import read_packets as packets
    t = time.perf_counter()
    for path in paths:
        for _ in packets(path):
            pass
    return time.perf_counter() - t


def read_back(bag: Path) -> float:
    """Seconds to read every message record of the bag (chunks decompressed)."""
    mcap = next(bag.glob('*.mcap'))
    t = time.perf_counter()
    with open(mcap, 'rb') as f:
        for _ in make_reader(f).iter_messages():
            pass
    return time.perf_counter() - t


def writer_alone(bag: Path, compression: str, scratch: Path) -> float:
    """Seconds for the MCAP writer alone to write the bag's records again (reading excluded)."""
    mcap = next(bag.glob('*.mcap'))
    target = scratch / 'copy.mcap'
    t = time.perf_counter()
    with open(mcap, 'rb') as f, open(target, 'wb') as g:
        reader = make_reader(f)
        writer = Writer(g, chunk_size=4 * 1024 * 1024,
                        compression=_MCAP_COMPRESSION[compression])
        writer.start(profile='ros2', library='bench')
        ids: dict[int, int] = {}
        schemas: dict[int, int] = {}
        for schema, channel, message in reader.iter_messages():
            if channel.id not in ids:
                if schema.id not in schemas:
                    schemas[schema.id] = writer.register_schema(schema.name, schema.encoding,
                                                                schema.data)
                ids[channel.id] = writer.register_channel(channel.topic,
                                                          channel.message_encoding,
                                                          schemas[schema.id],
                                                          dict(channel.metadata))
            writer.add_message(ids[channel.id], log_time=message.log_time,
                               publish_time=message.publish_time, data=message.data,
                               sequence=message.sequence)
        writer.finish()
    elapsed = time.perf_counter() - t
    target.unlink()
    return max(elapsed - read_back(bag), 1e-9)


def release_rate(root: Path, scratch: Path, **how: object) -> float:
    from react_ros.release import ConvertSettings, convert_all
    out = scratch / f'release_{"_".join(f"{k}{v}" for k, v in how.items())}'
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    code = convert_all(root, out, ConvertSettings(), quiet=True, **how)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - t
    if code != 0:
        raise SystemExit(f'convert-all {how} exited {code}')
    n = len(list(out.rglob('metadata.yaml')))
    shutil.rmtree(out, ignore_errors=True)
    return n / elapsed


def main() -> int:
    global KIND
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--kind', help='only this kind (default: every kind with a convert: section)')
    ap.add_argument('--duration', type=float, default=2.0, help='episode length (s)')
    ap.add_argument('--episodes', type=int, default=6, help='episodes in the release rows')
    add_cache_argument(ap)
    ap.add_argument('--no-ray', action='store_true', help='leave out the Ray row')
    args = ap.parse_args()
    settings = bench_settings('convert')
    if args.kind is not None and args.kind not in settings:
        print(f'error: --kind {args.kind}: no react_ros/kinds/{args.kind}/bench.yaml with a '
              f'convert: section (have: {", ".join(settings)})', file=sys.stderr)
        return 2
    for kind, spec in settings.items():
        if args.kind in (None, kind):
            KIND = kind
            bench_kind(args, spec)
    return 0


def bench_kind(args: argparse.Namespace, spec: dict) -> None:
    sample_size = f'{spec["sample"]["width"]}x{spec["sample"]["height"]}'
    release_size = 'x'.join(str(n) for n in spec['release']['resolution'])
    ep = sample(KIND, args.cache, duration_s=args.duration, **spec['sample'])
    cameras = image_topics(open_episode(ep, KIND))
    images = None
    rows = []
    with tempfile.TemporaryDirectory(prefix='bench_convert_', dir=args.cache) as tmp:
        scratch = Path(tmp)
        log('decode limit')
        decode = decode_together(videos(ep))[0]
        for mode, compression in MODES:
            log(f'convert --images {mode} --compression {compression}')
            bag = scratch / f'{mode}_{compression}'
            seconds, counts = convert(ep, bag, mode, compression)
            images = images or sum(n for t, n in counts.items() if t in cameras)
            size = bag_bytes(bag)
            read = read_back(bag)
            write = writer_alone(bag, compression, scratch)
            rows.append((mode, compression, size, seconds, read, write))
            shutil.rmtree(bag)
        raw_size = rows[0][2]
        log('convert --images h264')
        bag = scratch / 'h264'
        h264_s, _ = convert(ep, bag, 'h264', 'lz4')
        h264_size = bag_bytes(bag)
        shutil.rmtree(bag)
        video_size = sum(p.stat().st_size for p in videos(ep))
        demux_s = read_packets(videos(ep))
        # The rest of the episode (poses, TF, camera_info, robot state) as its own
        # conversion: what --images h264 adds to it is what the videos cost.
        bag = scratch / 'no_images'
        rest_s, _ = convert(ep, bag, 'raw', 'lz4', exclude=tuple(cameras))
        shutil.rmtree(bag)
        log('release rows')
        release = args.cache / f'{KIND}_release_{args.episodes}_{release_size}'
        if not release.exists():
            from react_ros.cli import write_sample
            write_sample(KIND, release, seed=3, duration=spec['release']['duration'],
                         resolution=tuple(spec['release']['resolution']),
                         episodes=args.episodes)
        pool1 = release_rate(release, scratch, workers=1)
        pool2 = release_rate(release, scratch, workers=2)
        on_ray = None if args.no_ray else release_rate(release, scratch, workers=2, ray='')

    assert images
    print(f'Conversion benchmark: {KIND} {sample_size}, {args.duration:g} s episode ({images} images), '
          f'{os.cpu_count()} cores')
    print(f'decode only, {len(videos(ep))} videos together: {decode:.0f} images/s')
    print('| --images | --compression | bytes / episode | vs raw | convert s | images/s | '
          'of decode-only | writer alone s | read back s |')
    print('|---|---|---|---|---|---|---|---|---|')
    for mode, compression, size, seconds, read, write in rows:
        rate = images / seconds
        print(f'| {mode} | {compression} | {size / 1e6:,.0f} MB | {size / raw_size:.3f} | '
              f'{seconds:.1f} | {rate:.0f} | {rate / decode:.0%} | {write:.1f} '
              f'({write / seconds:.0%} of convert) | {read:.2f} |')
    print(f'--images h264 (packets passed through), lz4: {h264_size / 1e6:,.1f} MB, '
          f'{h264_size / video_size:.2f}x the {len(videos(ep))} source videos '
          f'({video_size / 1e6:,.1f} MB), '
          f'{h264_size / raw_size:.4f}x raw; {h264_s:.2f} s ({args.duration / h264_s:.1f}x real '
          f'time): the episode without its cameras {rest_s:.2f} s, so the videos added '
          f'{h264_s - rest_s:.2f} s against {demux_s:.2f} s reading their packets alone')
    print(f'convert-all, {args.episodes} {KIND} episodes of {spec["release"]["duration"]:g} s at '
          f'{release_size}:')
    print('| runner | episodes/s | ratio |')
    print('|---|---|---|')
    print(f'| --workers 1 | {pool1:.2f} | 1.00 |')
    print(f'| --workers 2 | {pool2:.2f} | {pool2 / pool1:.2f} of 1 worker |')
    if on_ray is not None:
        print(f'| --ray (local, 2 CPUs) | {on_ray:.2f} | {on_ray / pool2:.2f} of --workers 2 |')


if __name__ == '__main__':
    sys.exit(main())
