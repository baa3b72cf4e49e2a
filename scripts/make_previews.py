"""Regenerate docs/previews/<kind>.png: each kind's sample drawn by `react-ros preview`.

Run by `make previews`. Every registered kind with a sample generator gets one; its
folder's preview.yaml (optional) gives the sample's size and extra preview arguments.
Samples are small (2 s, those sizes); the sheets are
reduced to a 96-colour palette afterwards (octree: the overlays' saturated colours keep
entries of their own), so each PNG stays well under 300 kB.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml
from PIL import Image

from react_ros.adapters import KINDS

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / 'docs' / 'previews'


def preview_spec(folder: Path) -> tuple[str | None, list[str]]:
    """(sample resolution or None for the sample's own, extra preview arguments)."""
    path = folder / 'preview.yaml'
    spec = yaml.safe_load(path.read_text()) if path.is_file() else {}
    return spec.get('resolution'), [str(a) for a in spec.get('arguments', [])]


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    # A fixed folder, so the sheets' title lines (which name the sample) stay the same.
    tmp = Path(tempfile.gettempdir()) / 'react_ros_previews'
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        for kind in (k.name for k in KINDS.values() if k.sample):
            size, extra = preview_spec(KINDS[kind].folder)
            sample = Path(tmp) / kind
            cmd = [sys.executable, '-m', 'react_ros.cli', 'sample', kind, str(sample),
                   '--duration', '2', '--seed', '1']
            subprocess.run(cmd + (['--resolution', size] if size else []), check=True)
            png = OUT / f'{kind}.png'
            subprocess.run([sys.executable, '-m', 'react_ros.cli', 'preview', str(sample),
                            *extra, '-o', str(png), '--tile-height', '180', '--overwrite',
                            '-q'], check=True)
            sheet = Image.open(png).convert('RGB')
            sheet.quantize(96, method=Image.Quantize.FASTOCTREE).save(png, optimize=True)
            print(f'{png.relative_to(ROOT)}: {png.stat().st_size // 1000} kB')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
