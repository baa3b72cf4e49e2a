"""A new dataset kind is one folder: written at run time, put on REACT_ROS_KINDS_PATH, and
everything follows with no other edit (issue 26).

The folder is the kit's template, react_ros/kit/template/ (a reader with no ROS, an adapter
with one option, a sample writer, config.yaml, an RViz file), copied to <tmp>/kinds/throwaway/
and edited as docs/kinds.md tells a contributor to (the RViz file named after the kind and
showing its topic, the option renamed, a frame name of its own in config.yaml). This process
registers it with add_kinds_path; subprocesses (the live player, convert-all's workers, the
CLI) find it through the variable alone. Then: its option is a CLI flag, a node parameter
and a launch argument; `sample` and `info` know it; and KindContract runs its bad-input
table, live run, release conversion and bag checks as for a built-in kind. The module
leaves the registry, the kinds package's path and the environment as it found them.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar, Iterator

import pytest
import yaml
from bad_input_support import Accepted, Refused
from kind_contract import KindContract

import react_ros.kit
from react_ros import cli
from react_ros import kinds as kinds_package
from react_ros.registry import KINDS, add_kinds_path, open_episode, unregister
from react_ros.adapters.base import DatasetKind, kind_config
from react_ros.errors import ReactRosError
from react_ros.kinds import PATH_VARIABLE

TEMPLATE = Path(react_ros.kit.__file__).parent / 'template'
NAME = 'throwaway'
CSV = 'track.csv'
SAMPLE_ROWS = 100  # 2 s at 50 Hz, the sample's defaults


def _off_the_path(folder: Path) -> None:
    """Take `folder` off the kinds package's path (add_kinds_path put it there)."""
    if str(folder.resolve()) in kinds_package.__path__:
        kinds_package.__path__.remove(str(folder.resolve()))


def _make_it_ours(kind: Path) -> None:
    """The template's copy as a contributor leaves it: its own RViz file, option name (options
    share one namespace over all kinds) and frame name."""
    adapter = kind / 'adapter.py'
    adapter.write_text(adapter.read_text().replace('template_scale', f'{NAME}_scale')
                       .replace('--template-scale', f'--{NAME}-scale'))
    rviz = kind / 'template.rviz'
    (kind / f'{NAME}.rviz').write_text(rviz.read_text().replace('/template/', f'/{NAME}/'))
    rviz.unlink()
    config = kind / 'config.yaml'
    config.write_text(config.read_text().replace('body_frame: body', f'body_frame: {NAME}_body'))


@pytest.fixture(scope='module', autouse=True)
def kinds_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """<tmp>/kinds/throwaway/, registered by add_kinds_path (which puts it on
    REACT_ROS_KINDS_PATH for child processes too)."""
    assert NAME not in KINDS
    folder = (tmp_path_factory.mktemp('kind_folder') / 'kinds').resolve()
    shutil.copytree(TEMPLATE, folder / NAME, ignore=shutil.ignore_patterns('__pycache__'))
    _make_it_ours(folder / NAME)
    before = (list(kinds_package.__path__), os.environ.get(PATH_VARIABLE))
    os.environ.pop(PATH_VARIABLE, None)  # put back at teardown
    try:
        assert [k.name for k in add_kinds_path(folder)] == [NAME]
        # ... and the processes this one starts (the player, convert-all's workers) find it
        assert os.environ[PATH_VARIABLE] == str(folder)
        yield folder
    finally:
        if before[1] is None:
            os.environ.pop(PATH_VARIABLE, None)
        else:
            os.environ[PATH_VARIABLE] = before[1]
        if NAME in KINDS:
            unregister(NAME)
        _off_the_path(folder)
        for module in [m for m in sys.modules if m.startswith(f'react_ros.kinds.{NAME}')]:
            del sys.modules[module]
        kind_config.cache_clear()  # its config.yaml was read under this name
    # what the other modules' tests see again: the kinds they iterate, and nothing of ours
    assert NAME not in KINDS
    assert (list(kinds_package.__path__), os.environ.get(PATH_VARIABLE)) == before


@pytest.fixture(scope='module')
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    writer = KINDS[NAME].sample_writer()
    assert writer is not None
    return writer(tmp_path_factory.mktemp('throwaway') / 'episode', seed=3)


