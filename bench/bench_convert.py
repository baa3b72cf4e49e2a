"""Conversion benchmark: each convert mode against its limits, measured side by side.

One run, one machine, for each kind whose bench.yaml has a `convert:` section (today the
UMI sample at the dataset's own 1920x1200), the same sample episode for every row:
  limits    decoding the videos alone (what every mode but h264 does first); plain
            f.write of the raw bag's bytes into the bags' folder, the same writes with
            write-behind, and past the page cache as convert writes them (O_DIRECT);
            the fastest is the write limit;
            the MCAP writer alone writing as many pre-serialised Images of the same
            size (none, lz4, zstd); the chunk CRC (the bag writer's: zlib-ng) over their CDR, in CPU;
            JPEG from the decoder's planes with libjpeg-turbo (what `--images jpeg`
            does with a video's frames) on every core, and PNG and Pillow's JPEG of
            decoded RGB frames (threads and processes); reading the videos' packets
            (demux, what h264 does instead of decoding);
  modes     `convert` with --images raw / jpeg / png x --compression auto (the default)
            / none / lz4 / zstd and h264: bytes, seconds, images/s, MB/s written (the
            modes with targets: the best of 3 conversions, as each limit is the best of
            its runs; every run printed), and
              min(decode, second stage): the write limit for raw, the encoder for jpeg
                    and png, demux for h264;
              the shared-cores limit (issue 43's yardstick): on 2 cores decoding alone
                    keeps both busy, so the stages take turns on the same cores and the
                    rate cannot pass 1 / (1/decode + 1/second stage), each measured
                    alone on every core; raw and jpeg must reach 0.8 of it;
              CPU ms per image of the conversion (every thread of this process) against
                    its essential stages' (raw: decode + write + chunk CRC; jpeg: decode
                    + libjpeg-turbo encode + write of its bytes): at most 1.25x;
  read      reading every message back from each bag (MCAP only, no image decode);
  release   convert-all on a small release with 1 and 2 worker processes and on a
            local Ray: episodes/s, and the ratios between them.
Ratios are printed against their targets, never asserted: a busy machine moves them,
which is why the limits are measured in the same run. Every file written goes into one
temporary folder under --cache, removed at the end (the sample episodes stay cached there).
Run it with `make bench` or `scripts/ros_env.sh python bench/bench_convert.py [--kind K]`.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcap.reader import make_reader
from mcap.writer import CompressionType, Writer
from rclpy.serialization import serialize_message

from react_ros.convert_options import ConvertOptions
from react_ros.registry import open_episode
from react_ros.ros import compressed_image as ci
from react_ros.ros.image import rgb_image
from react_ros.ros.msgs import definition_text
from react_ros.rosbag2.chunk_writer import crc32
from react_ros.rosbag2.writer import CHUNK_SIZE, write_bag

from support import (WRITE_WAYS, add_cache_argument, bench_settings, decode_together,
                     disk_free, cpu_s, first_frames, image_topics, log, plain_write_s, sample)

MODES = [('raw', 'none'), ('raw', 'auto'), ('raw', 'lz4'), ('raw', 'zstd'),
         ('jpeg', 'auto'), ('jpeg', 'lz4'), ('png', 'auto')]
_MCAP_COMPRESSION = {'none': CompressionType.NONE, 'zstd': CompressionType.ZSTD,
                     'lz4': CompressionType.LZ4}
WRITE_PIECE = 4 * 1024 * 1024  # the plain writes' size: the bag writer's chunk size
RAW_TARGET = JPEG_TARGET = 0.8  # of the shared-cores limit (issue 43)
CPU_TARGET = 1.25  # a conversion's CPU per image against its essential stages
# Distinct frames held for the writer and encoder limits (per video): enough that no
# cache holds one encode's input for the next, few enough to keep memory small.
FRAMES_PER_VIDEO = 4
# Encodes per encoder limit: PNG at full size is slow, and either rate settles well
# before this on every core.
ENCODES = {'jpeg': 96, 'png': 24}
# Memory the kernel freed seconds ago costs this VM ~5x more to touch again than memory
# freed a moment ago (measured: plain writes of 1.25 GB at 0.4-1.8 GB/s into a fresh file,
# 5-6 GB/s right after deleting the previous one or 1 s after, 1.2-1.6 GB/s 3 s after;
# free page reporting to the host by its virtio balloon, which waits 2 s, would explain
# it). A conversion starts from the first state, so every large measurement here waits
# this long first rather than reusing the previous one's pages.
SETTLE_S = 3.0
# Runs of the cheap limits; the best is the limit (a limit is what can be reached).
LIMIT_RUNS = 3
# The modes with targets are converted as often, their best kept likewise: one conversion
# here moved by a third from run to run (the kernel's side of writing 1.2 GB, mostly).
TARGET_MODES = {('raw', 'none'), ('raw', 'auto'), ('jpeg', 'auto')}
TARGET_RUNS = LIMIT_RUNS

KIND = ''  # the kind benchmarked (set by main)


def settle() -> None:
    time.sleep(SETTLE_S)  # see SETTLE_S: a bench's pause, not a test's
_ENCODE_INPUT: list[Any] = []  # Images a forked encoder process inherits


def videos(ep: Path) -> list[Path]:
    """The episode's source videos (what --images h264 passes through)."""
    return sorted(ep.rglob('*.mp4'))


