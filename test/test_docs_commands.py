"""Every command block of README.md and docs/*.md runs as written and succeeds.

Which fenced blocks are command blocks:
- A block fenced ```sh or ```bash is a command block. It runs as written with
  `scripts/ros_env.sh bash -euo pipefail -c BLOCK`: the repository's .venv on PATH
  (`react-ros` is its console script), DDS on this machine in this test run's ROS domain,
  so every line must succeed. The blocks of one page run in order in one empty temporary
  folder (a page's `sample` makes what its `info`, `play` and `convert` read).
- A command block that cannot run on a bare PyPI machine in a few seconds (rviz2,
  `ros2 launch`, colcon, a downloaded release, a `make` target that takes minutes, an
  endless `--loop`) says so on the line just above its fence:
  `<!-- not run: REASON -->`. It is reported as a skip with its reason, so every exception
  is visible and counted (`pytest -rs` lists them).
- Any other fence (```text, ```python, ```yaml, a bare ```) is not a command. The fences
  ```shell, ```console and ```zsh are refused: they read as commands but would not run.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / 'README.md', *sorted((ROOT / 'docs').glob('*.md'))]
COMMAND_FENCES = {'sh', 'bash'}
AMBIGUOUS_FENCES = {'shell', 'console', 'zsh'}
NOT_RUN = re.compile(r'<!--\s*not run:\s*(\S.*?)\s*-->')
FENCE = re.compile(r'^```(\S*)\s*$')
BLOCK_TIMEOUT_S = 120  # the longest documented command takes a few seconds

pytestmark = pytest.mark.timeout(600)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int          # of the opening fence, from 1
    fence: str         # the info string: 'sh', 'text', ''
    text: str
    not_run: str | None  # the reason the marker gives, or None

    @property
    def where(self) -> str:
        return f'{self.page.relative_to(ROOT)}:{self.line}'


def fenced_blocks(page: Path) -> list[Block]:
    lines = page.read_text().splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith('```')), None)
        assert end is not None, f'{page.relative_to(ROOT)}:{i + 1}: a fence that never closes'
        above = next((line for line in reversed(lines[:i]) if line.strip()), '')
        marker = NOT_RUN.search(above)
        blocks.append(Block(page, i + 1, opening.group(1), '\n'.join(lines[i + 1:end]) + '\n',
                            marker.group(1) if marker else None))
        i = end + 1
    return blocks


def command_blocks() -> list[Block]:
    return [b for page in PAGES for b in fenced_blocks(page) if b.fence in COMMAND_FENCES]


class PageRun:
    """The blocks of one page, run in order in one temporary folder, each at most once."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.failed: str | None = None
        self.done: set[int] = set()

    def run_through(self, block: Block) -> None:
        for earlier in fenced_blocks(block.page):
            if earlier.fence not in COMMAND_FENCES or earlier.not_run or earlier.line in self.done:
                continue
            if self.failed:
                pytest.fail(f'{block.where}: not run, an earlier block failed ({self.failed})')
            self.done.add(earlier.line)
            result = subprocess.run(
                [str(ROOT / 'scripts' / 'ros_env.sh'), 'bash', '-euo', 'pipefail', '-c',
                 earlier.text],
                cwd=self.folder, stdin=subprocess.DEVNULL, capture_output=True,
                text=True, timeout=BLOCK_TIMEOUT_S)
            if result.returncode != 0:
                self.failed = earlier.where
                pytest.fail(f'{earlier.where}: exit {result.returncode}\n{earlier.text}\n'
                            f'stdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}')
            if earlier.line == block.line:
                return


@pytest.fixture(scope='module')
def page_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, PageRun]:
    return {page: PageRun(tmp_path_factory.mktemp(page.stem)) for page in PAGES}


@pytest.mark.parametrize('block', [
    pytest.param(b, id=b.where, marks=[pytest.mark.skip(reason=f'{b.where} not run: {b.not_run}')]
                 if b.not_run else [])
    for b in command_blocks()])
def test_command_block_succeeds(block: Block, page_runs: dict[Path, PageRun]) -> None:
    page_runs[block.page].run_through(block)


def test_every_fence_is_a_command_or_plainly_not_one() -> None:
    wrong = [f'{b.where}: ```{b.fence} (use ```sh to run it, ```text to show it)'
             for page in PAGES for b in fenced_blocks(page) if b.fence in AMBIGUOUS_FENCES]
    assert not wrong, '\n'.join(wrong)


def test_not_run_markers_stand_above_command_blocks() -> None:
    """A marker above a ```text block, or nowhere near a fence, excuses nothing: it is a slip."""
    stray = []
    for page in PAGES:
        lines = page.read_text().splitlines()
        fences = {b.line: b for b in fenced_blocks(page)}
        for n, line in enumerate(lines, 1):
            if not NOT_RUN.search(line):
                continue
            below = next((k for k in range(n + 1, len(lines) + 1) if lines[k - 1].strip()), None)
            block = fences.get(below) if below else None
            if block is None or block.fence not in COMMAND_FENCES:
                stray.append(f'{page.relative_to(ROOT)}:{n}: '
                             '"not run" marker above no command block')
    assert not stray, '\n'.join(stray)


def test_pages_have_command_blocks_that_run() -> None:
    """The check above would pass on pages with no command at all: make sure it has work."""
    runnable = [b for b in command_blocks() if not b.not_run]
    pages = {b.page.name for b in runnable}
    assert 'README.md' in pages, 'README.md has no command block that runs'
    assert len(pages) >= 4, f'only {sorted(pages)} have command blocks that run'
