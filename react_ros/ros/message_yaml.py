"""A ROS message as YAML, the way `ros2 topic echo` prints it.

rosidl_runtime_py (message_to_yaml) is not on PyPI for this set-up, so this is
its rule rewritten: fields in declaration order, nested messages as mappings,
sequences as block lists, and strings and sequences longer than
`truncate_length` cut with a '...' (an image's data would otherwise be a
million lines).
"""
from __future__ import annotations

import array
from typing import Any

import numpy as np
import yaml

TRUNCATE = 128  # ros2 topic echo's --truncate-length default


def to_plain(value: Any, truncate: int | None = TRUNCATE) -> Any:
    """Python dicts, lists and scalars for `value` (a message, sequence or scalar)."""
    if hasattr(value, 'get_fields_and_field_types'):
        return {name: to_plain(getattr(value, name), truncate)
                for name in value.get_fields_and_field_types()}
    if isinstance(value, (bytes, bytearray)):  # byte[] fields, and uint8[] of some builds
        value = list(value)
    if isinstance(value, (list, tuple, array.array, np.ndarray)):
        items = list(value[:truncate] if truncate is not None else value)
        cut = truncate is not None and len(value) > truncate
        return [to_plain(v, truncate) for v in items] + (['...'] if cut else [])
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, str) and truncate is not None and len(value) > truncate:
        return value[:truncate] + '...'
    return value


def to_yaml(msg: Any, truncate: int | None = TRUNCATE) -> str:
    """The message as a YAML document (ends with a newline, no '---')."""
    return yaml.safe_dump(to_plain(msg, truncate), sort_keys=False, default_flow_style=False,
                          allow_unicode=True, width=10**6)


__all__ = ['TRUNCATE', 'to_plain', 'to_yaml']
