"""`react-ros sample lerobot DIR`: a small LeRobot dataset, v3.0 (default) or v2.1.

Faithful to what LeRobot writes (docs/lerobot.md): v3.0 concatenates every episode of a
camera into one video file (episode 1 starts mid-file, at its from_timestamp) while its
data files roll over on their own (`episodes_per_data_file`), so data and video file
boundaries differ; v2.1 writes a parquet and a video per episode. 15 fps, not 30; AV1
(libsvtav1, LeRobot's default) with a keyframe every 2 frames, or H.264 (`codec='h264'`).
observation.state names its joints in v3.0 and has no names in v2.1. Each video frame
carries its index in its file as 8 black or white blocks along the top (the watermark
test reads it back); each embedded wrist image its row in its episode.
"""
from __future__ import annotations

import io
import json
import math
import os
import threading
from pathlib import Path
from typing import Any, Literal

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from react_ros.errors import SinkError
from react_ros.formats.x264 import x264_options
from react_ros.samples.writing import write_sample

FPS = 15
JOINTS = ('shoulder_pan.pos', 'shoulder_lift.pos', 'elbow_flex.pos', 'wrist_flex.pos',
          'wrist_roll.pos', 'gripper.pos')
TASKS = ('Pick up the red cube and place it in the bin.', 'Push the cube to the left.')
TOP, WRIST = 'observation.images.top', 'observation.images.wrist'
# Literal names: PyAV's stubs type add_stream of a known video codec as a VideoStream
CODECS: dict[str, Literal['libsvtav1', 'libx264']] = {'av1': 'libsvtav1', 'h264': 'libx264'}
BITS = 8


