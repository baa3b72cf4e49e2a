"""TrueTrace stereo egocentric episodes: fisheye stereo mp4s, a ~477 Hz IMU, 3D hands.

Three ways in, one set of messages: the package root (`episodes/episode_NNNNNN/`,
`--episode` picks one, the only one by default), one episode folder, or the
single-file HDF5 export (its mp4s named relative to the .h5's folder).

Time base: stamp = time_base_ns (config.yaml beside this file, 1 s) + the clip time. cam0
frame i and cam1 frame i are both stamped at cam0.mp4's presentation time of frame i (the
video is the clock: files write t_s rounded, and t_s must agree with it within
max_pts_mismatch_frames); the hands of clip_frame i at exactly that stamp; an IMU row with
t_s + time_offset_to_cam0_s (the IMU clock moved onto cam0's: a negative offset
means the IMU's clock runs ahead of cam0's). source_frame is information (`info`),
never a stamp.

Invalid poses: an extrinsic with a NaN or a non-unit quaternion refuses the episode
(a calibration is one piece: no frame would be right without it); a hand whose
keypoints hold NaN or infinite values is not published in that frame (dropped,
counted, one warning per hand).
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterator, cast

import numpy as np
from geometry_msgs.msg import Point, Pose, PoseArray
from sensor_msgs.msg import Imu
from std_msgs.msg import ColorRGBA, String
from visualization_msgs.msg import ImageMarker, Marker, MarkerArray

from react_ros.adapters.base import Episode, EpisodeOptions, EpisodeRef
from react_ros.adapters.poses import FAULTS, PosePolicy, PoseRule
from react_ros.adapters.still_frames import still_camera_streams
from react_ros.adapters.video_streams import video_camera_streams
from react_ros.errors import DatasetFormatError, FrameSyncError
from react_ros.formats import video
from react_ros.formats.times import check_ns, seconds_to_ns
from react_ros.kinds.truetrace.files import (
    CAMERAS,
    EPISODE_RE,
    H5_SUFFIXES,
    HANDS,
    JOINTS,
    Calibration,
    ExtraHand,
    HandFrames,
    ImuSamples,
    chunks,
    decode_jpeg_frames,
    has_bom,
    jpeg_frame_sizes,
    not_a_file,
    parse_refined,
    read_calibration,
    read_h5_export,
    read_hands_jsonl,
    read_imu_csv,
    read_segments_jsonl,
    read_text,
    read_verdicts,
    verify_manifest,
)
from react_ros.kinds.truetrace.geometry import (
    MAX_CHECK_FRAMES,
    conformance_lines,
    extrinsics,
    gyro_against_accel,
    imu_frame_join,
    reprojection,
)
from react_ros.kinds.truetrace.rectify import rectification
from react_ros.ros.msgs import stamp
from react_ros.ros.tf import tf_message, transform_stamped
from react_ros.streams import Stream
from react_ros.kinds.truetrace.kind import KIND, TrueTraceOptions

# The 21-point hand: wrist to each finger's base, then along each finger.
BONES = [(0, 1), (1, 2), (2, 3), (3, 4), (0, 5), (5, 6), (6, 7), (7, 8), (0, 9), (9, 10),
         (10, 11), (11, 12), (0, 13), (13, 14), (14, 15), (15, 16), (0, 17), (17, 18),
         (18, 19), (19, 20), (5, 9), (9, 13), (13, 17)]


@dataclass
class _Source:
    """One episode, whichever way it was given."""
    calib: Calibration
    hands: HandFrames
    imu: ImuSamples
    videos: dict[str, Path]
    segments: list[dict[str, Any]]
    segments_path: Path | None
    time_from: str  # what the frame times were read from, for messages
    source_offset: int | None  # source_frame - clip_frame, where the files say
    jpeg_frames: dict[str, int] = field(default_factory=dict)  # the export's /frames/camN
    per_frame_action: list[str] | None = None  # the export's /annotations/per_frame_action


@dataclass(frozen=True)
class _JpegFrames:
    """A camera whose frames are the HDF5 export's embedded JPEGs (no mp4 beside it)."""
    path: Path  # the .h5
    cam: str
    frame_count: int
    width: int
    height: int


def package_root(path: Path) -> Path | None:
    """The folder holding MANIFEST.sha256 / annotations/ for this episode, if any."""
    p = path.resolve()
    for cand in [p, *p.parents[:3]]:
        if (cand / 'MANIFEST.sha256').is_file() or (cand / 'episodes').is_dir():
            return cand
    return None


def _episode_dirs(root: Path) -> list[Path]:
    eps = root / 'episodes'
    return sorted(p for p in eps.iterdir() if p.is_dir() and EPISODE_RE.match(p.name))


