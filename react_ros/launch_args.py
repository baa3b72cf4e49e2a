"""play.launch.py's arguments and what they become, without ROS 2's launch installed.

The launch file declares `launch_arguments()` and hands their values to
`episode_and_parameters()`; both read the player's options (PlayOptions) and the
kinds' own from their declarations, so a new option or kind needs no edit here.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from react_ros.registry import Episode, EpisodeOptions, kind_options, open_episode, resolve_kind
from react_ros.adapters.base import DatasetKind
from react_ros.errors import ReactRosError
from react_ros.registry import own_values
from react_ros.options import Option
from react_ros.play_options import PLAY_OPTIONS, PlayOptions

# Which episode, and the launch file's own RViz; the rest is PlayOptions'.
SHARED: dict[str, tuple[str, str]] = {
    'episode': ('', 'episode path (folder or file, as `react-ros play` takes it)'),
    'kind': ('', 'dataset kind; empty = detect from the layout'),
    'episode_id': ('', 'episode inside a release of many (React: DATE/episode_NNN)'),
    'rviz': ('false', 'also start RViz2 with the dataset\'s config'),
}
# launch's output is line-based: no progress line unless asked for
LAUNCH_DEFAULTS: dict[str, Any] = {'quiet': True}


def launch_arguments() -> dict[str, tuple[str, str]]:
    """name -> (default text, description): the shared ones, the player's, every kind's own."""
    args = dict(SHARED)
    for opt in PLAY_OPTIONS:
        args[opt.name] = (_default_text(opt), opt.help)
    for kind, opt in kind_options():
        args[opt.name] = (opt.text(opt.default), f'{kind.name}: {opt.help}')
    return args


def _default_text(opt: Option) -> str:
    return opt.text(LAUNCH_DEFAULTS.get(opt.name, opt.default))


def episode_and_parameters(values: Mapping[str, str]) -> tuple[Episode, DatasetKind,
                                                                 dict[str, Any]]:
    """Open the episode the arguments name; return it, its kind and the player's parameters."""
    if not values.get('episode'):
        raise ReactRosError('play.launch.py needs episode:=PATH')
    path = Path(values['episode'])
    kind = resolve_kind(path, values.get('kind') or None)
    play = PlayOptions.read(
        {opt.name: values.get(opt.name, _default_text(opt)) for opt in PLAY_OPTIONS},
        lambda opt, text: f'launch argument {opt.name}:={text!r} must be {opt.expected}')
    own = own_values(kind, lambda opt: values.get(opt.name, opt.text(opt.default)),
                     lambda opt: f'launch argument {opt.name}',
                     f'{path} is a {kind.name} episode')
    episode = open_episode(path, kind.name, EpisodeOptions(
        image_scale=play.image_scale, episode=values.get('episode_id') or None,
        own=kind.options.from_values(own)))
    params: dict[str, Any] = {'episode': str(episode.path), 'kind': kind.name,
                              'episode_id': values.get('episode_id', '')}
    # Unset options stay undeclared-valued (or -1) on the node, as their default says.
    for opt in PLAY_OPTIONS:
        params[opt.name] = opt.parameter(getattr(play, opt.name))
    params.update({name: value for name, value in own.items() if value is not None})
    return episode, kind, {k: v for k, v in params.items() if v is not None}


__all__ = ['LAUNCH_DEFAULTS', 'SHARED', 'episode_and_parameters', 'launch_arguments']
