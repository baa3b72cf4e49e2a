"""The robot's TF from the episode's first JointState, on a busy machine (issue 36).

bench/first_tf.py is the long form (20 starts of each way); this runs a few. Each
start: a reliable KEEP_ALL probe on /joint_states and /tf is up before the player;
for every moving joint the first /tf must carry the stamp of the first JointState
that moves it. Two busy processes load both cores meanwhile, as in real life.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'bench'))
import first_tf  # noqa: E402

pytestmark = pytest.mark.timeout(900)

LOAD = 2
DELAY_S = 15


def _explain(outcome: first_tf.Outcome) -> str:
    return f'{outcome.mode}: exit {outcome.exit_code}, {outcome.missing}\n{outcome.log[-3000:]}'


def test_the_first_tf_of_every_moving_joint_is_at_the_first_joint_state(
        umi_episode: Path) -> None:
    outcomes = list(first_tf.runs(umi_episode, first_tf.MODES, count=2, load=LOAD))
    assert len(outcomes) == 4
    for outcome in outcomes:
        assert outcome.ok, _explain(outcome)


@pytest.fixture
def slow_state_publisher(tmp_path: Path) -> dict[str, str]:
    """An environment in which the state publisher's process sleeps DELAY_S s before it
    even imports (a sitecustomize that only that process acts on): a slow start."""
    site = tmp_path / 'site'
    site.mkdir()
    (site / 'sitecustomize.py').write_text(
        'import sys, time\n'
        "if 'react_ros.ros.state_publisher' in sys.orig_argv:\n"
        f'    time.sleep({DELAY_S})\n')
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(site), env.get('PYTHONPATH')]))
    return env


@pytest.mark.parametrize('mode, says', [
    ('own', 'waiting for the state publisher to start'),
    ('launch', 'waiting for robot_state_publisher to subscribe to /joint_states')])
def test_a_slow_state_publisher_is_waited_for(umi_episode: Path, mode: str, says: str,
                                              slow_state_publisher: dict[str, str]) -> None:
    (outcome,) = first_tf.runs(umi_episode, (mode,), count=1, load=LOAD,
                               env=slow_state_publisher)
    assert outcome.ok, _explain(outcome)
    assert says in outcome.log, outcome.log
    assert 'Traceback' not in outcome.log
