"""docs/previews/ is what `make previews` draws from today's code, and every kind's sheet
is legible (issue 38).

Each kind's sample is drawn here by scripts/make_previews.py's own `draw` (the sample at
seed 1, 2 s, the kind's preview.yaml): its summary (tiles, overlays drawn, labels and
where they are, topics, colour bars) must equal docs/previews/<kind>.json exactly, and
its pixels those of docs/previews/<kind>.png within a tolerance (below the title line,
which names the sample's folder): a sample's H.264 video need not encode to the same
bytes twice (see test_bags_unchanged.py), so a few pixels of a camera picture may
differ; a label, a tile or a topic strip more or less may not. After a change that
alters the pictures: `make previews`, and commit docs/previews.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'scripts'))
import make_previews  # noqa: E402

DOCS = ROOT / 'docs' / 'previews'
TITLE_H = 30  # the sheet's title line: it names the sample's folder
# Pixels of a camera picture may differ where its video decoded differently: a mean
# difference of a grey level, and a few strongly different pixels (a palette entry
# moved); a label, an overlay or a strip moved is hundreds of strongly different pixels.
MEAN_TOLERANCE = 1.0
STRONG = 64
STRONG_SHARE = 0.0005
KINDS = make_previews.kinds()


class Drawn(dict):  # type: ignore[type-arg]
    """kind -> (sheet, summary), each drawn on first use (a test of one kind draws one)."""

    def __init__(self, work: Path) -> None:
        super().__init__()
        self.work = work

    def __missing__(self, kind: str) -> tuple[Path, dict[str, Any]]:
        png = self.work / f'{kind}.png'
        summary = make_previews.draw(kind, self.work, png)
        self[kind] = (png, json.loads(json.dumps(summary)))  # tuples as JSON has them
        return self[kind]


@pytest.fixture(scope='module')
def drawn(tmp_path_factory: pytest.TempPathFactory) -> Drawn:
    return Drawn(tmp_path_factory.mktemp('previews'))


def image_difference(a: Path, b: Path) -> tuple[float, float]:
    """(mean absolute difference, share of pixels differing by more than STRONG) below
    the title line."""
    x = np.asarray(Image.open(a).convert('RGB'), dtype=np.int16)[TITLE_H:]
    y = np.asarray(Image.open(b).convert('RGB'), dtype=np.int16)[TITLE_H:]
    d = np.abs(x - y)
    return float(d.mean()), float((d.max(axis=2) > STRONG).mean())


@pytest.mark.parametrize('kind', KINDS)
def test_docs_previews_are_what_make_previews_draws(kind: str, drawn: dict) -> None:
    png, summary = drawn[kind]
    doc_png, doc_json = DOCS / f'{kind}.png', DOCS / f'{kind}.json'
    stale = f'docs/previews/{kind}.* are out of date: run `make previews`'
    assert doc_png.is_file() and doc_json.is_file(), stale
    recorded = json.loads(doc_json.read_text())
    missing = sorted(set(summary['topics']) - set(recorded['topics']))
    assert not missing, f'{stale} (the sample publishes {len(summary["topics"])} topics, ' \
                        f'the picture shows {len(recorded["topics"])}: not {missing})'
    assert summary == recorded, stale
    assert Image.open(doc_png).size == Image.open(png).size, stale
    mean, strong = image_difference(png, doc_png)
    assert mean <= MEAN_TOLERANCE and strong <= STRONG_SHARE, (stale, mean, strong)


def camera_tiles(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Tiles drawn over through a CameraInfo, or a virtual camera's (no camera in the data)."""
    return [t for t in summary['tiles'] if t['role'] in ('camera', 'overview')]


@pytest.mark.parametrize('kind', KINDS)
def test_every_camera_of_every_sample_draws_an_overlay(kind: str, drawn: dict) -> None:
    tiles = camera_tiles(drawn[kind][1])
    assert tiles, f'{kind}: no camera drawn'
    empty = [(t['moment'], t['topic']) for t in tiles if not t['overlays']]
    assert not empty, f'{kind}: cameras with nothing drawn over them: {empty}'


