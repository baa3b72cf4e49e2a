"""UMI against the contract every kind meets (kind_contract.py), with its bad inputs.

Bad UMI input, whatever its shape: one line naming the file, nothing written or changed.
The promise and how it is checked: bad_input_support.py; the contract runs the tables
(REFUSED, ACCEPTED) below.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from bad_input_support import Accepted, Refused
from conftest import rewrite_mcap
from kind_contract import KindContract

MP4 = 'data/{}.perception_interface.camera.state.mp4'
MCAP = 'data/episode.mcap'
CAM = 'meta/sensor/left.metadata_interface.camera_info.meta.yaml'
URDF = 'meta/scene/robot_description.urdf'
ANNOTATIONS = 'meta/system/annotation.yaml'
FLAGS = 'meta/system/flag.yaml'
POINTERS = '/left/perception_interface/camera/state'
POSE = '/left/perception_interface/pose/state'
TRACKING = '/tracking/meta_interface/tracking_status/state'
GRIPPER = '/left/perception_interface/gripper/state'
AFTER_2038_NS = (2**31 + 86_400) * 10**9  # a day after builtin_interfaces/Time.sec ends


def _delete(rel: str) -> Callable[[Path], None]:
    return lambda ep: (ep / rel).unlink()


def _truncate(rel: str, keep: float) -> Callable[[Path], None]:
    def breaker(ep: Path) -> None:
        data = (ep / rel).read_bytes()
        (ep / rel).write_bytes(data[:int(len(data) * keep)])
    return breaker


def _write(rel: str, data: bytes) -> Callable[[Path], None]:
    return lambda ep: (ep / rel).write_bytes(data)


def _yaml_edit(rel: str, edit: Callable[[Any], None]) -> Callable[[Path], None]:
    def breaker(ep: Path) -> None:
        doc = yaml.safe_load((ep / rel).read_text())
        edit(doc)
        (ep / rel).write_text(yaml.safe_dump(doc))
    return breaker


def _cam(key: str, value: Any) -> Callable[[Path], None]:
    return _yaml_edit(CAM, lambda d: d.__setitem__(key, value))


def _cam_drop(key: str) -> Callable[[Path], None]:
    return _yaml_edit(CAM, lambda d: d.pop(key))


def _annotation_time(value: Any) -> Callable[[Path], None]:
    return _yaml_edit(ANNOTATIONS, lambda d: d['annotations'][0].__setitem__('time', value))


def _pointer_stamps(edit: Callable[[int, int, list[int]], int | None]) -> Callable[[Path], None]:
    """Rewrite the header.stamp values of the left camera's frame pointers."""
    def breaker(ep: Path) -> None:
        stamps: list[int] = []

        def collect(topic: str, msg: Any) -> Any:
            if topic == POINTERS:
                stamps.append(int(next(kv.value for kv in msg.values
                                       if kv.key == 'header.stamp')))
            return msg
        rewrite_mcap(ep / MCAP, collect)
        seen = {'n': 0}

        def change(topic: str, msg: Any) -> Any:
            if topic == POINTERS:
                i = seen['n']
                seen['n'] += 1
                new = edit(i, stamps[i], stamps)
                if new is not None:
                    for kv in msg.values:
                        if kv.key == 'header.stamp':
                            kv.value = str(new)
            return msg
        rewrite_mcap(ep / MCAP, change)
    return breaker


def _pointer_missing(ep: Path) -> None:
    topic = '/right/perception_interface/camera/state'
    from react_ros.formats.mcap_bag import McapBag
    total = sum(1 for _ in McapBag(ep / MCAP).messages([topic]))
    seen = {'n': 0}

    def drop_last(t: str, msg: Any) -> Any:
        if t == topic:
            seen['n'] += 1
            if seen['n'] == total:
                return None
        return msg
    rewrite_mcap(ep / MCAP, drop_last)


def _pointer_without_stamp(ep: Path) -> None:
    seen = {'n': 0}

    def unstamp(t: str, msg: Any) -> Any:
        if t == POINTERS:
            seen['n'] += 1
            if seen['n'] == 3:
                msg.values = [kv for kv in msg.values if kv.key != 'header.stamp']
        return msg
    rewrite_mcap(ep / MCAP, unstamp)


