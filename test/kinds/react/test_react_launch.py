"""The React RViz config, the launch arguments and the node parameters for a React episode.

launch and RViz are not installed here: the configs are checked as data, the node's
parameter handling as the function the node calls.
"""
from __future__ import annotations

from pathlib import Path

import yaml

import pytest

from react_ros.registry import KINDS
from react_ros.adapters.base import EpisodeOptions
from react_ros.kinds.react.adapter import ReactOptions
from react_ros.errors import ReactRosError
from react_ros.launch_args import launch_arguments
from react_ros.node import episode_options, parameter_defaults

ROOT = Path(__file__).resolve().parents[3]  # test/kinds/react/ -> the repository


def test_react_rviz_shows_tf_cameras_forces_and_object() -> None:
    manager = yaml.safe_load((ROOT / 'react_ros' / 'kinds' / 'react' / 'react.rviz').read_text())['Visualization Manager']
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
    args = launch_arguments()
    assert {'episode_id', 'segment', 'skip_bad', 'tactile_latency', 'gel_axis'} <= set(args)
    assert args['segment'][0] == '' and args['gel_axis'][0] == 'local_y'
    assert args['skip_bad'][0] == 'false'


def test_node_parameters_become_episode_options() -> None:
    react = KINDS['react']
    assert episode_options(parameter_defaults(), react) == EpisodeOptions(own=ReactOptions())
    p = dict(parameter_defaults(), episode_id='2026-05-10/episode_000', segment=2,
             skip_bad='true', tactile_latency=15, gel_axis='dual_ball', image_scale=0.5)
    assert episode_options(p, react) == EpisodeOptions(
        image_scale=0.5, episode='2026-05-10/episode_000',
        own=ReactOptions(segment=2, skip_bad=True, tactile_latency=15, gel_axis='dual_ball'))


def test_node_parameters_of_another_kind_are_refused() -> None:
    p = dict(parameter_defaults(), segment=2)
    with pytest.raises(ReactRosError, match="'segment' is an option of react"):
        episode_options(p, KINDS['umi'])
    with pytest.raises(ReactRosError, match="'gel_axis'.*local_y, dual_ball"):
        episode_options(dict(parameter_defaults(), gel_axis='sideways'), KINDS['react'])
