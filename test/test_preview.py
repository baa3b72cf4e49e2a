"""`react-ros preview`: overlays land where the calibration and TF put them, every kind and a
bag preview, a clip decodes, bad input leaves nothing.

The known-geometry bag is written with rosbags' Writer (not react_ros's): a 320x240
camera of one flat colour, its CameraInfo (pinhole), /tf world -> base, /tf_static
base -> camera_optical (turned 30 degrees about the optical axis), and a magenta SPHERE
marker in `world`. The test projects the marker itself (numpy, the pinhole model) and
finds the magenta disc in the PNG; with base -> camera_optical written inverted the disc
lands tens of pixels away (the negative control).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from conftest import tree_digest
from PIL import Image as PilImage
from robotwin_support import EPISODE as ROBOTWIN_EPISODE, robotwin_release
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore
from truetrace_support import truetrace_package

from react_ros import cli

W, H, F = 320, 240, 300.0
CX, CY = 160.0, 120.0
BACKGROUND = (40, 90, 40)
MAGENTA = (255, 0, 255)
T0 = 1_700_000_000_000_000_000
STEP = 100_000_000
N = 10
BASE_XYZ = (0.1, 0.0, 0.0)  # world -> base
CAM_XYZ = (0.05, 0.1, 0.0)  # base -> camera_optical, turned YAW about z
YAW = math.radians(30)
MARKER_WORLD = (0.02, -0.03, 1.0)


def _rz(a: float) -> np.ndarray:
    return np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])


def _pose(r: np.ndarray, t: tuple[float, float, float]) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3], m[:3, 3] = r, t
    return m


def expected_pixel(inverted: bool = False) -> tuple[float, float]:
    """Where the pinhole model puts the marker, computed here without react_ros."""
    base_T_cam = _pose(_rz(YAW), CAM_XYZ)
    if inverted:
        base_T_cam = np.linalg.inv(base_T_cam)
    world_T_cam = _pose(np.eye(3), BASE_XYZ) @ base_T_cam
    x, y, z = (np.linalg.inv(world_T_cam) @ np.array([*MARKER_WORLD, 1.0]))[:3]
    return F * x / z + CX, F * y / z + CY


def known_bag(path: Path, inverted: bool = False) -> Path:
    store = get_typestore(Stores.ROS2_KILTED)
    s = store.types
    Time, Header = s['builtin_interfaces/msg/Time'], s['std_msgs/msg/Header']
    V3, Q = s['geometry_msgs/msg/Vector3'], s['geometry_msgs/msg/Quaternion']

    def header(t: int, frame: str) -> object:
        return Header(stamp=Time(sec=t // 10**9, nanosec=t % 10**9), frame_id=frame)

    def tf(t: int, parent: str, child: str, m: np.ndarray) -> object:
        from scipy.spatial.transform import Rotation
        qx, qy, qz, qw = Rotation.from_matrix(m[:3, :3]).as_quat()
        x, y, z = m[:3, 3]
        return s['geometry_msgs/msg/TransformStamped'](
            header=header(t, parent), child_frame_id=child,
            transform=s['geometry_msgs/msg/Transform'](translation=V3(x=x, y=y, z=z),
                                                       rotation=Q(x=qx, y=qy, z=qz, w=qw)))
    cam = _pose(_rz(YAW), CAM_XYZ)
    if inverted:  # the mistake the negative control makes on purpose
        cam = np.linalg.inv(cam)
    msgs: list[tuple[str, int, str, object]] = [
        ('/tf_static', T0, 'tf2_msgs/msg/TFMessage', s['tf2_msgs/msg/TFMessage'](
            transforms=[tf(T0, 'base', 'camera_optical', cam)]))]
    Pt, C = s['geometry_msgs/msg/Point'], s['std_msgs/msg/ColorRGBA']
    marker = s['visualization_msgs/msg/Marker'](
        header=header(T0, 'world'), ns='target', id=0, type=2, action=0,
        pose=s['geometry_msgs/msg/Pose'](position=Pt(x=MARKER_WORLD[0], y=MARKER_WORLD[1],
                                                     z=MARKER_WORLD[2]),
                                         orientation=Q(x=0.0, y=0.0, z=0.0, w=1.0)),
        scale=V3(x=0.02, y=0.02, z=0.02), color=C(r=1.0, g=0.0, b=1.0, a=1.0),
        lifetime=s['builtin_interfaces/msg/Duration'](sec=0, nanosec=0), frame_locked=False,
        points=[], colors=[], texture_resource='',
        texture=s['sensor_msgs/msg/CompressedImage'](header=header(0, ''), format='',
                                                     data=np.zeros(0, np.uint8)),
        uv_coordinates=[], text='', mesh_resource='',
        mesh_file=s['visualization_msgs/msg/MeshFile'](filename='', data=np.zeros(0, np.uint8)),
        mesh_use_embedded_materials=False)
    msgs.append(('/target', T0, 'visualization_msgs/msg/Marker', marker))
    img = np.empty((H, W, 3), np.uint8)
    img[:] = BACKGROUND
    for i in range(N):
        t = T0 + i * STEP
        msgs.append(('/tf', t, 'tf2_msgs/msg/TFMessage', s['tf2_msgs/msg/TFMessage'](
            transforms=[tf(t, 'world', 'base', _pose(np.eye(3), BASE_XYZ))])))
        msgs.append(('/camera/image_raw', t, 'sensor_msgs/msg/Image', s['sensor_msgs/msg/Image'](
            header=header(t, 'camera_optical'), height=H, width=W, encoding='rgb8',
            is_bigendian=0, step=W * 3, data=img.ravel())))
        msgs.append(('/camera/camera_info', t, 'sensor_msgs/msg/CameraInfo',
                     s['sensor_msgs/msg/CameraInfo'](
                         header=header(t, 'camera_optical'), height=H, width=W,
                         distortion_model='plumb_bob', d=np.zeros(5),
                         k=np.array([F, 0, CX, 0, F, CY, 0, 0, 1.0]),
                         r=np.eye(3).ravel(), p=np.array([F, 0, CX, 0, 0, F, CY, 0, 0, 0, 1, 0.0]),
                         binning_x=0, binning_y=0,
                         roi=s['sensor_msgs/msg/RegionOfInterest'](
                             x_offset=0, y_offset=0, height=0, width=0, do_rectify=False))))
    msgs.sort(key=lambda m: m[1])
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conns: dict[str, object] = {}
        for topic, t, msg_type, msg in msgs:
            if topic not in conns:
                conns[topic] = writer.add_connection(topic, msg_type, typestore=store)
            writer.write(conns[topic], t, store.serialize_cdr(msg, msg_type))
    return path


def find_colour(png: Path, colour: tuple[int, int, int]) -> np.ndarray:
    a = np.asarray(PilImage.open(png).convert('RGB'))
    return np.argwhere(np.all(a == colour, axis=2))  # (row, col)


def drawn_marker(tmp_path: Path, inverted: bool) -> tuple[float, float]:
    bag = known_bag(tmp_path / ('inverted' if inverted else 'bag'), inverted)
    out = tmp_path / ('inverted.png' if inverted else 'sheet.png')
    assert cli.main(['preview', str(bag), '-o', str(out), '--at', '0.5']) == 0
    tile = find_colour(out, BACKGROUND)
    top, left = tile.min(axis=0)
    assert tile.max(axis=0)[0] - top == H - 1  # the camera drawn at its own size
    disc = find_colour(out, MAGENTA)
    assert len(disc), 'no magenta marker drawn'
    row, col = disc.mean(axis=0)
    return col - left + 0.5, row - top + 0.5  # pixel centres: pixel (0, 0) spans 0..1


def test_marker_lands_where_the_calibration_and_tf_put_it(tmp_path: Path) -> None:
    u, v = drawn_marker(tmp_path, inverted=False)
    eu, ev = expected_pixel()
    assert math.hypot(u - eu, v - ev) <= 2.0, ((u, v), (eu, ev))


def test_an_inverted_transform_moves_the_drawing(tmp_path: Path) -> None:
    """Negative control: base -> camera_optical written as its inverse."""
    u, v = drawn_marker(tmp_path, inverted=True)
    eu, ev = expected_pixel()
    assert math.hypot(u - eu, v - ev) > 20.0, ((u, v), (eu, ev))
    iu, iv = expected_pixel(inverted=True)  # and it is where the wrong transform puts it
    assert math.hypot(u - iu, v - iv) <= 2.0


@pytest.fixture(scope='module')
def kind_samples(tmp_path_factory: pytest.TempPathFactory,
                 umi_episode: Path) -> dict[str, tuple[Path, list[str]]]:
    from react_ros.kinds.objects.sample import SESSION, write_objects_sample
    from react_ros.kinds.react.sample import write_react_sample
    objects = write_objects_sample(tmp_path_factory.mktemp('objects') / 'release',
                                   duration_s=1.0) / SESSION
    react = write_react_sample(tmp_path_factory.mktemp('react') / 'release', seed=3,
                               duration_s=1.0, width=160, height=120)
    return {'umi': (umi_episode, []), 'react': (react, []),
            'truetrace': (truetrace_package(tmp_path_factory), []),
            'robotwin': (robotwin_release(tmp_path_factory), ['--episode', ROBOTWIN_EPISODE]),
            'objects': (objects, [])}


@pytest.mark.parametrize('kind', ['umi', 'react', 'truetrace', 'robotwin', 'objects'])
def test_every_kind_previews(kind: str, kind_samples: dict, tmp_path: Path) -> None:
    path, extra = kind_samples[kind]
    before = tree_digest(path if path.is_dir() else path.parent)
    out = tmp_path / f'{kind}.png'
    assert cli.main(['preview', str(path), *extra, '-o', str(out), '--tile-height', '120']) == 0
    img = PilImage.open(out)
    assert img.width >= 900 and img.height > 300
    assert sorted(p.name for p in tmp_path.iterdir()) == [f'{kind}.png']  # nothing aside
    assert tree_digest(path if path.is_dir() else path.parent) == before


def test_a_bag_previews_from_its_own_messages(kind_samples: dict, tmp_path: Path) -> None:
    """A bag of the TrueTrace sample draws the picture its episode draws, from the bag alone."""
    episode = kind_samples['truetrace'][0]
    bag = tmp_path / 'bag'
    assert cli.main(['convert', str(episode), '-o', str(bag), '-q']) == 0
    sheets = []
    for source, name in ((episode, 'episode.png'), (bag, 'bag.png')):
        assert cli.main(['preview', str(source), '-o', str(tmp_path / name), '--at', '1.0']) == 0
        sheets.append(np.asarray(PilImage.open(tmp_path / name).convert('RGB')))
    assert sheets[0].shape == sheets[1].shape
    # Below the title line (which names the path) the two pictures are the same pixels:
    # cameras, hand markers, topic strip and TF tree.
    same = np.all(sheets[0][30:] == sheets[1][30:], axis=2)
    assert same.mean() > 0.999, same.mean()


def test_a_clip_decodes_to_every_frame(kind_samples: dict, tmp_path: Path) -> None:
    import av
    out = tmp_path / 'clip.mp4'
    path = kind_samples['truetrace'][0]
    assert cli.main(['preview', str(path), '-o', str(out), '--camera', '/cam1/image_raw']) == 0
    with av.open(str(out)) as c:
        frames = list(c.decode(video=0))
    assert len(frames) == 60  # 2 s at 30 Hz
    assert (frames[0].width, frames[0].height) == (192, 108)
    assert sorted(p.name for p in tmp_path.iterdir()) == ['clip.mp4']


@pytest.mark.parametrize('case', ['not_an_episode', 'unwritable', 'at_outside', 'suffix',
                                  'exists'])
def test_bad_input_exits_2_with_one_line(case: str, kind_samples: dict, tmp_path: Path,
                                         capfd: pytest.CaptureFixture[str]) -> None:
    episode = kind_samples['truetrace'][0]
    folder = tmp_path / 'out'
    folder.mkdir()
    out = folder / 'sheet.png'
    args = ['preview', str(episode), '-o', str(out), '--at', '0.5']
    if case == 'not_an_episode':
        junk = tmp_path / 'junk'
        junk.mkdir()
        (junk / 'notes.txt').write_text('hello')
        args[1] = str(junk)
    elif case == 'unwritable':  # as root a chmod would not stop the write: /proc takes no files
        args[3] = '/proc/react_ros_preview.png'
    elif case == 'at_outside':
        args[-1] = '99'
    elif case == 'suffix':
        args[3] = str(folder / 'sheet.gif')
    elif case == 'exists':
        out.write_bytes(b'keep me')
    before = tree_digest(episode)
    capfd.readouterr()
    assert cli.main(args) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith('error: '), err
    left = sorted(p.name for p in folder.iterdir())
    assert left == (['sheet.png'] if case == 'exists' else []), left
    if case == 'exists':
        assert out.read_bytes() == b'keep me'
    assert tree_digest(episode) == before
