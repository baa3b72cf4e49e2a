"""Play a dataset episode: player + robot_state_publisher (+ RViz).

    ros2 launch react_ros play.launch.py episode:=PATH [kind:=umi] [rate:=1.0]
        [loop:=false] [start_paused:=false] [image_scale:=1.0] [rviz:=true]
    ros2 launch react_ros play.launch.py episode:=RELEASE episode_id:=2026-05-10/episode_000
        [segment:=K] [skip_bad:=true] [tactile_latency:=15] [gel_axis:=dual_ball] [rviz:=true]

The episode is opened here (an OpaqueFunction) to read its URDF, which becomes
robot_state_publisher's robot_description parameter; the real
robot_state_publisher is used when ROS 2 provides it, react_ros's drop-in
state_publisher otherwise. robot_state_publisher and RViz run with
use_sim_time so they follow the player's /clock and notice when it jumps back
(loop, backward seek).
"""
from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

ARGUMENTS = {
    'episode': ('', 'episode path (folder or file, as `react-ros play` takes it)'),
    'kind': ('', 'dataset kind (react, truetrace, objects, robotwin, umi); empty = detect'),
    'rate': ('1.0', 'playback rate'),
    'loop': ('false', 'play again from the start at the end'),
    'start_paused': ('false', 'start paused (resume with the ~/resume service)'),
    'image_scale': ('1.0', 'scale images (and camera_info K, P) by this factor'),
    'rviz': ('false', 'also start RViz2 with the dataset\'s config'),
    'episode_id': ('', 'episode inside a release of many (React: DATE/episode_NNN)'),
    'segment': ('-1', 'React: play only clean segment K of segments.json (-1 = all)'),
    'skip_bad': ('false', 'React: drop the rows bad_frames.json flags'),
    'tactile_latency': ('0', 'React: pair view[i] with tactile[i+N]'),
    'gel_axis': ('local_y', 'React: force along local_y (-y) or dual_ball (calibrated axis)'),
}


def _package_share(name: str):
    """The package's share directory, or None when it is not installed."""
    try:
        from ament_index_python.packages import (PackageNotFoundError,
                                                 get_package_share_directory)
    except ImportError:
        return None
    try:
        return Path(get_package_share_directory(name))
    except PackageNotFoundError:
        return None


def _state_publisher(urdf: str) -> Node:
    params = [{'robot_description': ParameterValue(urdf, value_type=str),
               'use_sim_time': True}]
    if _package_share('robot_state_publisher') is not None:
        return Node(package='robot_state_publisher', executable='robot_state_publisher',
                    name='robot_state_publisher', parameters=params, output='screen')
    return Node(package='react_ros', executable='state_publisher',
                name='robot_state_publisher', parameters=params, output='screen')


def _rviz(kind: str) -> list:
    share = _package_share('react_ros')
    config = share / 'config' / f'{kind}.rviz' if share is not None else None
    args = ['-d', str(config)] if config is not None and config.is_file() else []
    return [Node(package='rviz2', executable='rviz2', name='rviz2', arguments=args,
                 parameters=[{'use_sim_time': True}], output='screen')]


def _actions(context, *args, **kwargs):
    from react_ros.adapters import open_episode
    from react_ros.adapters.base import EpisodeOptions

    def arg(name: str) -> str:
        return LaunchConfiguration(name).perform(context)

    if not arg('episode'):
        raise RuntimeError('play.launch.py needs episode:=PATH')
    react = {'episode_id': arg('episode_id'), 'segment': int(arg('segment')),
             'skip_bad': arg('skip_bad').lower() == 'true',
             'tactile_latency': int(arg('tactile_latency')), 'gel_axis': arg('gel_axis')}
    episode = open_episode(Path(arg('episode')), arg('kind') or None, EpisodeOptions(
        image_scale=float(arg('image_scale')), episode=react['episode_id'] or None,
        segment=react['segment'] if react['segment'] >= 0 else None,
        skip_bad=react['skip_bad'], tactile_latency=react['tactile_latency'],
        gel_axis=react['gel_axis']))
    actions = [Node(
        package='react_ros', executable='player', name='react_ros_player', output='screen',
        parameters=[{
            'episode': ParameterValue(str(episode.path), value_type=str),
            'kind': ParameterValue(episode.kind, value_type=str),
            'rate': float(arg('rate')),
            'loop': arg('loop').lower() == 'true',
            'start_paused': arg('start_paused').lower() == 'true',
            'image_scale': float(arg('image_scale')),
            'quiet': True,  # launch's output is line-based: no progress line
            **{k: ParameterValue(v, value_type=str) if isinstance(v, str) else v
               for k, v in react.items()},
        }])]
    if episode.urdf:
        actions.append(_state_publisher(episode.urdf))
    else:
        actions.append(LogInfo(msg=f'{episode.path}: no URDF, no robot_state_publisher'))
    if arg('rviz').lower() == 'true':
        actions += _rviz(episode.kind)
    return actions


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default, description=doc)
         for name, (default, doc) in ARGUMENTS.items()]
        + [OpaqueFunction(function=_actions)])
