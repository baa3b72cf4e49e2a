"""Topic names as the user types them, made absolute the way ROS 2 does it.

`--topics left/image_raw` means /left/image_raw, `~/x` the player node's private
/<node>/x, and a name ROS would refuse (`/a//b`, `2d`, `a b`) is refused here too.

rclpy does the expansion and the validation itself (rcl's rules, not a copy of
them), imported inside the function: the CLI builds its parser without rclpy,
and only commands that already load rclpy (play; convert, whose bag writer
needs rclpy's QoS types) ever resolve a name, so the import costs them nothing
more than what they pay anyway.
"""
from __future__ import annotations

import re
from typing import Sequence

from react_ros.errors import ReactRosError

PLAYER_NODE = 'react_ros_player'  # the player node's default name, in the root namespace
ROOT = '/'


def resolve_topic(name: str, node: str | None = PLAYER_NODE, namespace: str = ROOT,
                  flag: str = '--topics') -> str:
    """`name` as an absolute topic name; `node` None: no node owns these names (convert
    writes a bag), so a private `~` name is refused. Raises ReactRosError naming `flag`."""
    if node is None and name.startswith('~'):
        raise ReactRosError(f'{flag} {name}: a private (~) name needs a node, and '
                            'convert has none; give the topic in full')
    from rclpy.expand_topic_name import expand_topic_name
    from rclpy.validate_full_topic_name import validate_full_topic_name
    try:
        full = expand_topic_name(name, node or PLAYER_NODE, namespace)
        validate_full_topic_name(full)
    except Exception as err:  # rclpy's own exceptions say what rule the name breaks
        raise ReactRosError(f'{flag} {name!r}: not a valid ROS topic name: {_reason(err)}') from None
    return full


def _reason(err: Exception) -> str:
    """rcl's words for the broken rule, without its source location and preamble."""
    text = (str(err).splitlines() or [type(err).__name__])[0]
    text = re.sub(r', at \S+:\d+$', '', text).rstrip(':').strip()
    return re.sub(r'^(Invalid topic name: |topic name .* is invalid: )', '', text)


def resolve_topics(names: Sequence[str] | None, node: str | None = PLAYER_NODE,
                   namespace: str = ROOT, flag: str = '--topics') -> tuple[str, ...] | None:
    """Each of `names` resolved (None stays None: no list given)."""
    if names is None:
        return None
    return tuple(resolve_topic(n, node, namespace, flag) for n in names)


__all__ = ['PLAYER_NODE', 'resolve_topic', 'resolve_topics']
