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


def test_launch_shuts_down_when_the_player_exits() -> None:
    """RegisterEventHandler(OnProcessExit(target_action=<the player>, on_exit=[Shutdown(...)]))
    among the actions: without it `ros2 launch` waited for Ctrl-C after the episode's end
    (checked end to end with upstream launch/launch_ros: README, "Inside a ROS 2 workspace")."""
    tree = ast.parse((ROOT / 'launch' / 'play.launch.py').read_text())

    def name(node: ast.AST) -> str | None:
        return node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            else None

    players = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign)
               for t in n.targets if isinstance(t, ast.Name)
               if name(n.value) == 'Node'
               and any(k.arg == 'executable' and getattr(k.value, 'value', None) == 'player'
                       for k in n.value.keywords)}
    assert players, 'no Node(executable=player) bound to a name'
    handlers = [n for n in ast.walk(tree) if name(n) == 'OnProcessExit']
    assert handlers, 'no OnProcessExit'
    kw = {k.arg: k.value for k in handlers[0].keywords}
    assert isinstance(kw['target_action'], ast.Name) and kw['target_action'].id in players
    assert [name(a) for a in kw['on_exit'].elts] == ['Shutdown']
    registered = [n for n in ast.walk(tree) if name(n) == 'RegisterEventHandler']
    assert any(handlers[0] in a.args for a in registered), 'OnProcessExit is not registered'


def test_launch_tells_the_player_to_wait_for_the_state_publisher_it_starts() -> None:
    """The player holds its first JointState until the state publisher's subscription is
    matched only when told one is coming (issue 36: else the robot's /tf misses the first
    second): the launch sets expect_state_publisher in the player's parameters, true exactly
    when it starts one (a URDF, and the player not publishing the robot state itself)."""
    tree = ast.parse((ROOT / 'launch' / 'play.launch.py').read_text())
    actions = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == '_actions')
    sets = [n for n in ast.walk(actions) if isinstance(n, ast.Assign)
            and isinstance(n.targets[0], ast.Subscript)
            and getattr(n.targets[0].slice, 'value', None) == 'expect_state_publisher']
    assert len(sets) == 1, 'the player is not told whether a state publisher comes'
    value = sets[0].value
    assert isinstance(value, ast.Name)
    made = [n for n in ast.walk(actions) if isinstance(n, ast.Assign)
            and isinstance(n.targets[0], ast.Name) and n.targets[0].id == value.id]
    assert len(made) == 1
    assert ast.unparse(made[0].value) == 'bool(episode.urdf) and (not publishes_robot_state)'
    player = next(n for n in ast.walk(actions) if isinstance(n, ast.Assign)
                  and isinstance(n.targets[0], ast.Name) and n.targets[0].id == 'player')
    assert sets[0].lineno < player.lineno  # in the parameters the player is made with


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
