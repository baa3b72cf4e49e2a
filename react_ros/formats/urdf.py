"""Parse a URDF into plain data: links, joints and their kinematic fields.

Only what robot_state_publisher needs is kept (joint origins, axes, mimics,
limits); inertials, visuals and collisions are left to RViz, which reads the
URDF text itself. No rclpy here: the bag writer and tests use it without ROS.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from react_ros.errors import DatasetFormatError

JOINT_TYPES = ('revolute', 'continuous', 'prismatic', 'fixed', 'floating', 'planar')


@dataclass(frozen=True)
class Mimic:
    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True)
class Limits:
    lower: float = 0.0
    upper: float = 0.0
    effort: float = 0.0
    velocity: float = 0.0


@dataclass(frozen=True)
class Joint:
    name: str
    type: str
    parent: str
    child: str
    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)  # fixed-axis X, Y, Z (URDF)
    axis: tuple[float, float, float] = (1.0, 0.0, 0.0)  # URDF's default
    mimic: Mimic | None = None
    limits: Limits | None = None


@dataclass(frozen=True)
class Link:
    name: str


@dataclass(frozen=True)
class Robot:
    name: str
    links: dict[str, Link]
    joints: dict[str, Joint]  # in document order
    root: str


class _Bad(Exception):
    pass


def _floats(text: str | None, n: int, what: str, default: tuple[float, ...]) -> tuple[float, ...]:
    if text is None:
        return default
    parts = text.split()
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        raise _Bad(f'{what} {text!r} is not {n} numbers') from None
    if len(values) != n or not all(math.isfinite(v) for v in values):
        raise _Bad(f'{what} {text!r} is not {n} finite numbers')
    return values


def _vec3(text: str | None, what: str,
          default: tuple[float, float, float]) -> tuple[float, float, float]:
    x, y, z = _floats(text, 3, what, default)
    return x, y, z


def _float(el: ET.Element, attr: str, what: str, default: float) -> float:
    return _floats(el.get(attr), 1, f'{what} {attr}', (default,))[0]


def _joint(el: ET.Element) -> Joint:
    name = el.get('name')
    if not name:
        raise _Bad('a joint has no name')
    jtype = el.get('type')
    if jtype not in JOINT_TYPES:
        raise _Bad(f'joint {name!r} has unknown type {jtype!r}')
    parent, child = el.find('parent'), el.find('child')
    if parent is None or not parent.get('link'):
        raise _Bad(f'joint {name!r} has no parent link')
    if child is None or not child.get('link'):
        raise _Bad(f'joint {name!r} has no child link')
    origin = el.find('origin')
    xyz = rpy = (0.0, 0.0, 0.0)
    if origin is not None:
        xyz = _vec3(origin.get('xyz'), f'joint {name!r} origin xyz', xyz)
        rpy = _vec3(origin.get('rpy'), f'joint {name!r} origin rpy', rpy)
    axis_el = el.find('axis')
    axis = (1.0, 0.0, 0.0)
    if axis_el is not None:
        axis = _vec3(axis_el.get('xyz'), f'joint {name!r} axis', axis)
        norm = math.sqrt(sum(a * a for a in axis))
        if jtype in ('revolute', 'continuous', 'prismatic') and norm < 1e-12:
            raise _Bad(f'joint {name!r} has a zero axis')
        if norm > 0:
            x, y, z = axis
            axis = (x / norm, y / norm, z / norm)  # urdfdom normalises too
    mimic_el = el.find('mimic')
    mimic = None
    if mimic_el is not None:
        if not mimic_el.get('joint'):
            raise _Bad(f'joint {name!r}: mimic names no joint')
        what = f'joint {name!r} mimic'
        mimic = Mimic(mimic_el.get('joint', ''), _float(mimic_el, 'multiplier', what, 1.0),
                      _float(mimic_el, 'offset', what, 0.0))
    limit_el = el.find('limit')
    limits = None
    if limit_el is not None:
        what = f'joint {name!r} limit'
        limits = Limits(*(_float(limit_el, a, what, 0.0)
                          for a in ('lower', 'upper', 'effort', 'velocity')))
    elif jtype in ('revolute', 'prismatic'):
        raise _Bad(f'{jtype} joint {name!r} has no limit')
    return Joint(name, jtype, parent.get('link', ''), child.get('link', ''),
                 xyz, rpy, axis, mimic, limits)  # type: ignore[arg-type]


def _robot(root: ET.Element) -> Robot:
    if root.tag != 'robot':
        raise _Bad(f'the top element is <{root.tag}>, not <robot>')
    links: dict[str, Link] = {}
    for el in root.findall('link'):
        name = el.get('name')
        if not name:
            raise _Bad('a link has no name')
        if name in links:
            raise _Bad(f'link {name!r} is defined twice')
        links[name] = Link(name)
    if not links:
        raise _Bad('no links')
    joints: dict[str, Joint] = {}
    parent_of: dict[str, str] = {}
    for el in root.findall('joint'):
        joint = _joint(el)
        if joint.name in joints:
            raise _Bad(f'joint {joint.name!r} is defined twice')
        for end in (joint.parent, joint.child):
            if end not in links:
                raise _Bad(f'joint {joint.name!r} names unknown link {end!r}')
        if joint.child in parent_of:
            raise _Bad(f'link {joint.child!r} is the child of two joints '
                       f'({parent_of[joint.child]!r} and {joint.name!r})')
        parent_of[joint.child] = joint.name
        joints[joint.name] = joint
    for joint in joints.values():
        if joint.mimic is not None and joint.mimic.joint not in joints:
            raise _Bad(f'joint {joint.name!r} mimics unknown joint {joint.mimic.joint!r}')
    _check_mimics(joints)
    roots = [name for name in links if name not in parent_of]
    if not roots:
        raise _Bad('no root link (the joints form a loop)')
    if len(roots) > 1:
        raise _Bad(f'more than one root link: {", ".join(roots)}')
    _check_tree(roots[0], links, joints)
    return Robot(root.get('name', ''), links, joints, roots[0])


def _check_mimics(joints: dict[str, Joint]) -> None:
    # A joint that mimics itself, or a ring of mimics, has no value to follow.
    for start in joints.values():
        chain = [start.name]
        joint = start
        while joint.mimic is not None:
            if joint.mimic.joint in chain:
                ring = ' -> '.join(chain[chain.index(joint.mimic.joint):] + [joint.mimic.joint])
                raise _Bad(f'mimic loop: {ring}' if len(chain) > 1 or joint.mimic.joint !=
                           start.name else f'joint {start.name!r} mimics itself')
            chain.append(joint.mimic.joint)
            joint = joints[joint.mimic.joint]


def _check_tree(root: str, links: dict[str, Link], joints: dict[str, Joint]) -> None:
    # One root and one parent per link still allow a loop detached from the root.
    children: dict[str, list[str]] = {}
    for j in joints.values():
        children.setdefault(j.parent, []).append(j.child)
    seen, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    if len(seen) != len(links):
        missing = sorted(set(links) - seen)
        raise _Bad(f'links not connected to root {root!r}: {", ".join(missing)}')


def parse_urdf(text: str, source: Path) -> Robot:
    """Parse URDF text; `source` names the file in errors."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as err:
        raise DatasetFormatError(source, f'URDF does not parse: {err}') from None
    try:
        return _robot(root)
    except _Bad as err:
        raise DatasetFormatError(source, f'URDF does not parse: {err}') from None


__all__ = ['JOINT_TYPES', 'Joint', 'Limits', 'Link', 'Mimic', 'Robot', 'parse_urdf']
