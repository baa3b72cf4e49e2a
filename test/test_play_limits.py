"""What the player refuses instead of playing nothing or the wrong thing (issue 23, items 4 and 5).

A start offset at or past the episode's end, or a playback duration of 0, is
refused with one line (exit 2) by `react-ros play` and by the node; the summary
line counts only what was played from the offset. The node refuses a parameter
it does not have, naming the closest one; `convert --images` on an episode
without images says so. Every player runs as a subprocess over real rclpy, as a
user starts it; no assertion on wall-clock time.
"""
from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from react_ros.registry import open_episode
from react_ros.kinds.objects.sample import write_objects_sample

pytestmark = pytest.mark.timeout(300)

# A run that should be refused at once gets this long (a busy machine, rclpy's start-up).
BOUND_S = 120
SUMMARY = re.compile(r'^played ([0-9.]+) s of the episode in ([0-9.]+) s: '
                     r'real-time factor ([0-9.]+) \(rate ([0-9.]+)\)', re.M)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=BOUND_S)


def _play(episode: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return _run('-m', 'react_ros.cli', 'play', str(episode), '--wait-for-subscribers', '0',
                *flags)


def _node(episode: Path, *ros: str) -> subprocess.CompletedProcess[str]:
    return _run('-m', 'react_ros.node', '--ros-args', '-p', f'episode:={episode}',
                '-p', 'quiet:=true', '-p', 'wait_for_subscribers:=0', *ros)


def _one_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The refusal: exit 2, one line on stderr, nothing played."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.fixture(scope='module')
def duration_s(umi_episode: Path) -> float:
    episode = open_episode(umi_episode)
    return (episode.end_ns - episode.start_ns) / 1e9


@pytest.fixture(scope='module')
def objects_episode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Mocap object poses: no sensor_msgs/Image at all. NaN on every frame marked not valid,
    as the format document stores them: the sample's LittleBox0 holds its last pose there,
    which is warned about, and this file's refusals are to be the only line."""
    root = write_objects_sample(tmp_path_factory.mktemp('objects') / 'release', duration_s=1.0)
    (npz,) = root.glob('*/motions/objects.npz')
    with np.load(npz) as z:
        data = {k: z[k] for k in z.files}
    data['T_world_obj'][~data['valid']] = np.nan
    with open(npz, 'wb') as f:
        np.savez(f, **data)
    return root


# --- item 4: the start offset and the playback duration -------------------------------


@pytest.mark.parametrize('past', [0.0, 3.0])
def test_play_refuses_a_start_offset_at_or_past_the_end(umi_episode: Path, duration_s: float,
                                                        past: float) -> None:
    offset = f'{duration_s + past:.9f}'
    line = _one_line(_play(umi_episode, '--start-offset', offset))
    assert line == (f'error: {umi_episode}: start offset {float(offset):g} s is at or past the '
                    f'end of the episode ({duration_s:.3f} s long): nothing to play')


def test_play_refuses_a_playback_duration_of_zero(umi_episode: Path) -> None:
    line = _one_line(_play(umi_episode, '--playback-duration', '0'))
    assert line.startswith('error: argument --playback-duration: must be > 0'), line


def test_node_refuses_a_start_offset_past_the_end(umi_episode: Path, duration_s: float) -> None:
    line = _one_line(_node(umi_episode, '-p', f'start_offset:={duration_s + 1:.3f}'))
    assert line.startswith(f'player: {umi_episode}: start offset '), line
    assert line.endswith(f'is at or past the end of the episode ({duration_s:.3f} s long): '
                         'nothing to play'), line


def test_node_refuses_a_playback_duration_of_zero_and_plays_to_the_end_when_negative(
        umi_episode: Path, duration_s: float) -> None:
    # the words PlayOptions checks every entry point's values with (the CLI's too)
    assert _one_line(_node(umi_episode, '-p', 'playback_duration:=0')) == \
        'player: --playback-duration: must be > 0, got 0'
    # -1 (the default) and any other negative value: to the end, as documented
    proc = _node(umi_episode, '-p', 'playback_duration:=-2.5', '-p', 'quiet:=false',
                 '-p', 'rate:=4.0')
    assert proc.returncode == 0, proc.stderr
    played = SUMMARY.search(proc.stderr)
    assert played, proc.stderr
    assert abs(float(played.group(1)) - duration_s) <= 0.011, proc.stderr


def test_the_summary_counts_only_what_was_played_from_the_offset(umi_episode: Path,
                                                                  duration_s: float) -> None:
    offset = 1.0
    proc = _play(umi_episode, '--start-offset', str(offset), '--rate', '2')
    assert proc.returncode == 0, proc.stderr
    found = SUMMARY.search(proc.stderr)
    assert found, proc.stderr
    played, wall, factor, rate = map(float, found.groups())
    # The latched topics go out again at the offset: from there to the episode's last
    # message. Printed to 2 decimals, hence the 0.011.
    assert abs(played - (duration_s - offset)) <= 0.011, proc.stderr
    assert rate == 2
    if wall >= 0.1:  # the factor is what the line says was played over its wall time
        assert math.isclose(factor, played / wall, rel_tol=0.05, abs_tol=0.02), proc.stderr


# --- item 5: node parameters it does not have ------------------------------------------


def test_node_refuses_a_misspelled_parameter_naming_the_closest(umi_episode: Path) -> None:
    # Before the fix this played (at rate 1) to the end and exited 0: bounded by the duration.
    line = _one_line(_node(umi_episode, '-p', 'ratee:=2.0', '-p', 'playback_duration:=0.2'))
    assert line == "player: parameter 'ratee' is not a parameter of the player; " \
                   "did you mean 'rate'?"


def test_node_refuses_a_parameter_with_no_close_name_listing_its_own(umi_episode: Path) -> None:
    line = _one_line(_node(umi_episode, '-p', 'zqxw:=1', '-p', 'playback_duration:=0.2'))
    assert line.startswith("player: parameter 'zqxw' is not a parameter of the player; it has ")
    assert ' rate, ' in line and ' start_offset, ' in line


def test_node_refuses_unknown_parameters_from_a_params_file(umi_episode: Path,
                                                            tmp_path: Path) -> None:
    params = tmp_path / 'params.yaml'
    params.write_text('/**:\n'
                      '  ros__parameters:\n'
                      '    use_sim_time: false\n'  # what launch files pass every node: taken
                      '    lop: true\n'
                      'react_ros_player:\n'
                      '  ros__parameters:\n'
                      '    playback_duration: 0.2\n'
                      '    strat_offset: 0.5\n'
                      'another_node:\n'  # not the player's: none of its business
                      '  ros__parameters:\n'
                      '    not_ours: 1\n')
    line = _one_line(_node(umi_episode, '--params-file', str(params)))
    assert line == ("player: parameter 'lop' is not a parameter of the player; did you mean "
                    "'loop'?; parameter 'strat_offset' is not a parameter of the player; did "
                    "you mean 'start_offset'?")


def test_node_takes_the_parameters_every_ros_node_has(umi_episode: Path) -> None:
    proc = _node(umi_episode, '-p', 'use_sim_time:=false', '-p', 'playback_duration:=0.2',
                 '-p', 'rate:=2')  # an integer: dynamic typing still takes it
    assert proc.returncode == 0, proc.stderr


# --- item 5: --images on an episode without images -------------------------------------


@pytest.mark.parametrize('mode', ['jpeg', 'png', 'h264'])
def test_convert_refuses_images_on_an_episode_without_images(objects_episode: Path,
                                                            tmp_path: Path, mode: str) -> None:
    out = tmp_path / 'bag'
    line = _one_line(_run('-m', 'react_ros.cli', 'convert', str(objects_episode), '-o', str(out),
                          '--images', mode))
    assert re.fullmatch(rf'error: \S+: --images {mode}: no sensor_msgs/msg/Image stream in the '
                        r'episode, so nothing to encode \(leave --images out\)', line), line
    assert not out.exists()
    # raw (the default) converts it as ever
    ok = _run('-m', 'react_ros.cli', 'convert', str(objects_episode), '-o', str(out), '-q')
    assert ok.returncode == 0, ok.stderr


def test_convert_refuses_images_when_the_chosen_topics_have_none(umi_episode: Path,
                                                                 tmp_path: Path) -> None:
    line = _one_line(_run('-m', 'react_ros.cli', 'convert', str(umi_episode),
                          '-o', str(tmp_path / 'bag'), '--images', 'jpeg',
                          '--topics', '/left/perception_interface/pose/state'))
    assert line.endswith('--images jpeg: no sensor_msgs/msg/Image stream among the topics '
                         'chosen, so nothing to encode (leave --images out)'), line


def test_play_refuses_h264_on_an_episode_without_images(objects_episode: Path) -> None:
    line = _one_line(_play(objects_episode, '--images', 'h264'))
    assert line.endswith('--images h264: no sensor_msgs/msg/Image stream in the episode, so '
                         'nothing to encode (leave --images out)'), line