class TrueTraceAdapter:
    kind: ClassVar[str] = 'truetrace'

    @classmethod
    def probe(cls, path: Path) -> bool:
        """Whether `path` is ours. A folder laid out as ours whose calibration.json (or
        hands_3d.jsonl, cam0.mp4) is there but no file (a symlink loop, a dangling link, a
        folder) is refused naming it: answering False would call it no dataset at all."""
        try:
            path = Path(path)
            if path.is_file():
                return path.suffix.lower() in H5_SUFFIXES and _is_export(path)
            if (path / 'episodes').is_dir():
                calibs = [p / 'calibration.json' for p in _episode_dirs(path)]
                if any(c.is_file() for c in calibs):
                    return True
                _refuse_not_a_file(calibs)
                return False
            need = [path / 'calibration.json']
            either = [path / 'hands_3d.jsonl', path / 'cam0.mp4']
            if not (os.path.lexists(need[0]) and any(os.path.lexists(p) for p in either)):
                return False
            if need[0].is_file() and any(p.is_file() for p in either):
                return True
            _refuse_not_a_file(need + either)
            return False
        except (OSError, ValueError):
            return False

    def __init__(self, path: Path, options: EpisodeOptions) -> None:
        self.path = Path(path)
        self.options = options
        self.own: TrueTraceOptions = options.own or TrueTraceOptions()  # type: ignore[assignment]
        self.config = KIND.config()
        self.frames: dict[str, str] = self.config['frames']
        self.warnings: list[str] = []
        self.report: list[str] = []
        self.texts: list[Path] = []  # the text files read, for the byte-order mark's warning

    # -- validation, all before any stream exists ----------------------------------------
    def open(self) -> Episode:
        if not self.probe(self.path):
            raise DatasetFormatError(self.path, 'not a TrueTrace package, episode folder or '
                                     'HDF5 export (needs episodes/episode_NNNNNN/, '
                                     'calibration.json + hands_3d.jsonl, or an .h5 with '
                                     '/time/t_s and /calibration)')
        if self.own.verify:
            self._verify()
        src = self._read()
        self.src = src
        self.pose_rule = PoseRule(PosePolicy(float(self.config['max_quaternion_norm_error'])),
                                  self.warnings)
        self._check_extrinsics(src.calib)
        self.ext = extrinsics(src.calib)
        self.rect = rectification(src.calib.cameras['cam0'], src.calib.cameras['cam1'],
                                  self.ext.cam1)
        self.videos = self._check_videos(src)
        base = int(self.config['time_base_ns'])
        what = src.time_from
        self.t_s_ns = np.array([check_ns(base + seconds_to_ns(t, src.hands.path, f'{what} {t}'),
                                         src.hands.path, f'{what} {t}') for t in src.hands.t_s],
                               dtype=np.int64)
        self.t_ns = self._frame_stamps(src)
        offset = src.calib.imu_offset_s
        imu_t = src.imu.t_s + offset
        self.imu_ns = np.array([base + seconds_to_ns(t, src.imu.path, 'IMU t_s') for t in imu_t],
                               dtype=np.int64)
        check_ns(int(self.imu_ns.min()), src.imu.path,
                 f'IMU t_s {src.imu.t_s[0]} + time_offset_to_cam0_s {offset}')
        check_ns(int(self.imu_ns.max()), src.imu.path, f'IMU t_s {src.imu.t_s[-1]}')
        self._check_imu_rate(src)
        self.hand_ok = self._check_hands(src.hands)
        tri = src.hands.triangulated  # the folder's raw stereo points (not in the export)
        self.tri_ok = self.hand_ok & (np.all(np.isfinite(tri), axis=(2, 3)) if tri is not None
                                      else False)
        self.extra = self._extra_hands(src.hands)
        self.segment_items = sorted(self._segments(src) + self._label_flags(src),
                                    key=lambda x: x[0])
        self._reports(src)
        self._note_boms()
        times = [int(self.t_ns[0]), int(self.t_ns[-1]), int(self.imu_ns[0]), int(self.imu_ns[-1])]
        times += [t for t, _ in self.segment_items]
        self.start_ns, self.end_ns = min(times), max(times)
        return Episode(kind=self.kind, path=self.path, start_ns=self.start_ns,
                       end_ns=self.end_ns, streams=self._streams(), warnings=self.warnings,
                       report=self.report, invalid_poses=self.pose_rule.counts)

    def _package_root(self) -> Path | None:
        return package_root(self.path)

    def _note_boms(self) -> None:
        """One warning naming the files that began with a byte-order mark (read without it):
        the format document's files show none, so another tool has saved these since."""
        root = self._package_root()
        names = [p.relative_to(root).as_posix() if root and p.is_relative_to(root) else p.name
                 for p in dict.fromkeys(self.texts) if has_bom(p)]
        if names:
            verb = 'start' if len(names) > 1 else 'starts'
            self.warnings.append(f'{", ".join(names)}: {verb} with a UTF-8 byte-order mark '
                                 '(not in the format document; a spreadsheet\'s "CSV UTF-8" '
                                 'writes one): read without it, as CSV readers do')

    def _verify(self) -> None:
        root = self._package_root()
        if root is None or not (root / 'MANIFEST.sha256').is_file():
            raise DatasetFormatError(self.path, '--verify: no MANIFEST.sha256 in this folder '
                                     'or the package around it to verify against')
        self.texts.append(root / 'MANIFEST.sha256')
        self.warnings += verify_manifest(root)
        self.report.append(f'verified: every file MANIFEST.sha256 lists matches '
                           f'({root / "MANIFEST.sha256"})')

    def _episode_folder(self) -> Path:
        if not (self.path / 'episodes').is_dir():
            if self.options.episode:
                raise DatasetFormatError(self.path, f'--episode {self.options.episode}: this is '
                                         'one episode folder, not a package root')
            return self.path
        # An episode whose calibration.json is there but unreadable is one: picked, it is
        # refused naming the file; skipped, another would be opened in its place.
        eps = [p for p in _episode_dirs(self.path) if os.path.lexists(p / 'calibration.json')]
        names = [p.name for p in eps]
        want = self.options.episode
        if want is None:
            if len(eps) == 1:
                return eps[0]
            raise DatasetFormatError(self.path, f'the package holds {len(eps)} episodes; choose '
                                     f'one with --episode (e.g. --episode {names[0]})')
        if want.isdigit():
            want = f'episode_{int(want):06d}'
        if want not in names:
            shown = ', '.join(names[:5]) + (' ...' if len(names) > 5 else '')
            raise DatasetFormatError(self.path / 'episodes', f'no episode {want!r} '
                                     f'(it holds {shown})')
        return self.path / 'episodes' / want

    def _read(self) -> _Source:
        if self.path.is_file():
            if self.options.episode:
                raise DatasetFormatError(self.path, f'--episode {self.options.episode}: an '
                                         'HDF5 export holds one episode')
            x = read_h5_export(self.path)
            return _Source(x.calibration, x.hands, x.imu, x.videos, x.segments, None,
                           '/time/t_s', None, x.jpeg_frames, x.per_frame_action)
        folder = self._episode_folder()
        self.episode_name = folder.name
        self.texts += [folder / n for n in ('calibration.json', 'hands_3d.jsonl', 'imu.csv')]
        calib = read_calibration(folder / 'calibration.json')
        if calib.refined is None:
            qc = self._package_root()
            path = qc / 'qc' / 'refined_extrinsics.json' if qc else None
            if path is not None and path.is_file():
                self.texts.append(path)
                try:
                    doc = json.loads(read_text(path))
                except json.JSONDecodeError as exc:
                    raise DatasetFormatError(path, f'not valid JSON ({exc.msg})') from None
                calib.refined = parse_refined(doc, path, '')
                calib.refined_from = 'qc/refined_extrinsics.json'
        hands = read_hands_jsonl(folder / 'hands_3d.jsonl')
        self.warnings += hands.warnings
        imu = read_imu_csv(folder / 'imu.csv')
        segments: list[dict[str, Any]] = []
        seg_path = None
        root = self._package_root()
        if root is not None and EPISODE_RE.match(folder.name):
            seg_path = root / 'annotations' / f'{folder.name}_segments.jsonl'
            if seg_path.is_file():
                self.texts.append(seg_path)
                segments = read_segments_jsonl(seg_path)
            else:
                seg_path = None
        assert hands.source_frame is not None and hands.clip_frame is not None
        offsets = np.unique(hands.source_frame - hands.clip_frame)
        if len(offsets) > 1:
            self.warnings.append(f'hands_3d.jsonl: source_frame - clip_frame is not constant '
                                 f'({offsets.min()}..{offsets.max()}): the clip has cuts')
        return _Source(calib, hands, imu, {c: folder / f'{c}.mp4' for c in CAMERAS}, segments,
                       seg_path, 'hands_3d.jsonl t_s', int(offsets[0]))

    def _check_extrinsics(self, calib: Calibration) -> None:
        # The one pose rule, refusing every fault: a calibration is one piece.
        rule = PoseRule(PosePolicy(float(self.config['max_quaternion_norm_error']),
                                   frozenset(FAULTS)))
        for key, (t, q) in calib.factory.items():
            rule.check(f'{calib.where}extrinsics {key}', np.concatenate([t, q])[None],
                       calib.path, unit='entry')

    def _check_videos(self, src: _Source) -> dict[str, video.VideoInfo | _JpegFrames]:
        infos = {c: self._jpeg(src, c) if c in src.jpeg_frames and not src.videos[c].is_file()
                 else video.probe(src.videos[c]) for c in CAMERAS}
        n0, n1 = infos['cam0'].frame_count, infos['cam1'].frame_count
        if n1 != n0:
            raise FrameSyncError(src.videos['cam1'], f'{n1} frames but cam0.mp4 has {n0}: frame '
                                 'i of cam0 pairs with frame i of cam1, so both need every frame')
        if src.hands.n != n0:
            raise FrameSyncError(src.hands.path, f'{src.hands.n} frames ({src.time_from}) but '
                                 f'{src.videos["cam0"].name} has {n0}')
        for c in CAMERAS:
            cam, info = src.calib.cameras[c], infos[c]
            if (cam.width, cam.height) != (info.width, info.height):
                raise DatasetFormatError(src.calib.path, f'{src.calib.where}cameras.{c} is '
                                         f'calibrated at {cam.width}x{cam.height} but '
                                         f'{info.path.name} is {info.width}x{info.height}')
        return infos

    def _jpeg(self, src: _Source, cam: str) -> _JpegFrames:
        """The export's embedded JPEGs of `cam`, used where the mp4 it names is absent."""
        first = next(decode_jpeg_frames(self.path, cam), None)
        if first is None:
            raise DatasetFormatError(self.path, f'/frames/{cam} holds no frames')
        size = int(first.shape[1]), int(first.shape[0])
        for i, other in enumerate(jpeg_frame_sizes(self.path, cam)):
            if other != size:  # its CameraInfo would not fit it
                raise DatasetFormatError(self.path, f'/frames/{cam}[{i}] is {other[0]}x'
                                         f'{other[1]} but /frames/{cam}[0] is {size[0]}x'
                                         f'{size[1]}: one camera, one size')
        self.warnings.append(f'{self.path.name}: {src.videos[cam].name} is not there; '
                             f'{cam} from the embedded /frames/{cam} JPEGs')
        return _JpegFrames(self.path, cam, src.jpeg_frames[cam], *size)

    def _frame_stamps(self, src: _Source) -> np.ndarray:
        """Stamp of cam0 frame i (and cam1's, and the hands of clip_frame i): the video's clock.

        Files write t_s rounded (0.0333 for frame 1 at 30 fps), so the frame's time is
        cam0.mp4's presentation time, moved onto the clip timeline (frame 0 at its t_s,
        0 in every delivery seen). t_s must agree with it within the configured fraction
        of a frame: more is another clip's times, refused. Embedded JPEGs carry no
        presentation times: there /time/t_s is the clock.
        """
        if isinstance(self.videos['cam0'], _JpegFrames):
            self.clock = f'{src.time_from} (embedded JPEGs carry no presentation times)'
            return self.t_s_ns
        pts = np.array(video.frame_pts_ns(src.videos['cam0']), dtype=np.int64)
        if len(pts) != src.hands.n:  # probe counted the frames; the packets say otherwise
            self.warnings.append(f'{src.videos["cam0"].name}: {len(pts)} presentation times '
                                 f'for {src.hands.n} frames; frames stamped with {src.time_from}')
            self.clock = src.time_from
            return self.t_s_ns
        stamps = self.t_s_ns[0] + (pts - pts[0])
        step = float(np.median(np.diff(stamps))) if len(stamps) > 1 else 1e9
        limit = float(self.config['max_pts_mismatch_frames']) * step
        off = self.t_s_ns - stamps
        bad = np.abs(off) > limit
        if bad.any():
            i = int(np.argmax(bad))
            raise FrameSyncError(src.hands.path, f'frame {i}: {src.time_from} is '
                                 f'{src.hands.t_s[i]:.6f} s but {src.videos["cam0"].name} '
                                 f'presents it at {(pts[i] - pts[0]) / 1e9:.6f} s')
        worst = int(np.abs(off).max())
        self.clock = (f'{src.videos["cam0"].name} presentation times ({src.time_from} within '
                      f'{worst / 1000:.1f} us of them, tolerance {limit / 1e6:.2f} ms)')
        return stamps

    def _check_imu_rate(self, src: _Source) -> None:
        if src.imu.n < 2 or src.calib.imu_rate_hz is None:
            return
        hz = (src.imu.n - 1) / (src.imu.t_s[-1] - src.imu.t_s[0])
        stated = src.calib.imu_rate_hz
        self.imu_hz = hz
        if abs(hz / stated - 1) > 0.05:
            self.warnings.append(f'{src.imu.path.name}: {hz:.1f} samples/s, calibration says '
                                 f'imu.rate_hz {stated:g}')

    def _check_hands(self, hands: HandFrames) -> np.ndarray:
        """[N, 2] mask of the hands that are published: present with finite keypoints."""
        ok = hands.present.copy()
        finite = np.ones_like(ok)
        for a, b in chunks(hands.n):
            kp3, _, _ = hands.chunk(a, b)
            finite[a:b] = np.all(np.isfinite(kp3), axis=(2, 3))
        for h, side in enumerate(HANDS):
            rows = np.flatnonzero(ok[:, h])
            if not len(rows):
                continue
            # The pose rule, one keypoint set as one pose: NaN drops that hand's frame.
            poses = np.zeros((len(rows), 7))
            poses[:, 6] = 1.0
            poses[~finite[rows, h], 0] = np.nan
            good = self.pose_rule.check(f'/hands/{side}/keypoints', poses, hands.path,
                                        unit='frame', where=' on /hands')
            ok[rows[~good], h] = False
        return ok

    def _segments(self, src: _Source) -> list[tuple[int, str]]:
        items = []
        path = src.segments_path or src.hands.path
        for i, seg in enumerate(src.segments):
            f = seg['start_frame']
            if f >= src.hands.n or seg['end_frame'] >= src.hands.n:
                raise DatasetFormatError(path, f'segment {i}: frames {f}..{seg["end_frame"]} '
                                         f'outside the clip\'s {src.hands.n} cam0 frames')
            doc = {'type': 'segment', **seg}
            if src.hands.source_frame is not None:  # the original recording's numbering
                doc['source_start_frame'] = int(src.hands.source_frame[f])
                doc['source_end_frame'] = int(src.hands.source_frame[seg['end_frame']])
            items.append((int(self.t_ns[f]), json.dumps(doc)))
        items.sort(key=lambda x: x[0])
        return items

    def _extra_hands(self, hands: HandFrames) -> dict[tuple[int, int], ExtraHand]:
        """(row, side) -> the second hand under that label, where its keypoints are finite."""
        out: dict[tuple[int, int], ExtraHand] = {}
        for e in hands.extra:
            if not np.all(np.isfinite(e.kp3d)):
                self.warnings.append(f'{hands.path.name}: clip frame {e.row}: a second '
                                     f'{HANDS[e.side]} hand with NaN keypoints is not drawn')
            elif (e.row, e.side) not in out:  # a third one: the annotation still lists it
                out[(e.row, e.side)] = e
        return out

    def _label_flags(self, src: _Source) -> list[tuple[int, str]]:
        """One /annotations item per frame that lists a hand label twice: both hands are
        published, and which is which is a guess the user should see."""
        hands = src.hands
        by_frame: dict[int, list[ExtraHand]] = {}
        for e in hands.extra:
            by_frame.setdefault(e.row, []).append(e)
        items = []
        for row, extra in sorted(by_frame.items()):
            listed = []
            for side in sorted({e.side for e in extra}):
                assert hands.confidence is not None
                listed.append({'label': HANDS[side].capitalize(),
                               'confidence': float(hands.confidence[row, side]),
                               'published_as': f'/hands/{HANDS[side]}/keypoints, '
                                               f'{HANDS[side]}_hand on /hands/markers'})
                listed += [{'label': HANDS[side].capitalize(), 'confidence': e.confidence,
                            'published_as': f'{HANDS[side]}_hand_2 on /hands/markers'
                            if self.extra.get((row, side)) is e else 'not drawn (NaN)',
                            'keypoints_3d_cam0_m': np.round(e.kp3d.astype(float), 5).tolist()}
                           for e in extra if e.side == side]
            doc = {'type': 'hand_label_twice', 'clip_frame': row,
                   'source_frame': None if hands.source_frame is None
                   else int(hands.source_frame[row]),
                   'why': 'one label listed twice: the 2D model swapped a hand label',
                   'hands': listed}
            items.append((int(self.t_ns[row]), json.dumps(doc)))
        return items + self._crossed(hands)

    def _crossed(self, hands: HandFrames) -> list[tuple[int, str]]:
        """Frames whose Left wrist is right of the Right one in cam0 (x right): in the
        egocentric view that is most often a swapped pair of labels (format document,
        section 5). Published as labelled; flagged so a user can tell."""
        # [N, 2] -> [N]: numpy's stubs cannot tell an axis leaves an array, not a scalar
        both = cast(np.ndarray, self.hand_ok.all(axis=1))
        items = []
        for a, b in chunks(hands.n):
            kp3, _, _ = hands.chunk(a, b)
            for i in range(a, b):
                left_x, right_x = float(kp3[i - a, 0, 0, 0]), float(kp3[i - a, 1, 0, 0])
                if both[i] and left_x > right_x:
                    doc = {'type': 'hand_labels_crossed', 'clip_frame': i,
                           'source_frame': None if hands.source_frame is None
                           else int(hands.source_frame[i]),
                           'why': 'the Left wrist is right of the Right wrist in cam0 '
                                  '(x right): the 2D model may have swapped the labels; '
                                  'published as labelled',
                           'wrist_x_m': {'left': round(left_x, 5), 'right': round(right_x, 5)}}
                    items.append((int(self.t_ns[i]), json.dumps(doc)))
        return items

    def _reports(self, src: _Source) -> None:
        ext, calib = self.ext, src.calib
        if ext.source == 'refined':
            mm, deg = ext.apart or (0.0, 0.0)
            self.report.append(f'extrinsics: cam0 -> cam1 from refined stereo extrinsics '
                               f'({calib.refined_from}, X1 = R X0 + T); factory values differ '
                               f'by {mm:.2f} mm, {deg:.3f} deg')
        else:
            self.report.append('extrinsics: cam0 -> cam1 from the factory values (child pose in '
                               'cam0); no refined stereo extrinsics delivered')
        p = self.rect.p0
        self.report.append(f'rectification: CameraInfo R, P from the {ext.source} extrinsics: '
                           f'f\' {p[0, 0]:.2f} px, c\' ({p[0, 2]:.2f}, {p[1, 2]:.2f}), baseline '
                           f'{1000 * self.rect.baseline_m:.2f} mm (cam1 P Tx = -f\' B)')
        self.report.append(f'frames: stamped at {self.clock}')
        self.report.append(f'imu: stamped t_s {calib.imu_offset_s * 1000:+.3f} ms '
                           '(time_offset_to_cam0_s) onto the cam0 clock')
        if src.source_offset is not None:
            self.report.append(f'source frames: clip frame 0 is source frame '
                               f'{src.source_offset} (stamps use the clip)')
        else:
            self.report.append('source frames: not in the HDF5 export (stamps use the clip)')
        root = self._package_root() if not self.path.is_file() else None
        if root is not None and (root / 'qc' / 'metrics.json').is_file():
            self.texts.append(root / 'qc' / 'metrics.json')
            for v in read_verdicts(root / 'qc' / 'metrics.json'):
                self.report.append(f'qc: {v}')
        # Self-check from the data: up to MAX_CHECK_FRAMES frames with a kept hand.
        rows = np.flatnonzero(self.hand_ok.any(axis=1))
        if len(rows):
            rows = rows[np.unique(np.linspace(0, len(rows) - 1,
                                              min(MAX_CHECK_FRAMES, len(rows))).astype(int))]
            kp3, kp2, rep = src.hands.rows(rows)
            keep = self.hand_ok[rows]
            result = reprojection(calib.cameras['cam0'], kp3[keep], kp2[keep], rep[keep])
        else:
            result = None
        head = min(src.imu.n, 5000)
        accel, gyro = src.imu.chunk(0, head)
        norm = float(np.median(np.linalg.norm(accel, axis=1))) if len(accel) else None
        gyro_check = gyro_against_accel(src.imu.t_s[:head], accel, gyro)
        join = None
        if src.source_offset is not None:
            good, wrong = imu_frame_join(src.hands.t_s, src.imu.t_s, src.imu.frame_index,
                                         calib.imu_offset_s, src.source_offset)
            join = (src.source_offset, good, wrong)
        self.conformance = result
        failures: list[tuple[str, str]] = []
        self.report += conformance_lines(calib, ext, result, norm, join, failures, gyro_check)
        # What info reports as FAIL is said by convert and play too, naming the file.
        files = {'calibration': f'{calib.path}' + (f' ({calib.where.rstrip(": ")})'
                                                   if calib.where else ''),
                 'hands': str(src.hands.path), 'imu': str(src.imu.path)}
        for source, text in failures:
            self.warnings.append(f'{files[source]}: conformance check failed: {text}')

    # -- streams --------------------------------------------------------------------------
    def _streams(self) -> list[Stream]:
        streams = [self._tf_static()]
        for c in CAMERAS:
            streams += self._camera(c)
        streams.append(self._imu())
        streams += [self._keypoints(h) for h in range(2)]
        streams += [self._triangulated(h) for h in range(2) if self.tri_ok[:, h].any()]
        streams += [self._keypoints_2d(h) for h in range(2)]
        if self.src.per_frame_action is not None:
            streams.append(self._per_frame_action(self.src.per_frame_action))
        streams.append(self._markers())
        streams.append(self._annotations())
        return streams

    def _tf_static(self) -> Stream:
        t0 = self.start_ns
        f = self.frames
        transforms = [transform_stamped(f['cam0'], f['cam1'], t0, self.ext.cam1.t,
                                        self.ext.cam1.quat_xyzw()),
                      transform_stamped(f['cam0'], f['imu'], t0, self.ext.imu0.t,
                                        self.ext.imu0.quat_xyzw())]

        def gen() -> Iterator[tuple[int, Any]]:
            yield t0, tf_message(transforms)  # one merged message, as tf2_ros sends it
        return Stream('/tf_static', 'tf2_msgs/msg/TFMessage', gen, latched=True, count=1,
                      approx_bytes=300)

    def _camera(self, cam: str) -> list[Stream]:
        c = self.src.calib.cameras[cam]
        k = c.k.reshape(-1).tolist()
        # Raw K and D; R and P rectify the pair (rectify.py): what stereo_image_proc reads.
        r, p = (self.rect.r0, self.rect.p0) if cam == 'cam0' else (self.rect.r1, self.rect.p1)
        meta = {'width': c.width, 'height': c.height, 'k': k, 'd': c.d.tolist(),
                'distortion_model': 'equidistant', 'r': r.reshape(-1).tolist(),
                'p': p.reshape(-1).tolist()}
        # cam1 is on cam0's clock: frame i of both at cam0 frame i's stamp.
        source = self.videos[cam]
        if isinstance(source, _JpegFrames):
            return self._jpeg_streams(source, meta)
        return video_camera_streams(source, self.t_ns, f'/{cam}',
                                    self.frames[cam], meta, image_scale=self.options.image_scale)

    def _jpeg_streams(self, src: _JpegFrames, meta: dict[str, Any]) -> list[Stream]:
        """Image + CameraInfo from embedded JPEGs: frame i at stamp i, like a video's."""
        size = (src.width, src.height)
        return still_camera_streams(
            f'/{src.cam}', self.frames[src.cam], self.t_ns,
            lambda: decode_jpeg_frames(src.path, src.cam, size), size, meta,
            image_scale=self.options.image_scale, what=f'{src.path.name} /frames/{src.cam}')

    def _imu(self) -> Stream:
        imu, stamps, frame = self.src.imu, self.imu_ns, self.frames['imu']

        def gen() -> Iterator[tuple[int, Any]]:
            for a, b in chunks(imu.n, 4096):
                accel, gyro = imu.chunk(a, b)
                for i in range(b - a):
                    t = int(stamps[a + i])
                    msg = Imu()
                    msg.header.stamp = stamp(t)
                    msg.header.frame_id = frame
                    msg.orientation_covariance[0] = -1.0  # no orientation estimate
                    av, la = msg.angular_velocity, msg.linear_acceleration
                    av.x, av.y, av.z = (float(v) for v in gyro[i])
                    la.x, la.y, la.z = (float(v) for v in accel[i])
                    yield t, msg  # covariances all zero: unknown (sensor_msgs/Imu)
        return Stream('/imu/data', 'sensor_msgs/msg/Imu', gen, count=imu.n, approx_bytes=330)

    def _frames_with_hands(self) -> Iterator[tuple[int, np.ndarray]]:
        """(frame, keypoints [2, 21, 3]) for every cam0 frame, read in slices."""
        for a, b in chunks(self.src.hands.n):
            kp3, _, _ = self.src.hands.chunk(a, b)
            for i in range(b - a):
                yield a + i, kp3[i]

    def _keypoints(self, h: int) -> Stream:
        side, ok, t_ns, frame = HANDS[h], self.hand_ok[:, h], self.t_ns, self.frames['cam0']

        def gen() -> Iterator[tuple[int, Any]]:
            for i, kp in self._frames_with_hands():
                if not ok[i]:
                    continue
                msg = PoseArray()
                msg.header.stamp = stamp(int(t_ns[i]))
                msg.header.frame_id = frame
                msg.poses = [_point_pose(p) for p in kp[h]]
                yield int(t_ns[i]), msg
        return Stream(f'/hands/{side}/keypoints', 'geometry_msgs/msg/PoseArray', gen,
                      count=int(ok.sum()), approx_bytes=60 + 56 * JOINTS)

    def _triangulated(self, h: int) -> Stream:
        """keypoints_3d_triangulated_m: the raw stereo points the registered shape was
        fitted to (shape_fit_residual_mm apart), beside /hands/<side>/keypoints."""
        side, ok, t_ns, frame = HANDS[h], self.tri_ok[:, h], self.t_ns, self.frames['cam0']
        tri = self.src.hands.triangulated
        assert tri is not None

        def gen() -> Iterator[tuple[int, Any]]:
            for i in np.flatnonzero(ok):
                msg = PoseArray()
                msg.header.stamp = stamp(int(t_ns[i]))
                msg.header.frame_id = frame
                msg.poses = [_point_pose(p) for p in tri[i, h]]
                yield int(t_ns[i]), msg
        return Stream(f'/hands/{side}/keypoints_triangulated', 'geometry_msgs/msg/PoseArray',
                      gen, count=int(ok.sum()), approx_bytes=60 + 56 * JOINTS)

    def _keypoints_2d(self, h: int) -> Stream:
        """keypoints_2d_cam0_px as an ImageMarker (POINTS) on cam0's image: x, y the pixel
        of the published image (times --image-scale, as K is), z the joint's stated
        reprojection error in px of the calibrated size (-1 where the file has none)."""
        side, ok, t_ns, frame = HANDS[h], self.hand_ok[:, h], self.t_ns, self.frames['cam0']
        rgba = [float(np.float32(v)) for v in self.config['marker_colours'][side]]
        scale = self.options.image_scale

        def gen() -> Iterator[tuple[int, Any]]:
            for a, b in chunks(self.src.hands.n):
                _, kp2, rep = self.src.hands.chunk(a, b)
                for i in range(a, b):
                    if not ok[i]:
                        continue
                    m = ImageMarker()
                    m.header.stamp, m.header.frame_id = stamp(int(t_ns[i])), frame
                    m.ns, m.id, m.type, m.action = f'{side}_hand', 0, ImageMarker.POINTS, \
                        ImageMarker.ADD
                    m.scale = 2.0
                    m.outline_color = ColorRGBA(r=rgba[0], g=rgba[1], b=rgba[2], a=rgba[3])
                    m.points = [Point(x=float(uv[0]) * scale, y=float(uv[1]) * scale,
                                      z=float(e) if np.isfinite(e) else -1.0)
                                for uv, e in zip(kp2[i - a, h], rep[i - a, h])]
                    yield int(t_ns[i]), m
        return Stream(f'/hands/{side}/keypoints_2d', 'visualization_msgs/msg/ImageMarker', gen,
                      count=int(ok.sum()), approx_bytes=120 + 24 * JOINTS)

    def _per_frame_action(self, actions: list[str]) -> Stream:
        """The export's /annotations/per_frame_action, at each frame where it changes."""
        t_ns = self.t_ns
        changes = [i for i in range(len(actions)) if i == 0 or actions[i] != actions[i - 1]]

        def gen() -> Iterator[tuple[int, Any]]:
            for i in changes:
                yield int(t_ns[i]), String(data=json.dumps(
                    {'type': 'per_frame_action', 'clip_frame': i, 'action': actions[i]}))
        return Stream('/annotations/per_frame_action', 'std_msgs/msg/String', gen,
                      count=len(changes), approx_bytes=120)

    def _markers(self) -> Stream:
        ok, t_ns, frame, cfg = self.hand_ok, self.t_ns, self.frames['cam0'], self.config
        extra = self.extra
        conf = self.src.hands.confidence

        def gen() -> Iterator[tuple[int, Any]]:
            for i, kp in self._frames_with_hands():
                t = int(t_ns[i])
                out = MarkerArray()
                if not ok[i].any():
                    m = Marker()
                    m.header.stamp, m.header.frame_id = stamp(t), frame
                    m.action = Marker.DELETEALL  # no kept hand: clear what was drawn
                    out.markers = [m]
                else:
                    for h, side in enumerate(HANDS):
                        out.markers += _hand_markers(side, kp[h] if ok[i, h] else None, t, frame,
                                                     cfg)
                    if extra:  # an episode with swapped labels: both hands, with confidence
                        assert conf is not None
                        for h, side in enumerate(HANDS):
                            e = extra.get((i, h))
                            first = (None if e is None or not ok[i, h] else
                                     (kp[h], f'{side.capitalize()} {conf[i, h]:.3f}'))
                            out.markers.append(_label_marker(f'{side}_hand', first, t, frame))
                            out.markers += _hand_markers(side, None if e is None else e.kp3d,
                                                         t, frame, cfg,
                                                         ns=f'{side}_hand_2')
                            out.markers.append(_label_marker(
                                f'{side}_hand_2', None if e is None else
                                (e.kp3d, f'{side.capitalize()} {e.confidence:.3f}'), t, frame))
                yield t, out
        return Stream('/hands/markers', 'visualization_msgs/msg/MarkerArray', gen,
                      count=len(t_ns), approx_bytes=2000)

    def _annotations(self) -> Stream:
        items = self.segment_items

        def gen() -> Iterator[tuple[int, Any]]:
            for t, text in items:
                yield t, String(data=text)
        return Stream('/annotations', 'std_msgs/msg/String', gen, count=len(items),
                      approx_bytes=400)