def overlays_of(summary: dict[str, Any], topic: str) -> list[set[str]]:
    return [set(t['overlays']) for t in summary['tiles'] if t['topic'] == topic]


def test_umi_cameras_show_the_fingers_and_the_aim_frames(drawn: dict) -> None:
    """The rig of the format document: each gripper camera on its base link sees its own
    fingers and the ArUco frame it exists to see; the head camera sees the hands."""
    summary = drawn['umi'][1]
    for side in ('left', 'right'):
        for seen in overlays_of(summary, f'/{side}/image_raw'):
            want = {f'frame {side}_left_finger', f'frame {side}_right_finger',
                    f'frame {side}_aruco_detect'}
            assert want <= seen, (side, sorted(want - seen))
    for seen in overlays_of(summary, '/center/image_raw'):
        want = {'frame quest_left_aim', 'frame quest_right_aim', 'frame left_left_finger',
                'frame right_left_finger'}
        assert want <= seen, sorted(want - seen)


@pytest.mark.parametrize('kind', KINDS)
def test_labels_are_said_once_and_never_overlap(kind: str, drawn: dict) -> None:
    for tile in drawn[kind][1]['tiles']:
        texts = [text for text, *_ in tile['labels']]
        assert len(texts) == len(set(texts)), (tile['topic'], tile['moment'], texts)
        boxes = [box for _, *box in tile['labels']]
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                overlap = a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
                assert not overlap, (kind, tile['topic'], tile['moment'], a, b)


@pytest.mark.parametrize('kind', KINDS)
def test_labels_keep_off_what_is_drawn(kind: str, drawn: dict) -> None:
    """Issue 38: objects' boxes ran through their labels. A label sits where it covers
    the fewest of the drawn lines' pixels: under 8 % of the labels' area in every tile
    (0-4.4 % on the samples; placed nearest their anchors instead, 11-14 % in three kinds)."""
    for tile in drawn[kind][1]['tiles']:
        area = sum((r - left) * (b - t) for _, left, t, r, b in tile['labels'])
        if area:
            share = tile['label_cover_px'] / area
            assert share < 0.08, (kind, tile['topic'], tile['moment'], round(share, 3))


def test_event_topics_are_not_periodic(drawn: dict) -> None:
    """Annotations and markers sent on change are events (no gap bars); rates are not."""
    topics = {k: drawn[k][1]['topics'] for k in KINDS}
    for kind in KINDS:
        if '/annotations' in topics[kind]:
            assert not topics[kind]['/annotations']['periodic'], kind
    assert not topics['objects']['/objects/markers']['periodic']
    assert topics['objects']['/objects/raw_markers']['periodic']
    assert topics['umi']['/tf']['periodic']  # three poses and two grippers, merged
    assert topics['react']['/sensor_left/force']['periodic']  # 10 Hz with jitter
    assert topics['truetrace']['/hands/left/keypoints']['periodic']  # its gaps are real


def test_depth_tiles_have_a_colour_bar_in_metres(drawn: dict) -> None:
    depth = [t for t in drawn['robotwin'][1]['tiles'] if t['topic'].endswith('depth/image_raw')]
    assert depth
    for tile in depth:
        assert tile['colour_bar'], f'{tile["topic"]}: no colour bar'
        lo, hi, unit = tile['colour_bar']
        assert unit == 'm' and 0 < lo < hi < 10, tile['colour_bar']


def test_the_overview_is_filled_by_what_it_shows(drawn: dict) -> None:
    """The objects sample has no camera: its virtual camera frames the objects (before
    issue 38 they spanned about a third of its width and height)."""
    for tile in camera_tiles(drawn['objects'][1]):
        assert tile['role'] == 'overview'
        x0, y0, x1, y1 = tile['extent']
        w, h = tile['size']
        spans = ((x1 - x0) / w, (y1 - y0) / h)
        assert max(spans) >= 0.7 and spans[0] * spans[1] >= 0.25, tile['extent']
