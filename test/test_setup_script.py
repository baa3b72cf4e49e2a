"""scripts/setup_lib.sh, the set-up's steps: a line at least every 10 s while a step runs,
its time at the end, and the interface builds kept for the next venv (issue 38).

The steps run for real in bash; a whole set-up from nothing takes minutes and is run
by hand (the closing notes give its times), not here.
"""
from __future__ import annotations

import re
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / 'scripts' / 'setup_lib.sh'


def _bash(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(['bash', '-c', f'set -euo pipefail; began=$SECONDS; source {LIB}\n'
                           + script], capture_output=True, text=True, timeout=120,
                          env={'PATH': '/usr/bin:/bin', **env})


def test_a_step_says_it_is_alive_while_it_runs_and_its_time_at_the_end() -> None:
    # a tick of 1 s and a 3.5 s step: the step outlasts several ticks (10 s in real use)
    done = _bash('run_step "counting sheep" sleep 3.5', REACT_ROS_SETUP_TICK_S='1')
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == 'react_ros: counting sheep ...'
    ticks = [line for line in lines if re.fullmatch(r'react_ros:   counting sheep: 0m0\ds', line)]
    assert len(ticks) >= 2, lines
    assert re.fullmatch(r'react_ros: counting sheep: done in 0m0\ds', lines[-1]), lines


def test_a_failed_step_shows_its_output_and_stops_the_set_up() -> None:
    done = _bash('run_step "breaking" bash -c "echo what went wrong; exit 3"; echo not here')
    assert done.returncode == 3
    assert 'what went wrong' in done.stderr
    assert 'react_ros: breaking failed (exit status 3)' in done.stderr
    assert 'not here' not in done.stdout


def test_a_kept_build_unpacks_into_another_venv_with_its_paths_rewritten(tmp_path: Path) -> None:
    """What a build installed in one venv (as build_package keeps it) goes into another."""
    old, new, cache = tmp_path / 'a' / '.venv', tmp_path / 'b' / '.venv', tmp_path / 'cache'
    files = ['share/pkg/cmake/pkgExport.cmake', 'lib/libpkg.so']
    for rel in files:
        (old / rel).parent.mkdir(parents=True, exist_ok=True)
    (old / files[0]).write_text(f'set(_IMPORT_PREFIX "{old}")\ninclude({old}/share/x.cmake)\n')
    (old / files[1]).write_bytes(b'\x7fELF\x00binary\x00')
    entry = tmp_path / 'entry'
    entry.mkdir()
    (entry / 'prefix').write_text(f'{old}\n')
    (entry / 'files').write_text('\n'.join(files) + '\n')
    with tarfile.open(entry / 'installed.tgz', 'w:gz') as tar:
        for rel in files:
            tar.add(old / rel, arcname=rel)
    cache.mkdir()
    with tarfile.open(cache / 'pkg-KEY.tgz', 'w:gz') as tar:
        for name in ('prefix', 'files', 'installed.tgz'):
            tar.add(entry / name, arcname=name)
    new.mkdir(parents=True)
    done = _bash(f'venv={new}; cache={cache}; work=$(mktemp -d); unpack_package pkg KEY')
    assert done.returncode == 0, done.stderr
    assert (new / files[0]).read_text() == (f'set(_IMPORT_PREFIX "{new}")\n'
                                            f'include({new}/share/x.cmake)\n')
    assert (new / files[1]).read_bytes() == b'\x7fELF\x00binary\x00'
    missing = _bash(f'venv={new}; cache={cache}; work=$(mktemp -d); unpack_package pkg OTHER')
    assert missing.returncode != 0  # another key: nothing kept, built again
    off = _bash(f'venv={new}; cache=off; work=$(mktemp -d); unpack_package pkg KEY')
    assert off.returncode != 0


def test_every_long_command_of_the_set_up_runs_as_a_step() -> None:
    """A command that can take more than a moment (pip, python, npm, venv, a build) runs
    through run_step, which says it is alive every few seconds: at top level of
    setup_env.sh only assignments of quick queries (`x=$(python -c ...)`) may call them
    bare. (The editable install and import check at the end ran silently for 8 s at load
    3-5, the venv and CMake-patching steps too, before.)"""
    slow = re.compile(r'(^|[\s"(])(pip|npm|build_\w+)\s|bin/python"|"\$py"')
    body_depth = 0
    bare = []
    text = (ROOT / 'scripts' / 'setup_env.sh').read_text().replace('\\\n', ' ')
    for n, line in enumerate(text.splitlines(), 1):
        code = line.split(' #', 1)[0].strip()
        if re.match(r'^(say|if|else|fi|for|done|do)\b', code):
            continue  # a message, or the frame of a block whose commands are checked
        if re.match(r'^[\w]+\(\)\s*\{', code):
            body_depth += not code.endswith('}')  # a one-line function has no body after
            continue
        if body_depth:
            if code == '}':
                body_depth -= 1
            continue
        if not code or code.startswith('#') or not slow.search(code):
            continue
        if code.startswith('run_step ') or re.match(r'^\w+=\$\(', code):
            continue
        if re.match(r'^\[ .* \] \|\| run_step ', code):
            continue
        bare.append(f'{n}: {code}')
    assert not bare, 'run these through run_step:\n' + '\n'.join(bare)