def _refuse_not_a_file(paths: list[Path]) -> None:
    for p in paths:
        why = not_a_file(p)
        if why is not None:
            raise DatasetFormatError(p, why)


def _is_export(path: Path) -> bool:
    import h5py
    try:
        with h5py.File(path, 'r') as f:
            return 'calibration' in f and 'time/t_s' in f and 'video' in f
    except (OSError, ValueError, KeyError):
        # A damaged file claims to be an export by its name alone only when it says so.
        return 'episode_' in path.name


def _point_pose(p: np.ndarray) -> Pose:
    pose = Pose()
    pose.position.x, pose.position.y, pose.position.z = (float(v) for v in p)
    pose.orientation.w = 1.0  # keypoints have no orientation: identity
    return pose


def _label_marker(ns: str, what: tuple[np.ndarray, str] | None, t: int, frame: str) -> Marker:
    """A hand's label and confidence as text (id 2) above its wrist, or its DELETE."""
    m = Marker()
    m.header.stamp, m.header.frame_id = stamp(t), frame
    m.ns, m.id, m.type = ns, 2, Marker.TEXT_VIEW_FACING
    if what is None:
        m.action = Marker.DELETE
        return m
    kp, text = what
    m.action = Marker.ADD
    m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(v) for v in kp[0])
    m.pose.position.y -= 0.02  # above the wrist (cam0 y is down)
    m.pose.orientation.w = 1.0
    m.scale.z = 0.015
    m.color.r = m.color.g = m.color.b = m.color.a = 1.0
    m.text = text
    return m


