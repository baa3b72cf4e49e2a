"""Message classes and full definition texts, looked up by 'pkg/msg/Type'."""
from __future__ import annotations

import importlib
import os
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from builtin_interfaces.msg import Time

_BUILTIN = {'bool', 'byte', 'char', 'float32', 'float64', 'int8', 'uint8', 'int16', 'uint16',
            'int32', 'uint32', 'int64', 'uint64', 'string', 'wstring'}


def stamp(t_ns: int) -> Time:
    return Time(sec=t_ns // 1_000_000_000, nanosec=t_ns % 1_000_000_000)


def to_ns(t: Any) -> int:
    return int(t.sec) * 1_000_000_000 + int(t.nanosec)


@lru_cache(maxsize=None)
def message_class(msg_type: str) -> type:
    pkg, kind, name = _split(msg_type)
    cls = getattr(importlib.import_module(f'{pkg}.{kind}'), name)
    if not isinstance(cls, type) or not hasattr(cls, 'get_fields_and_field_types'):
        raise AttributeError(f'{msg_type} is not a ROS message class')
    return cls


_NAME = re.compile(r'[A-Za-z][A-Za-z0-9_]*')


def _split(msg_type: str) -> tuple[str, str, str]:
    """('pkg', 'msg', 'Type'); ValueError for anything else ('/msg/String' would be a
    relative import, 'os/msg/path' is not a message: names are checked, not trusted)."""
    parts = msg_type.split('/')
    if len(parts) == 2:
        parts = [parts[0], 'msg', parts[1]]
    if len(parts) != 3 or parts[1] not in ('msg', 'srv', 'action') or \
            not all(_NAME.fullmatch(p) for p in parts):
        raise ValueError(f'not a ROS type name: {msg_type!r}')
    return parts[0], parts[1], parts[2]


def _share_dirs() -> list[Path]:
    prefixes = [p for p in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if p]
    prefixes.append(sys.prefix)  # the pip setup: the venv is the install prefix
    return [Path(p) / 'share' for p in prefixes]


@lru_cache(maxsize=None)
def _msg_file_text(pkg: str, name: str) -> str:
    for share in _share_dirs():
        f = share / pkg / 'msg' / f'{name}.msg'
        if f.is_file():
            return f.read_text()
    raise FileNotFoundError(f'no definition of {pkg}/msg/{name} under {_share_dirs()}')


def _dependencies(pkg: str, text: str) -> list[str]:
    """Complex field types of a .msg text, as 'pkg/Type' (constants are always builtin)."""
    deps = []
    for line in text.splitlines():
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        base = re.sub(r'(<=\d+)?(\[.*\])?$', '', line.split()[0])
        if base in _BUILTIN:
            continue
        if base == 'Header':
            deps.append('std_msgs/Header')
        elif '/' in base:
            deps.append(f"{base.split('/')[0]}/{base.split('/')[-1]}")
        else:
            deps.append(f'{pkg}/{base}')
    return deps


@lru_cache(maxsize=None)
def definition_text(msg_type: str) -> str:
    """The ros2msg schema text: the type's .msg, then each dependency once.

    Dependencies follow under a line of 80 '=' and 'MSG: pkg/Type', in the
    order rosbag2 and mcap_ros2 write them (depth first, first use).
    """
    pkg, _, name = _split(msg_type)
    top = _msg_file_text(pkg, name)
    seen: set[str] = set()
    parts: list[str] = []

    def visit(dpkg: str, dtext: str) -> None:
        for dep in _dependencies(dpkg, dtext):
            if dep in seen:
                continue
            seen.add(dep)
            p, n = dep.split('/')
            text = _msg_file_text(p, n)
            parts.append('=' * 80 + f'\nMSG: {dep}\n' + text.rstrip('\n'))
            visit(p, text)

    visit(pkg, top)
    return '\n'.join([top.rstrip('\n'), *parts]) + '\n'
