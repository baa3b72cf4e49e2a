"""Negative controls for the format document's conventions (PITFALLS.md).

Each test checks what react_ros publishes against evidence in the files that does not
come from the adapter, and also computes the wrong reading and shows the same check
would reject it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from react_ros import cli
from react_ros.registry import open_episode
from react_ros.kinds.objects.sample import SESSION, write_objects_sample

BASE_NS = 1_000_000_000  # time_base_s of config.yaml
MOTIONS = Path(SESSION) / 'motions'


@pytest.fixture(scope='module')
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_objects_sample(tmp_path_factory.mktemp('objects') / 'release')


@pytest.fixture(scope='module')
def bag(release: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list]:
    from rosbags.highlevel import AnyReader
    out = tmp_path_factory.mktemp('bag') / 'bag'
    assert cli.main(['convert', str(release), '-o', str(out), '-q']) == 0
    topics: dict[str, list] = {}
    with AnyReader([out]) as reader:
        for conn, t, raw in reader.messages():
            topics.setdefault(conn.topic, []).append((t, reader.deserialize(raw, conn.msgtype)))
    return topics


def _matrix(tr: Any) -> np.ndarray:
    q, p = tr.rotation, tr.translation
    m = np.eye(4)
    m[:3, :3] = Rotation.from_quat([q.x, q.y, q.z, q.w]).as_matrix()
    m[:3, 3] = [p.x, p.y, p.z]
    return m


def _landing_mm(t_world_rb: np.ndarray, template: np.ndarray, pts: np.ndarray,
                agree: np.ndarray) -> float:
    guess = t_world_rb[:3, :3] @ template.T + t_world_rb[:3, 3:4]
    use = agree & np.all(np.isfinite(pts), axis=-1) & np.all(np.isfinite(guess.T), axis=-1)
    return float(np.median(np.linalg.norm(guess.T[use] - pts[use], axis=-1))) * 1000


def test_published_frames_put_the_raw_markers_where_they_were_seen(
        release: Path, bag: dict[str, list]) -> None:
    """T_world_obj is pose_frame -> world and T_world_obj = T_world_rb @ T_rb_obj: the
    published /tf (and /tf_static to the rigid body) carry template_m onto markers_m.
    The wrong readings (the pose inverted; T_rb_obj the other way round) miss by far."""
    with np.load(release / MOTIONS / 'object_markers.npz') as z:
        markers, template, consistent = z['markers_m'], z['template_m'], z['consistent']
    with np.load(release / MOTIONS / 'objects.npz') as z:
        names, t = [str(n) for n in z['names']], z['t']
    t_ns = (BASE_NS + np.round(t * 1e9)).astype(np.int64)
    [(_, static)] = bag['/tf_static']
    obj_to_rb = {tr.child_frame_id[:-len('_rigid_body')]: _matrix(tr.transform)
                 for tr in static.transforms}
    right, inverted, other_way = [], [], []
    for log_t, msg in bag['/tf'][::37]:
        k = int(np.searchsorted(t_ns, log_t))
        for tr in msg.transforms:
            i = names.index(tr.child_frame_id)
            world_obj = _matrix(tr.transform)
            rb = obj_to_rb.get(tr.child_frame_id, np.eye(4))
            args = (template[i], markers[i, k], consistent[i, k])
            if not (consistent[i, k] & np.all(np.isfinite(markers[i, k]), axis=-1)).any():
                continue
            right.append(_landing_mm(world_obj @ rb, *args))
            inverted.append(_landing_mm(np.linalg.inv(world_obj) @ rb, *args))
            if tr.child_frame_id in obj_to_rb:
                other_way.append(_landing_mm(world_obj @ np.linalg.inv(rb), *args))
    assert len(right) > 20 and other_way
    assert max(right) < 3.0  # 0.5 mm noise on each marker
    assert min(inverted) > 50.0 and min(other_way) > 50.0


def test_info_prints_each_check_with_what_the_wrong_reading_would_read(release: Path) -> None:
    report = '\n'.join(open_episode(release).report)
    for name in ('BigBox0', 'LittleBox0', 'LittleBox1', 'Table0'):
        [line] = [ln for ln in report.splitlines() if f'marker check: {name}:' in ln]
        right = float(line.split(' lands ')[1].split(' mm')[0])
        wrong = [float(w.split(' mm')[0]) for w in line.split(' would read ')[1:]]
        assert right < 3.0 and wrong and min(wrong) > 50.0, line
    assert 'frame_index / 120 Hz would read 2.000' in report
    assert "millimetres they would be 0.00120 m" in report


def test_stamps_come_from_t_not_from_frame_index(release: Path, bag: dict[str, list]) -> None:
    """`frame_index` is the body grid's index (same grid as smplx.npz), not the session
    clock: reading it as time would shift every stamp (by 2 s in the sample)."""
    with np.load(release / MOTIONS / 'objects.npz') as z:
        t, frame_index = z['t'], z['frame_index']
    stamps = [log_t for log_t, _ in bag['/tf']]
    from_t = (BASE_NS + np.round(t * 1e9)).astype(np.int64).tolist()
    from_index = (BASE_NS + np.round(frame_index / 120.0 * 1e9)).astype(np.int64).tolist()
    assert stamps == from_t
    assert stamps != from_index and frame_index[0] != 0  # the wrong reading differs


def test_a_vision_instance_named_with_a_hash_is_a_tf_frame(release: Path,
                                                           tmp_path: Path) -> None:
    """Vision instances are named `<Object>#1`: the name is used as the frame id as is,
    and its status says source vision."""
    import shutil

    from react_ros.ros.msgs import message_class
    root = tmp_path / 'release'
    shutil.copytree(release, root)
    npz = root / MOTIONS / 'objects.npz'
    with np.load(npz) as z:
        data = {k: z[k] for k in z.files}
    names, source = data['names'].astype('<U16'), data['source'].astype('<U8')
    names[3], source[3] = 'Table#1', 'vision'
    data.update(names=names, source=source)
    with open(npz, 'wb') as f:
        np.savez(f, **data)
    ep = open_episode(root)
    from rclpy.serialization import deserialize_message
    [tf] = [s for s in ep.streams if s.topic == '/tf']
    _, first = next(iter(tf.open()))
    msg = deserialize_message(first, message_class(tf.msg_type))
    assert 'Table#1' in [tr.child_frame_id for tr in msg.transforms]
    [status] = [s for s in ep.streams if s.topic == '/objects/status']
    _, st = next(iter(status.open()))
    values = {kv.key: kv.value for kv in st.status[3].values}
    assert st.status[3].name == 'Table#1' and values['source'] == 'vision'
