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
