"""The CLI's help: every option says what it does, examples parse, `--version`, and
`COMMAND EPISODE --help` lists only that episode's kind's options."""
from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from react_ros import __version__, cli
from react_ros.registry import KINDS, kind_options
from react_ros.cli import examples

ROOT = Path(__file__).resolve().parents[1]


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as stop:
        cli.main([*argv, '--help'])
    assert stop.value.code == 0
    return capsys.readouterr().out


def test_every_option_and_argument_has_help() -> None:
    parser = cli.build_parser([])
    missing = []
    for name, command in _commands(parser).items():
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f'{name} {"/".join(action.option_strings) or action.dest}')
    assert not missing, f'options without help text: {missing}'


def test_every_valued_option_says_its_default() -> None:
    """A number or word a flag falls back to is written in its help ('default ...')."""
    silent = []
    for name, command in _commands(cli.build_parser([])).items():
        for action in command._actions:
            if not action.option_strings or action.default in (None, False, (), []) \
                    or action.default == argparse.SUPPRESS or action.nargs == 0:
                continue
            if 'default' not in action.help:
                silent.append(f'{name} {action.option_strings[-1]} (default {action.default!r})')
    assert not silent, f'options whose help does not give their default: {silent}'


def test_every_command_ends_with_examples_that_parse(capsys) -> None:
    parser = cli.build_parser([])
    assert set(_commands(parser)) <= set(examples.EXAMPLES), 'a command without examples'
    for command, lines in examples.EXAMPLES.items():
        assert lines, f'{command}: no examples'
        shown = _help([command], capsys)
        for line in lines:
            assert line in shown, f'{command} --help does not show {line!r}'
            words = shlex.split(line)
            assert words[:2] == ['react-ros', command], line
            args = cli.build_parser(words[1:]).parse_args(words[1:])  # exits 2 on a bad flag
            assert args.command == command


def test_play_help_lists_the_keyboard_and_the_services(capsys) -> None:
    shown = _help(['play'], capsys)
    for key in ('space', 'right arrow', 'up', 'down'):
        assert key in shown
    for service in ('~/pause', '~/resume', '~/set_rate', '~/play_next', '~/seek'):
        assert service in shown


def test_version_is_the_package_version(capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        cli.main(['--version'])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f'react-ros {__version__} ')
    xml = (ROOT / 'package.xml').read_text()
    assert f'<version>{__version__}</version>' in xml
    assert f"version='{__version__}'" in (ROOT / 'setup.py').read_text()


def _groups(shown: str) -> set[str]:
    """The kinds whose option group a help text shows ('react options (...)')."""
    return {m.group(1) for m in re.finditer(r'^(\w+) options \(', shown, re.M)}


OWN = {kind.name for kind, _ in kind_options()}  # the kinds that have options at all


def test_help_without_an_episode_lists_every_kind(capsys) -> None:
    for command in ('play', 'convert', 'info', 'preview'):
        assert _groups(_help([command], capsys)) == OWN, command


@pytest.fixture(scope='module')
def samples(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp('help_samples')
    # 1 s: the shortest every kind writes (objects' own minimum); tiny frames
    return {kind: cli.write_sample(kind, root / kind, duration=1.0, resolution=(64, 48))
            for kind, d in KINDS.items() if d.sample}


@pytest.mark.parametrize('command', ['play', 'convert', 'info'])
def test_help_about_an_episode_lists_only_its_kind(samples, command, capsys) -> None:
    for kind, path in samples.items():
        shown = _help([command, str(path)], capsys)
        assert _groups(shown) == {kind} & OWN, f'{command} {kind}: {_groups(shown)}'
        assert f'options of {kind} episodes' in shown
        others = [opt.flag for other, opt in kind_options() if other.name != kind]
        listed = [flag for flag in others if re.search(rf'\s{re.escape(flag)}[\s,=]', shown)]
        # a flag another kind also declares (by the same name) is this kind's too
        listed = [f for f in listed if f not in {o.flag for k, o in kind_options()
                                                 if k.name == kind}]
        assert not listed, f'{command} {kind} --help lists other kinds\' flags {listed}'


def test_help_with_kind_lists_that_kind(capsys) -> None:
    for kind in OWN:
        assert _groups(_help(['convert', 'somewhere', '--kind', kind], capsys)) == {kind}


def test_a_hidden_kinds_option_is_still_refused_by_name(samples) -> None:
    """Left out of the help, an option of another kind is parsed, and refused in one line."""
    other = next(opt for kind, opt in kind_options() if kind.name != 'umi'
                 and opt.type is not bool)
    proc = subprocess.run([sys.executable, '-m', 'react_ros.cli', 'info', str(samples['umi']),
                           other.flag, str(other.default if other.default is not None else 1)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count('\n') == 1 and f'{other.flag} is an option of' in proc.stderr


def test_help_about_a_bag_lists_no_kind_options(samples, tmp_path, capsys) -> None:
    bag = tmp_path / 'bag'
    assert cli.main(['convert', str(samples['umi']), '-o', str(bag), '-q']) == 0
    shown = _help(['play', str(bag)], capsys)
    assert _groups(shown) == set()
    assert 'a bag plays as recorded' in shown


def test_the_cli_reference_is_what_the_parser_prints() -> None:
    import importlib.util
    spec = importlib.util.spec_from_file_location('cli_reference',
                                                  ROOT / 'scripts' / 'cli_reference.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = ROOT / 'docs' / 'cli.md'
    assert page.exists() and page.read_text() == module.reference(), \
        'docs/cli.md is out of date: run `make cli-reference`'


def test_second_terminal_commands_load_ros_only_when_they_run() -> None:
    """`topic` and `control` parse without their DDS modules: those load in `run`."""
    lazy = ('react_ros.ros.second_terminal', 'react_ros.ros.player_services',
            'react_ros.ros.message_yaml', 'react_ros.ros.topic_rate')
    code = ('import sys; from react_ros import cli; '
            "[cli.build_parser(a).parse_args(a) for a in (['topic', 'echo', '/clock'], "
            "['control', 'seek', '-1'])]; "
            f'print([m for m in {lazy!r} if m in sys.modules])')
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == '[]', proc.stdout


def test_second_terminal_commands_are_listed(capsys) -> None:
    shown = _help([], capsys)
    assert re.search(r'^    topic +a running player\'s topics', shown, re.M), shown
    assert re.search(r'^    control +a running player\'s services', shown, re.M), shown
