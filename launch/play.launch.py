"""Play a dataset episode: player + robot_state_publisher (+ RViz).

    ros2 launch react_ros play.launch.py episode:=PATH [kind:=umi] [rate:=1.0]
        [loop:=false] [start_paused:=false] [image_scale:=1.0] [images:=h264] [rviz:=true]
    ros2 launch react_ros play.launch.py episode:=RELEASE episode_id:=2026-05-10/episode_000
        [segment:=K] [skip_bad:=true] [tactile_latency:=15] [gel_axis:=dual_ball] [rviz:=true]
    ros2 launch react_ros play.launch.py --show-args    # every argument, the player's and each kind's

The episode is opened here (an OpaqueFunction) to read its URDF, which becomes
robot_state_publisher's robot_description parameter; the real
robot_state_publisher is used when ROS 2 provides it, react_ros's drop-in
state_publisher otherwise. robot_state_publisher and RViz run with
use_sim_time so they follow the player's /clock and notice when it jumps back
(loop, backward seek). The launch shuts down when the player exits, so a launch
without loop:=true returns at the episode's end.
"""
from pathlib import Path

from launch import LaunchDescription
from launch.actions import (DeclareLaunchArgument, LogInfo, OpaqueFunction,
                            RegisterEventHandler, Shutdown)
from launch.event_handlers import OnProcessExit
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from react_ros.launch_args import episode_and_parameters, launch_arguments

# The shared arguments, the player's options (react_ros/play_options.py) and every
# dataset kind's own options, from the registry (react_ros/launch_args.py): a new
# option or kind appears here with no edit.
ARGUMENTS = launch_arguments()


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


def _rviz(kind) -> list:
    share = _package_share('react_ros')
    config = share / kind.rviz_file if share is not None else None
    if config is None or not config.is_file():  # a kind kept outside the package
        config = kind.rviz_source
    args = ['-d', str(config)] if config.is_file() else []
    return [Node(package='rviz2', executable='rviz2', name='rviz2', arguments=args,
                 parameters=[{'use_sim_time': True}], output='screen')]


def _actions(context, *args, **kwargs):
    values = {name: LaunchConfiguration(name).perform(context) for name in ARGUMENTS}
    episode, kind, params = episode_and_parameters(values)
    publishes_robot_state = params['publish_robot_state']
    # Strings as strings: launch would otherwise read '2026-05-10/...' as YAML.
    params = {k: ParameterValue(v, value_type=str) if isinstance(v, str) else v
              for k, v in params.items()}
    starts_state_publisher = bool(episode.urdf) and not publishes_robot_state
    # the player waits for it, so that the robot's /tf starts with the episode
    params['expect_state_publisher'] = starts_state_publisher
    player = Node(package='react_ros', executable='player', name='react_ros_player',
                  output='screen', parameters=[params])
    # The launch ends with the player (the episode's end, an error, a stop): the state
    # publisher and RViz would otherwise keep `ros2 launch` waiting for Ctrl-C.
    actions = [player,
               RegisterEventHandler(OnProcessExit(
                   target_action=player,
                   on_exit=[Shutdown(reason='the player ended')]))]
    if episode.urdf and publishes_robot_state:
        actions.append(LogInfo(msg='publish_robot_state:=true: the player publishes the robot '
                               'state, no robot_state_publisher'))
    elif episode.urdf:
        actions.append(_state_publisher(episode.urdf))
    else:
        actions.append(LogInfo(msg=f'{episode.path}: no URDF, no robot_state_publisher'))
    if values['rviz'].lower() == 'true':
        actions += _rviz(kind)
    return actions


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default, description=doc)
         for name, (default, doc) in ARGUMENTS.items()]
        + [OpaqueFunction(function=_actions)])