def _main(capfd: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capfd.readouterr()
    try:
        code = cli.main(list(args))
    except SystemExit as exit_:  # argparse: --help and usage errors
        code = int(exit_.code or 0)
    out, err = capfd.readouterr()
    return code, out, err


def _bag_messages(bag: Path) -> dict[str, list[Any]]:
    from rosbags.highlevel import AnyReader
    got: dict[str, list[Any]] = {}
    with AnyReader([bag]) as reader:
        for c, _, raw in reader.messages(connections=reader.connections):
            got.setdefault(c.topic, []).append(reader.deserialize(raw, c.msgtype))
    return got


def _csv_rows(episode: Path) -> list[list[float]]:
    lines = (episode / CSV).read_text().splitlines()[1:-1]
    return [[float(v) for v in line.split(',')] for line in lines]


# -- the folder is the kind ----------------------------------------------------------------
def test_the_kind_is_its_folder(kinds_folder: Path, sample: Path) -> None:
    kind = KINDS[NAME]
    assert kind.folder == kinds_folder / NAME
    assert kind.config()['body_frame'] == 'throwaway_body'  # its own config.yaml
    rviz = yaml.safe_load(kind.rviz_source.read_text())['Visualization Manager']
    assert rviz['Global Options']['Fixed Frame'] == kind.config()['world_frame']
    shown = [d['Topic']['Value'] for d in rviz['Displays'] if 'Topic' in d]
    assert set(shown) <= {s.topic for s in open_episode(sample).streams}, shown


def test_its_option_is_a_cli_flag_that_converts(sample: Path, tmp_path: Path,
                                                capfd: pytest.CaptureFixture[str]) -> None:
    for command in ('convert', 'play', 'info'):
        code, out, _ = _main(capfd, command, '--help')
        assert code == 0
        assert f'{NAME} options ({KINDS[NAME].title})' in out, command
        assert '--throwaway-scale F' in out, command
    code, _, err = _main(capfd, 'convert', str(sample), '-o', str(tmp_path / 'bag'), '-q',
                         '--throwaway-scale', '2.5')
    assert code == 0, err
    poses = _bag_messages(tmp_path / 'bag')['/throwaway/pose']
    rows = _csv_rows(sample)
    assert len(poses) == len(rows) == SAMPLE_ROWS
    for msg, row in zip(poses, rows):
        assert msg.pose.position.x == pytest.approx(2.5 * row[1])
        assert msg.pose.position.y == pytest.approx(2.5 * row[2])


def test_its_option_is_a_node_parameter(sample: Path) -> None:
    import rclpy
    from rclpy.context import Context
    from rclpy.node import Node

    from react_ros.node import declare_parameters, episode_options

    context = Context()
    rclpy.init(args=['test', '--ros-args', '-p', 'throwaway_scale:=3'], context=context)
    try:
        node = Node('throwaway_params', context=context)
        p = declare_parameters(node)
        assert p['throwaway_scale'] == 3  # an int, for a float option: coerced below
        options = episode_options(p, KINDS[NAME])
        assert options.own == KINDS[NAME].options(throwaway_scale=3.0)
        episode = open_episode(sample, NAME, options)
        pose = next(s for s in episode.streams if s.topic == '/throwaway/pose')
        assert next(pose.open())[1].pose.position.x == pytest.approx(3 * _csv_rows(sample)[0][1])
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)


def test_its_option_is_a_launch_argument(sample: Path) -> None:
    from react_ros.launch_args import episode_and_parameters, launch_arguments
    args = launch_arguments()
    assert args['throwaway_scale'] == ('1.0', f'{NAME}: multiply the positions by F '
                                              '(a unit fix)')
    values = {name: default for name, (default, _) in args.items()}
    values.update(episode=str(sample), throwaway_scale='0.5')
    episode, kind, params = episode_and_parameters(values)
    assert kind is KINDS[NAME] and params['throwaway_scale'] == 0.5
    tf = next(s for s in episode.streams if s.topic == '/tf')
    moved = next(tf.open())[1].transforms[0]
    assert moved.child_frame_id == 'throwaway_body'
    assert moved.transform.translation.x == pytest.approx(0.5 * _csv_rows(sample)[0][1])
    with pytest.raises(ReactRosError, match='launch argument throwaway_scale'):
        episode_and_parameters(dict(values, throwaway_scale='0'))


def test_sample_and_info_know_it(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    code, out, err = _main(capfd, 'sample', NAME, str(tmp_path / 'ep'))
    assert code == 0, err
    assert out.strip() == f'wrote {NAME} sample episode to {tmp_path / "ep"}'
    code, out, err = _main(capfd, 'info', str(tmp_path / 'ep'))
    assert code == 0, err
    assert f'kind:      {NAME}' in out
    assert '/throwaway/pose  geometry_msgs/msg/PoseStamped  100' in out
    code, out, err = _main(capfd, 'sample', NAME, str(tmp_path / 'release'), '--episodes', '2')
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / 'release').iterdir()) == \
        ['episode_000', 'episode_001']


# -- what the variable does for other processes ------------------------------------------
def _react_ros(kinds_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, **{PATH_VARIABLE: str(kinds_path)})
    return subprocess.run([sys.executable, '-m', 'react_ros.cli', *args], env=env,
                          capture_output=True, text=True, timeout=120)


def _kind_folder(root: Path, name: str, adapter: str) -> Path:
    (root / name).mkdir(parents=True)
    (root / name / '__init__.py').write_text('')
    (root / name / 'adapter.py').write_text(adapter)
    return root