def _rename_schema(old: str, new: str) -> Callable[[Path], None]:
    return lambda ep: rewrite_mcap(ep / MCAP, schema_names={old: new})


def _corrupt_chunk(ep: Path) -> None:
    # Flip bytes in the middle of the file, inside a chunk's (compressed) records.
    path = ep / MCAP
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 64] = bytes(b ^ 0x5A for b in data[mid:mid + 64])
    path.write_bytes(bytes(data))


def _urdf_edit(old: str, new: str) -> Callable[[Path], None]:
    def breaker(ep: Path) -> None:
        text = (ep / URDF).read_text()
        assert old in text
        (ep / URDF).write_text(text.replace(old, new, 1))
    return breaker


def _status_text(edit: Callable[[str], str]) -> Callable[[Path], None]:
    """Rewrite the payload of the fourth tracking status."""
    def breaker(ep: Path) -> None:
        seen = {'n': 0}

        def change(topic: str, msg: Any) -> Any:
            if topic == TRACKING:
                seen['n'] += 1
                if seen['n'] == 4:
                    msg.data = edit(msg.data)
            return msg
        rewrite_mcap(ep / MCAP, change)
    return breaker


def _without(key: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        doc = json.loads(text)
        doc.pop(key)
        return json.dumps(doc)
    return edit


def _grippers_as_ticks(ep: Path) -> None:
    def ticks(topic: str, msg: Any) -> Any:
        if topic == GRIPPER:
            msg.position = [float(round(v * 16384 / (2 * math.pi))) for v in msg.position]
        return msg
    rewrite_mcap(ep / MCAP, ticks)


def _not_a_dataset(ep: Path) -> None:
    for p in sorted(ep.rglob('*'), reverse=True):
        p.rmdir() if p.is_dir() else p.unlink()
    (ep / 'README.txt').write_text('holiday photos\n')


MIMIC = '<mimic joint="left_left_finger" multiplier="-1" offset="0"/>'
REFUSED = [
    # files missing, truncated or not what they claim to be
    Refused('missing video', _delete(MP4.format('center')), MP4.format('center'), ('missing',)),
    Refused('truncated video', _truncate(MP4.format('left'), 0.4), MP4.format('left'),
            ('video',)),
    Refused('video of text', _write(MP4.format('right'), b'not a video\n' * 100),
            MP4.format('right'), ('video',)),
    Refused('truncated mcap', _truncate(MCAP, 0.6), MCAP, ('MCAP',)),
    Refused('not mcap', _write(MCAP, b'#ROSBAG V2.0\n' + bytes(range(256)) * 8), MCAP,
            ('MCAP',)),
    Refused('corrupt chunk', _corrupt_chunk, MCAP, ('MCAP',)),
    Refused('unknown schema', _rename_schema('geometry_msgs/msg/PoseStamped',
                                             'geometry_msgs/msg/PoseStampd'), MCAP,
            ('geometry_msgs/msg/PoseStampd',)),
    Refused('schema named without its package', _rename_schema('std_msgs/msg/String',
                                                                '/msg/String'), MCAP,
            ("'/msg/String'",)),
    Refused('missing urdf', _delete(URDF), URDF, ('missing',)),
    Refused('broken urdf', _truncate(URDF, 0.05), URDF, ('URDF',)),
    Refused('not a dataset', _not_a_dataset, '', ('not',)),
    # frame pointers
    Refused('pointer count', _pointer_missing, MP4.format('right'),
            ('frames', 'pointers', '/right/perception_interface/camera/state')),
    Refused('pointer without stamp', _pointer_without_stamp, MCAP, ('header.stamp', POINTERS)),
    Refused('pointer stamp 2**70', _pointer_stamps(lambda i, t, s: 2**70 if i == 4 else None),
            MCAP, (POINTERS, 'header.stamp')),
    Refused('pointer stamp not a number',
            _pointer_stamps(lambda i, t, s: 'soon' if i == 2 else None),  # type: ignore
            MCAP, (POINTERS, 'header.stamp')),
    Refused('pointer stamps decreasing',
            _pointer_stamps(lambda i, t, s: s[i - 1] - 1000 if i == 5 else None),
            MCAP, (POINTERS, 'decreas')),
    Refused('pointer stamps duplicated',
            _pointer_stamps(lambda i, t, s: s[i - 1] if i == 5 else None),
            MCAP, (POINTERS, 'twice')),
    Refused('pointer after 2038',
            _pointer_stamps(lambda i, t, s: AFTER_2038_NS if i == len(s) - 1 else None),
            MCAP, (POINTERS, '2038')),
    # the tracking status: JSON with per-body validity, never a status word
    Refused('tracking status a word', _status_text(lambda _: 'tracked'), MCAP,
            (TRACKING, 'message 3', 'JSON')),
    Refused('tracking status without a body', _status_text(_without('left_aim')), MCAP,
            (TRACKING, 'message 3', 'left_aim')),
    Refused('tracking status without inputs', _status_text(_without('input')), MCAP,
            (TRACKING, 'input')),
    # the camera-info YAML: every value checked, named with its key
    Refused('camera info missing', _delete(CAM), CAM, ('missing',)),
    Refused('camera info not yaml', _write(CAM, b'width: [320\n'), CAM, ('YAML',)),
    Refused('camera info not utf-8', _write(CAM, b'width: 320\nnote: \xff\xfe\n'), CAM,
            ('UTF-8',)),
    Refused('camera info a list', _write(CAM, b'- 320\n- 200\n'), CAM, ('mapping',)),
    Refused('camera info k scalar', _cam('k', 5), CAM, ("'k'", '9')),
    Refused('camera info k 8 numbers', _cam('k', [1.0] * 8), CAM, ("'k'", '9')),
    Refused('camera info k NaN', _cam('k', [math.nan] + [1.0] * 8), CAM, ("'k'", 'finite')),
    Refused('camera info k strings', _cam('k', ['a'] * 9), CAM, ("'k'", 'number')),
    Refused('camera info width string', _cam('width', 'wide'), CAM, ("'width'",)),
    Refused('camera info width 0', _cam('width', 0), CAM, ("'width'", 'positive')),
    Refused('camera info height negative', _cam('height', -200), CAM, ("'height'", 'positive')),
    Refused('camera info p 5 numbers', _cam('p', [1.0] * 5), CAM, ("'p'", '12')),
    Refused('camera info p 13 numbers', _cam('p', [1.0] * 13), CAM, ("'p'", '12')),
    Refused('camera info r 4 numbers', _cam('r', [1.0] * 4), CAM, ("'r'", '9')),
    Refused('camera info d not a list', _cam('d', 'none'), CAM, ("'d'",)),
    Refused('camera info unknown distortion', _cam('distortion_model', 'fisheye9'), CAM,
            ("'distortion_model'", 'fisheye9')),
    Refused('camera info without k', _cam_drop('k'), CAM, ("'k'", 'missing')),
    Refused('camera info 100000x100000 for a 320x200 video',
            _yaml_edit(CAM, lambda d: d.update(width=100000, height=100000)), CAM,
            ('100000x100000', MP4.format('left'), '320x200', 'aspect ratio')),
    # annotation and flag times
    Refused('annotations not yaml', _write(ANNOTATIONS, b'annotations: [\n'), ANNOTATIONS,
            ('YAML',)),
    Refused('annotation time NaN', _annotation_time(math.nan), ANNOTATIONS, ('time',)),
    Refused('annotation time inf', _annotation_time(math.inf), ANNOTATIONS, ('time',)),
    Refused('annotation time 1e19', _annotation_time(10**19), ANNOTATIONS, ('time',)),
    Refused('annotation after 2038', _annotation_time(AFTER_2038_NS), ANNOTATIONS,
            ('time', '2038')),
    Refused('flag time a word', _yaml_edit(FLAGS, lambda d: d['flags'][0].__setitem__(
        'time', 'yesterday')), FLAGS, ('time',)),
    # URDFs that cannot be right
    Refused('urdf mimic loop', _urdf_edit('<joint name="left_left_finger" type="revolute">',
                                          '<joint name="left_left_finger" type="revolute">'
                                          '<mimic joint="left_right_finger"/>'),
            URDF, ('mimic', 'left_left_finger')),
    Refused('urdf mimics itself', _urdf_edit(MIMIC, '<mimic joint="left_right_finger"/>'),
            URDF, ('mimic', 'left_right_finger')),
    Refused('urdf mimics no joint', _urdf_edit(MIMIC, '<mimic joint="no_such_joint"/>'),
            URDF, ('mimic', 'no_such_joint')),
    # options that point at the wrong thing
    Refused('image scale 1e6', None, '--image-scale', ('1e+06',), args=('--image-scale', '1e6')),
    Refused('image scale 0', None, '--image-scale', (), args=('--image-scale', '0')),
    # a video camera scaled below one pixel: refused, not written as 2x2 images (issue 39)
    Refused('image scale that leaves less than a pixel', None, '--image-scale',
            ('less than one pixel', '320x200'), args=('--image-scale', '1e-9')),
    Refused('unknown topic', None, '--topics', ('/no/such/topic',),
            args=('--topics', '/no/such/topic'), commands=('convert',)),
    Refused('option of another kind', None, '--segment', ('react',), args=('--segment', '1')),
    # outputs that would lose or touch something
    Refused('empty output', None, '-o', ('empty',), commands=('convert',), output=''),
    Refused('output inside the input', None, '', ('inside',), commands=('convert',),
            output='{input}/bag'),
    Refused('output is the input', None, '', ('input',), args=('--overwrite',),
            commands=('convert',), output='{input}'),
    Refused('output holds the input', None, '', ('input',), args=('--overwrite',),
            commands=('convert',), output='{input}/..'),
]


def _skew_quaternion(ep: Path) -> None:
    seen = {'n': 0}

    def skew(topic: str, msg: Any) -> Any:
        if topic == POSE:
            seen['n'] += 1
            if seen['n'] in (3, 4):
                msg.pose.orientation.w *= 1.5
        return msg
    rewrite_mcap(ep / MCAP, skew)


def _calibrated_at_twice(d: dict[str, Any]) -> None:
    d.update(width=d['width'] * 2, height=d['height'] * 2,
             k=[v * 2 if i in (0, 2, 4, 5) else v for i, v in enumerate(d['k'])],
             p=[v * 2 if i in (0, 2, 5, 6) else v for i, v in enumerate(d['p'])])


def _left_info_fits_the_video(bag: Path) -> None:
    """CameraInfo says the video's size, with K and P at the video's scale."""
    from rosbags.highlevel import AnyReader
    with AnyReader([bag]) as reader:
        conns = [c for c in reader.connections if c.topic == '/left/camera_info']
        _, _, raw = next(reader.messages(connections=conns))
        info = reader.deserialize(raw, conns[0].msgtype)
    assert (info.width, info.height) == (320, 200)
    # the sample's calibration puts the principal point near the centre (kinds/umi/sample.py)
    assert abs(info.k[2] - 160) < 1 and abs(info.k[5] - 100) < 1, info.k
    assert abs(info.p[2] - 160) < 1 and abs(info.p[6] - 100) < 1, info.p


ACCEPTED = [
    Accepted('gripper in encoder ticks', _grippers_as_ticks, (GRIPPER, 'left_left_finger',
                                                             'ticks')),
    Accepted('non-unit quaternion rows', _skew_quaternion, ('quaternion', '2')),
    Accepted('camera info calibrated at twice the video size',
             _yaml_edit(CAM, _calibrated_at_twice), ('640x400', '320x200', 'scaled by 0.5'),
             check=_left_info_fits_the_video),
]


class TestUmiKind(KindContract):
    kind = 'umi'
    # 141 poses a body; the tracking status calls 14 of the left's, 14 of the right's and 8
    # of the head's not valid: /tf 387 poses + 802 finger states
    counts = {'/left/image_raw': 121, '/center/camera_info': 119, '/joint_states': 802,
              '/left/perception_interface/pose/state': 127, '/robot_description': 1,
              '/tf': 387 + 802, '/tracking/meta_interface/tracking_status/state': 141,
              '/tracking/input/joy': 141, '/tracking/left_aim/twist': 127,
              '/tracking/head/twist': 133}
    REFUSED = REFUSED
    ACCEPTED = ACCEPTED

    @pytest.fixture(scope='class')
    @classmethod
    def source(cls, umi_episode: Path) -> Path:
        return umi_episode