def bag_bytes(bag: Path) -> int:
    return sum(p.stat().st_size for p in bag.rglob('*') if p.is_file())


def convert(ep: Path, out: Path, images: str, compression: str,
            exclude: tuple[str, ...] = ()) -> tuple[float, dict[str, int], float]:
    """Seconds, messages per topic and CPU seconds (this process, every thread) of one
    conversion."""
    settle()
    t, cpu = time.perf_counter(), cpu_s()
    summary = write_bag(open_episode(ep, KIND), out,
                        ConvertOptions(images=images, compression=compression,
                                       exclude_topics=exclude))
    return time.perf_counter() - t, summary.topic_counts, cpu_s() - cpu


def converted_row(ep: Path, scratch: Path, images: str, compression: str,
                  cameras: list[str], n_images: int) -> Row:
    """The mode's Row: a mode with targets converted TARGET_RUNS times, its best seconds
    and least CPU kept (as a limit is the best of its runs), every run listed."""
    runs = TARGET_RUNS if (images, compression) in TARGET_MODES else 1
    bag = scratch / f'{images}_{compression}'
    measured = []
    for i in range(runs):
        shutil.rmtree(bag, ignore_errors=True)
        seconds, topic_counts, cpu = convert(ep, bag, images, compression)
        converted = sum(n for t, n in topic_counts.items()
                        if t in cameras or t.rsplit('/', 1)[0] in cameras)
        if converted != n_images:
            raise SystemExit(f'convert wrote {converted} images, decoding gave {n_images}')
        measured.append((seconds, cpu))
    row = Row(images, compression, bag_bytes(bag), min(s for s, _ in measured),
              read_back(bag), cpu_s=min(c for _, c in measured), runs=measured)
    shutil.rmtree(bag)
    return row


def crc_cpu_s(payloads: list[bytes], n: int) -> float:
    """CPU seconds of the chunk CRC (the bag writer's own, zlib-ng's crc32) over `n`
    of the `payloads` in turn: what every uncompressed chunk costs besides its write."""
    cpu = cpu_s()
    crc = 0
    for i in range(n):
        crc = crc32(payloads[i % len(payloads)], crc)
    return cpu_s() - cpu


