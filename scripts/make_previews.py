"""Regenerate docs/previews/<kind>.png and <kind>.json: each kind's sample drawn by
`react-ros preview`, and what the sheet shows.

Run by `make previews`. Every registered kind with a sample generator gets one; its
folder's preview.yaml (optional) gives the sample's size and extra preview arguments.
Samples are small (2 s, those sizes); the sheets are reduced to a 96-colour palette
afterwards (octree: the overlays' saturated colours keep entries of their own), so each
PNG stays well under 300 kB. The JSON beside each (tiles, their overlays and labels,
topics, colour bars) is what test/test_preview_docs.py compares exactly; the pixels it
compares within a tolerance, as a video encoder's output may differ run to run.
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml
from PIL import Image

from react_ros.registry import KINDS

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / 'docs' / 'previews'
TILE_HEIGHT = 180
COLOURS = 96


def preview_spec(folder: Path) -> tuple[str | None, list[str]]:
    """(sample resolution or None for the sample's own, extra preview arguments)."""
    path = folder / 'preview.yaml'
    spec = yaml.safe_load(path.read_text()) if path.is_file() else {}
    return spec.get('resolution'), [str(a) for a in spec.get('arguments', [])]


def kinds() -> list[str]:
    return sorted(k.name for k in KINDS.values() if k.sample)


def draw(kind: str, work: Path, png: Path) -> dict[str, Any]:
    """Write `kind`'s sample under `work`, draw its sheet into `png` as the CLI does
    (`react-ros preview SAMPLE ARGS -o png --tile-height 180`), palette-reduced; the
    sheet's summary."""
    from react_ros.cli import build_parser
    from react_ros.cli.episode import open_given
    from react_ros.cli.sample import _resolution, write_sample
    from react_ros.preview.run import preview
    size, extra = preview_spec(KINDS[kind].folder)
    sample = write_sample(kind, work / kind, seed=1, duration=2.0, resolution=_resolution(size))
    args = build_parser().parse_args(['preview', str(sample), *extra, '-o', str(png),
                                      '--tile-height', str(TILE_HEIGHT), '--overwrite', '-q'])
    summary: dict[str, Any] = {}
    preview(open_given(args, warn=False), png, args.at, None, args.tile_height,
            summary=summary)
    sheet = Image.open(png).convert('RGB')
    sheet.quantize(COLOURS, method=Image.Quantize.FASTOCTREE).save(png, optimize=True)
    return summary


def write_summary(summary: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(summary, indent=1, sort_keys=True) + '\n')


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    # A fixed folder, so the sheets' title lines (which name the sample) stay the same.
    tmp = Path(tempfile.gettempdir()) / 'react_ros_previews'
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        for kind in kinds():
            png = OUT / f'{kind}.png'
            write_summary(draw(kind, tmp, png), png.with_suffix('.json'))
            print(f'{png.relative_to(ROOT)}: {png.stat().st_size // 1000} kB')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
