"""The package tells the truth about itself: its dependencies, the kinds it has, its layout."""
from __future__ import annotations

import ast
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from react_ros.registry import KINDS

ROOT = Path(__file__).resolve().parents[1]
# Python module -> (package.xml key, pip requirement) for what is not a ROS package.
THIRD_PARTY = {
    'numpy': ('python3-numpy', 'numpy'),
    'scipy': ('python3-scipy', 'scipy'),
    'yaml': ('python3-yaml', 'PyYAML'),
    'av': ('python3-av', 'av'),
    'mcap': ('python3-mcap-pip', 'mcap'),
    'mcap_ros2': ('python3-mcap-ros2-support-pip', 'mcap-ros2-support'),
    'pyarrow': ('python3-pyarrow', 'pyarrow'),
    'zstandard': ('python3-zstandard', 'zstandard'),
    'lz4': ('python3-lz4', 'lz4'),
    'zlib_ng': ('python3-zlib-ng-pip', 'zlib-ng'),
    'h5py': ('python3-h5py', 'h5py'),
    'PIL': ('python3-pil', 'pillow'),
    'simplejpeg': ('python3-simplejpeg-pip', 'simplejpeg'),
}
# Optional extras a user may leave out: module -> (extra name, pip requirement); imported
# only where used, installed by the .venv set-up from requirements/<extra>.txt.
OPTIONAL = {'ray': ('ray', 'ray'), 'foxglove': ('foxglove', 'foxglove-sdk')}
# The rest are ROS 2 packages, named as their Python packages are.
ROS_REQUIREMENTS = ROOT / 'requirements' / 'ros-kilted.txt'
BUILT_HERE = {'tf2_msgs', 'rosbag2_interfaces', 'foxglove_msgs'}  # interfaces/, built by scripts/setup_env.sh


def _runtime_imports() -> set[str]:
    mods: set[str] = set()
    for path in (ROOT / 'react_ros').rglob('*.py'):
        if 'kit' in path.relative_to(ROOT / 'react_ros').parts[:1]:
            continue  # the kind kit is test tooling: pytest and rosbags (requirements/test.txt)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                mods |= {a.name.split('.')[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods.add(node.module.split('.')[0])
    return {m for m in mods if m not in sys.stdlib_module_names and m != 'react_ros'}


def _exec_depends() -> set[str]:
    tree = ET.parse(ROOT / 'package.xml')
    return {e.text or '' for e in tree.getroot() if e.tag in ('exec_depend', 'depend')}


def _requirements(path: Path) -> set[str]:
    names = set()
    for line in path.read_text().splitlines():
        line = line.split('#')[0].strip()
        if line:
            names.add(re.split(r'[\[<>=!~ ]', line)[0].lower())
    return names


def test_every_runtime_import_is_a_declared_dependency() -> None:
    depends = _exec_depends()
    pip = _requirements(ROOT / 'requirements' / 'python.txt')
    ros_pip = _requirements(ROS_REQUIREMENTS)
    for module in sorted(_runtime_imports()):
        if module in OPTIONAL:
            extra, requirement = OPTIONAL[module]
            assert requirement in _requirements(ROOT / 'requirements' / f'{extra}.txt'), \
                f'{module}: requirements/{extra}.txt lacks it'
            assert f"'{extra}': ['{requirement}" in (ROOT / 'setup.py').read_text(), \
                f'{module}: setup.py has no [{extra}] extra naming it'
        elif module in THIRD_PARTY:
            key, requirement = THIRD_PARTY[module]
            assert key in depends, f'{module}: package.xml lacks <exec_depend>{key}'
            assert requirement.lower() in pip, f'{module}: requirements/python.txt lacks it'
        else:
            assert module in depends, f'{module}: package.xml lacks <exec_depend>{module}'
            wheel = 'ros-kilted-' + module.replace('_', '-')
            assert module in BUILT_HERE or wheel in ros_pip or any(
                r.startswith(wheel) for r in ros_pip) or _pulled_in(module), \
                f'{module}: no {wheel} in {ROS_REQUIREMENTS.name}'


def _pulled_in(module: str) -> bool:
    """A ROS package the listed wheels bring along (rclpy brings rcl_interfaces)."""
    import importlib.util
    return importlib.util.find_spec(module) is not None and module in {
        'rcl_interfaces', 'rosidl_parser'}


def test_package_xml_names_the_kinds_that_exist() -> None:
    """The description's list in parentheses ("(UMI, React, mocap objects, ...)") names
    the package's own kinds, each by its name as the last word of an item, any case."""
    description = ET.parse(ROOT / 'package.xml').getroot().findtext('description') or ''
    listed = re.search(r'\(([^)]*)\)', description)
    assert listed, f'package.xml description lists no kinds in parentheses: {description}'
    named = {item.split()[-1].lower() for item in listed.group(1).split(',')}
    own = {name for name, kind in KINDS.items()
           if kind.folder.parent == ROOT / 'react_ros' / 'kinds'}  # not REACT_ROS_KINDS_PATH's
    assert named == own, f'package.xml lists {sorted(named)}, the package has {sorted(own)}'


def test_readme_layout_matches_the_folders() -> None:
    readme = (ROOT / 'README.md').read_text()
    block = readme.split('## Layout', 1)[1].split('```')[1]
    folders = [line.split()[0] for line in block.strip().splitlines()]
    for folder in folders:
        assert (ROOT / folder).exists(), f'README layout names {folder}, which is not there'
    for folder in (ROOT / 'react_ros').iterdir():
        if folder.is_dir() and folder.name != '__pycache__':
            assert f'react_ros/{folder.name}/' in folders, f'README layout lacks {folder.name}'