def planes_encode(planes: list[Any], workers: int) -> tuple[float, float]:
    """Images/s and CPU seconds per image of JPEG (quality 95) from the decoder's planes with
    libjpeg-turbo (formats/jpeg_encoder.encode_planes, what `--images jpeg` does for a
    video's frames), on `workers` threads: the encoder releases the GIL."""
    from react_ros.formats.jpeg_encoder import encode_planes
    n = ENCODES['jpeg']
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(encode_planes, planes[:workers], [ci.JPEG_QUALITY] * workers))
        settle()
        t, cpu = time.perf_counter(), cpu_s()
        sizes = list(pool.map(lambda i: len(encode_planes(planes[i % len(planes)],
                                                          ci.JPEG_QUALITY)), range(n)))
        elapsed, cpu = time.perf_counter() - t, cpu_s() - cpu
    assert len(sizes) == n and min(sizes) > 0
    return n / elapsed, cpu / n


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


def mcap_writer_s(path: Path, payloads: list[bytes], topics: list[str], n: int,
                  compression: str) -> float:
    """Seconds for mcap's Writer alone to write `n` Image records (the `payloads`, already
    serialised, in turn; one channel per camera) into `path`, chunked as the bag is."""
    settle()
    t = time.perf_counter()
    with open(path, 'wb') as f:
        writer = Writer(f, chunk_size=CHUNK_SIZE, compression=_MCAP_COMPRESSION[compression])
        writer.start(profile='ros2', library='bench')
        schema = writer.register_schema('sensor_msgs/msg/Image', 'ros2msg',
                                        definition_text('sensor_msgs/msg/Image').encode())
        channels = [writer.register_channel(topic, 'cdr', schema) for topic in topics]
        for i in range(n):
            stamp = i * 5_000_000
            writer.add_message(channels[i % len(channels)], log_time=stamp,
                               publish_time=stamp, data=payloads[i % len(payloads)])
        writer.finish()
    elapsed = time.perf_counter() - t
    path.unlink()
    return elapsed


def _encode(i: int, codec: str) -> int:
    """Encode input image i as `--images <codec>` does; its compressed size."""
    image = _ENCODE_INPUT[i % len(_ENCODE_INPUT)]
    return len(ci.compress(image, codec, ci.JPEG_QUALITY).data)


def encode_rate(codec: str, pool: Executor, workers: int) -> float:
    """Images/s encoding ENCODES[codec] of the held images with `codec` on `pool`."""
    n = ENCODES[codec]
    list(pool.map(_encode, range(workers), [codec] * workers))  # start every worker first
    settle()
    t = time.perf_counter()
    sizes = list(pool.map(_encode, range(n), [codec] * n))
    elapsed = time.perf_counter() - t
    assert len(sizes) == n and min(sizes) > 0
    return n / elapsed


def encode_limits(frames: list[Any]) -> dict[str, dict[str, float]]:
    """codec -> {'threads': images/s, 'processes': images/s}, on os.cpu_count() of each.

    The converter encodes on a thread pool (sinks/image_encoding.py), counting on Pillow
    releasing the GIL; processes (forked, the images inherited, only sizes sent back) show
    whether that holds.
    """
    workers = os.cpu_count() or 1
    _ENCODE_INPUT[:] = [rgb_image(frame, i, 'bench') for i, frame in enumerate(frames)]
    found: dict[str, dict[str, float]] = {}
    for codec in ('jpeg', 'png'):
        log(f'{codec} encode limit')
        with ThreadPoolExecutor(workers) as threads:
            on_threads = encode_rate(codec, threads, workers)
        fork = multiprocessing.get_context('fork')
        with ProcessPoolExecutor(workers, mp_context=fork) as processes:
            on_processes = encode_rate(codec, processes, workers)
        found[codec] = {'threads': on_threads, 'processes': on_processes}
    _ENCODE_INPUT.clear()
    return found


def release_rate(root: Path, scratch: Path, **how: object) -> float:
    from react_ros.convert_options import ConvertAllOptions
    from react_ros.release import convert_all
    out = scratch / f'release_{"_".join(f"{k}{v}" for k, v in how.items())}'
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    code = convert_all(root, out, ConvertAllOptions(**how), quiet=True)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - t
    if code != 0:
        raise SystemExit(f'convert-all {how} exited {code}')
    n = len(list(out.rglob('metadata.yaml')))
    shutil.rmtree(out, ignore_errors=True)
    return n / elapsed