def _hand_markers(side: str, kp: np.ndarray | None, t: int, frame: str,
                  cfg: dict[str, Any], ns: str | None = None) -> list[Marker]:
    """Joints (SPHERE_LIST, id 0) and bones (LINE_LIST, id 1) of one hand, or their DELETE."""
    out = []
    colour = ColorRGBA()
    # float32 fields: rounded here so a message equals itself after a CDR round trip.
    colour.r, colour.g, colour.b, colour.a = (float(np.float32(v))
                                              for v in cfg['marker_colours'][side])
    for mid, kind in ((0, Marker.SPHERE_LIST), (1, Marker.LINE_LIST)):
        m = Marker()
        m.header.stamp, m.header.frame_id = stamp(t), frame
        m.ns, m.id, m.type = ns or f'{side}_hand', mid, kind
        if kp is None:
            m.action = Marker.DELETE  # this hand is not kept in this frame
        else:
            m.action = Marker.ADD
            m.pose.orientation.w = 1.0
            size = float(cfg['marker_joint_m'] if mid == 0 else cfg['marker_bone_m'])
            m.scale.x = size
            m.scale.y = size if mid == 0 else 0.0
            m.scale.z = size if mid == 0 else 0.0
            m.color = colour
            idx = range(JOINTS) if mid == 0 else [j for bone in BONES for j in bone]
            m.points = [Point(x=float(kp[j][0]), y=float(kp[j][1]), z=float(kp[j][2]))
                        for j in idx]
        out.append(m)
    return out


