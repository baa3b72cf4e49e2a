"""RoboTwin against the contract every kind meets (kind_contract.py), with its bad inputs.

Bad RoboTwin input, whatever its shape: one line naming the file, nothing written or changed.
The promise and how it is checked: bad_input_support.py; the contract runs the tables
(REFUSED, ACCEPTED) below. The cases are the issue's list plus
the format document's known defects (the R/B swap, millimetres, wxyz, padding, the embodiment
folder, the replay report).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import h5py
import numpy as np
import pytest
from bad_input_support import Accepted, Refused
from kind_contract import KindContract
from robotwin_support import DATA, EP0, EPISODE, EXTRA0, robotwin_release

from react_ros.kinds.robotwin.hdf5 import decode_jpeg
from react_ros.kinds.robotwin.sample import encode_jpeg

HEAD = 'observation/head_camera'
REPORT = 'reports/replay_success_check_failed.json'
ID = ('--episode', EPISODE)


def _h5(rel: str, edit: Callable[[h5py.File], None]) -> Callable[[Path], None]:
    def breaker(root: Path) -> None:
        with h5py.File(root / rel, 'r+') as f:
            edit(f)
    return breaker


def _replace(key: str, make: Callable[[np.ndarray], np.ndarray]) -> Callable[[h5py.File], None]:
    def edit(f: h5py.File) -> None:
        data = make(f[key][()])
        del f[key]
        f.create_dataset(key, data=data)
    return edit


def _set(key: str, index: Any, value: Any) -> Callable[[h5py.File], None]:
    def edit(f: h5py.File) -> None:
        data = f[key][()]
        data[index] = value
        del f[key]
        f.create_dataset(key, data=data)
    return edit


def _truncate(rel: str) -> Callable[[Path], None]:
    def breaker(root: Path) -> None:
        path = root / rel
        data = path.read_bytes()
        path.write_bytes(data[:len(data) // 2])
    return breaker


def _jpegs(rewrite: Callable[[int, bytes], bytes]) -> Callable[[h5py.File], None]:
    def edit(f: h5py.File) -> None:
        key = f'{HEAD}/rgb'
        frames = [rewrite(i, bytes(j).rstrip(b'\0')) for i, j in enumerate(f[key][()])]
        width = max(len(j) for j in frames)
        del f[key]
        f.create_dataset(key, data=np.array([j.ljust(width, b'\0') for j in frames],
                                            dtype=f'S{width}'))
    return edit


def _garbage_frame(i: int, jpeg: bytes) -> bytes:
    return b'\x89PNG not a jpeg at all' if i == 3 else jpeg


def _half_size(i: int, jpeg: bytes) -> bytes:
    return encode_jpeg(decode_jpeg(jpeg, Path('x'), 'x', (80, 60)), swap=False)


def _scan_start(jpeg: bytes) -> int:
    """Where the entropy-coded data of the (first) scan begins: after SOS and its header."""
    sos = jpeg.index(b'\xff\xda')
    return sos + 2 + int.from_bytes(jpeg[sos + 2:sos + 4], 'big')


def _scan_zeroed(i: int, jpeg: bytes) -> bytes:
    # 64 bytes of frame 4's scan zeroed: FFmpeg and Pillow decode it into a picture anyway.
    if i != 4:
        return jpeg
    at = _scan_start(jpeg) + 40
    return jpeg[:at] + bytes(64) + jpeg[at + 64:]


def _scan_noise(i: int, jpeg: bytes) -> bytes:
    if i != 4:
        return jpeg
    at = _scan_start(jpeg)
    noise = np.random.default_rng(7).integers(0, 256, len(jpeg) - 2 - at, dtype=np.uint8)
    return jpeg[:at] + noise.tobytes() + jpeg[-2:]


def _one_small(i: int, jpeg: bytes) -> bytes:
    return _half_size(i, jpeg) if i == 5 else jpeg


def _unswapped(i: int, jpeg: bytes) -> bytes:
    # A release without the documented defect: the JPEG holds the true colours.
    return encode_jpeg(decode_jpeg(jpeg, Path('x'), 'x'), swap=True)


def _rename(old: str, new: str) -> Callable[[Path], None]:
    def breaker(root: Path) -> None:
        (root / old).rename(root / new)
    return breaker


def _write(rel: str, text: str) -> Callable[[Path], None]:
    def breaker(root: Path) -> None:
        (root / rel).write_text(text)
    return breaker


def _attr(key: str, value: str) -> Callable[[h5py.File], None]:
    def edit(f: h5py.File) -> None:
        f['segmentation'].attrs[key] = value
    return edit


def _scale_quaternion(key: str, factor: float, index: Any) -> Callable[[h5py.File], None]:
    def make(p: np.ndarray) -> np.ndarray:
        p = p.copy()
        p[index] = p[index] * factor
        return p
    return _replace(key, make)


def _renamed(old: bytes, new: bytes) -> Callable[[h5py.File], None]:
    return _replace('entities/name', lambda names: np.array(
        [new if n == old else n for n in names], dtype=object))


def _no_frame_with_a_slash(bag: Path) -> None:
    from rosbags.highlevel import AnyReader
    frames = set()
    with AnyReader([bag]) as reader:
        tf = [c for c in reader.connections if c.topic in ('/tf', '/tf_static')]
        for conn, _, raw in reader.messages(connections=tf):
            for ts in reader.deserialize(raw, conn.msgtype).transforms:
                frames |= {ts.header.frame_id, ts.child_frame_id}
    assert '020_hammer' in frames and not any(f.startswith('/') for f in frames), frames


REFUSED = [
    Refused('truncated episode HDF5', _truncate(EP0), EP0, ('HDF5', 'truncated'), ID),
    Refused('truncated extra HDF5', _truncate(EXTRA0), EXTRA0, ('HDF5',), ID),
    Refused('missing dataset', _h5(EP0, lambda f: f.__delitem__('pointcloud')), EP0,
            ('pointcloud', 'missing'), ID),
    Refused('missing extra dataset', _h5(EXTRA0, lambda f: f.__delitem__('entities/kind')),
            EXTRA0, ('entities/kind', 'missing'), ID),
    Refused('depth has fewer frames than rgb', _h5(EP0, _replace(f'{HEAD}/depth',
                                                                 lambda d: d[:-1])),
            EP0, ('depth', 'one depth image per frame'), ID),
    Refused('segmentation of another size', _h5(EP0, _replace(
        f'{HEAD}/actor_segmentation', lambda d: d[:, :-2])), EP0, ('actor_segmentation',), ID),
    Refused('joint vector shorter than its parts', _h5(EP0, _replace(
        'joint_action/vector', lambda d: d[:, :-1])), EP0, ('joint_action/vector', '13'), ID),
    Refused('point cloud without colour', _h5(EP0, _replace('pointcloud',
                                                            lambda d: d[..., :3])),
            EP0, ('pointcloud', 'xyz and rgb'), ID),
    Refused('JPEGs of another size than the depth', _h5(EP0, _jpegs(_half_size)), EP0,
            ('rgb frames are 80x60', 'depth is 160x120'), ID),
    Refused('image scale too large', None, '--image-scale', ('16384',),
            (*ID, '--image-scale', '200')),
    Refused('a JPEG that does not decode', _h5(EP0, _jpegs(_garbage_frame)), EP0,
            ('rgb frame 3', 'JPEG'), ID),
    # A damaged scan shows only when the frame decodes: convert refuses, info need not.
    Refused('a JPEG whose scan has 64 bytes zeroed', _h5(EP0, _jpegs(_scan_zeroed)), EP0,
            ('rgb frame 4', 'does not decode cleanly'), ID, commands=('convert',)),
    Refused('a JPEG whose scan is noise', _h5(EP0, _jpegs(_scan_noise)), EP0,
            ('rgb frame 4', 'JPEG'), ID, commands=('convert',)),
    Refused('one JPEG of another size among the frames', _h5(EP0, _jpegs(_one_small)), EP0,
            ('rgb frame 5 is 80x60', '160x120'), ID),
    Refused('_extra with another T', _h5(EXTRA0, _replace('entities/pose', lambda d: d[:-3])),
            EXTRA0, ('entities/pose', 'not of this episode'), ID),
    Refused('non-unit endpose quaternion', _h5(EP0, _scale_quaternion(
        'endpose/left_endpose', 1.2, (slice(4, None), slice(3, 7)))), EP0,
            ('endpose/left_endpose', 'row 4', 'not a unit quaternion'), ID),
    Refused('non-unit entity quaternion', _h5(EXTRA0, _scale_quaternion(
        'entities/pose', 0.5, (slice(2, 3), 3, slice(3, 7)))), EXTRA0,
            ('020_hammer', 'row 2', 'not a unit quaternion'), ID),
    Refused('zero quaternion', _h5(EP0, _set('endpose/right_endpose', (0, slice(3, 7)), 0.0)),
            EP0, ('endpose/right_endpose', 'zero quaternion'), ID),
    Refused('zero focal length', _h5(EP0, _set(f'{HEAD}/intrinsic_cv', (2, 0, 0), 0.0)), EP0,
            ('intrinsic_cv frame 2',), ID),
    Refused('NaN in intrinsics', _h5(EP0, _set(f'{HEAD}/intrinsic_cv', (1, 0, 2), np.nan)),
            EP0, ('intrinsic_cv', 'NaN'), ID),
    Refused('extrinsic that is no rotation', _h5(EP0, _set(f'{HEAD}/extrinsic_cv', (5, 0, 0),
                                                           3.0)), EP0,
            ('extrinsic_cv frame 5', 'not a rotation'), ID),
    Refused('unknown entity kind', _h5(EXTRA0, _replace(
        'entities/kind', lambda k: np.array([b'rigid'] * (len(k) - 1) + [b'ghost'],
                                            dtype=object))), EXTRA0, ('ghost',), ID),
    Refused('entity id twice', _h5(EXTRA0, _set('entities/entity_id', 1, 1)), EXTRA0,
            ('repeats',), ID),
    Refused('targets that are not JSON', _h5(EXTRA0, _attr('targets', '{"A": unique')), EXTRA0,
            ('targets', 'JSON'), ID),
    Refused('mesh table of two lengths', _h5(EXTRA0, _replace(
        'segmentation/mesh_entity_id', lambda d: d[:-1])), EXTRA0,
            ('segmentation/mesh_id has', 'mesh_entity_id'), ID),
    Refused('mesh table naming an unknown entity', _h5(EXTRA0, _set(
        'segmentation/mesh_entity_id', 0, 77)), EXTRA0, ('entity 77',), ID),
    Refused('replay report that is not JSON', _write(REPORT, '[{"task": '), REPORT, ('JSON',),
            ID),
    Refused('wrong embodiment for the joints', None, EP0, ('14 columns', 'franka'),
            (*ID, '--embodiment', 'franka')),
    Refused('no embodiment folder', _rename('agilex', 'robots'), DATA.replace('agilex', 'robots')
            + '/episode0.hdf5', ('embodiment',),
            ('--episode', EPISODE.replace('agilex', 'robots'))),
    Refused('unknown episode', None, '', ('no episode', 'episode7'),
            ('--episode', 'agilex/beat_block_hammer/episode7')),
    Refused('several episodes and no --episode', None, '', ('--episode', '2 RoboTwin')),
    Refused('fps zero', None, '--fps', ('> 0',), (*ID, '--fps', '0')),
    # issue 39: refused before, but after four numpy RuntimeWarning lines
    Refused('fps so small the stamps overflow', None, '--fps', ('1e-300', '2038'),
            (*ID, '--fps', '1e-300')),
    # issue 39: converted into 2x2 pictures of nothing, exit 0
    Refused('image scale that leaves less than a pixel', None, '--image-scale',
            ('less than one pixel', '160x120'), (*ID, '--image-scale', '1e-9')),
    # issue 39: play ended with an RCLError traceback ("incompatible type")
    Refused('a remap onto a topic of another type', None, EP0,
            ('/left_gripper (sensor_msgs/msg/JointState)', '/tf (tf2_msgs/msg/TFMessage)'),
            (*ID, '-m', '/left_gripper:=/tf'), commands=('play',)),
    Refused('a selection that leaves no topic', None, EP0, ('leave no topic',),
            (*ID, '-x', '.*'), commands=('play',)),
    Refused('fps not a number', None, '--fps', (), (*ID, '--fps', 'fast')),
    Refused('unknown embodiment', None, '--embodiment', ('ur5',), (*ID, '--embodiment', 'ur5')),
]


ACCEPTED = [
    Accepted('JPEGs without the R/B swap', _h5(EP0, _jpegs(_unswapped)), ('R/B swap',), ID),
    Accepted('depth in metres, not millimetres', _h5(EP0, _replace(
        f'{HEAD}/depth', lambda d: d / 1000.0)), ('not millimetres',), ID),
    Accepted('cam2world_gl off extrinsic_cv', _h5(EP0, _set(f'{HEAD}/cam2world_gl',
                                                            (4, 1, 3), 0.5)),
             ('cam2world_gl disagrees',), ID),
    Accepted('NaN end poses are dropped', _h5(EP0, _set('endpose/left_endpose', (6, 0),
                                                        np.nan)),
             ('endpose/left_endpose', '1 pose(s) not published', 'NaN'), ID),
    Accepted('no _extra beside the episode', lambda root: (root / EXTRA0).unlink(),
             ('no episode0_extra.hdf5',), ID),
    Accepted('a static entity that moves', _h5(EXTRA0, _set('entities/pose', (5, 0, 0), 0.3)),
             ('static entity table moves',), ID),
    # issue 39: published as the TF frame "/020_hammer", which tf2 refuses
    Accepted('an entity named with a leading slash', _h5(EXTRA0, _renamed(b'020_hammer',
                                                                          b'/020_hammer')),
             ('episode0_extra.hdf5', 'tf2', '/020_hammer as 020_hammer'), ID,
             check=_no_frame_with_a_slash),
]


@pytest.fixture(scope='module')
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return robotwin_release(tmp_path_factory)


def test_the_table_covers_the_issue(release: Path) -> None:
    names = ' '.join(c.name for c in REFUSED)
    for what in ('truncated', 'missing dataset', 'fewer frames', 'does not decode',
                 '_extra with another T', 'non-unit'):
        assert what in names, what
    assert len(REFUSED) + len(ACCEPTED) >= 15


def test_the_extra_file_given_as_the_episode_is_refused(release: Path,
                                                        capfd: pytest.CaptureFixture[str]
                                                        ) -> None:
    from react_ros import cli
    capfd.readouterr()
    for args in (['info', str(release / EXTRA0), '--kind', 'robotwin'],
                 ['info', str(release / EXTRA0)]):
        assert cli.main(args) == 2
        out, err = capfd.readouterr()
        assert (out + err).startswith(f'error: {release / EXTRA0}:') and '_extra' in err, err
        assert len((out + err).splitlines()) == 1


class TestRobotwinKind(KindContract):
    kind = 'robotwin'
    episode_id = EPISODE
    counts = {'/head_camera/image_raw': 20, '/head_camera/camera_info': 20, '/pointcloud': 20,
              '/left_camera/image_raw': 20, '/tf_static': 1, '/annotations': 1,
              '/left_gripper': 20, '/right_gripper': 20,
              '/head_camera/segmentation/id_table': 1}
    REFUSED = REFUSED
    ACCEPTED = ACCEPTED

    @pytest.fixture(scope='class')
    @classmethod
    def source(cls, tmp_path_factory: pytest.TempPathFactory) -> Path:
        return robotwin_release(tmp_path_factory)


def test_a_tiny_fps_is_refused_without_a_library_warning(release: Path,
                                                         capfd: pytest.CaptureFixture[str]
                                                         ) -> None:
    """pytest keeps Python warnings off stderr, so the table's one-line check cannot see
    them: here they are recorded (numpy's RuntimeWarnings came before the refusal)."""
    import warnings

    from react_ros import cli
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        assert cli.main(['info', str(release), *ID, '--fps', '1e-300']) == 2
    assert [str(w.message) for w in caught] == []
    assert len(capfd.readouterr().err.splitlines()) == 1
