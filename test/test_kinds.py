"""The registry of dataset kinds: a kind registered from outside the package gets its
options as CLI flags, node parameters and launch arguments with no edit anywhere else;
detection refuses a folder two kinds claim; a flag of another kind is refused."""
from __future__ import annotations

import ast
import re
import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Iterator

import pytest
from std_msgs.msg import String

from react_ros import cli
from react_ros.registry import KINDS, kind_options, open_episode, register, unregister
from react_ros.adapters.base import DatasetKind, Episode, EpisodeOptions
from react_ros.errors import DatasetFormatError, ReactRosError
from react_ros.launch_args import episode_and_parameters, launch_arguments
from react_ros.options import KindOptions, NoOptions, at_least, option
from react_ros.streams import Stream

ROOT = Path(__file__).resolve().parents[1]
T0 = 1_700_000_000_000_000_000


@dataclass(frozen=True)
class WobbleOptions(KindOptions):
    wobble: float = option(0.5, 'how far the throwaway wobbles', metavar='M',
                           check=at_least(0.0))
    wobble_twice: bool = option(False, 'wobble twice as often')
    wobble_seed: int | None = option(None, 'seed of the wobble (none: unseeded)')


class WobbleAdapter:
    """A real, tiny adapter: a folder holding wobble.txt becomes /wobble Strings."""

    kind: ClassVar[str] = 'wobble'

    @classmethod
    def probe(cls, path: Path) -> bool:
        return (Path(path) / 'wobble.txt').is_file()

    def __init__(self, path: Path, options: EpisodeOptions) -> None:
        self.path = Path(path)
        self.own: WobbleOptions = options.own  # type: ignore[assignment]

    def open(self) -> Episode:
        n = 6 if self.own.wobble_twice else 3
        text = f'wobble {self.own.wobble} seed {self.own.wobble_seed}'

        def gen() -> Iterator[tuple[int, Any]]:
            for i in range(n):
                yield T0 + i * 100_000_000, String(data=text)
        stream = Stream('/wobble', 'std_msgs/msg/String', gen, count=n)
        return Episode(self.kind, self.path, T0, T0 + (n - 1) * 100_000_000, [stream])


class GreedyAdapter(WobbleAdapter):
    """Claims every folder, UMI episodes among them."""

    kind: ClassVar[str] = 'greedy'

    @classmethod
    def probe(cls, path: Path) -> bool:
        return Path(path).is_dir()


@pytest.fixture
def wobble_kind() -> Iterator[DatasetKind]:
    kind = register(DatasetKind('wobble', 'a throwaway kind of this test', WobbleAdapter,
                                WobbleOptions))
    try:
        yield kind
    finally:
        unregister('wobble')


@pytest.fixture
def wobble_episode(tmp_path: Path) -> Path:
    (tmp_path / 'ep').mkdir()
    (tmp_path / 'ep' / 'wobble.txt').write_text('3 wobbles\n')
    return tmp_path / 'ep'


def _main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(args))
    except SystemExit as exit_:  # argparse: --help and usage errors
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_registered_kind_brings_its_options_everywhere(
        wobble_kind: DatasetKind, capsys: pytest.CaptureFixture[str]) -> None:
    for command in ('convert', 'play', 'info'):
        code, out, _ = _main(capsys, command, '--help')
        assert code == 0
        assert 'wobble options (a throwaway kind of this test)' in out, command
        assert '--wobble M' in out and '--wobble-twice' in out and '--wobble-seed' in out
    assert 'wobble' in [k.name for k, _ in kind_options()]
    args = launch_arguments()
    assert args['wobble'] == ('0.5', 'wobble: how far the throwaway wobbles')
    assert args['wobble_twice'][0] == 'false' and args['wobble_seed'][0] == ''


def test_a_registered_kind_is_a_node_parameter(wobble_kind: DatasetKind,
                                               wobble_episode: Path) -> None:
    import rclpy
    from rclpy.context import Context
    from rclpy.node import Node

    from react_ros.node import declare_parameters, episode_options

    context = Context()
    rclpy.init(args=['test', '--ros-args', '-p', 'wobble:=2', '-p', 'wobble_seed:=7'],
               context=context)
    try:
        node = Node('wobble_params', context=context)
        p = declare_parameters(node)
        assert node.has_parameter('wobble_twice') and node.has_parameter('segment')
        assert p['wobble'] == 2 and p['wobble_seed'] == 7  # an int, for a float option
        options = episode_options(p, wobble_kind)
        assert options.own == WobbleOptions(wobble=2.0, wobble_seed=7)
        episode = open_episode(wobble_episode, 'wobble', options)
        assert next(episode.streams[0].open())[1].data == 'wobble 2.0 seed 7'
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)