def find_episodes(root: Path) -> list[EpisodeRef] | None:
    """Every episode folder of a package root, sorted by name; None: `root` is not one.

    `root` is a package root (its episodes/episode_NNNNNN/ folders, nothing
    deeper) or itself one episode folder (its id: the folder's name). Every
    episode_NNNNNN folder is listed, also one without calibration.json: converting
    it then says what it lacks. The HDF5 exports (format document section 8) are
    other copies of these episodes and are not listed. Sources: the episode
    folder's five files and its annotations/<episode>_segments.jsonl, and the
    package's shared qc/refined_extrinsics.json, qc/metrics.json and
    MANIFEST.sha256, those that exist. Verified (what --verify reads besides):
    every file MANIFEST.sha256 lists that exists, other episodes' included, so a
    refusal naming one of them is tried again once it is repaired.
    """
    root = Path(root)
    try:
        try:
            ours = root.is_dir() and TrueTraceAdapter.probe(root)
        except DatasetFormatError:
            ours = True  # ours with an unreadable file: converting the episode names it
        if not ours:
            return None
        if (root / 'episodes').is_dir():
            return [_ref(folder, folder.name, root) for folder in _episode_dirs(root)]
    except OSError:  # unreadable: not a package of ours, never an error
        return None
    return [_ref(root, root.resolve().name or 'episode', package_root(root))]


