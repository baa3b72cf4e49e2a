"""Preview clip speed: render time against episode time, measured in the same run.

A React sample (640x480 cameras at ~30 Hz, TF, forces) is written, then
`react-ros preview EPISODE -o clip.mp4 --camera /view_left/image_raw` is timed in a fresh
process (decode, overlays, H.264 encode). Ratio < 1 means faster than real time.

    scripts/ros_env.sh python bench/bench_preview.py [--seconds 10]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument('--seconds', type=float, default=10.0)
    args = ap.parse_args()
    from react_ros.adapters import open_episode
    from react_ros.kinds.react.sample import write_react_sample
    with tempfile.TemporaryDirectory() as tmp:
        root = write_react_sample(Path(tmp) / 'release', seed=1, duration_s=args.seconds,
                                  width=640, height=480)
        ep = open_episode(root)
        episode_s = ep.duration_ns / 1e9
        frames = next(s.count for s in ep.streams if s.topic == '/view_left/image_raw')
        out = Path(tmp) / 'clip.mp4'
        t = time.perf_counter()
        subprocess.run([sys.executable, '-m', 'react_ros.cli', 'preview', str(root), '-o',
                        str(out), '--camera', '/view_left/image_raw', '-q'], check=True)
        render_s = time.perf_counter() - t
        ratio = render_s / episode_s
        print('Preview clip benchmark (React sample, 640x480 /view_left/image_raw)')
        print('| measurement | figure | note |')
        print('|---|---|---|')
        print(f'| episode | {episode_s:.2f} s | {frames} frames |')
        print(f'| clip render, fresh process (start-up included) | {render_s:.2f} s | '
              f'{frames / render_s:.0f} frames/s, {out.stat().st_size / 1e6:.1f} MB |')
        print(f'| render time / episode time | {ratio:.2f} | < 1.00 is faster than real time |')
        print(f'{"PASS" if ratio < 1.0 else "FAIL"}: a 640x480 clip renders at least at '
              'real time')
        return 0 if ratio < 1.0 else 1


if __name__ == '__main__':
    sys.exit(main())
