"""The preview command's work: check the request, read the scene, draw, write aside."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Sequence, TextIO

from react_ros.adapters.base import Episode
from react_ros.errors import ReactRosError
from react_ros.progress import Progress
from react_ros.preview.output import written_aside
from react_ros.preview.scene import load_scene
from react_ros.output import check_stop


def moments_of(episode: Episode, at_s: Sequence[float] | None) -> list[int]:
    from react_ros.preview.sheet import default_moments
    dur = episode.duration_ns / 1e9
    if not at_s:
        return default_moments(episode.start_ns, episode.end_ns)
    out = []
    for s in at_s:
        if not 0 <= s <= dur + 1e-9:
            raise ReactRosError(f'--at {s:g}: outside the episode (0 to {dur:.3f} s from its '
                                'start)')
        out.append(episode.start_ns + round(s * 1e9))
    return sorted(out)


def preview(episode: Episode, out: Path, at_s: Sequence[float] | None = None,
            camera: str | None = None, tile_height: int = 360,
            progress_out: TextIO | None = None, summary: dict[str, Any] | None = None) -> str:
    """Draw `episode` into `out` (.png: a sheet, .mp4: a clip); the line to print.

    `summary`, given, is filled with what a sheet shows (sheet.summary).
    """
    is_clip = out.suffix.lower() == '.mp4'
    if is_clip and at_s:
        raise ReactRosError('--at: picks the moments of a sheet (.png); a clip (.mp4) '
                            'shows every frame of one camera')
    if not is_clip and camera is not None:
        raise ReactRosError('--camera: chooses the camera of a clip (.mp4); a sheet shows '
                            'every camera')
    moments = [] if is_clip else moments_of(episode, at_s)
    bar = Progress(progress_out, interval=0.2, log_interval=2.0) if progress_out else None

    def say(text: str) -> None:
        check_stop()
        if bar is not None:
            bar.show(f'preview: {text}')
    try:
        scene = load_scene(episode, say)
        for warning in scene.warnings:
            print(f'warning: {warning}', file=sys.stderr)
        if is_clip:
            from react_ros.preview.clip import choose_camera, write_clip
            cam = choose_camera(scene, camera)
            with written_aside(out) as tmp:
                n = write_clip(scene, cam, tmp, lambda i, total: say(
                    f'clip {cam.topic}: frame {i}/{total or "?"}'))
            return f'wrote {out}: {n} frames of {cam.topic}'
        from react_ros.preview.sheet import render_sheet
        sheet = render_sheet(scene, moments, tile_height, say)
        if summary is not None:
            summary.update(sheet.summary)
        image = sheet.image
        with written_aside(out) as tmp:
            image.save(tmp, format='PNG', optimize=True)
        return f'wrote {out}: {image.width}x{image.height}, {len(moments)} moments, ' \
               f'{len(scene.cameras)} image topics'
    finally:
        if bar is not None:
            bar.close()




def run_command(args: object, open_dataset: Callable[[], Episode]) -> int:
    """`react-ros preview`: the output checked first, the input opened, drawn, written aside.

    `open_dataset` opens a dataset episode with the CLI's options (cli.episode.open_given); a bag
    is opened here, as its recorded messages only.
    """
    from react_ros.rosbag2.reader import is_rosbag2
    from react_ros.preview.output import preview_output
    a: Any = args
    if a.tile_height < 32:
        raise ReactRosError(f'--tile-height {a.tile_height}: must be at least 32 pixels')
    out = preview_output(a.output, [a.episode], a.overwrite)
    if a.kind is None and is_rosbag2(a.episode):
        for flag, value, default in (('--episode', a.episode_id, None),
                                     ('--image-scale', a.image_scale, 1.0)):
            if value != default:
                raise ReactRosError(f'{flag}: applies to dataset episodes, not to the bag '
                                    f'{a.episode} (its messages are drawn as recorded)')
        from react_ros.rosbag2.episode import open_bag
        episode = open_bag(a.episode)
        for warning in episode.warnings:
            print(f'warning: {warning}', file=sys.stderr)
    else:
        episode = open_dataset()
    out = preview_output(a.output, [a.episode, episode.path], a.overwrite)
    show = (a.progress or sys.stderr.isatty()) and not a.quiet
    line = preview(episode, out, a.at, a.camera, a.tile_height,
                   sys.stderr if show else None)
    if not a.quiet:
        print(line, file=sys.stderr)
    return 0


__all__ = ['moments_of', 'preview', 'run_command']
