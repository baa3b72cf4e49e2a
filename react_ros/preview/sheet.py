"""The contact sheet: every camera at a few moments with its overlays, a strip of each
topic's messages over time (gaps of periodic topics marked, event topics as events), and
the TF tree. `render_sheet` also says what the sheet shows (`Sheet.summary`: tiles, their
overlays and labels, topics): `make previews` writes it beside each picture."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from PIL import Image as PilImage, ImageDraw

from react_ros.info import tf_tree_lines
from react_ros.preview.draw import font
from react_ros.preview.imaging import VideoDecoder
from react_ros.preview.render import BACKGROUND, TITLE_H, Overview, Tile, decode, \
    decode_scaled, error_tile, message_stamp, overlay_tile, plain_tile
from react_ros.preview.scene import COMPRESSED_VIDEO, Camera, Scene, deserialize, \
    nearest_message
from react_ros.preview.state import MarkerState, state_at

MAX_WIDTH = 1800
PAD = 6
TEXT = (230, 230, 230)
DIM = (150, 150, 160)
MOMENT = (255, 220, 60)
GAP = (255, 70, 70)
TICK = (120, 200, 255)
EVENT = (255, 185, 90)
ROW_H = 13
LABEL_W = 340


def default_moments(start_ns: int, end_ns: int, n: int = 3) -> list[int]:
    """n moments spread over the episode, clear of its first and last 5 %."""
    span = end_ns - start_ns
    if n == 1:
        return [start_ns + span // 2]
    return [start_ns + int(span * (0.05 + 0.9 * i / (n - 1))) for i in range(n)]


def _video_frames(cam: Camera, moments: list[int]) -> dict[int, tuple[int, Any]]:
    """CompressedVideo decodes from its start: one pass keeps the frame nearest each moment."""
    dec = VideoDecoder()
    best: dict[int, tuple[int, Any]] = {}
    last = max(moments)
    for t, raw in cam.stream.open():
        msg = deserialize(raw, COMPRESSED_VIDEO)
        rgb = dec.decode(msg)
        if rgb is not None:
            for i, m in enumerate(moments):
                if i not in best or abs(t - m) < abs(best[i][0] - m):
                    best[i] = (t, (rgb, msg))
        if t > last + 500_000_000:
            break
    return best


def is_periodic(times: np.ndarray) -> bool:
    """A topic published at a rate (its gaps mean something), not one of events.

    Periodic: at least 8 messages, and half their intervals within 30 % of the median
    one. Annotations, a marker array sent when something changes, a status on change
    are events: their long intervals are not gaps.
    """
    if len(times) < 8:
        return False
    # plain ndarray: numpy's stubs make the diff of int64s timedelta64s
    dt: np.ndarray = np.diff(np.asarray(times, dtype=np.int64))
    dt = dt[dt > 0]
    if len(dt) < 7:
        return False
    med = float(np.median(dt))
    return bool(np.mean(np.abs(dt - med) <= 0.3 * med) >= 0.5)


@dataclass
class Sheet:
    image: PilImage.Image
    summary: dict[str, Any]


def render_sheet(scene: Scene, moments: list[int], tile_height: int = 360,
                 progress: Callable[[str], None] | None = None) -> Sheet:
    markers = MarkerState(scene)
    overlay = [c for c in scene.cameras if c.info is not None]
    overview = Overview(scene, moments) if not overlay else None
    videos = {c.topic: _video_frames(c, moments) for c in scene.cameras
              if c.stream.msg_type == COMPRESSED_VIDEO}
    rows: list[list[Tile]] = []
    for i, t in enumerate(moments):
        if progress is not None:
            progress(f'drawing moment {i + 1}/{len(moments)}')
        state = state_at(scene, markers, t)
        offset = (t - scene.start_ns) / 1e9
        tiles: list[Tile] = []
        if overview is not None:
            tiles.append(overview.tile(scene, state, offset))
        for cam in scene.cameras:
            tiles += _camera_tiles(scene, cam, t, state, offset, tile_height, videos, i)
        rows.append(tiles)
    image = compose(scene, moments, rows)
    return Sheet(image, summary(scene, moments, rows, image))


def summary(scene: Scene, moments: list[int], rows: list[list[Tile]], image: PilImage.Image
            ) -> dict[str, Any]:
    """What the sheet shows, free of paths and pixels: equal for equal data."""
    return {
        'kind': scene.kind, 'size': [image.width, image.height],
        'moments_s': [round((t - scene.start_ns) / 1e9, 3) for t in moments],
        'topics': {t: {'type': k, 'messages': len(times),
                       'periodic': is_periodic(times)}
                   for t, (k, times) in sorted(scene.timelines.items())},
        'tf_frames': sorted(scene.tf.frames),
        'tiles': [dict(moment=i, **tile.summary()) for i, tiles in enumerate(rows)
                  for tile in tiles]}


def _camera_tiles(scene: Scene, cam: Camera, t: int, state: Any, offset: float, height: int,
                  videos: dict[str, dict[int, tuple[int, Any]]], i: int) -> list[Tile]:
    tiles = []
    try:
        if cam.topic in videos:
            got = videos[cam.topic].get(i)
            if got is None:
                return [error_tile(cam.topic, 'no frame decodes here', height)]
            t_log, (rgb, msg) = got
            t_img = message_stamp(cam, t_log, msg)
        else:
            got = nearest_message(cam.stream, t)
            if got is None:
                return []
            rgb = decode(cam, got[1])
            t_img = message_stamp(cam, got[0], got[1])
    except ValueError as err:
        return [error_tile(cam.topic, str(err)[:120], height)]
    if cam.info is not None:
        tiles.append(overlay_tile(scene, cam, t_img, rgb, state, height, offset))
    else:
        tiles.append(plain_tile(cam, rgb, height, f'+{offset:.3f} s (no CameraInfo)'))
    for aux in cam.aux:
        got = nearest_message(aux.stream, t)
        if got is not None:
            try:
                aux_rgb, scale = decode_scaled(aux, got[1])
                tiles.append(plain_tile(aux, aux_rgb, tiles[0].image.height,
                                        aux.encoding.split(';')[0], 'aux', scale))
            except ValueError as err:
                tiles.append(error_tile(aux.topic, str(err)[:120], height))
    return tiles


def compose(scene: Scene, moments: list[int], rows: list[list[Tile]]) -> PilImage.Image:
    """Rows of tiles (wrapped at MAX_WIDTH), then the strip and the TF tree."""
    placed: list[tuple[int, int, Tile]] = []
    y = 30
    width = 900
    for tiles in rows:
        x = PAD
        row_h = 0
        for tile in tiles:
            w = tile.image.width
            if x > PAD and x + w > MAX_WIDTH:
                x, y = PAD, y + row_h + PAD
                row_h = 0
            placed.append((x, y, tile))
            x += w + PAD
            row_h = max(row_h, tile.image.height + TITLE_H)
            width = max(width, x)
        y += row_h + 3 * PAD
    strip_top = y + PAD
    topics = sorted(scene.timelines)
    strip_h = 28 + ROW_H * len(topics)
    tree = tf_tree_lines(scene.tf.edges(), scene.tf.static_frames())
    tree_rows = max(1, (len(tree) + 2) // 3) if len(tree) > 24 else len(tree)
    tree_h = 24 + ROW_H * max(1, tree_rows) + PAD
    height = strip_top + strip_h + tree_h + 2 * PAD
    sheet = PilImage.new('RGB', (width, height), BACKGROUND)
    d = ImageDraw.Draw(sheet)
    dur = (scene.end_ns - scene.start_ns) / 1e9
    d.text((PAD, 6), f'{scene.kind}  {scene.path}  {dur:.3f} s, {len(topics)} topics, '
           f'{len(scene.cameras)} image topics', fill=TEXT, font=font(14))
    f = font(11)
    for x, y0, tile in placed:
        sheet.paste(tile.image, (x, y0 + TITLE_H))
        title = tile.title
        while len(title) > 8 and d.textlength(title, font=f) > tile.image.width:
            title = title[:-2]
        d.text((x, y0 + 2), title, fill=TEXT, font=f)
    _strip(d, scene, moments, topics, strip_top, width)
    _tree(d, tree, strip_top + strip_h + PAD, width, tree_rows)
    return sheet


def _strip(d: ImageDraw.ImageDraw, scene: Scene, moments: list[int], topics: list[str],
           top: int, width: int) -> None:
    f = font(10)
    x0, x1 = LABEL_W, width - PAD
    span = max(scene.end_ns - scene.start_ns, 1)

    def x_of(t: np.ndarray | int) -> Any:
        return x0 + (np.asarray(t, dtype=np.float64) - scene.start_ns) / span * (x1 - x0)
    d.text((PAD, top), 'messages over time (one tick a message; red: a gap of more than 3 '
           'median intervals of a periodic topic; orange: a topic of events)', fill=TEXT,
           font=font(12))
    axis_y = top + 16
    dur = span / 1e9
    step = float(10 ** np.floor(np.log10(max(dur, 1e-3))))
    if dur / step > 10:
        step *= 2 if dur / step <= 20 else 5
    for s in np.arange(0, dur + 1e-9, step):
        x = x_of(scene.start_ns + int(s * 1e9))
        d.line([(x, axis_y + 8), (x, axis_y + 11 + ROW_H * len(topics))], fill=(60, 60, 68))
        d.text((x + 2, axis_y - 2), f'{s:g} s', fill=DIM, font=f)
    for i, topic in enumerate(topics):
        y = axis_y + 12 + i * ROW_H
        kind, times = scene.timelines[topic]
        periodic = is_periodic(times)
        d.text((PAD, y - 1), f'{topic} ({len(times)}{"" if periodic else " events"})',
               fill=DIM, font=f)
        cols = np.unique(np.clip(x_of(times).astype(np.int64), x0, x1))
        for x in cols:
            if periodic:
                d.line([(int(x), y + 1), (int(x), y + ROW_H - 3)], fill=TICK)
            else:  # an event: a mark that stands out, never a gap between two
                d.polygon([(int(x), y + 1), (int(x) + 3, y + ROW_H // 2 - 1),
                           (int(x), y + ROW_H - 3), (int(x) - 3, y + ROW_H // 2 - 1)],
                          fill=EVENT)
        if periodic:
            dt = np.diff(times)
            med = float(np.median(dt[dt > 0])) if np.any(dt > 0) else 0.0
            if med > 0:
                for j in np.flatnonzero(dt > 3 * med):
                    xa, xb = x_of(times[j]), x_of(times[j + 1])
                    d.rectangle([xa + 1, y + ROW_H - 4, max(xa + 2, xb - 1), y + ROW_H - 2],
                                fill=GAP)
    bottom = axis_y + 12 + len(topics) * ROW_H
    for k, t in enumerate(moments):
        x = x_of(t)
        d.line([(x, axis_y + 8), (x, bottom)], fill=MOMENT, width=1)
        d.text((x + 2, bottom), f'#{k + 1}', fill=MOMENT, font=f)


def _tree(d: ImageDraw.ImageDraw, lines: list[str], top: int, width: int, per_col: int
          ) -> None:
    d.text((PAD, top), 'TF tree (from /tf and /tf_static; static frames marked)', fill=TEXT,
           font=font(12))
    if not lines:
        d.text((PAD, top + 18), '(no /tf or /tf_static)', fill=DIM, font=font(11))
        return
    f = font(11)
    col_w = (width - 2 * PAD) // max(1, -(-len(lines) // per_col))
    last_at_depth: dict[int, tuple[int, int]] = {}
    for i, line in enumerate(lines):
        col, row = divmod(i, per_col)
        if row == 0:
            last_at_depth.clear()
        depth = (len(line) - len(line.lstrip(' ')) - 2) // 2
        x = PAD + col * col_w + 16 * depth
        y = top + 18 + row * ROW_H
        name = line.strip()
        static = name.endswith(' (static)')
        if depth > 0 and depth - 1 in last_at_depth:  # an elbow from the parent
            px, py = last_at_depth[depth - 1]
            d.line([(px + 4, py + 10), (px + 4, y + 6), (x - 2, y + 6)], fill=(110, 110, 120))
        last_at_depth[depth] = (x, y)
        d.text((x, y), name, fill=(170, 170, 255) if static else TEXT, font=f)


__all__ = ['Sheet', 'compose', 'default_moments', 'is_periodic', 'render_sheet', 'summary']
