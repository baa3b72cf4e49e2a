"""`react-ros list RELEASE`: every kind's release lists its episodes, each with a play
command that names a real episode; info/play/convert on a release of several point at `list`;
what is no release is one line and exit 2."""
from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
from conftest import written_once

from react_ros import cli
from react_ros.registry import KINDS, find_release

SAMPLED = sorted(k for k, kind in KINDS.items() if kind.sample)  # every kind with a sample


def _main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope='module', params=SAMPLED)
def release(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A release of two episodes of each kind (for UMI: a folder of two episode folders)."""
    kind = KINDS[request.param]
    return written_once(tmp_path_factory, f'list_{kind.name}', lambda out: kind.sample_writer()(
        out, seed=5, episodes=2, **kind.small_sample))


def test_each_episode_once_with_a_command_that_plays_it(
        release: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kind, refs = find_release(release)
    code, out, err = _main(capsys, 'list', str(release))
    assert code == 0, err
    head, *lines = out.splitlines()
    assert head == f'{release}: 2 {kind.name} episodes'
    assert [line.split()[0] for line in lines] == [r.id for r in refs]
    for line in lines:
        words = shlex.split(line.split(None, 1)[1])
        assert words[:2] == ['react-ros', 'play']
        # the same words open the episode: info takes what play takes
        code, shown, err = _main(capsys, 'info', *words[2:])
        assert code == 0, err
        assert f'kind:      {kind.name}' in shown
    code, out, err = _main(capsys, 'list', str(release), '--json')
    assert code == 0, err
    doc = json.loads(out)
    assert doc['kind'] == kind.name and doc['root'] == str(release)
    assert [e['id'] for e in doc['episodes']] == [r.id for r in refs]
    assert [e['play'] for e in doc['episodes']] == [line.split(None, 1)[1] for line in lines]


@pytest.mark.parametrize('command', ['info', 'play', 'convert'])
def test_a_release_of_several_without_episode_points_at_list(
        command: str, release: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each command says how to choose (--episode, or the episode's own path) and where the
    episodes are listed; the kind's own words stay."""
    args = [command, str(release)] + (['-o', str(tmp_path / 'bag')] if command == 'convert'
                                      else [])
    code, out, err = _main(capsys, *args)
    assert code == 2 and out == ''
    (line,) = err.splitlines()
    assert line.startswith(f'error: {release}') and '2 ' in line, line
    assert '--episode' in line or 'name one episode (e.g. ' in line, line
    assert line.endswith(f'`react-ros list {release}` lists them'), line
    assert not (tmp_path / 'bag').exists()


def _one_line_refusal(capsys: pytest.CaptureFixture[str], path: Path, words: str) -> None:
    code, out, err = _main(capsys, 'list', str(path))
    assert code == 2 and out == ''
    (line,) = err.splitlines()
    assert line.startswith(f'error: {path}: ') and words in line, line


def test_what_is_no_release_is_refused_in_one_line(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / 'notes').mkdir()
    (tmp_path / 'notes' / 'readme.txt').write_text('nothing to play\n')
    _one_line_refusal(capsys, tmp_path / 'notes', 'holds no release of any known dataset')
    _one_line_refusal(capsys, tmp_path / 'missing', 'no such directory')
    _one_line_refusal(capsys, tmp_path / 'notes' / 'readme.txt', 'is a file')
    react = KINDS['react']
    source = written_once(tmp_path_factory, 'list_react_one', lambda out: react.sample_writer()(
        out, seed=5, **react.small_sample))
    empty = Path(shutil.copytree(source, tmp_path / 'empty'))
    (empty / 'episodes.jsonl').write_text('')
    _one_line_refusal(capsys, empty, 'is a react release with no episodes')


def test_every_option_has_help() -> None:
    parser = cli.build_parser([])
    sub = next(a for a in parser._actions if a.dest == 'command')
    listed = sub.choices['list']
    assert sub._choices_actions and any(a.dest == 'list' for a in sub._choices_actions)
    for action in listed._actions:
        assert action.help, action.dest