@dataclass
class Row:
    """One convert mode: what it wrote, how fast, and its rate against its limit."""

    images: str
    compression: str
    size: int
    seconds: float
    read_s: float = 0.0
    limit: str = ''  # which limit, with its value
    limit_rate: float = 0.0  # images/s
    target: float | None = None
    shared_rate: float | None = None  # the shared-cores limit, images/s (module docstring)
    cpu_s: float = 0.0  # CPU seconds of the conversion, every thread of this process
    essential_cpu: float | None = None  # CPU s per image of its essential stages
    thrifty_essential_cpu: float | None = None  # the same with the least-CPU write
    runs: list[tuple[float, float]] | None = None  # (seconds, CPU s) of every conversion

    def rate(self, n_images: int) -> float:
        return n_images / self.seconds


def main() -> int:
    global KIND
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--kind', help='only this kind (default: every kind with a convert: section)')
    ap.add_argument('--duration', type=float, default=4.0,
                    help='episode length (s); 1 s of UMI is 180 images, 1.2 GB raw; 4 s as '
                    'issue 43 measured, where start-up is a small part of the CPU per image')
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


def _load() -> str:
    return ' '.join(f'{x:.2f}' for x in os.getloadavg())


def bench_kind(args: argparse.Namespace, spec: dict) -> None:
    width, height = spec['sample']['width'], spec['sample']['height']
    frame_bytes = width * height * 3  # rgb8, what decoding yields
    release_size = 'x'.join(str(n) for n in spec['release']['resolution'])
    ep = sample(KIND, args.cache, duration_s=args.duration, **spec['sample'])
    cameras = image_topics(open_episode(ep, KIND))
    sources = videos(ep)
    load_before = _load()
    free_before = disk_free(args.cache)
    log(free_before)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix='bench_convert_', dir=args.cache) as tmp:
        scratch = Path(tmp)
        log('decode limit')
        decode_runs = []
        for _ in range(LIMIT_RUNS):
            settle()
            cpu = cpu_s()
            rate, counts = decode_together(sources)
            decode_runs.append((rate, cpu_s() - cpu))
        # the best rate and the least CPU of the runs: what decoding can reach
        decode = max(r for r, _ in decode_runs)
        decode_cpu = min(c for _, c in decode_runs)
        n_images = sum(counts)

        log('convert --images raw --compression none')
        raw = converted_row(ep, scratch, 'raw', 'none', cameras, n_images)
        rows.append(raw)

        log(f'write limits: plain writes of {raw.size / 1e6:,.0f} MB, with write-behind and '
            'direct')
        write_runs: dict[str, list[tuple[float, float]]] = {how: [] for how in WRITE_WAYS}
        for _ in range(LIMIT_RUNS):
            for how in WRITE_WAYS:
                settle()
                write_runs[how].append(plain_write_s(scratch, raw.size, WRITE_PIECE, how))
        # (seconds, CPU seconds) of the faster run of each way
        write_best = {how: min(runs) for how, runs in write_runs.items()}

        frames = first_frames(sources, FRAMES_PER_VIDEO)
        payloads = [bytes(serialize_message(rgb_image(f, i, 'bench')))
                    for i, f in enumerate(frames)]
        payload_bytes = sum(map(len, payloads)) / len(payloads)
        log('chunk CRC')
        crc_cpu = min(crc_cpu_s(payloads, n_images) for _ in range(LIMIT_RUNS))
        mcap_s = {}
        for compression in _MCAP_COMPRESSION:
            log(f'mcap writer limit, {compression}')
            # zstd is slow enough that its rate varies less than one run's worth
            runs = 1 if compression == 'zstd' else LIMIT_RUNS
            mcap_s[compression] = min(
                mcap_writer_s(scratch / 'writer.mcap', payloads, cameras, n_images, compression)
                for _ in range(runs))
        del payloads
        encode = encode_limits(frames)
        del frames
        log('jpeg encode limit, libjpeg-turbo from the decoder\'s planes')
        planes = first_frames(sources, FRAMES_PER_VIDEO, planes=True)
        planes_rate, planes_cpu = planes_encode(planes, os.cpu_count() or 1)
        del planes

        for mode, compression in MODES[1:]:
            log(f'convert --images {mode} --compression {compression}')
            rows.append(converted_row(ep, scratch, mode, compression, cameras, n_images))

        log('convert --images h264')
        bag = scratch / 'h264'
        h264_s, _, _ = convert(ep, bag, 'h264', 'auto')
        h264 = Row('h264', 'auto', bag_bytes(bag), h264_s, read_back(bag))
        shutil.rmtree(bag)
        video_size = sum(p.stat().st_size for p in sources)
        demux_s = read_packets(sources)
        # The rest of the episode (poses, TF, camera_info, robot state) as its own
        # conversion: what --images h264 adds to it is what the videos cost.
        bag = scratch / 'no_images'
        rest_s, _, rest_cpu = convert(ep, bag, 'raw', 'auto', exclude=tuple(cameras))
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
    free_after = disk_free(args.cache)
    cores = os.cpu_count() or 1

    # Every limit in images/s of this episode (the writes: the raw bag's bytes at the
    # rate they were written, so images/s of raw bag).
    write_limits = {how: n_images / s for how, (s, _) in write_best.items()}
    plain_limit = write_limits['plain']
    # A limit is what can be reached: the fastest way of writing these bytes, and its CPU.
    write_way = max(write_limits, key=write_limits.__getitem__)
    write_limit, write_cpu = write_limits[write_way], write_best[write_way][1]
    # The way that costs least CPU may be another (direct writes: one write in flight at
    # a time, so slower than write-behind on a fast disk, but no page cache to keep):
    # the conversions' CPU is printed against it too.
    thrifty_way = min(write_best, key=lambda how: write_best[how][1])
    thrifty_write_cpu = write_best[thrifty_way][1]
    mcap_limit = {c: n_images / s for c, s in mcap_s.items()}
    # The best JPEG encoder here for these frames: libjpeg-turbo from the planes.
    jpeg_limit = max(planes_rate, *encode['jpeg'].values())
    png_limit = max(encode['png'].values())
    demux = n_images / demux_s
    for row in rows:
        second, name = {'raw': (write_limit, 'write limit'), 'jpeg': (jpeg_limit, 'jpeg encode'),
                        'png': (png_limit, 'png encode')}[row.images]
        row.limit_rate = min(decode, second)
        row.limit = 'decode' if decode <= second else name
        # The yardstick of issue 43: the two stages taking turns on the same cores.
        row.shared_rate = 1 / (1 / decode + 1 / second)
        row.target = {'raw': RAW_TARGET, 'jpeg': JPEG_TARGET}.get(row.images)
        # What the mode cannot do without, in CPU s per image: decoding, then the writes
        # of its bag's bytes (the raw bag's write CPU, by size) and the chunk CRC (raw:
        # uncompressed chunks) or the JPEG encode.
        writes = write_cpu * row.size / raw.size / n_images
        thrifty_writes = thrifty_write_cpu * row.size / raw.size / n_images
        if row.images == 'raw' and row.compression in ('none', 'auto'):
            row.essential_cpu = decode_cpu / n_images + writes + crc_cpu / n_images
            row.thrifty_essential_cpu = row.essential_cpu - writes + thrifty_writes
        elif row.images == 'jpeg':
            row.essential_cpu = decode_cpu / n_images + planes_cpu + writes
            row.thrifty_essential_cpu = row.essential_cpu - writes + thrifty_writes
    h264.limit_rate, h264.limit = demux, 'demux'
    rows.append(h264)

    print(f'Conversion benchmark: {KIND} {width}x{height}, {args.duration:g} s episode '
          f'({n_images} images of {frame_bytes / 1e6:.1f} MB rgb8, {len(sources)} videos), '
          f'{cores} cores, {time.strftime("%Y-%m-%d %H:%M %Z")}')
    print(f'load average (1, 5, 15 min) before {load_before}, after {_load()}; '
          'ratios are of figures measured in this run')
    print(f'disk: {free_before} before, {free_after.split(" free")[0]} after '
          '(every bag and scratch file removed)')
    print()
    print('| limit | images/s | MB/s | how |')
    print('|---|---|---|---|')
    print(f'| decode only | {decode:.0f} | {decode * frame_bytes / 1e6:,.0f} | '
          f'{len(sources)} videos together, one thread each; MB/s of rgb8 frames; '
          f'best of {", ".join(f"{r:.0f}" for r, _ in decode_runs)} images/s; least CPU of '
          f'{", ".join(f"{c:.2f}" for _, c in decode_runs)}: {decode_cpu:.2f} CPU s |')
    way_names = {'plain': ('plain writes', ''),
                 'behind': ('writes with write-behind', ', the window before last flushed and '
                            'dropped from the page cache (as convert writes where a '
                            'filesystem refuses direct writes)'),
                 'direct': ('direct writes', ', O_DIRECT through two aligned 8 MiB buffers '
                            '(as convert writes)')}
    for how, (name, detail) in way_names.items():
        way_runs = write_runs[how]
        print(f'| {name} | {write_limits[how]:.0f} | {raw.size / min(way_runs)[0] / 1e6:,.0f} | '
              f'writes of the raw bag\'s {raw.size / 1e6:,.0f} MB in {WRITE_PIECE >> 20} MiB '
              f'pieces from one buffer, into the bags\' folder; no fsync{detail}; best of '
              f'{", ".join(f"{raw.size / s / 1e6:,.0f}" for s, _ in way_runs)} MB/s; '
              f'{min(way_runs)[1]:.2f} CPU s{" (the write limit)" if how == write_way else ""} |')
    for compression, rate in mcap_limit.items():
        runs = 1 if compression == 'zstd' else LIMIT_RUNS
        print(f'| mcap Writer, {compression} | {rate:.0f} | {rate * payload_bytes / 1e6:,.0f} | '
              f'{n_images} pre-serialised Images ({len(cameras)} channels, '
              f'{len(sources) * FRAMES_PER_VIDEO} distinct), chunks of '
              f'{CHUNK_SIZE >> 20} MiB; MB/s of records; best of {runs} |')
    print(f'| chunk CRC | | | zlib-ng crc32 (the bag writer\'s) over the {n_images} Images\' CDR, one thread: '
          f'{crc_cpu * 1e3 / n_images:.1f} CPU ms per image (best of {LIMIT_RUNS}) |')
    print(f'| jpeg encode, libjpeg-turbo from the decoder\'s planes | {planes_rate:.0f} | | '
          f'quality {ci.JPEG_QUALITY}, {cores} threads ({ENCODES["jpeg"]} images), '
          f'{planes_cpu * 1e3:.1f} CPU ms per image; what --images jpeg does with a video\'s '
          'frames |')
    for codec, rates in encode.items():
        how = 'quality 95' if codec == 'jpeg' else f'level {ci.PNG_LEVEL}'
        print(f'| {codec} encode{", Pillow from RGB" if codec == "jpeg" else ""} | '
              f'{max(rates.values()):.0f} | | {how}, {cores} threads '
              f'{rates["threads"]:.1f}/s, {cores} processes {rates["processes"]:.1f}/s '
              f'({ENCODES[codec]} images) |')
    print(f'| h264 demux | {demux:.0f} | {video_size / demux_s / 1e6:,.0f} | reading the '
          f'{len(sources)} videos\' packets, no decode |')
    print()
    print('| --images | --compression | bytes | vs raw | convert s | images/s | MB/s written | '
          'min(decode, 2nd stage) | ratio | shared-cores limit | ratio | target | '
          'CPU ms per image | essential CPU ms | CPU ratio | read back s |')
    print('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
    for row in rows:
        rate = row.rate(n_images)
        ratio = rate / row.limit_rate
        shared_ratio = None if row.shared_rate is None else rate / row.shared_rate
        target = ('' if row.target is None or shared_ratio is None else
                  f'>= {row.target:g}: {"met" if shared_ratio >= row.target else "NOT met"}')
        shared = (' | ' if row.shared_rate is None else
                  f'{row.shared_rate:.0f} | {shared_ratio:.2f}')
        cpu = f'{row.cpu_s * 1e3 / n_images:.1f}' if row.cpu_s else ''
        if row.essential_cpu is None or not row.cpu_s:
            essential = ' | '
        else:
            cpu_ratio = row.cpu_s / n_images / row.essential_cpu
            essential = (f'{row.essential_cpu * 1e3:.1f} | {cpu_ratio:.2f} '
                         f'(<= {CPU_TARGET:g}: {"met" if cpu_ratio <= CPU_TARGET else "NOT met"})')
        print(f'| {row.images} | {row.compression} | {row.size / 1e6:,.1f} MB | '
              f'{row.size / raw.size:.3f} | {row.seconds:.2f} | {rate:.1f} | '
              f'{row.size / row.seconds / 1e6:,.0f} | {row.limit} {row.limit_rate:.0f} | '
              f'{ratio:.2f} | {shared} | {target} | {cpu} | {essential} | {row.read_s:.2f} |')
    for row in rows:
        if row.runs is not None and len(row.runs) > 1:
            print(f'{row.images}/{row.compression}: best of {len(row.runs)} conversions (images/s, '
                  'CPU ms per image): ' + ', '.join(
                      f'{n_images / sec:.0f}, {cpu * 1e3 / n_images:.1f}' for sec, cpu in row.runs))
    print()
    plain_min = min(decode, plain_limit)
    for row in rows:
        if row.images == 'raw':
            print(f'raw/{row.compression} against min(decode, plain writes) = {plain_min:.0f} '
                  f'images/s (the limit were the bag written as plain writes are): '
                  f'{row.rate(n_images) / plain_min:.2f}')
    for row in rows:
        if row.images == 'raw' and row.compression in mcap_limit:
            print(f'raw/{row.compression} against the mcap Writer alone ({row.compression}): '
                  f'{row.rate(n_images) / mcap_limit[row.compression]:.2f}; the mcap Writer '
                  f'against plain writes: {mcap_limit[row.compression] / plain_limit:.2f}')
    for row in rows:
        if row.essential_cpu is not None and row.thrifty_essential_cpu is not None \
                and row.cpu_s:
            print(f'{row.images}/{row.compression}: {row.cpu_s * 1e3 / n_images:.1f} CPU ms per '
                  f'image, of which the episode\'s other topics (converted alone: '
                  f'{rest_cpu:.2f} CPU s) {rest_cpu * 1e3 / n_images:.1f}; without them '
                  f'{(row.cpu_s - rest_cpu) / n_images / row.essential_cpu:.2f}x the '
                  'essential stages; against them with the write that costs least CPU '
                  f'({way_names[thrifty_way][0]}: {row.thrifty_essential_cpu * 1e3:.1f} ms) '
                  f'{row.cpu_s / n_images / row.thrifty_essential_cpu:.2f}x')
    print(f'h264: {h264.size / video_size:.2f}x the {len(sources)} source videos '
          f'({video_size / 1e6:,.1f} MB); the episode without its cameras converts in '
          f'{rest_s:.2f} s, so the videos added {h264_s - rest_s:.2f} s against {demux_s:.2f} s '
          'reading their packets alone')
    print()
    print(f'| convert-all, {args.episodes} {KIND} episodes of '
          f'{spec["release"]["duration"]:g} s at {release_size} | episodes/s | ratio |')
    print('|---|---|---|')
    print(f'| --workers 1 | {pool1:.2f} | 1.00 |')
    print(f'| --workers 2 | {pool2:.2f} | {pool2 / pool1:.2f} of 1 worker |')
    if on_ray is not None:
        print(f'| --ray (local, 2 CPUs) | {on_ray:.2f} | {on_ray / pool2:.2f} of --workers 2 |')


if __name__ == '__main__':
    sys.exit(main())
