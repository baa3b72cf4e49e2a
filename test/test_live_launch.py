"""launch/play.launch.py and the UMI RViz config: launch and RViz are not installed here,
so this checks what can be checked without them."""
from __future__ import annotations

import ast
import py_compile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_launch_file_compiles(tmp_path: Path) -> None:
    src = ROOT / 'launch' / 'play.launch.py'
    py_compile.compile(str(src), cfile=str(tmp_path / 'play.pyc'), doraise=True)
    tree = ast.parse(src.read_text())
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert 'generate_launch_description' in names
    text = src.read_text()
    # the player, the real robot_state_publisher if installed else ours, RViz on request
    for needle in ("executable='player'", "package='robot_state_publisher'",
                   "executable='state_publisher'", "'use_sim_time': True", "'rviz2'"):
        assert needle in text, needle


def test_umi_rviz_config() -> None:
    config = yaml.safe_load((ROOT / 'react_ros' / 'kinds' / 'umi' / 'umi.rviz').read_text())
    manager = config['Visualization Manager']
    assert manager['Global Options']['Fixed Frame'] == 'world'
    displays = {d['Class']: d for d in manager['Displays']}
    assert 'rviz_default_plugins/TF' in displays
    model = displays['rviz_default_plugins/RobotModel']
    assert model['Description Source'] == 'Topic'
    assert model['Description Topic']['Value'] == '/robot_description'
    assert model['Description Topic']['Durability Policy'] == 'Transient Local'
    images = [d['Topic']['Value'] for d in manager['Displays']
              if d['Class'] == 'rviz_default_plugins/Image']
    assert images == ['/left/image_raw', '/center/image_raw', '/right/image_raw']
