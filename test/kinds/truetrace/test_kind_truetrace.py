"""TrueTrace against the contract every kind meets (kind_contract.py), with its bad inputs.

Bad TrueTrace input, whatever its shape: one line naming the file, nothing written or
changed. The promise and how it is checked: bad_input_support.py; the contract runs the
tables (REFUSED, ACCEPTED) below. Every bad input issue 9 lists,
and the format document's known defects, through the package, the episode folder and
the HDF5 export.
"""
from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import h5py
import numpy as np
import pytest
from bad_input_support import Accepted, Refused
from kind_contract import KindContract
from truetrace_support import (EP, EXPORT, edit_json, edit_lines, refresh_manifest,
                                truetrace_package)

from react_ros.kinds.truetrace.files import IMU_COLUMNS
from react_ros.formats.video import decode_rgb

CAL = f'{EP}/calibration.json'
IMU = f'{EP}/imu.csv'
HANDS = f'{EP}/hands_3d.jsonl'
SEGMENTS = 'annotations/episode_000000_segments.jsonl'


def _calib(edit):
    return lambda root: edit_json(root / CAL, edit)


def _short_video(cam: str, drop: int = 3):
    def breaker(root: Path) -> None:
        path = root / EP / f'{cam}.mp4'
        frames = list(decode_rgb(path))[:-drop]
        with av.open(str(path), mode='w') as out:
            s = out.add_stream('libx264', rate=30, options={'preset': 'ultrafast'})
            s.width, s.height, s.pix_fmt = frames[0].shape[1], frames[0].shape[0], 'yuv420p'
            s.time_base = Fraction(1, 30)
            for i, img in enumerate(frames):
                f = av.VideoFrame.from_ndarray(img, format='rgb24')
                f.pts = i
                out.mux(s.encode(f))
            out.mux(s.encode(None))
    return breaker


def _truncate(rel: str, keep: float = 0.5):
    def breaker(root: Path) -> None:
        data = (root / rel).read_bytes()
        (root / rel).write_bytes(data[:int(len(data) * keep)])
    return breaker


def _imu_csv(edit):
    return lambda root: edit_lines(root / IMU, edit)


def _drop_column(name: str):
    def edit(i: int, line: str) -> str:
        cells = line.split(',')
        del cells[IMU_COLUMNS.index(name)]
        return ','.join(cells)
    return _imu_csv(edit)


def _hands_line(index: int, edit):
    def breaker(root: Path) -> None:
        def one(i: int, line: str) -> str:
            if i != index:
                return line
            doc = json.loads(line)
            edit(doc)
            return json.dumps(doc)
        edit_lines(root / HANDS, one)
    return breaker


def _h5(edit):
    def breaker(root: Path) -> None:
        with h5py.File(root / EXPORT, 'r+') as f:
            edit(f)
    return breaker


def _replace_dataset(name: str, value):
    def edit(f) -> None:
        del f[name]
        f[name] = value
    return edit


def _embedded_cam0(damage):
    """cam0 as the export's embedded JPEGs (its mp4 gone), frame i passed through `damage`."""
    def breaker(root: Path) -> None:
        import io

        from PIL import Image
        frames = []
        for i, img in enumerate(decode_rgb(root / EP / 'cam0.mp4')):
            buf = io.BytesIO()
            Image.fromarray(img).save(buf, 'JPEG', quality=95)
            frames.append(np.frombuffer(damage(i, buf.getvalue()), dtype=np.uint8))
        with h5py.File(root / EXPORT, 'r+') as f:
            ds = f.create_dataset('frames/cam0', (len(frames),), dtype=h5py.vlen_dtype(np.uint8))
            for i, data in enumerate(frames):
                ds[i] = data
            f['video/cam0'].attrs['file'] = 'gone/cam0.mp4'
    return breaker


def _scan_start(jpeg: bytes) -> int:
    sos = jpeg.index(b'\xff\xda')
    return sos + 2 + int.from_bytes(jpeg[sos + 2:sos + 4], 'big')


