"""Labels placed so they stay readable: one per text, none over another, off the drawing.

A picture with many frames in view (a robot arm seen from its head camera) would stack
a dozen names on one spot. Labels are placed in priority order; each tries a few spots
around its anchor and takes the one covering the fewest drawn overlay pixels, never one
that overlaps a label already placed; a label displaced from its anchor gets a thin
leader line; a label with no free spot, or beyond what the picture holds legibly (labels
cover at most AREA_SHARE of it), is left out and counted (the tile says how many).
The occupancy is the overlay layer's alpha, not the camera's pixels, so the placement
depends only on the data, never on how a video decoded.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from PIL import ImageDraw

STROKE = 2
AREA_SHARE = 0.12
NEAR = 4  # pixels between the anchor and a label set beside it
# Offsets (in units of the label's own width and height, and pixels) tried in order: beside
# the anchor first, then a little further away in eight directions.
_BESIDE = ((0, 0), (0, -1), (-1, 0), (-1, -1))
_RINGS = (12, 24)
_DIRS = ((1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1))


@dataclass
class Label:
    anchor: tuple[float, float]
    text: str
    colour: Any
    priority: int  # lower first
    order: int  # insertion order breaks ties
    beside: bool = True  # False: the text sits on its anchor (a TEXT marker)


@dataclass
class Placed:
    drawn: list[tuple[str, int, int, int, int]] = field(default_factory=list)  # text, box
    hidden: list[str] = field(default_factory=list)
    covered: int = 0  # overlay pixels (lines, boxes, points) under the labels drawn


def _overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _candidates(u: float, v: float, w: int, h: int, beside: bool
                ) -> list[tuple[float, float, bool]]:
    """(left, top, needs a leader line) spots for a w x h label anchored at (u, v)."""
    if not beside:
        return [(u - w / 2, v - h / 2, False)]
    out = [(u + NEAR + fx * (w + 2 * NEAR), v + fy * h, False) for fx, fy in _BESIDE]
    for r in _RINGS:
        for dx, dy in _DIRS:
            cx, cy = u + dx * (r + w / 2), v + dy * (r + h / 2)
            out.append((cx - w / 2, cy - h / 2, True))
    return out


def place(draw: ImageDraw.ImageDraw, labels: list[Label], occupied: np.ndarray,
          font: Any) -> Placed:
    """Draw `labels` into `draw` (see the module's docstring); `occupied` is (H, W) bool."""
    result = Placed()
    height, width = occupied.shape
    taken: list[tuple[int, int, int, int]] = []
    seen: set[str] = set()
    room = AREA_SHARE * width * height
    chosen: list[tuple[Label, tuple[int, int, int, int], tuple[int, int, int, int], bool]] = []
    integral = np.pad(occupied.astype(np.int32).cumsum(0).cumsum(1), ((1, 0), (1, 0)))

    def covered(r: tuple[int, int, int, int]) -> int:
        x0, y0, x1, y1 = r
        return int(integral[y1, x1] - integral[y0, x1] - integral[y1, x0] + integral[y0, x0])
    for lab in sorted(labels, key=lambda label: (label.priority, label.order)):
        if lab.text in seen:  # one label a name: a pose and its TF frame say it once
            continue
        seen.add(lab.text)
        # Pillow types the box as floats; from the origin it is whole pixels
        box = cast('tuple[int, int, int, int]',
                   draw.textbbox((0, 0), lab.text, font=font, stroke_width=STROKE))
        w, h = box[2] - box[0], box[3] - box[1]
        best: tuple[float, tuple[int, int, int, int], bool] | None = None
        for rank, (x, y, leader) in enumerate(_candidates(*lab.anchor, w, h, lab.beside)):
            r = (int(round(x)), int(round(y)), int(round(x)) + w, int(round(y)) + h)
            if r[0] < 0 or r[1] < 0 or r[2] > width or r[3] > height:
                continue
            if any(_overlap(r, t) for t in taken):
                continue
            cost = covered(r) + 3 * rank  # nearer spots win a tie
            if best is None or cost < best[0]:
                best = (cost, r, leader)
        if best is None or room < w * h:
            result.hidden.append(lab.text)
            continue
        _, r, leader = best
        room -= w * h
        result.covered += covered(r)
        taken.append(r)
        chosen.append((lab, r, box, leader))
        result.drawn.append((lab.text, *r))
    for lab, r, _, leader in chosen:  # leader lines first: no line crosses a label's text
        if leader:
            u, v = lab.anchor
            cx = min(max(u, r[0]), r[2])
            cy = min(max(v, r[1]), r[3])
            draw.line([(u, v), (cx, cy)], fill=(0, 0, 0), width=3)
            draw.line([(u, v), (cx, cy)], fill=lab.colour, width=1)
    for lab, r, box, _ in chosen:
        draw.text((r[0] - box[0], r[1] - box[1]), lab.text, fill=lab.colour, font=font,
                  stroke_width=STROKE, stroke_fill=(0, 0, 0))
    return result


__all__ = ['Label', 'Placed', 'place']
