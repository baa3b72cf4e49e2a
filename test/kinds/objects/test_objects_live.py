"""Mocap objects over real DDS: what a subscriber receives from the player node equals the files.

Expectations from the session files (numpy), not from the adapter; the kind's own
option `marker_refresh` travels as a node parameter.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from live_support import receive_a_play, spawn_player
from react_ros.ros.msgs import to_ns
from react_ros.kinds.objects.sample import SESSION, write_objects_sample

pytestmark = pytest.mark.timeout(180)
BASE_NS = 1_000_000_000


def test_tf_markers_and_status_arrive_as_the_files_say(tmp_path: Path) -> None:
    root = write_objects_sample(tmp_path / 'release', duration_s=2.0)
    topics = {'/tf': 'tf2_msgs/msg/TFMessage',
              '/objects/markers': 'visualization_msgs/msg/MarkerArray',
              '/objects/status': 'diagnostic_msgs/msg/DiagnosticArray',
              '/objects/raw_markers': 'visualization_msgs/msg/MarkerArray'}
    received = receive_a_play('objects_listener', topics, tmp_path / 'player.log',
                         lambda log: spawn_player(root, log, start_paused=True,
                                                  marker_refresh=0.0))

    with np.load(root / SESSION / 'motions' / 'objects.npz') as z:
        names = [str(n) for n in z['names']]
        poses, valid, t = z['T_world_obj'], z['valid'], z['t']
    t_ns = BASE_NS + np.round(t * 1e9).astype(np.int64)
    usable = valid & np.all(np.isfinite(poses), axis=(-1, -2))
    tfs = received['/tf']
    assert [to_ns(m.transforms[0].header.stamp) for m in tfs] == \
        t_ns[usable.any(axis=0)].tolist()
    for msg in tfs:
        k = int(np.searchsorted(t_ns, to_ns(msg.transforms[0].header.stamp)))
        assert sorted(tr.child_frame_id for tr in msg.transforms) == \
            sorted(n for i, n in enumerate(names) if usable[i, k])
        for tr in msg.transforms:
            want = poses[names.index(tr.child_frame_id), k]
            q = tr.transform.rotation
            assert np.allclose(Rotation.from_quat([q.x, q.y, q.z, q.w]).as_matrix(),
                               want[:3, :3], atol=1e-9)
    # marker_refresh:=0 -> markers only at the first frame and the validity edges
    edges = [0] + list(np.flatnonzero(np.any(usable[:, 1:] != usable[:, :-1], axis=0)) + 1)
    got = [int(np.searchsorted(t_ns, to_ns(m.markers[0].header.stamp)))
           for m in received['/objects/markers']]
    assert got == edges
    # live as in a bag: the mesh travels in the marker (a viewer on another machine has
    # no file:// path to open)
    first = {m.id: m for m in received['/objects/markers'][0].markers}
    with np.load(root / SESSION / 'motions' / 'objects.npz') as z:
        mesh_ids = [i for i, p in enumerate(z['pose_frame']) if str(p) == 'mesh']
    assert mesh_ids and all(first[i].type == 11 and len(first[i].points) == 36
                            and first[i].mesh_resource == '' for i in mesh_ids)
    assert len(received['/objects/status']) >= 2
    assert len(received['/objects/raw_markers']) == len(t)
    (static,) = received['/tf_static']
    assert {tr.child_frame_id for tr in static.transforms} == {'BigBox0_rigid_body',
                                                               'LittleBox0_rigid_body'}
