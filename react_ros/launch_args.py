"""play.launch.py's arguments and what they become, without ROS 2's launch installed.

The launch file declares `launch_arguments()` and hands their values to
`episode_and_parameters()`; both read the kinds and their options from the
registry, so a new kind's options become launch arguments with no edit here.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from react_ros.adapters import Episode, EpisodeOptions, kind_options, open_episode, resolve_kind
from react_ros.adapters.base import DatasetKind
from react_ros.errors import ReactRosError

SHARED: dict[str, tuple[str, str]] = {
    'episode': ('', 'episode path (folder or file, as `react-ros play` takes it)'),
    'kind': ('', 'dataset kind; empty = detect from the layout'),
    'rate': ('1.0', 'playback rate'),
    'loop': ('false', 'play again from the start at the end'),
    'start_paused': ('false', 'start paused (resume with the ~/resume service)'),
    'image_scale': ('1.0', 'scale images (and camera_info K, P) by this factor'),
    'rviz': ('false', 'also start RViz2 with the dataset\'s config'),
    'episode_id': ('', 'episode inside a release of many (React: DATE/episode_NNN)'),
    'wait_for_subscribers': ('2.0', 'wait at most this many seconds for DDS discovery to '
                             'match running subscribers before playing (0 = off)'),
    'images': ('raw', 'raw: sensor_msgs/Image; h264: camera videos as '
               'foxglove_msgs/CompressedVideo on <camera>/image_raw/compressed_video'),
    'no_reencode': ('false', 'with images:=h264, refuse a video that would need re-encoding'),
    'drop_late': ('-1.0', 'keep real time: drop images later than this many seconds, counted '
                  '(negative = off: nothing is dropped, playback slows to what readers take)'),
}


def launch_arguments() -> dict[str, tuple[str, str]]:
    """name -> (default text, description): the shared ones, then every kind's own."""
    args = dict(SHARED)
    for kind, opt in kind_options():
        args[opt.name] = (opt.text(opt.default), f'{kind.name}: {opt.help}')
    return args


def _flag(values: Mapping[str, str], name: str) -> bool:
    text = values.get(name, SHARED[name][0]).lower()
    if text not in ('true', 'false'):
        raise ReactRosError(f'launch argument {name}:={text!r} must be true or false')
    return text == 'true'


def _number(values: Mapping[str, str], name: str) -> float:
    text = values.get(name, SHARED[name][0])
    try:
        return float(text)
    except ValueError:
        raise ReactRosError(f'launch argument {name}:={text!r} must be a number') from None


def _images(values: Mapping[str, str]) -> str:
    text = values.get('images') or SHARED['images'][0]
    if text not in ('raw', 'h264'):
        raise ReactRosError(f'launch argument images:={text!r} must be raw or h264')
    return text


def _own_values(values: Mapping[str, str], kind: DatasetKind) -> dict[str, Any]:
    own = {}
    for other, opt in kind_options():
        text = values.get(opt.name, opt.text(opt.default))
        source = f'launch argument {opt.name}'
        if other is kind:
            own[opt.name] = opt.coerce(text, source)
        elif opt.coerce(text, source) != opt.default:
            raise ReactRosError(f'{source} is an option of {other.name} episodes, '
                                f'not of {kind.name}')
    return own


def episode_and_parameters(values: Mapping[str, str]) -> tuple[Episode, DatasetKind,
                                                                 dict[str, Any]]:
    """Open the episode the arguments name; return it, its kind and the player's parameters."""
    if not values.get('episode'):
        raise ReactRosError('play.launch.py needs episode:=PATH')
    path = Path(values['episode'])
    kind = resolve_kind(path, values.get('kind') or None)
    own = _own_values(values, kind)
    episode = open_episode(path, kind.name, EpisodeOptions(
        image_scale=_number(values, 'image_scale'), episode=values.get('episode_id') or None,
        own=kind.options.from_values(own)))
    params: dict[str, Any] = {
        'episode': str(episode.path), 'kind': kind.name,
        'rate': _number(values, 'rate'), 'loop': _flag(values, 'loop'),
        'start_paused': _flag(values, 'start_paused'),
        'image_scale': _number(values, 'image_scale'),
        'episode_id': values.get('episode_id', ''),
        'wait_for_subscribers': _number(values, 'wait_for_subscribers'),
        'images': _images(values),
        'no_reencode': _flag(values, 'no_reencode'),
        'drop_late': _number(values, 'drop_late'),
        'quiet': True,  # launch's output is line-based: no progress line
    }
    # Unset options stay undeclared-valued on the node, as their default says.
    params.update({name: value for name, value in own.items() if value is not None})
    return episode, kind, params


__all__ = ['SHARED', 'episode_and_parameters', 'launch_arguments']
