"""How fast the CLI answers what needs no episode: --version, every --help, and the refusal
of a path that does not exist (issue 40's target: under 0.5 s each on an idle machine).

    scripts/ros_env.sh python bench/bench_cli.py [--runs 5]

Each command runs `--runs` times as a user runs it (a new process, the installed
`react-ros` script); the table gives the median wall time and, measured in the same run
beside them, two yardsticks: a bare interpreter (`python -c pass`) and `python -c "import
rclpy"` (what any ROS 2 Python tool pays), with each command's median as a ratio of the
rclpy import. On a loaded machine the seconds grow; the ratios hold better.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

VENV_BIN = Path(sys.executable).parent
TARGET_S = 0.5
REFUSALS = [['info', '/no/such/path'], ['play', '/no/such/path'],
            ['convert', '/no/such/path', '-o', '/tmp/react_ros_bench_cli_out'],
            ['list', '/no/such/path'], ['preview', '/no/such/path']]


def commands() -> list[list[str]]:
    """--version, --help, every command's --help (from the CLI's own parser), the refusals."""
    import argparse

    from react_ros.cli import build_parser
    sub = next(a for a in build_parser([])._actions
               if isinstance(a, argparse._SubParsersAction))
    return [['--version'], ['--help'], *[[c, '--help'] for c in sub.choices], *REFUSALS]


def _median_s(argv: list[str], runs: int) -> tuple[float, int]:
    times, code = [], 0
    for _ in range(runs):
        t = time.perf_counter()
        code = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL).returncode
        times.append(time.perf_counter() - t)
    return statistics.median(times), code


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--runs', type=int, default=5)
    args = ap.parse_args()
    python = [sys.executable]
    bare, _ = _median_s([*python, '-c', 'pass'], args.runs)
    rclpy_s, _ = _median_s([*python, '-c', 'import rclpy'], args.runs)
    print(f'yardsticks (median of {args.runs}): python -c pass {bare:.3f} s, '
          f'import rclpy {rclpy_s:.3f} s')
    print(f'{"command":<44} {"median s":>9} {"x rclpy":>8} {"exit":>5}')
    worst = 0.0
    for command in commands():
        s, code = _median_s([str(VENV_BIN / 'react-ros'), *command], args.runs)
        worst = max(worst, s)
        print(f'{"react-ros " + " ".join(command):<44} {s:9.3f} {s / rclpy_s:8.2f} {code:5d}')
        expected = 2 if command in REFUSALS else 0
        if code != expected:
            print(f'  (exit {code}, expected {expected}: not what the row means to measure)')
    print(f'slowest {worst:.3f} s')
    print(f'{"PASS" if worst < TARGET_S else "FAIL"}: every command above answers in under '
          f'{TARGET_S} s (the target on an idle machine; this one: load '
          f'{os.getloadavg()[0]:.1f})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