def test_the_launch_file_takes_its_arguments_from_the_registry(
        wobble_kind: DatasetKind, wobble_episode: Path) -> None:
    tree = ast.parse((ROOT / 'launch' / 'play.launch.py').read_text())
    assigned = {n.targets[0].id: n.value for n in tree.body if isinstance(n, ast.Assign)
                and isinstance(n.targets[0], ast.Name)}
    call = assigned['ARGUMENTS']
    assert isinstance(call, ast.Call) and getattr(call.func, 'id', '') == 'launch_arguments'
    assert 'episode_and_parameters(values)' in (ROOT / 'launch' / 'play.launch.py').read_text()
    values = {name: default for name, (default, _) in launch_arguments().items()}
    values.update(episode=str(wobble_episode), wobble='1.5', wobble_twice='true')
    episode, kind, params = episode_and_parameters(values)
    assert kind is wobble_kind and len(list(episode.streams[0].open())) == 6
    assert params['wobble'] == 1.5 and params['wobble_twice'] is True
    assert 'wobble_seed' not in params and 'segment' not in params  # unset, or another kind's
    with pytest.raises(ReactRosError, match='launch argument segment is an option of react'):
        episode_and_parameters(dict(values, segment='1'))


def test_a_registered_kind_converts_with_its_flags(wobble_kind: DatasetKind,
                                                   wobble_episode: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from rosbags.highlevel import AnyReader
    out = tmp_path / 'bag'
    code, _, err = _main(capsys, 'convert', str(wobble_episode), '-o', str(out), '-q',
                         '--wobble', '0.25', '--wobble-twice')
    assert code == 0, err
    with AnyReader([out]) as reader:
        msgs = [reader.deserialize(raw, c.msgtype).data
                for c, _, raw in reader.messages(connections=reader.connections)]
    assert msgs == ['wobble 0.25 seed None'] * 6
    code, _, err = _main(capsys, 'info', str(wobble_episode), '--wobble', '-1')
    assert code == 2 and '--wobble' in err and 'must be >= 0' in err


def test_two_kinds_claiming_one_folder_are_refused_naming_both(
        umi_episode: Path, capsys: pytest.CaptureFixture[str]) -> None:
    register(DatasetKind('greedy', 'claims everything', GreedyAdapter, NoOptions))
    try:
        code, out, err = _main(capsys, 'info', str(umi_episode))
        assert code == 2 and out == ''
        lines = err.splitlines()
        assert len(lines) == 1, err
        assert str(umi_episode) in lines[0]
        assert 'umi and greedy' in lines[0] and '--kind' in lines[0]
        with pytest.raises(DatasetFormatError, match='umi and greedy'):
            open_episode(umi_episode)
        code, out, err = _main(capsys, 'info', str(umi_episode), '--kind', 'umi')
        assert code == 0, err
        assert 'kind:      umi' in out
    finally:
        unregister('greedy')
    assert 'greedy' not in KINDS


def test_an_option_of_another_kind_is_refused(umi_episode: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _main(capsys, 'info', str(umi_episode), '--segment', '1')
    assert code == 2
    assert err.strip() == (f'error: --segment is an option of react episodes; {umi_episode} '
                           'is a umi episode')


def test_clashing_registrations_are_refused(wobble_kind: DatasetKind) -> None:
    with pytest.raises(ValueError, match='registered already'):
        register(wobble_kind)

    @dataclass(frozen=True)
    class Clash(KindOptions):
        wobble: float = option(1.0, 'the same name again')
    with pytest.raises(ValueError, match="--wobble of 'other' is declared by 'wobble'"):
        register(DatasetKind('other', 'clashes', WobbleAdapter, Clash))
    assert 'other' not in KINDS


def test_kind_options_validate_in_one_place() -> None:
    from react_ros.kinds.react.adapter import ReactOptions
    assert ReactOptions(segment='2', skip_bad='true').segment == 2  # type: ignore[arg-type]
    for bad, match in (({'segment': -1}, 'must be >= 0'), ({'gel_axis': 'up'}, 'one of'),
                       ({'tactile_latency': 1.5}, 'an integer'),
                       ({'skip_bad': 'perhaps'}, 'true or false')):
        with pytest.raises(ReactRosError, match=match):
            ReactOptions(**bad)


def test_a_release_of_one_episode_needs_no_episode_flag(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from react_support import react_release
    root = Path(shutil.copytree(react_release(tmp_path_factory), tmp_path / 'release'))
    assert len((root / 'episodes.jsonl').read_text().splitlines()) == 1
    code, out, err = _main(capsys, 'info', str(root))
    assert code == 0, err
    assert 'kind:      react' in out
    code, _, err = _main(capsys, 'convert', str(root), '-o', str(tmp_path / 'bag'), '-q')
    assert code == 0, err
    assert (tmp_path / 'bag' / 'metadata.yaml').is_file()


# Shared test support: the modules per-kind tests build on (test/kinds/<k>/ subclass them).
SHARED_TEST_SUPPORT = ('kind_contract.py', 'bad_input_support.py', 'live_support.py',
                       'release_support.py', 'conftest.py')
# Still naming a kind, each with why (path, kind): kept short and visible.
NAMES_A_KIND_FOR_NOW = {
    # the umi_episode fixture: shared tests of the player borrow one kind's sample
    ('test/conftest.py', 'umi'),
}


def _kind_in_python(source: str, names: set[str]) -> Iterator[tuple[int, str]]:
    """(line, kind) for a string constant that is a kind's name, or an import of a kind's
    package (react_ros.kinds.<k>) or of a module named after one (bench_umi)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and node.value in names:
            yield node.lineno, node.value
        modules = [node.module or ''] if isinstance(node, ast.ImportFrom) else \
            [a.name for a in node.names] if isinstance(node, ast.Import) else []
        for module in modules:
            parts = module.split('.')
            if parts[:2] == ['react_ros', 'kinds'] and len(parts) > 2:
                yield node.lineno, parts[2]
            own = parts[1:] if parts[0] == 'react_ros' else parts  # not react(_ros)
            for word in {w for part in own for w in part.split('_')} & names:
                yield node.lineno, word


def _kind_as_word(text: str, names: set[str]) -> Iterator[tuple[int, str]]:
    """(line, kind) for a kind's name standing alone (not inside react_ros or react-ros)."""
    for lineno, line in enumerate(text.splitlines(), 1):
        for name in names:
            if re.search(rf'(?<!\w){name}(?!\w|-ros\b)', line):
                yield lineno, name


def test_no_shared_module_names_a_kind() -> None:
    """A dataset is its folder: outside react_ros/kinds/<k>/, nothing a new kind would
    have to edit names a kind.

    Python (react_ros/, launch/, scripts/, bench/, setup.py and the shared test support
    modules): a string constant that is a kind's name, or an import of a kind's package
    or of a module named after a kind. The Makefile: a kind's name as a word outside
    comments (a target, a path). package.xml: one in any element but the description,
    which lists the kinds on purpose (test_package_truth compares it with the registry).
    English words ('react' in react-ros, 'objects') are not code and are not matched.
    Tests of one kind (test/kinds/<k>/) and shared tests that borrow one kind's sample
    to test the player (test_interrupts.py with umi_episode) are not code a new kind
    must edit, so they are not checked.
    """
    root = Path(__file__).resolve().parents[1]
    names = set(KINDS)
    python = [*(root / 'react_ros').rglob('*.py'), *(root / 'launch').rglob('*.py'),
              *(root / 'scripts').rglob('*.py'), *(root / 'bench').rglob('*.py'),
              root / 'setup.py', *(root / 'test' / f for f in SHARED_TEST_SUPPORT)]
    found = set()
    for path in sorted(python):
        where = path.relative_to(root).as_posix()
        if where.startswith('react_ros/kinds/') and where != 'react_ros/kinds/__init__.py':
            continue
        found |= {(where, line, kind) for line, kind in _kind_in_python(path.read_text(), names)}
    makefile = '\n'.join(line.split('#')[0] for line in (root / 'Makefile').read_text()
                         .splitlines())
    found |= {('Makefile', line, kind) for line, kind in _kind_as_word(makefile, names)}
    package = ET.parse(root / 'package.xml').getroot()
    texts = '\n'.join(' '.join([e.tag, *e.attrib.values(), e.text or ''])
                      for e in package.iter() if e.tag != 'description')
    found |= {('package.xml', line, kind) for line, kind in _kind_as_word(texts, names)}
    unexplained = sorted(f for f in found if (f[0], f[2]) not in NAMES_A_KIND_FOR_NOW)
    assert not unexplained, unexplained
    stale = {(where, kind) for where, kind in NAMES_A_KIND_FOR_NOW if (root / where).exists()} \
        - {(where, kind) for where, _, kind in found}
    assert not stale, f'names no kind any more, drop from NAMES_A_KIND_FOR_NOW: {stale}'
