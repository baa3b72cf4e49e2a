"""Write docs/cli.md: every command's `--help`, as the installed CLI prints it.

    make cli-reference                                          # rewrite docs/cli.md
    scripts/ros_env.sh python scripts/cli_reference.py --check  # exit 1 if it differs

The page is made from the parser itself, so it cannot drift from the flags;
test/test_cli_help.py checks that the file in the repository is what this writes.
Help is formatted at a fixed width, so the page does not depend on a terminal.
"""
from __future__ import annotations

import argparse
import os
import sys
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / 'docs' / 'cli.md'
WIDTH = '100'

INTRO = """# Command-line reference

Generated from the parser by `make cli-reference` (scripts/cli_reference.py); do not edit
by hand. `react-ros COMMAND EPISODE --help` prints the same for one episode, listing only
its kind's own options. Every command refuses bad input with exit status 2 and one line
naming the file and what is wrong.
"""


def _help(argv: list[str]) -> str:
    from react_ros import cli
    out = StringIO()
    with redirect_stdout(out):
        try:
            cli.build_parser(argv).parse_args(argv)
        except SystemExit:
            pass
    return out.getvalue().rstrip()


def reference() -> str:
    from react_ros import cli
    saved = os.environ.get('COLUMNS')
    os.environ['COLUMNS'] = WIDTH  # argparse wraps to the terminal's width otherwise
    try:
        parser = cli.build_parser([])
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parts = [INTRO, '```text', _help(['--help']), '```']
        for name in sub.choices:
            parts += [f'\n## `react-ros {name}`\n', '```text', _help([name, '--help']), '```']
    finally:
        if saved is None:
            del os.environ['COLUMNS']
        else:
            os.environ['COLUMNS'] = saved
    return '\n'.join(parts) + '\n'


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--check', action='store_true',
                        help='exit 1 if docs/cli.md is not what this script writes')
    args = parser.parse_args()
    text = reference()
    if args.check:
        if PAGE.read_text() != text:
            print(f'{PAGE} is out of date: run `make cli-reference`', file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    print(f'wrote {PAGE}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