def test_a_broken_kind_folder_is_one_line(sample: Path, tmp_path: Path) -> None:
    root = _kind_folder(tmp_path / 'kinds', 'wonky',
                        'from react_ros.kinds.wonky.reader import read_wonky\n')
    run = _react_ros(root, 'info', str(sample))
    assert run.returncode == 2 and run.stdout == '', run.stderr
    assert run.stderr.splitlines() == [
        f"error: {root / 'wonky'}: not a dataset kind folder (ModuleNotFoundError: "
        "No module named 'react_ros.kinds.wonky.reader')"]


def test_a_kind_folder_named_like_a_builtin_is_refused(sample: Path, tmp_path: Path) -> None:
    root = _kind_folder(tmp_path / 'kinds', 'umi', 'raise AssertionError("never imported")\n')
    run = _react_ros(root, 'info', str(sample))
    assert run.returncode == 2 and run.stdout == '', run.stderr
    assert run.stderr.splitlines() == [
        f"error: {root / 'umi'}: a dataset kind named 'umi' exists already"]
    try:
        with pytest.raises(ReactRosError, match="'umi' exists already"):
            add_kinds_path(root)
    finally:
        _off_the_path(root)
    assert KINDS['umi'].folder == Path(kinds_package.__file__).parent / 'umi'


def test_another_process_finds_it_through_the_variable_alone(sample: Path) -> None:
    run = _react_ros(Path(os.environ[PATH_VARIABLE]), 'info', str(sample))
    assert run.returncode == 0, run.stderr
    assert f'kind:      {NAME}' in run.stdout


# -- and everything a built-in kind is checked for -------------------------------------
def _rewrite(edit: Any) -> Any:
    """A breaker: `edit(lines)` changes throwaway.csv's lines in place."""
    def breaker(root: Path) -> None:
        lines = (root / CSV).read_text().splitlines()
        edit(lines)
        (root / CSV).write_text('\n'.join(lines) + '\n')
    return breaker


def _set(line: int, field: int, value: str) -> Any:
    def edit(lines: list[str]) -> None:
        fields = lines[line - 1].split(',')
        fields[field] = value
        lines[line - 1] = ','.join(fields)
    return _rewrite(edit)


def _cut_in_half(root: Path) -> None:
    data = (root / CSV).read_bytes()
    (root / CSV).write_bytes(data[:len(data) // 2])


def _all_lost(lines: list[str]) -> None:
    for i in range(1, len(lines) - 1):
        fields = lines[i].split(',')
        lines[i] = ','.join([fields[0], 'nan', *fields[2:]])


def _csv_folder(root: Path) -> None:
    (root / CSV).unlink()
    (root / CSV).mkdir()


def _one_row_lost(bag: Path) -> None:
    got = _bag_messages(bag)
    assert len(got['/tf']) == len(got['/throwaway/pose']) == SAMPLE_ROWS - 1


class TestThrowawayKind(KindContract):
    kind = NAME
    counts = {'/tf': SAMPLE_ROWS, '/throwaway/pose': SAMPLE_ROWS}
    live_kwargs: ClassVar[dict[str, Any]] = {'throwaway_scale': 2.0}  # a node parameter too

    REFUSED: ClassVar[list[Refused]] = [
        Refused('wrong header', _rewrite(lambda ls: ls.__setitem__(0, 't,x,y,z,yaw')), CSV,
                ('line 1', 'header')),
        Refused('empty file', lambda r: (r / CSV).write_text(''), CSV, ('header',)),
        Refused('not UTF-8', lambda r: (r / CSV).write_bytes(b'\xff\xfe t_s'), CSV,
                ('not UTF-8',)),
        Refused('a row short of a field', _rewrite(lambda ls: ls.__setitem__(2, '0.02,1,2,3')),
                CSV, ('line 3', 'expected 5 fields, got 4')),
        Refused('not a number', _set(4, 2, 'two'), CSV, ('line 4', 'not a number')),
        Refused('time not finite', _set(5, 0, 'nan'), CSV, ('line 5', 't_s must be')),
        Refused('time going back', _set(6, 0, '0.01'), CSV, ('line 6', 'does not follow')),
        Refused('cut in half', _cut_in_half, CSV, ('cut short',)),
        Refused('row count disagrees', _rewrite(lambda ls: ls.__setitem__(-1, 'end,7')), CSV,
                ("says '7' rows", f'holds {SAMPLE_ROWS}')),
        Refused('no finite pose', _rewrite(_all_lost), CSV, ('no row has a finite pose',)),
        Refused('the csv is a folder', _csv_folder, '', ('not an episode of any known',)),
        Refused('scale of zero', None, '--throwaway-scale', ('must be > 0',),
                args=('--throwaway-scale', '0')),
    ]
    ACCEPTED: ClassVar[list[Accepted]] = [
        Accepted('tracking lost on one row', _set(3, 1, 'nan'),
                 (CSV, '1 row(s) with a non-finite pose left out', 'line 3'),
                 check=_one_row_lost),
    ]

    @pytest.fixture(scope='class')
    @classmethod
    def source(cls, sample: Path) -> Path:
        return sample