def watermark_band(height: int) -> int:
    return max(8, height // 6)


def draw_watermark(frame: np.ndarray, value: int) -> None:
    """`value` (< 256) as BITS blocks across the top band, bit 0 leftmost."""
    band, width = watermark_band(frame.shape[0]), frame.shape[1]
    for b in range(BITS):
        x0, x1 = b * width // BITS, (b + 1) * width // BITS
        frame[:band, x0:x1] = 235 if value >> b & 1 else 16


def read_watermark(frame: np.ndarray) -> int:
    band, width = watermark_band(frame.shape[0]), frame.shape[1]
    value = 0
    for b in range(BITS):
        x0, x1 = b * width // BITS, (b + 1) * width // BITS
        block = frame[1:band - 1, x0 + 1:x1 - 1]
        value |= int(block.mean() > 128) << b
    return value


def write_lerobot_sample(out_dir: Path, *, seed: int = 0, duration_s: float = 2.0,
                         width: int = 64, height: int = 48, episodes: int | None = None,
                         version: str = 'v3.0', codec: str = 'av1',
                         episodes_per_data_file: int = 2) -> Path:
    """A dataset root of `episodes` episodes (3 when None); episode k lasts duration_s plus
    2k frames (its seed is seed + k)."""
    if version not in ('v2.1', 'v3.0') or codec not in CODECS:
        raise SinkError(f'{out_dir}: version {version!r} / codec {codec!r} not one the sample '
                        'writes (v2.1 or v3.0; av1 or h264)')
    n = 3 if episodes is None else episodes
    if n < 1:
        raise SinkError(f'{out_dir}: a dataset holds at least one episode, got {n}')

    def write(tmp: Path) -> None:
        eps = [_episode(seed + k, k, round(duration_s * FPS) + 2 * k, width, height, version)
               for k in range(n)]
        (_write_v30 if version == 'v3.0' else _write_v21)(tmp, eps, width, height, codec,
                                                          max(1, episodes_per_data_file))
    # SVT-AV1 logs its settings on stderr unless told to keep to errors
    os.environ.setdefault('SVT_LOG', '1')
    return write_sample(out_dir, duration_s, (width, height), 0.5, (64, 48), write)


def _episode(seed: int, k: int, length: int, width: int, height: int,
             version: str) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    t = np.arange(length) / FPS
    phase = rng.uniform(0, 2 * math.pi, len(JOINTS))
    state = (40 * np.sin(0.8 * t[:, None] + phase)).astype(np.float32)  # degrees, as SO-100
    action = np.roll(state, -1, axis=0)
    action[-1] = state[-1]
    env = np.stack([0.1 * np.cos(t), 0.1 * np.sin(t), np.full(length, 0.02)], axis=1)
    return {'k': k, 'length': length, 'timestamp': (np.arange(length) / FPS).astype(np.float32),
            'state': state, 'action': action.astype(np.float32),
            'env': env.astype(np.float32), 'done': np.arange(length) == length - 1,
            'task': k % len(TASKS), 'tint': rng.integers(40, 200, 3), 'version': version}


def _frame(width: int, height: int, tint: np.ndarray, i: int, mark: int) -> np.ndarray:
    y, x = np.mgrid[0:height, 0:width]
    img = np.empty((height, width, 3), dtype=np.uint8)
    for c in range(3):
        img[..., c] = (tint[c] + 30 * np.sin((x + 2 * i) / 9.0 + c)
                       + 20 * np.cos(y / 7.0)).clip(0, 255)
    draw_watermark(img, mark % 256)
    return img


def _png(img: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(img).save(out, format='PNG')
    return out.getvalue()


def _encode(path: Path, frames: list[np.ndarray], codec: str) -> None:
    """`frames` into a video at `path`, in a thread of its own.

    SVT-AV1 opened by root turns the thread that opens it into a SCHED_FIFO priority-99
    thread and leaves it so (its switch to "real time"). Done in the caller's thread, every
    process the caller starts afterwards inherits that policy: two busy children then own
    both cores and starve everything else, the caller included (a test suite stalled for
    its whole time so). A thread that ends with the encoding takes the policy with it.
    """
    failed: list[BaseException] = []

    def run() -> None:
        try:
            _encode_here(path, frames, codec)
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            failed.append(e)

    thread = threading.Thread(target=run, name='sample-video-encoder')
    thread.start()
    thread.join()
    if failed:
        raise failed[0]


def _ordinary_scheduling() -> None:
    """This thread back to the default policy, if an encoder changed it."""
    if os.sched_getscheduler(0) != os.SCHED_OTHER:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def _encode_here(path: Path, frames: list[np.ndarray], codec: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), 'w') as c:
        s = c.add_stream(CODECS[codec], rate=FPS)
        s.width, s.height, s.pix_fmt = frames[0].shape[1], frames[0].shape[0], 'yuv420p'
        s.codec_context.gop_size = 2  # LeRobot's encode_video_frames default (g=2)
        s.options = {'crf': '30'} if codec == 'av1' else {**x264_options({'crf': '18', 'bf': '0'})}
        for n, img in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(img, format='rgb24')
            frame.pts = n
            for packet in s.encode(frame):
                c.mux(packet)
            _ordinary_scheduling()  # the encoder opens on the first frame
        for packet in s.encode():
            c.mux(packet)


def _features(width: int, height: int, codec: str, version: str) -> dict[str, Any]:
    names = list(JOINTS) if version == 'v3.0' else None
    video_info = {'video.height': height, 'video.width': width, 'video.codec': codec,
                  'video.pix_fmt': 'yuv420p', 'video.is_depth_map': False, 'video.fps': FPS,
                  'video.channels': 3, 'has_audio': False}
    scalar = {'shape': [1], 'names': None}
    return {
        TOP: {'dtype': 'video', 'shape': [height, width, 3],
              'names': ['height', 'width', 'channels'], 'info': video_info},
        WRIST: {'dtype': 'image', 'shape': [height // 2, width // 2, 3],
                'names': ['height', 'width', 'channels']},
        'observation.state': {'dtype': 'float32', 'shape': [len(JOINTS)], 'names': names},
        'action': {'dtype': 'float32', 'shape': [len(JOINTS)], 'names': list(JOINTS)},
        'observation.environment_state': {'dtype': 'float32', 'shape': [3], 'names': None},
        'next.done': {'dtype': 'bool', **scalar},
        'timestamp': {'dtype': 'float32', **scalar},
        'frame_index': {'dtype': 'int64', **scalar},
        'episode_index': {'dtype': 'int64', **scalar},
        'index': {'dtype': 'int64', **scalar},
        'task_index': {'dtype': 'int64', **scalar},
    }


def _table(eps: list[dict[str, Any]], first_index: int, width: int, height: int) -> pa.Table:
    cols: dict[str, list[Any]] = {k: [] for k in (
        WRIST, 'observation.state', 'action', 'observation.environment_state', 'next.done',
        'timestamp', 'frame_index', 'episode_index', 'index', 'task_index')}
    index = first_index
    for ep in eps:
        for i in range(ep['length']):
            small = _frame(width // 2, height // 2, ep['tint'][::-1], i, i)
            cols[WRIST].append({'bytes': _png(small), 'path': None})
            cols['observation.state'].append(ep['state'][i].tolist())
            cols['action'].append(ep['action'][i].tolist())
            cols['observation.environment_state'].append(ep['env'][i].tolist())
            cols['next.done'].append(bool(ep['done'][i]))
            cols['timestamp'].append(float(ep['timestamp'][i]))
            cols['frame_index'].append(i)
            cols['episode_index'].append(ep['k'])
            cols['index'].append(index)
            cols['task_index'].append(ep['task'])
            index += 1
    f32 = pa.list_(pa.float32())
    types = {WRIST: pa.struct([('bytes', pa.binary()), ('path', pa.string())]),
             'observation.state': f32, 'action': f32, 'observation.environment_state': f32,
             'next.done': pa.bool_(), 'timestamp': pa.float32(), 'frame_index': pa.int64(),
             'episode_index': pa.int64(), 'index': pa.int64(), 'task_index': pa.int64()}
    return pa.table({k: pa.array(v, type=types[k]) for k, v in cols.items()})


def _info(eps: list[dict[str, Any]], width: int, height: int, codec: str,
          version: str) -> dict[str, Any]:
    doc: dict[str, Any] = {
        'codebase_version': version, 'robot_type': 'so100_follower',
        'total_episodes': len(eps), 'total_frames': sum(e['length'] for e in eps),
        'total_tasks': len(TASKS), 'chunks_size': 1000, 'fps': FPS,
        'splits': {'train': f'0:{len(eps)}'}}
    if version == 'v3.0':
        doc.update(data_files_size_in_mb=100, video_files_size_in_mb=200,
                   data_path='data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet',
                   video_path='videos/{video_key}/chunk-{chunk_index:03d}/'
                              'file-{file_index:03d}.mp4')
    else:
        doc.update(total_videos=len(eps), total_chunks=1,
                   data_path='data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet',
                   video_path='videos/chunk-{episode_chunk:03d}/{video_key}/'
                              'episode_{episode_index:06d}.mp4')
    doc['features'] = _features(width, height, codec, version)
    return doc


def _json(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=4) + '\n')


def _write_v30(root: Path, eps: list[dict[str, Any]], width: int, height: int, codec: str,
               per_file: int) -> None:
    frames, offsets, j = [], [], 0
    for ep in eps:  # one video file for every episode: frame j of the file carries j
        offsets.append(j)
        frames += [_frame(width, height, ep['tint'], i, j + i) for i in range(ep['length'])]
        j += ep['length']
    _encode(root / 'videos' / TOP / 'chunk-000' / 'file-000.mp4', frames, codec)
    rows: dict[str, list[Any]] = {k: [] for k in (
        'episode_index', 'tasks', 'length', 'data/chunk_index', 'data/file_index',
        'dataset_from_index', 'dataset_to_index', f'videos/{TOP}/chunk_index',
        f'videos/{TOP}/file_index', f'videos/{TOP}/from_timestamp', f'videos/{TOP}/to_timestamp',
        'meta/episodes/chunk_index', 'meta/episodes/file_index')}
    index = 0
    for f, a in enumerate(range(0, len(eps), per_file)):
        group = eps[a:a + per_file]
        path = root / 'data' / 'chunk-000' / f'file-{f:03d}.parquet'
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(_table(group, index, width, height), path)
        for ep in group:
            k = ep['k']
            rows['episode_index'].append(k)
            rows['tasks'].append([TASKS[ep['task']]])
            rows['length'].append(ep['length'])
            rows['data/chunk_index'].append(0)
            rows['data/file_index'].append(f)
            rows['dataset_from_index'].append(index)
            rows['dataset_to_index'].append(index + ep['length'])
            rows[f'videos/{TOP}/chunk_index'].append(0)
            rows[f'videos/{TOP}/file_index'].append(0)
            rows[f'videos/{TOP}/from_timestamp'].append(offsets[k] / FPS)
            rows[f'videos/{TOP}/to_timestamp'].append((offsets[k] + ep['length']) / FPS)
            rows['meta/episodes/chunk_index'].append(0)
            rows['meta/episodes/file_index'].append(0)
            index += ep['length']
    meta = root / 'meta' / 'episodes' / 'chunk-000' / 'file-000.parquet'
    meta.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(rows), meta)
    tasks = pa.table({'task_index': pa.array(range(len(TASKS)), type=pa.int64()),
                      'task': pa.array(TASKS)})
    pq.write_table(tasks.replace_schema_metadata({'pandas': json.dumps(TASKS_PANDAS)}),
                   root / 'meta' / 'tasks.parquet')
    _json(root / 'meta' / 'info.json', _info(eps, width, height, codec, 'v3.0'))


# LeRobot writes meta/tasks.parquet from a pandas DataFrame indexed by the task text;
# pandas reads the index back only when this metadata describes every column (an empty
# "columns" list made pandas fail with KeyError 'task', so LeRobot could not load it).
TASKS_PANDAS = {
    'index_columns': ['task'],
    'column_indexes': [{'name': None, 'field_name': None, 'pandas_type': 'unicode',
                        'numpy_type': 'object', 'metadata': {'encoding': 'UTF-8'}}],
    'columns': [{'name': 'task_index', 'field_name': 'task_index', 'pandas_type': 'int64',
                 'numpy_type': 'int64', 'metadata': None},
                {'name': 'task', 'field_name': 'task', 'pandas_type': 'unicode',
                 'numpy_type': 'object', 'metadata': None}],
    'creator': {'library': 'pyarrow', 'version': pa.__version__},
    'pandas_version': '2.2.3',
}


def _write_v21(root: Path, eps: list[dict[str, Any]], width: int, height: int, codec: str,
               per_file: int) -> None:
    index = 0
    for ep in eps:
        k = ep['k']
        _encode(root / 'videos' / 'chunk-000' / TOP / f'episode_{k:06d}.mp4',
                [_frame(width, height, ep['tint'], i, i) for i in range(ep['length'])], codec)
        path = root / 'data' / 'chunk-000' / f'episode_{k:06d}.parquet'
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(_table([ep], index, width, height), path)
        index += ep['length']
    meta = root / 'meta'
    meta.mkdir(parents=True, exist_ok=True)
    (meta / 'episodes.jsonl').write_text(''.join(json.dumps(
        {'episode_index': e['k'], 'tasks': [TASKS[e['task']]], 'length': e['length']}) + '\n'
        for e in eps))
    (meta / 'tasks.jsonl').write_text(''.join(
        json.dumps({'task_index': i, 'task': t}) + '\n' for i, t in enumerate(TASKS)))
    _json(meta / 'info.json', _info(eps, width, height, codec, 'v2.1'))