def _scan_noise(i: int, jpeg: bytes) -> bytes:
    if i != 3:
        return jpeg
    at = _scan_start(jpeg)
    noise = np.random.default_rng(3).integers(0, 256, len(jpeg) - 2 - at, dtype=np.uint8)
    return jpeg[:at] + noise.tobytes() + jpeg[-2:]


def _scan_zeroed(i: int, jpeg: bytes) -> bytes:
    if i != 3:
        return jpeg
    at = _scan_start(jpeg) + 40
    return jpeg[:at] + bytes(64) + jpeg[at + 64:]


def _half_size(i: int, jpeg: bytes) -> bytes:
    if i != 3:
        return jpeg
    import io

    from PIL import Image
    with Image.open(io.BytesIO(jpeg)) as im:
        buf = io.BytesIO()
        im.resize((im.width // 2, im.height // 2)).save(buf, 'JPEG', quality=95)
    return buf.getvalue()


def _symlink(rel: str, to: str):
    """`rel` replaced by a symlink to `to` (relative to its folder; itself: a loop)."""
    def breaker(root: Path) -> None:
        (root / rel).unlink()
        (root / rel).symlink_to(to)
    return breaker


def _shift_times_from(frame: int, seconds: float):
    def edit(i: int, line: str) -> str:
        if i < frame:
            return line
        doc = json.loads(line)
        doc['t_s'] = round(doc['t_s'] + seconds, 6)
        return json.dumps(doc)
    return lambda root: edit_lines(root / HANDS, edit)


REFUSED = [
    Refused('verify_manifest_mismatch', _imu_csv(lambda i, s: s.replace('0', '1', 1)
                                                 if i == 5 else s),
            IMU, ('MANIFEST.sha256', 'sha256'), args=('--verify',)),
    Refused('verify_listed_file_missing', lambda r: (r / 'qc' / 'index.html').unlink(),
            'qc/index.html', ('listed in MANIFEST.sha256', 'missing'), args=('--verify',)),
    Refused('verify_episode_folder_checks_its_package', _truncate(f'{EP}/cam1.mp4', 0.99),
            f'{EP}/cam1.mp4', ('MANIFEST.sha256',), args=('--verify',), target=EP),
    Refused('cam1_shorter_than_cam0', _short_video('cam1'), f'{EP}/cam1.mp4',
            ('57 frames', 'cam0.mp4 has 60')),
    Refused('cam0_truncated', _truncate(f'{EP}/cam0.mp4'), f'{EP}/cam0.mp4', ('video',)),
    Refused('calibration_without_cam1', _calib(lambda d: d['cameras'].pop('cam1')), CAL,
            ("no camera 'cam1'",)),
    Refused('calibration_non_unit_quaternion',
            _calib(lambda d: d['extrinsics']['cam0->cam1'].update(
                q=[x * 1.3 for x in d['extrinsics']['cam0->cam1']['q']])),
            CAL, ('extrinsics cam0->cam1', 'not a unit quaternion')),
    Refused('calibration_zero_imu_quaternion',
            _calib(lambda d: d['extrinsics']['cam0->imu0'].update(q=[0, 0, 0, 0])),
            CAL, ('cam0->imu0', 'zero quaternion')),
    Refused('calibration_refined_r_not_a_rotation',
            _calib(lambda d: d['refined_stereo_extrinsics'].update(
                R=(2 * np.eye(3)).tolist())), CAL, ('refined_stereo_extrinsics', 'rotation')),
    Refused('calibration_three_distortion_numbers',
            _calib(lambda d: d['cameras']['cam0'].update(D=[0.1, 0.2, 0.3])), CAL,
            ('cameras.cam0.D', '4 numbers')),
    Refused('calibration_k_column_major',  # K written column-major (cx, cy in the last row)
            _calib(lambda d: d['cameras']['cam0'].update(K=np.array(
                d['cameras']['cam0']['K']).reshape(3, 3).T.reshape(-1).tolist())),
            CAL, ('cameras.cam0.K is not a camera matrix',)),
    Refused('calibration_other_model', _calib(lambda d: d.update(model='pinhole')), CAL,
            ("'model' is 'pinhole'",)),
    Refused('calibration_size_is_not_the_video',
            _calib(lambda d: d['cameras']['cam1'].update(width=1920, height=1080)), CAL,
            ('1920x1080', '192x108')),
    Refused('imu_offset_in_milliseconds',
            _calib(lambda d: d['imu'].update(time_offset_to_cam0_s=-0.775 * 1000)), CAL,
            ('time_offset_to_cam0_s',)),
    Refused('imu_missing_column', _drop_column('gyro_z'), IMU, ("'gyro_z' is missing",)),
    Refused('imu_non_numeric_value',
            _imu_csv(lambda i, s: s.replace(s.split(',')[3], 'n/a', 1) if i == 7 else s),
            IMU, ('line 8', "accel_y 'n/a' is not a number")),
    Refused('imu_time_goes_back',
            _imu_csv(lambda i, s: '0.5' + s[s.index(','):] if i == 9 else s),
            IMU, ('line 11', 'times must increase')),
    Refused('hands_wrong_keypoint_count',
            _hands_line(5, lambda d: d['hands'][0].update(
                keypoints_3d_cam0_m=d['hands'][0]['keypoints_3d_cam0_m'][:20])),
            HANDS, ('line 6', 'keypoints_3d_cam0_m holds 20 keypoints', '21 x 3')),
    # JSON strings of digits are no numbers (React's parquet refuses them too): numpy would
    # convert "0.12" silently.
    Refused('hands_keypoint_a_numeric_string',
            _hands_line(5, lambda d: d['hands'][0]['keypoints_3d_cam0_m'][3].__setitem__(
                0, '0.12')),
            HANDS, ('line 6', "keypoints_3d_cam0_m[3][0] must be a number, not '0.12'")),
    Refused('hands_reprojection_error_a_numeric_string',
            _hands_line(5, lambda d: d['hands'][0]['reprojection_error_px'].__setitem__(
                20, '1.5')),
            HANDS, ('line 6', "reprojection_error_px[20] must be a number, not '1.5'")),
    Refused('hands_confidence_a_numeric_string',
            _hands_line(5, lambda d: d['hands'][0].__setitem__('confidence', '0.9')),
            HANDS, ('line 6', "confidence must be a number, not '0.9'")),
    Refused('hands_unknown_label', _hands_line(3, lambda d: d['hands'][0].update(hand='L')),
            HANDS, ('line 4', "'L'")),
    Refused('hands_line_missing', lambda r: edit_lines(r / HANDS, lambda i, s:
                                                      None if i == 59 else s),
            HANDS, ('59 frames', 'cam0.mp4 has 60')),
    Refused('hands_clip_frame_out_of_order',
            _hands_line(10, lambda d: d.update(clip_frame=11)), HANDS,
            ('line 11', 'clip_frame 11')),
    Refused('hands_t_s_not_the_video_time', _shift_times_from(30, 0.05), HANDS,
            ('frame 30', 'presents it at 1.000000 s')),
    Refused('segments_outside_the_clip',
            lambda r: edit_lines(r / SEGMENTS, lambda i, s: s.replace('"end_frame": 59',
                                                                      '"end_frame": 75')),
            SEGMENTS, ('segment 1', 'outside')),
    # end_frame is inclusive (section 6): 60 in a clip of 60 frames (0..59) is outside it;
    # read as exclusive it would pass.
    Refused('segment_end_frame_is_inclusive',
            lambda r: edit_lines(r / SEGMENTS, lambda i, s: s.replace('"end_frame": 59',
                                                                      '"end_frame": 60')),
            SEGMENTS, ('segment 1', 'frames 30..60', 'outside')),
    # A calibration.json that cannot be followed is named, never "not an episode" (the
    # package and the episode folder are detected by it).
    Refused('calibration_json_a_symlink_to_itself', _symlink(CAL, 'calibration.json'), CAL,
            ('symlink loop', 'calibration.json -> calibration.json')),
    Refused('calibration_json_a_symlink_to_itself_in_the_episode_folder',
            _symlink(CAL, 'calibration.json'), CAL,
            ('symlink loop', 'calibration.json -> calibration.json'), target=EP),
    Refused('calibration_json_a_symlink_loop_of_two',
            lambda r: (_symlink(CAL, 'calib2.json')(r),
                       (r / EP / 'calib2.json').symlink_to('calibration.json')),
            CAL, ('symlink loop', 'calibration.json -> calib2.json -> calibration.json')),
    Refused('hands_jsonl_a_symlink_to_itself', _symlink(HANDS, 'hands_3d.jsonl'), HANDS,
            ('symlink loop', 'hands_3d.jsonl -> hands_3d.jsonl')),
    Refused('calibration_json_a_dangling_symlink', _symlink(CAL, 'gone.json'), CAL,
            ('symlink to gone.json', 'missing')),
    Refused('calibration_json_a_folder',
            lambda r: ((r / CAL).unlink(), (r / CAL).mkdir()), CAL, ('a folder',), target=EP),
    Refused('unknown_episode', None, 'episodes', ("no episode 'episode_000007'",),
            args=('--episode', '7')),
    Refused('export_truncated', _truncate(EXPORT, 0.6), EXPORT, ('not a readable HDF5',),
            target=EXPORT),
    Refused('export_missing_dataset', _h5(lambda f: f.__delitem__('hands/present')), EXPORT,
            ('/hands/present is missing',), target=EXPORT),
    Refused('export_keypoints_wrong_shape',
            _h5(_replace_dataset('hands/keypoints_3d_m', np.zeros((60, 2, 20, 3), 'f4'))),
            EXPORT, ('/hands/keypoints_3d_m has shape (60, 2, 20, 3)',), target=EXPORT),
    # The export's keypoints as strings of digits: numpy would convert them silently.
    Refused('export_keypoints_as_numeric_strings',
            _h5(lambda f: _replace_dataset('hands/keypoints_3d_m', np.char.mod(
                '%.4f', f['hands/keypoints_3d_m'][()]).astype('S'))(f)),
            EXPORT, ('/hands/keypoints_3d_m', 'not numbers'), target=EXPORT),
    Refused('export_calibration_without_camera',
            _h5(lambda f: f['calibration'].attrs.__setitem__('json', json.dumps(
                {**json.loads(f['calibration'].attrs['json']), 'cameras': {}}))),
            EXPORT, ('/calibration attribute json', "no camera 'cam0'"), target=EXPORT),
    Refused('export_names_a_missing_mp4',
            _h5(lambda f: f['video/cam1'].attrs.__setitem__('file', 'nowhere/cam1.mp4')),
            'export/nowhere/cam1.mp4', ('missing',), target=EXPORT),
    Refused('episode_given_for_the_export', None, EXPORT, ('--episode', 'one episode'),
            args=('--episode', '0'), target=EXPORT),
    # An embedded frame that does not decode cleanly shows only when decoded: convert refuses.
    Refused('export_jpeg_scan_is_noise', _embedded_cam0(_scan_noise), EXPORT,
            ('/frames/cam0[3]', 'JPEG'), target=EXPORT, commands=('convert',),
            warned=('embedded /frames/cam0',)),
    Refused('export_jpeg_scan_zeroed', _embedded_cam0(_scan_zeroed), EXPORT,
            ('/frames/cam0[3]', 'does not decode cleanly'), target=EXPORT,
            commands=('convert',), warned=('embedded /frames/cam0',)),
    Refused('export_jpeg_of_half_size', _embedded_cam0(_half_size), EXPORT,
            ('/frames/cam0[3] is 96x54', '192x108'), target=EXPORT),
    Refused('verify_export_without_manifest', lambda r: (r / 'MANIFEST.sha256').unlink(),
            EXPORT, ('--verify', 'no MANIFEST.sha256'), args=('--verify',), target=EXPORT),
]

def _left_hand_not_at_frame_7(bag: Path) -> None:
    """The NaN hand is off the wire: one left-hand message fewer, and no NaN anywhere."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    (mcap,) = sorted(bag.glob('*.mcap'))
    stamps, nans = [], 0
    with open(mcap, 'rb') as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _, _, message, msg in reader.iter_decoded_messages(topics=['/hands/left/keypoints']):
            stamps.append(message.log_time)
            nans += sum(not np.isfinite([p.position.x, p.position.y, p.position.z]).all()
                        for p in msg.poses)
    assert nans == 0
    assert 1_000_000_000 + round(7 / 30 * 1e9) not in stamps
    assert len(stamps) == 50  # 51 left hands in the sample


def _both_left_hands_at_frame_8(bag: Path) -> None:
    """Frame 8 lists two Left hands (the right one mislabelled): neither is dropped. The
    more confident is /hands/left/keypoints and left_hand; the other left_hand_2 on the
    markers; each with its confidence as text; the frame is flagged on /annotations."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    (mcap,) = sorted(bag.glob('*.mcap'))
    (hands,) = (bag.parent / 'input').glob(f'*/{HANDS}')  # bad_input_support's copy
    line = json.loads(hands.read_text().splitlines()[8])
    t8 = 1_000_000_000 + 8 * 1_000_000_000 // 30
    got: dict[str, list] = {}
    with open(mcap, 'rb') as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _, ch, message, msg in reader.iter_decoded_messages(
                topics=['/hands/left/keypoints', '/hands/right/keypoints', '/hands/markers',
                        '/annotations']):
            if message.log_time == t8:
                got.setdefault(ch.topic, []).append(msg)
    assert '/hands/right/keypoints' not in got  # no hand is labelled Right at frame 8
    (left,) = got['/hands/left/keypoints']
    (markers,) = got['/hands/markers']
    by = {(m.ns, m.id): m for m in markers.markers}
    first, second = by[('left_hand', 0)], by[('left_hand_2', 0)]
    assert first.action == second.action == 0 and len(second.points) == 21
    pts = np.array([[p.position.x, p.position.y, p.position.z] for p in left.poses])
    np.testing.assert_array_equal(pts, [[p.x, p.y, p.z] for p in first.points])
    assert not np.allclose(pts, [[p.x, p.y, p.z] for p in second.points], atol=0.01)
    texts = [by[('left_hand', 2)].text, by[('left_hand_2', 2)].text]
    conf = [float(x.split()[1]) for x in texts]
    assert all(x.startswith('Left ') for x in texts) and conf[0] >= conf[1]
    assert by[('right_hand_2', 0)].action == 2  # DELETE: no second Right
    (flag,) = [json.loads(m.data) for m in got['/annotations']
               if json.loads(m.data)['type'] == 'hand_label_twice']
    assert flag['clip_frame'] == 8 and flag['source_frame'] == 308
    assert [h['confidence'] for h in flag['hands']] == conf
    assert sorted(h['confidence'] for h in line['hands']) == sorted(conf)


def _quaternion_wxyz_without_refined(doc: dict) -> None:
    # The documented x, y, z, w stored as w, x, y, z, and no refined values to fall back on.
    doc.pop('refined_stereo_extrinsics')
    q = doc['extrinsics']['cam0->cam1']['q']
    doc['extrinsics']['cam0->cam1']['q'] = [q[3], q[0], q[1], q[2]]


def _accel_and_gyro_swapped(i: int, line: str) -> str:
    if i == 0:
        return line  # the documented header stays: the values are under the wrong names
    v = line.split(',')
    return ','.join(v[:2] + v[5:8] + v[2:5])


BOM = b'\xef\xbb\xbf'
# Every text file the kind reads as CSV or JSON (the export's are HDF5 attributes).
TEXT_FILES = (IMU, CAL, HANDS, SEGMENTS, 'qc/refined_extrinsics.json', 'qc/metrics.json')


def _with_bom(*rels: str, manifest: bool = False):
    """Each file as a spreadsheet's "CSV UTF-8" saves it: a byte-order mark first; the
    manifest rewritten to match and given one too."""
    def breaker(root: Path) -> None:
        for rel in rels:
            (root / rel).write_bytes(BOM + (root / rel).read_bytes())
        if manifest:
            refresh_manifest(root)
            (root / 'MANIFEST.sha256').write_bytes(BOM + (root / 'MANIFEST.sha256').read_bytes())
    return breaker


def _read_as_without_bom(bag: Path) -> None:
    """The BOM changed nothing: every topic has the sample's count, the first IMU sample is
    the file's first row, and the CameraInfo's K is the calibration's."""
    import csv

    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    (mcap,) = sorted(bag.glob('*.mcap'))
    (root,) = (bag.parent / 'input').glob('*')  # bad_input_support's copy
    rows = list(csv.DictReader((root / IMU).read_text(encoding='utf-8-sig').splitlines()))
    calib = json.loads((root / CAL).read_text(encoding='utf-8-sig'))
    counts: dict[str, int] = {}
    first: dict[str, Any] = {}
    with open(mcap, 'rb') as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _, ch, _, msg in reader.iter_decoded_messages():
            counts[ch.topic] = counts.get(ch.topic, 0) + 1
            first.setdefault(ch.topic, msg)
    assert {t: counts.get(t) for t in TestTrueTraceKind.counts} == TestTrueTraceKind.counts
    a = first['/imu/data'].linear_acceleration
    assert [a.x, a.y, a.z] == [float(rows[0][f'accel_{x}']) for x in 'xyz']
    np.testing.assert_allclose(first['/cam0/camera_info'].k, calib['cameras']['cam0']['K'])


ACCEPTED = [
    # A byte-order mark is read as CSV readers do (utf-8-sig), never as part of 't_s'.
    Accepted('imu_csv_starts_with_a_bom', _with_bom(IMU),
             ('imu.csv', 'byte-order mark', 'read without it'), check=_read_as_without_bom),
    # calibration.json without refined values: qc/refined_extrinsics.json is read too.
    Accepted('every_text_file_starts_with_a_bom',
             lambda r: (_calib(lambda d: d.pop('refined_stereo_extrinsics'))(r),
                        _with_bom(*TEXT_FILES, manifest=True)(r)),
             ('byte-order mark', 'imu.csv', 'calibration.json', 'hands_3d.jsonl',
              'episode_000000_segments.jsonl', 'refined_extrinsics.json', 'metrics.json',
              'MANIFEST.sha256'),
             args=('--verify',), check=_read_as_without_bom),
    Accepted('calibration_quaternion_wxyz',
             lambda r: (_calib(_quaternion_wxyz_without_refined)(r),
                        (r / 'qc' / 'refined_extrinsics.json').unlink(missing_ok=True)),
             ('calibration.json', 'conformance check failed', 'turned 179',
              'as w, x, y, z turns cam1 0.')),
    Accepted('imu_at_half_the_stated_rate',  # every other row lost: ~238 Hz, not 476.87
             _imu_csv(lambda i, s: s if i == 0 or i % 2 else None),
             ('imu.csv', 'samples/s, calibration says imu.rate_hz 476.87')),
    Accepted('imu_accel_and_gyro_swapped', _imu_csv(_accel_and_gyro_swapped),
             ('imu.csv', 'conformance check failed', '|accel|')),
    Accepted('hand_with_nan_keypoints_dropped',
             _hands_line(7, lambda d: d['hands'][0]['keypoints_3d_cam0_m'][3].__setitem__(
                 0, float('nan'))),
             ('/hands/left/keypoints', '1 pose(s) not published', 'NaN'),
             check=_left_hand_not_at_frame_7),
    Accepted('one_label_twice_publishes_both_and_flags_the_frame',
             _hands_line(8, lambda d: d['hands'].__setitem__(1, {**d['hands'][1],
                                                                 'hand': 'Left'})),
             ('hands_3d.jsonl', 'one hand label twice', 'both hands are published'),
             check=_both_left_hands_at_frame_8),
]


class TestTrueTraceKind(KindContract):
    kind = 'truetrace'
    counts = {'/cam0/image_raw': 60, '/cam1/camera_info': 60, '/imu/data': 953,
              '/hands/left/keypoints': 51, '/hands/markers': 60, '/tf_static': 1,
              '/annotations': 5, '/hands/right/keypoints_triangulated': 48,
              '/hands/left/keypoints_2d': 51}
    REFUSED = REFUSED
    ACCEPTED = ACCEPTED

    @pytest.fixture(scope='class')
    @classmethod
    def source(cls, tmp_path_factory: pytest.TempPathFactory) -> Path:
        return truetrace_package(tmp_path_factory)
