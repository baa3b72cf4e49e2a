"""config/react.rviz, the launch arguments and the node parameters for a React episode.

launch and RViz are not installed here: the configs are checked as data, the node's
parameter handling as the function the node calls.
"""
from __future__ import annotations

import ast
from pathlib import Path

import yaml

from react_ros.adapters.base import EpisodeOptions
from react_ros.node import _DEFAULTS, episode_options

ROOT = Path(__file__).resolve().parents[1]


def test_react_rviz_shows_tf_cameras_forces_and_object() -> None:
    manager = yaml.safe_load((ROOT / 'config' / 'react.rviz').read_text())['Visualization Manager']
    assert manager['Global Options']['Fixed Frame'] == 'world'
    by_class: dict[str, list[str]] = {}
    for d in manager['Displays']:
        by_class.setdefault(d['Class'], []).append(d.get('Topic', {}).get('Value', ''))
    assert 'rviz_default_plugins/TF' in by_class
    # Camera displays draw the image from the optical frame of /tf_static with camera_info
    assert by_class['rviz_default_plugins/Camera'] == [f'/view_{v}/image_raw'
                                                       for v in ('left', 'middle', 'right')]
    assert by_class['rviz_default_plugins/Wrench'] == ['/sensor_left/force', '/sensor_right/force']
    assert '/object/pose' in by_class['rviz_default_plugins/Pose']
    assert by_class['rviz_default_plugins/Image'] == ['/tactile_left/image_raw',
                                                      '/tactile_right/image_raw']


def test_launch_declares_the_react_arguments() -> None:
    tree = ast.parse((ROOT / 'launch' / 'play.launch.py').read_text())
    arguments = next(n for n in tree.body if isinstance(n, ast.Assign)
                     and getattr(n.targets[0], 'id', '') == 'ARGUMENTS')
    names = {k.value for k in arguments.value.keys}  # type: ignore[attr-defined]
    assert {'episode_id', 'segment', 'skip_bad', 'tactile_latency', 'gel_axis'} <= names


def test_node_parameters_become_episode_options() -> None:
    assert episode_options(dict(_DEFAULTS)) == EpisodeOptions()
    p = dict(_DEFAULTS, episode_id='2026-05-10/episode_000', segment=2, skip_bad='true',
             tactile_latency=15, gel_axis='dual_ball', image_scale=0.5)
    assert episode_options(p) == EpisodeOptions(image_scale=0.5, episode='2026-05-10/episode_000',
                                                segment=2, skip_bad=True, tactile_latency=15,
                                                gel_axis='dual_ball')
