"""Preview clip speed: render time against episode time, measured in the same run.

For each kind whose bench.yaml has a `preview_clip:` section (today React: 640x480
cameras at ~30 Hz, TF, forces), its sample is written at that size, then
`react-ros preview EPISODE -o clip.mp4 --camera <its camera>` is timed in a fresh
process (decode, overlays, H.264 encode). Ratio < 1 means faster than real time.

    scripts/ros_env.sh python bench/bench_preview.py [--seconds 10] [--kind K]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from support import bench_settings


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument('--seconds', type=float, default=10.0)
    ap.add_argument('--kind', help='only this kind (default: every kind with a preview_clip: '
                    'section)')
    args = ap.parse_args()
    settings = bench_settings('preview_clip')
    if args.kind is not None and args.kind not in settings:
        print(f'error: --kind {args.kind}: no react_ros/kinds/{args.kind}/bench.yaml with a '
              f'preview_clip: section (have: {", ".join(settings)})', file=sys.stderr)
        return 2
    ok = True
    for kind, spec in settings.items():
        if args.kind in (None, kind):
            ok &= bench_kind(kind, spec, args.seconds)
    return 0 if ok else 1


def bench_kind(kind: str, spec: dict, seconds: float) -> bool:
    from react_ros.registry import KINDS, open_episode
    camera = spec['camera']
    size = f'{spec["sample"]["width"]}x{spec["sample"]["height"]}'
    writer = KINDS[kind].sample_writer()
    assert writer is not None
    with tempfile.TemporaryDirectory() as tmp:
        root = writer(Path(tmp) / 'release', seed=1, duration_s=seconds, **spec['sample'])
        ep = open_episode(root, kind)
        episode_s = ep.duration_ns / 1e9
        frames = next(s.count for s in ep.streams if s.topic == camera)
        out = Path(tmp) / 'clip.mp4'
        t = time.perf_counter()
        subprocess.run([sys.executable, '-m', 'react_ros.cli', 'preview', str(root), '-o',
                        str(out), '--camera', camera, '-q'], check=True)
        render_s = time.perf_counter() - t
        ratio = render_s / episode_s
        print(f'Preview clip benchmark ({kind} sample, {size} {camera})')
        print('| measurement | figure | note |')
        print('|---|---|---|')
        print(f'| episode | {episode_s:.2f} s | {frames} frames |')
        print(f'| clip render, fresh process (start-up included) | {render_s:.2f} s | '
              f'{frames / render_s:.0f} frames/s, {out.stat().st_size / 1e6:.1f} MB |')
        print(f'| render time / episode time | {ratio:.2f} | < 1.00 is faster than real time |')
        print(f'{"PASS" if ratio < 1.0 else "FAIL"}: a {size} clip renders at least at '
              'real time')
        return ratio < 1.0


if __name__ == '__main__':
    sys.exit(main())
