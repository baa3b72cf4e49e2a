"""The one progress renderer (play's line, demo's rate table, convert's counter), with a fake clock."""
from __future__ import annotations

import io

from react_ros.progress import Counter, Progress


class Out(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


class Clock:
    t = 100.0

    def __call__(self) -> float:
        return self.t


def test_terminal_redraws_in_place_and_throttles() -> None:
    out, clock = Out(tty=True), Clock()
    p = Progress(out, interval=0.25, log_interval=5.0, now=clock)
    p.show('one')
    clock.t += 0.125
    p.show('too soon')
    clock.t += 0.125
    p.show('two\nlines')
    p.show('three\nlines\nnow', force=True)
    p.show('back to one', force=True)
    p.close()
    p.close()  # once ended, nothing more
    assert out.getvalue() == ('one'
                              '\r\x1b[Jtwo\nlines'
                              '\r\x1b[1A\x1b[Jthree\nlines\nnow'
                              '\r\x1b[2A\x1b[Jback to one'
                              '\n')


def test_a_log_gets_a_plain_line_every_few_seconds() -> None:
    out, clock = Out(tty=False), Clock()
    p = Progress(out, interval=0.25, log_interval=5.0, now=clock)
    p.show('a')
    clock.t += 4.875
    p.show('b')
    clock.t += 0.125
    p.show('c')
    p.show('d', force=True)
    p.close()
    assert out.getvalue() == 'a\nc\nd\n'


def test_counter_lines() -> None:
    out = Out(tty=False)
    count = Counter('converting', out)
    count(10, 24)
    count(11, 24)  # within 2 s: skipped on a log
    count(24, 24)  # the end always shows
    count(5, 0)  # total unknown
    count.close()
    assert out.getvalue().splitlines() == ['converting:  41.7% 10/24 messages',
                                           'converting: 100.0% 24/24 messages',
                                           'converting:       5/? messages']


BACKGROUND_JOB = r"""
import os, pty, select, sys
from react_ros.progress import Progress

pid, master = pty.fork()
if pid == 0:  # the terminal's session leader, its foreground process group
    try:
        out = os.fdopen(os.dup(1), 'w')
        Progress(out).show('FOREGROUND')
        child = os.fork()
        if child == 0:
            os.setpgid(0, 0)  # a job of its own, not the terminal's foreground one
            Progress(out).show('BACKGROUND')
            out.write('\nbackground done\n')
            out.flush()
            os._exit(0)
        os.waitpid(child, 0)
    finally:
        os._exit(0)
seen = b''
while select.select([master], [], [], 30)[0]:
    try:
        chunk = os.read(master, 4096)
    except OSError:  # the terminal closed with its last process
        break
    if not chunk:
        break
    seen += chunk
os.waitpid(pid, 0)
sys.stdout.write(repr(seen))
"""


def test_a_job_in_the_background_of_its_terminal_draws_nothing() -> None:
    """`react-ros play --loop &`: its redraws landed in the line the user typed next.

    A real terminal (a pty whose session leader is the foreground job), in a process
    of its own (no fork of the test process): the same Progress drawn from the
    foreground job, then from a process group of its own."""
    import subprocess
    import sys
    seen = subprocess.run([sys.executable, '-c', BACKGROUND_JOB], capture_output=True,
                          text=True, timeout=60, check=True).stdout
    assert 'FOREGROUND' in seen and 'background done' in seen, seen
    assert 'BACKGROUND' not in seen, seen


def test_the_player_keeps_its_progress_line_off_a_pipe(umi_episode) -> None:
    """docs/player.md: progress goes to stderr only on a terminal; a log gets the summary."""
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, '-m', 'react_ros.cli', 'play', str(umi_episode),
                           '--rate', '4', '--no-state-publisher',
                           '--disable-keyboard-controls'],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert '[playing]' not in proc.stderr and '[paused' not in proc.stderr, proc.stderr
    assert 'real-time factor' in proc.stderr, proc.stderr  # the summary line