def _ref(folder: Path, episode_id: str, package: Path | None) -> EpisodeRef:
    files = [folder / name for name in ('calibration.json', 'hands_3d.jsonl', 'imu.csv')]
    files += [folder / f'{c}.mp4' for c in CAMERAS]
    if package is not None:
        if EPISODE_RE.match(folder.name):
            files.append(package / 'annotations' / f'{folder.name}_segments.jsonl')
        files += [package / 'qc' / 'refined_extrinsics.json', package / 'qc' / 'metrics.json',
                  package / 'MANIFEST.sha256']
    sources = tuple(p for p in files if p.is_file())
    verified = _manifest_files(package) if package is not None else ()
    return EpisodeRef(id=episode_id, path=folder, sources=sources,
                      verified=tuple(p for p in verified if p not in sources))


def _manifest_files(package: Path) -> tuple[Path, ...]:
    """The files MANIFEST.sha256 lists that exist (verify_manifest's lines); () without one.

    A manifest that cannot be read or parsed gives what it could: it is a source
    itself, and --verify refuses it by name.
    """
    try:
        text = (package / 'MANIFEST.sha256').read_text(encoding='utf-8-sig')
    except (OSError, UnicodeDecodeError):
        return ()
    found = []
    for line in text.splitlines():
        m = re.match(r'^[0-9a-fA-F]{64} [ *](.+)$', line)
        rel = Path(m.group(1).strip()) if m else None
        if rel is not None and not rel.is_absolute() and '..' not in rel.parts \
                and (package / rel).is_file():
            found.append(package / rel)
    return tuple(sorted(set(found)))


__all__ = ['BONES', 'KIND', 'TrueTraceAdapter', 'TrueTraceOptions', 'find_episodes',
           'package_root']
