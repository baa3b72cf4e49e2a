"""What `react-ros COMMAND --help` ends with: examples, and what the flags do not say.

Every example line is parsed by the real parser in test/test_cli_help.py, so a flag
renamed in one place cannot be left behind here.
"""
from __future__ import annotations

KEYBOARD = """keyboard (when stdin is a terminal; --disable-keyboard-controls turns it off):
  space  pause / resume        right arrow  play the next message
  up     rate + 0.1            down arrow   rate - 0.1"""

SERVICES = """services (rosbag2_interfaces, as `ros2 bag play` offers them), under the node name:
  ~/pause ~/resume ~/toggle_paused ~/is_paused ~/set_rate ~/get_rate ~/seek
  ~/play_next ~/burst"""

EXAMPLES: dict[str, tuple[str, ...]] = {
    'info': (
        'react-ros info episode_dir',
        'react-ros info release_dir --episode 3',
        'react-ros info bag_dir',
        'react-ros info episode_dir --json',
    ),
    'list': (
        'react-ros list release_dir',
        'react-ros list release_dir --json',
    ),
    'play': (
        'react-ros play episode_dir',
        'react-ros play episode_dir -r 0.5 -l',
        'react-ros play episode_dir --topics /tf /tf_static left/image_raw',
        'react-ros play episode_dir -p --start-offset 2 --playback-duration 5',
        'react-ros play release_dir --episode 3 --images h264',
        'react-ros play bag_dir --clock 200',
        'react-ros play episode_dir --foxglove',
    ),
    'demo': (
        'react-ros demo',
        'react-ros demo robotwin --rate 2',
    ),
    'convert': (
        'react-ros convert episode_dir -o bag_dir',
        'react-ros convert episode_dir -o bag_dir --images jpeg --jpeg-quality 90',
        'react-ros convert release_dir --episode 3 -o bag_dir --images h264',
        'react-ros convert episode_dir -o bag_dir --exclude-topics /center/image_raw /center/camera_info',
    ),
    'convert-all': (
        'react-ros convert-all release_dir -o bags_dir',
        'react-ros convert-all release_dir -o bags_dir --workers 2 --images jpeg',
        'react-ros convert-all release_dir -o bags_dir --ray',
    ),
    'sample': (
        'react-ros sample umi episode_dir',
        'react-ros sample umi episode_dir --duration 1 --resolution 320x200',
        'react-ros sample robotwin release_dir --episodes 3',
    ),
    'preview': (
        'react-ros preview episode_dir -o sheet.png',
        'react-ros preview episode_dir -o sheet.png --at 0 1.5 3',
        'react-ros preview bag_dir -o clip.mp4 --camera /left/image_raw',
    ),
    'topic': (
        'react-ros topic list',
        'react-ros topic echo /clock --once',
        'react-ros topic echo /tf_static -n 1 --full-length',
        'react-ros topic hz /left/image_raw --duration 5',
        'react-ros topic list --node-name my_player --timeout 30',
    ),
    'control': (
        'react-ros control pause',
        'react-ros control resume',
        'react-ros control toggle',
        'react-ros control status',
        'react-ros control rate 0.5',
        'react-ros control seek 0',
        'react-ros control seek +2.5',
        'react-ros control next',
        'react-ros control next 10',
    ),
}

JOIN = """the player's domain: ROS_DOMAIN_ID and the discovery range as the player's first line
names them; with ROS_DOMAIN_ID unset, the one player started through scripts/ros_env.sh
(as `scripts/ros_env.sh --join` finds it). Several such players: ROS_DOMAIN_ID=N picks one."""

# Said after the examples, for commands that play.
EXTRA = {'play': (KEYBOARD, SERVICES), 'demo': (KEYBOARD, SERVICES), 'topic': (JOIN,),
         'control': (JOIN,)}


def epilog(command: str) -> str:
    lines = ['examples:', *(f'  {line}' for line in EXAMPLES.get(command, ()))]
    return '\n\n'.join(['\n'.join(lines), *EXTRA.get(command, ())])
