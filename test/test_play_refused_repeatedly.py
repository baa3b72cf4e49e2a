"""A selection that leaves no topic is refused in one line, every time (issue 39 item 1).

`play BAG -x ".*"` once ended in SIGSEGV (1 run in 2) after Fast DDS printed
"RTPS_WRITER_HISTORY Error: You need to create a Writer with this History before adding
any changes": a writer used while the player was torn down. The refusal now comes from
check_playable before the player makes a publisher, a service or its /clock, and the
player's teardown joins every thread that uses its node before the node goes. Repeated
here: 50 refusals in this process for a bag and for an episode (the refusal now comes
before any DDS participant exists, so no writer can be used while one is torn down), and
10 player processes at once, none of which may end by a signal. The crash itself did not
come back in 50 concurrent runs of the old code here, so these runs show the refusal
holds, not that they would have caught the old race; the suite's crash reports
(test/conftest.py) catch any player run that ends by a signal.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_bag_bad_input import plain_bag

from react_ros import cli

RUNS = 50
PROCESSES = 10


def _refusals(capfd: pytest.CaptureFixture[str], args: list[str]) -> list[str]:
    """The one line of each of RUNS runs (asserting it is one line and exit 2)."""
    lines = []
    for run in range(RUNS):
        capfd.readouterr()
        code = cli.main(args)
        out, err = capfd.readouterr()
        assert code == 2 and len((out + err).splitlines()) == 1, \
            f'run {run + 1}: exit {code}:\n{(out + err)[-1500:]}'
        lines.append(err.strip())
    return lines


def test_a_bag_whose_every_topic_is_excluded(tmp_path: Path,
                                             capfd: pytest.CaptureFixture[str]) -> None:
    bag = plain_bag(tmp_path / 'bag')
    lines = _refusals(capfd, ['play', str(bag), '-x', '.*'])
    assert set(lines) == {f'error: {bag}: --topics/--exclude-topics/--regex/--exclude-regex '
                          'leave no topic to play'}


def test_an_episode_whose_selection_leaves_nothing(umi_episode: Path,
                                                   capfd: pytest.CaptureFixture[str]) -> None:
    # /robot_description is the state publisher's to publish: nothing of the episode's own
    lines = _refusals(capfd, ['play', str(umi_episode), '--topics', '/robot_description'])
    assert len(set(lines)) == 1 and 'leave no topic to play' in lines[0], lines[0]


def test_player_processes_refuse_and_none_ends_by_a_signal(tmp_path: Path) -> None:
    bag = plain_bag(tmp_path / 'bag')
    env = dict(os.environ)
    procs = [subprocess.Popen([sys.executable, '-m', 'react_ros.cli', 'play', str(bag),
                               '-x', '.*'], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env, text=True) for _ in range(PROCESSES)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 2, f'exit {p.returncode} (negative: a signal):\n{err[-1500:]}'
        assert (out + err).splitlines() == [f'error: {bag}: --topics/--exclude-topics/'
                                            '--regex/--exclude-regex leave no topic to play']
