"""The checks that settle what the format document leaves open, from the data itself.

The end poses (which link, which quaternion order, which frame), the order of
joint_action/vector, and the mesh id -> entity table: each passes on the sample, and
each has a negative control, a file written the other way, which the check must fail.
"""
from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest

from react_ros.registry import open_episode
from react_ros.kinds.robotwin import endpose as ee
from react_ros.kinds.robotwin import hdf5 as rh
from react_ros.kinds.robotwin.adapter import KIND
from react_ros.kinds.robotwin.sample import _Scene, write_episode

CFG = KIND.config()
TOL = (float(CFG['max_endpose_offset_mm']), float(CFG['max_endpose_offset_deg']))


@pytest.fixture
def episode(tmp_path: Path) -> Path:
    data = tmp_path / 'agilex' / 'task' / 'gt_export' / 'data'
    data.mkdir(parents=True)
    return write_episode(data, 0, 12, seed=4, size=(64, 48), extra=True)


def _line(report: list[str], what: str) -> tuple[str, str]:
    """The check's line and the `would read` line under it."""
    (at,) = [i for i, r in enumerate(report) if r.startswith(f'conformance: {what}:')]
    assert report[at + 1].startswith('  would read: '), report[at:at + 2]
    return report[at], report[at + 1]


def _rewrite(path: Path, key: str, make) -> None:  # type: ignore[no-untyped-def]
    with h5py.File(path, 'r+') as f:
        data = make(f[key][()])
        del f[key]
        f.create_dataset(key, data=data)


def _entity(extra: rh.ExtraFile, name: str) -> np.ndarray:
    j = extra.name.index(name)
    p = extra.pose[:, j].astype(np.float64)
    return np.concatenate([p[:, :3], p[:, 4:7], p[:, 3:4]], axis=1)  # to x y z qx qy qz qw


def test_end_poses_ride_on_the_end_links_in_wxyz_and_world(episode: Path) -> None:
    opened = open_episode(episode, 'robotwin')
    for side, link in (('left', 'fl_link6'), ('right', 'fr_link6')):
        line, would = _line(opened.report, f'{side} end pose')
        assert line.endswith(': OK') and f'= {link} ·' in line, line
        assert 'the other order' in would and 'robot base footprint' in would, would
    # The same numbers, computed here: the right reading holds still, both wrong ones wander.
    ep = rh.read_episode(episode)
    extra = rh.read_extra(rh.extra_path(episode), ep.t, (ep.width, ep.height))
    link, base = _entity(extra, 'fl_link6'), _entity(extra, 'footprint')
    stored = ep.endpose['left']
    wxyz = np.concatenate([stored[:, :3], stored[:, 4:7], stored[:, 3:4]], axis=1)
    assert ee.spread(link, wxyz).within(*TOL)
    other = ee.spread(link, ee.as_stored_xyzw(stored))
    in_base = ee.spread(link, ee.compose(base, wxyz))
    assert not other.within(*TOL) and other.deg > 4 * TOL[1], other
    assert not in_base.within(*TOL) and in_base.mm > 10 * TOL[0], in_base
    # The other link fits no better than the base: the check finds the end link, not any.
    assert not ee.spread(_entity(extra, 'fr_link6'), wxyz).within(*TOL)


def test_end_poses_stored_xyzw_fail_the_check(episode: Path) -> None:
    # Negative control: a file whose end poses were written x y z qx qy qz qw.
    _rewrite(episode, 'endpose/left_endpose',
             lambda p: np.concatenate([p[:, :3], p[:, 4:7], p[:, 3:4]], axis=1))
    opened = open_episode(episode, 'robotwin')
    line, would = _line(opened.report, 'left end pose')
    assert line.endswith(': FAIL'), line
    assert _line(opened.report, 'right end pose')[0].endswith(': OK')
    assert any('left_endpose is no fixed offset' in w for w in opened.warnings), opened.warnings
    # ... and for that file the "other order" is the one that holds still.
    ep = rh.read_episode(episode)
    extra = rh.read_extra(rh.extra_path(episode), ep.t, (ep.width, ep.height))
    assert ee.spread(_entity(extra, 'fl_link6'), ee.as_stored_xyzw(ep.endpose['left'])
                     ).within(*TOL)


