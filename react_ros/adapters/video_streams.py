"""A camera recorded as a video: its Image stream and the sibling CameraInfo stream.

Frame n of the video is sample n of `stamps`. Every dataset joins frames to
times its own way (UMI's frame pointers, React's table rows, TrueTrace's cam0
clock shared by cam1); once it has the stamps, the messages are built here.
"""
from __future__ import annotations

import heapq
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import numpy as np
from rclpy.serialization import serialize_message

from react_ros.errors import ReactRosError
from react_ros.formats import video
from react_ros.ros.camera_info import camera_info
from react_ros.ros.image import rgb_image
from react_ros.streams import Stream, VideoSource

# The largest frame side decoders and RViz handle (libswscale and most GPUs: 16384).
MAX_SIDE = 16384

# A CameraInfo-layout dict (width, height, k, d, distortion_model, r, p: see
# ros/camera_info.py) for the whole video, or one per frame index (K may change
# from frame to frame).
Calibration = Mapping[str, Any] | Callable[[int], Mapping[str, Any]]


def in_stamp_order(items: Iterable[Any], stamps: np.ndarray) -> Iterator[tuple[int, Any]]:
    """Yield (stamp, item) sorted by stamp, where items come in recorded order.

    Stamps are known up front, so an item is released as soon as no later item
    can be stamped before it: memory holds only the out-of-order stretches
    (none for well-behaved recordings).
    """
    n = len(stamps)
    suffix_min = np.minimum.accumulate(stamps[::-1])[::-1] if n else stamps
    heap: list[tuple[int, int, Any]] = []
    for i, item in enumerate(items):
        if i >= n:
            break
        heapq.heappush(heap, (int(stamps[i]), i, item))
        nxt = int(suffix_min[i + 1]) if i + 1 < n else None
        while heap and (nxt is None or heap[0][0] <= nxt):
            t, _, it = heapq.heappop(heap)
            yield t, it
    while heap:
        t, _, it = heapq.heappop(heap)
        yield t, it


def scaled_frame_size(width: int, height: int, scale: float, what: str) -> tuple[int, int]:
    """(width, height) of a camera's `width`x`height` frames under --image-scale `scale`,
    video or stills alike; refuses a scale that leaves less than one pixel (scaled_size would
    round it up to 2x2 of nothing) or makes a side longer than MAX_SIDE, naming `what`."""
    if min(width, height) * scale < 1:
        raise ReactRosError(f'--image-scale {scale:g} would leave less than one pixel of the '
                            f'{width}x{height} frames of {what} (the least scale for them is '
                            f'{1 / min(width, height):.3g})')
    size = video.scaled_size(width, height, scale)
    if max(size) > MAX_SIDE:
        raise ReactRosError(f'--image-scale {scale:g} would make the {width}x{height} frames '
                            f'of {what} {size[0]}x{size[1]}; at most {MAX_SIDE} pixels a side')
    return size


def video_camera_streams(source: video.VideoInfo | Path | str, stamps: np.ndarray, prefix: str,
                         frame_id: str, calibration: Calibration | None = None, *,
                         image_scale: float = 1.0, rows: np.ndarray | None = None,
                         offset: int = 0) -> list[Stream]:
    """`[prefix/image_raw, prefix/camera_info]`, or only the Image without a calibration.

    Sample r (each of `rows`, default all of `stamps`) is published at
    stamps[r] with the pixels of video frame r + offset (React's tactile
    latency pairs row i with frame i + N). Both streams carry the same stamps
    and frame_id, in stamp order. `image_scale` resizes the pixels and K/P
    together. A second camera on the first one's clock (stereo) passes the
    same stamps. The caller has checked that the video has the frames.
    """
    info = source if isinstance(source, video.VideoInfo) else video.probe(source)
    stamps = np.asarray(stamps, dtype=np.int64)
    rows = np.arange(len(stamps)) if rows is None else np.sort(np.asarray(rows, dtype=np.int64))
    frames = rows + offset
    if len(rows) and (frames[0] < 0 or frames[-1] >= info.frame_count or rows[-1] >= len(stamps)):
        raise ValueError(f'{info.path}: rows {rows[0]}..{rows[-1]} (+{offset}) outside '
                         f'{info.frame_count} frames / {len(stamps)} stamps')
    t_rows = stamps[rows]
    size = scaled_frame_size(info.width, info.height, image_scale, info.path.name)

    def images() -> Iterator[tuple[int, Any]]:
        wanted = set(frames.tolist())
        # Every frame is decoded, also past the last one wanted, so that a video
        # cut short fails here as it does when the whole of it is played.
        decoded = (f for n, f in enumerate(video.decode_rgb(
            info.path, image_scale, expected_frames=info.frame_count)) if n in wanted)
        for t, frame in in_stamp_order(decoded, t_rows):
            yield t, rgb_image(frame, t, frame_id)

    table: list[video.FrameTable] = []  # the video's frame PTS and keyframes, read at a seek

    def images_from(from_ns: int) -> Iterator[tuple[int, Any]]:
        """The images stamped from_ns or later, decoded from the keyframe before the first."""
        keep = t_rows >= from_ns
        if keep.all():
            yield from images()
            return
        if not keep.any():
            return
        # Frames come in index order, stamps in any: start at the lowest frame
        # index among those stamped from_ns or later.
        sel_frames, sel_t = frames[keep], t_rows[keep]
        wanted = set(sel_frames.tolist())
        if not table:
            table.append(video.frame_table(info.path))
        decoded = (f for n, f in video.decode_rgb_from(
            info.path, int(sel_frames[0]), image_scale, expected_frames=info.frame_count,
            table=table[0]) if n in wanted)
        for t, frame in in_stamp_order(decoded, sel_t):
            yield t, rgb_image(frame, t, frame_id)
    order = np.argsort(t_rows, kind='stable')  # the order in_stamp_order releases frames in
    video_source = VideoSource(info.path, frames[order], t_rows[order], frame_id, image_scale)
    streams = [Stream(f'{prefix}/image_raw', 'sensor_msgs/msg/Image', images, count=len(rows),
                      heavy=True, approx_bytes=size[0] * size[1] * 3 + 200,
                      video=video_source, open_from=images_from)]
    if calibration is None:
        return streams
    calib: Callable[[int], Mapping[str, Any]] = \
        calibration if callable(calibration) else (lambda n: calibration)

    def camera_infos() -> Iterator[tuple[int, Any]]:
        for i in order:
            t = int(t_rows[i])
            yield t, camera_info(calib(int(frames[i])), t, frame_id, size=size)
    first = camera_info(calib(int(frames[0])), 0, frame_id, size=size) if len(rows) else None
    streams.append(Stream(f'{prefix}/camera_info', 'sensor_msgs/msg/CameraInfo', camera_infos,
                          count=len(rows),
                          approx_bytes=len(serialize_message(first)) if first else 400))
    return streams


__all__ = ['Calibration', 'in_stamp_order', 'scaled_frame_size', 'video_camera_streams']
