"""Write react_ros/kinds/<kind>/<kind>.foxglove.json: each kind's RViz config as a Foxglove layout.

    make layouts                                                 # rewrite every kind's file
    scripts/ros_env.sh python scripts/foxglove_layouts.py --check  # exit 1 if one differs

Every registered kind whose folder holds a foxglove_layout.yaml (what its RViz config
shows, as data) gets a layout; this script names no kind.

The layouts are in the format Foxglove's "Import layout" and Lichtblick's read and
"Export layout" writes (`configById` + a mosaic `layout` tree of panel ids), so a bag
opened in either, or `react-ros play --foxglove`, shows what RViz shows:

- RViz's Grid, TF, RobotModel, PointCloud2, MarkerArray and Pose displays: one 3D panel
  in the RViz config's fixed frame, at its orbit distance, with those topics visible
  (Foxglove draws TF frames by itself and a URDF from /robot_description).
- RViz's Image and Camera displays: one Image panel each, with the camera's CameraInfo
  as calibration where the kind publishes one beside it.
- What Foxglove's 3D panel does not draw: React's Wrench displays (force arrows) and
  TrueTrace's IMU display (rviz_imu_plugin) become Plot panels of the same fields.

The layouts name the raw image topics; a bag converted with `--images jpeg|png|h264`
has the images on `<topic>/compressed` or `<topic>/compressed_video` instead (pick
those in the Image panel). test/test_foxglove.py checks that every topic named here is
one the kind's sample publishes and that the files are what this script writes.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from react_ros.registry import KINDS as REGISTRY

SPEC_NAME = 'foxglove_layout.yaml'


def _spec(folder: Path) -> dict[str, Any]:
    """A kind's layout spec (its folder's foxglove_layout.yaml): the RViz config's fixed
    frame and orbit distance, the topics of its 3D displays, its image displays (title,
    image topic, CameraInfo topic or null) and plots standing in for displays Foxglove's
    3D panel lacks (title, message paths)."""
    spec = yaml.safe_load((folder / SPEC_NAME).read_text())
    return {**spec, 'images': [tuple(i) for i in spec['images']],
            'plots': [(p['title'], p['paths']) for p in spec['plots']]}


# kind -> its layout spec, for every registered kind whose folder has one
KINDS: dict[str, dict[str, Any]] = {name: _spec(kind.folder) for name, kind in REGISTRY.items()
                                    if (kind.folder / SPEC_NAME).is_file()}


def _three_d(frame: str, distance: float, scene: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        'foxglovePanelTitle': f'3D ({frame})',
        'cameraState': {'distance': distance, 'perspective': True, 'phi': 60,
                        'thetaOffset': 45, 'target': [0, 0, 0], 'targetOffset': [0, 0, 0],
                        'targetOrientation': [0, 0, 0, 1], 'fovy': 45, 'near': 0.01,
                        'far': 5000},
        'followMode': 'follow-pose',
        'followTf': frame,
        'scene': {},
        'transforms': {},
        'topics': {topic: {'visible': True, **extra} for topic, extra in scene.items()},
        'layers': {'grid': {'visible': True, 'frameLocked': True, 'label': 'Grid',
                            'instanceId': 'grid', 'layerId': 'foxglove.Grid', 'size': 10,
                            'divisions': 10, 'lineWidth': 1, 'color': '#248eff',
                            'position': [0, 0, 0], 'rotation': [0, 0, 0], 'order': 1}},
        'publish': {'type': 'point', 'poseTopic': '/move_base_simple/goal',
                    'pointTopic': '/clicked_point', 'poseEstimateTopic': '/initialpose',
                    'poseEstimateXDeviation': 0.5, 'poseEstimateYDeviation': 0.5,
                    'poseEstimateThetaDeviation': 0.26179939},
        'imageMode': {},
    }


def _image(title: str, topic: str, calibration: str | None) -> dict[str, Any]:
    mode: dict[str, Any] = {'imageTopic': topic}
    if calibration is not None:
        mode['calibrationTopic'] = calibration
    return {'foxglovePanelTitle': title, 'imageMode': mode}


def _plot(title: str, paths: list[str]) -> dict[str, Any]:
    return {
        'foxglovePanelTitle': title,
        'paths': [{'value': p, 'enabled': True, 'timestampMethod': 'headerStamp',
                   'label': p.rsplit('.', 1)[-1]} for p in paths],
        'showXAxisLabels': True, 'showYAxisLabels': True, 'showLegend': True,
        'legendDisplay': 'floating', 'showPlotValuesInLegend': True, 'isSynced': True,
        'xAxisVal': 'timestamp', 'sidebarDimension': 240,
    }


def _split(ids: list[Any], direction: str) -> Any:
    """A balanced mosaic tree of `ids`, split along `direction`."""
    if len(ids) == 1:
        return ids[0]
    mid = (len(ids) + 1) // 2
    return {'first': _split(ids[:mid], direction), 'second': _split(ids[mid:], direction),
            'direction': direction, 'splitPercentage': round(100 * mid / len(ids), 2)}


def layout(kind: str) -> dict[str, Any]:
    spec = KINDS[kind]
    config: dict[str, Any] = {f'3D!{kind}': _three_d(spec['frame'], spec['distance'],
                                                     spec['scene'])}
    images = []
    for title, topic, calibration in spec['images']:
        images.append(f'Image!{title}')
        config[images[-1]] = _image(title, topic, calibration)
    plots = []
    for i, (title, paths) in enumerate(spec['plots']):
        plots.append(f'Plot!{kind}{i}')
        config[plots[-1]] = _plot(title, paths)
    left: Any = f'3D!{kind}'
    if plots:  # the 3D panel above its plots
        left = {**_split([left, _split(plots, 'row')], 'column'), 'splitPercentage': 65}
    if len(images) > 3:  # two columns of images
        mid = (len(images) + 1) // 2
        right = _split([_split(images[:mid], 'column'), _split(images[mid:], 'column')], 'row')
    elif images:
        right = _split(images, 'column')
    tree = _split([left, right], 'row') if images else left
    return {'configById': config, 'globalVariables': {}, 'userNodes': {},
            'playbackConfig': {'speed': 1}, 'layout': tree}


def text(kind: str) -> str:
    return json.dumps(layout(kind), indent=2) + '\n'


def path(kind: str) -> Path:
    return REGISTRY[kind].folder / f'{kind}.foxglove.json'


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--check', action='store_true',
                        help='exit 1 if a file differs from what this script writes')
    args = parser.parse_args(argv)
    stale = []
    for kind in KINDS:
        if args.check:
            if not path(kind).is_file() or path(kind).read_text() != text(kind):
                stale.append(str(path(kind)))
        else:
            path(kind).write_text(text(kind))
            print(f'wrote {path(kind)}')
    if stale:
        print(f'differ from scripts/foxglove_layouts.py: {", ".join(stale)}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