def test_end_poses_relative_to_the_base_fail_the_check(episode: Path) -> None:
    # Negative control: end poses written relative to the robot's base, not the world.
    ep = rh.read_episode(episode)
    extra = rh.read_extra(rh.extra_path(episode), ep.t, (ep.width, ep.height))
    base = _entity(extra, 'footprint')

    def to_base(p: np.ndarray) -> np.ndarray:
        world = np.concatenate([p[:, :3], p[:, 4:7], p[:, 3:4]], axis=1)
        inv = np.concatenate([-ee.Rotation.from_quat(base[:, 3:7]).inv().apply(base[:, :3]),
                              ee.Rotation.from_quat(base[:, 3:7]).inv().as_quat()], axis=1)
        rel = ee.compose(inv, world)
        return np.concatenate([rel[:, :3], rel[:, 6:7], rel[:, 3:6]], axis=1)
    _rewrite(episode, 'endpose/right_endpose', to_base)
    opened = open_episode(episode, 'robotwin')
    assert _line(opened.report, 'right end pose')[0].endswith(': FAIL')


def test_joint_vector_order_is_checked(episode: Path) -> None:
    line, would = _line(open_episode(episode, 'robotwin').report, 'joint order')
    assert line.endswith(': OK') and 'max diff 0)' in line, line
    assert float(would.rsplit(' ', 1)[1]) > 0.1, would  # right side first reads otherwise
    # Negative control: the right arm's columns stored first.
    _rewrite(episode, 'joint_action/vector', lambda v: np.roll(v, v.shape[1] // 2, axis=1))
    opened = open_episode(episode, 'robotwin')
    assert _line(opened.report, 'joint order')[0].endswith(': FAIL')
    assert any('wrong columns' in w for w in opened.warnings)


def test_mesh_table_maps_mesh_ids_onto_actor_ids(episode: Path) -> None:
    line, would = _line(open_episode(episode, 'robotwin').report, 'mesh id table')
    assert line.endswith(': OK') and 'at 100.0% of' in line, line
    assert not would.endswith(' 100.0% agree'), would
    # Negative control: two meshes given each other's entities.
    extra = rh.extra_path(episode)

    def swap(owner: np.ndarray) -> np.ndarray:
        out = owner.copy()
        out[owner == 5], out[owner == 2] = 2, 5  # the hammer's meshes and a bottle's
        return out
    with h5py.File(extra) as f:
        actors = set(np.unique(f[f'{rh.HEAD}/actor_id'][0]).tolist())
    assert {5, 2} & actors  # what the swap touches is on frame 0
    _rewrite(extra, 'segmentation/mesh_entity_id', swap)
    opened = open_episode(episode, 'robotwin')
    assert _line(opened.report, 'mesh id table')[0].endswith(': FAIL')
    assert any('mesh id table gives another entity' in w for w in opened.warnings)


def test_an_actor_id_without_an_entity_fails_the_check(episode: Path) -> None:
    assert 'actor ids without an entity: none' in _line(
        open_episode(episode, 'robotwin').report, 'mesh id table')[0]

    def stray(ids: np.ndarray) -> np.ndarray:
        ids = ids.copy()
        ids[0, 0, :3] = 999  # no entity has this id
        return ids
    _rewrite(rh.extra_path(episode), f'{rh.HEAD}/actor_id', stray)
    opened = open_episode(episode, 'robotwin')
    line = _line(opened.report, 'mesh id table')[0]
    assert line.endswith(': FAIL') and 'without an entity: 999' in line, line
    assert any('actor id(s) [999]' in w for w in opened.warnings), opened.warnings


def test_grippers_and_id_table_are_published(episode: Path) -> None:
    opened = open_episode(episode, 'robotwin')
    streams = {s.topic: s for s in opened.streams}
    ep = rh.read_episode(episode)
    for side in rh.SIDES:
        got = [m.position[0] for _, m in streams[f'/{side}_gripper'].open()]
        assert np.array_equal(got, ep.gripper[side])
    table = streams['/head_camera/segmentation/id_table']
    assert table.latched and table.count == 1
    ((_, msg),) = list(table.open())
    doc = json.loads(msg.data)
    with h5py.File(rh.extra_path(episode)) as f:
        mesh = f['segmentation/mesh_id'][()].tolist()
        owner = f['segmentation/mesh_entity_id'][()].tolist()
        names = [n.decode() if isinstance(n, bytes) else n for n in f['entities/name'][()]]
        ids = f['entities/entity_id'][()].tolist()
    assert doc['mesh_to_entity'] == {str(m): o for m, o in zip(mesh, owner)}
    for e, n in zip(ids, names):
        assert doc['entities'][str(e)]['name'] == n
        assert doc['entities'][str(e)]['mesh_ids'] == sorted(
            m for m, o in zip(mesh, owner) if o == e)
    # the two bottles share a name: their frames are told apart, as on /tf
    assert doc['entities']['2']['frame'] == '001_bottle_2'


def test_wrist_images_are_swapped_back_like_the_head(episode: Path) -> None:
    """The document: the wrist JPEGs follow the head's channel convention (R and B swapped)."""
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import Image
    opened = open_episode(episode, 'robotwin')
    (stream,) = [s for s in opened.streams if s.topic == '/left_camera/image_raw']
    scene = _Scene(12, 10.0, 4, (64, 48))  # what write_episode rendered (seed 4)
    for i, (_, raw) in enumerate(stream.open()):
        if i not in (0, 7):
            continue
        msg = raw if isinstance(raw, Image) else deserialize_message(raw, Image)
        image = np.frombuffer(bytes(msg.data), np.uint8).reshape(48, 64, 3).astype(float)
        k, pose = scene.wrist(0, i)
        truth = scene.render(k, pose, i, (64, 48))['rgb'].astype(float)
        published, unswapped = np.abs(image - truth).mean(), np.abs(image[..., ::-1] - truth).mean()
        assert published < 6 < unswapped, (i, published, unswapped)


def test_the_nul_padding_of_stored_jpegs_is_stripped(episode: Path) -> None:
    """RoboTwin stores the frames as fixed-length byte strings padded with NULs."""
    with h5py.File(episode) as f:
        ds = f[f'{rh.HEAD}/rgb']
        width = ds.dtype.itemsize
        frames = [rh.jpeg_bytes(v) for v in ds[()]]
    short = min(frames, key=len)
    assert len(short) < width  # the sample pads, as the release does
    assert rh.decode_jpeg(short, episode, 'x').shape == (48, 64, 3)
    with pytest.raises(Exception, match='not a JPEG'):  # left padded, the frame is refused
        rh.decode_jpeg(short.ljust(width, b'\0'), episode, 'x')


def test_each_arm_joint_turns_the_link_it_is_named_for(episode: Path) -> None:
    opened = open_episode(episode, 'robotwin')
    for side, first in (('left', 'fl_joint1'), ('right', 'fr_joint1')):
        line, would = _line(opened.report, f'{side} arm joints')
        assert line.endswith(': OK') and first in line, line
        assert 'the other arm' in would and 'shifted by one joint' in would, would
    # The same numbers here: the link poses of _extra against the joint columns.
    ep = rh.read_episode(episode)
    extra = rh.read_extra(rh.extra_path(episode), ep.t, (ep.width, ep.height))
    chain = np.stack([_entity(extra, n) for n in CFG['embodiments']['agilex']['arm_links'][
        'left']], axis=1)
    turned = ee.joint_turns(chain)
    tol = float(CFG['max_joint_link_error_deg'])
    assert ee.joint_error_deg(turned, ep.joints[:, 0:6]) <= tol
    assert ee.joint_error_deg(turned, ep.joints[:, 7:13]) > 4 * tol  # the right arm's
    assert ee.joint_error_deg(turned, ep.joints[:, [1, 2, 3, 4, 5, 0]]) > 4 * tol


def test_arm_joints_stored_in_another_order_fail_the_check(episode: Path) -> None:
    # Negative control: a file whose left arm columns 1 and 2 are swapped (consistently in
    # left_arm and vector, so the vector's layout still checks out): fl_joint1 is misnamed.
    def swap(v: np.ndarray, a: int, b: int) -> np.ndarray:
        v = v.copy()
        v[:, [a, b]] = v[:, [b, a]]
        return v
    _rewrite(episode, 'joint_action/vector', lambda v: swap(v, 0, 1))
    _rewrite(episode, 'joint_action/left_arm', lambda v: swap(v, 0, 1))
    opened = open_episode(episode, 'robotwin')
    assert _line(opened.report, 'joint order')[0].endswith(': OK')
    assert _line(opened.report, 'left arm joints')[0].endswith(': FAIL')
    assert _line(opened.report, 'right arm joints')[0].endswith(': OK')
    assert any("left arm's joint columns" in w for w in opened.warnings), opened.warnings
