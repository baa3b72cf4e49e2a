"""`react-ros info`: what an episode holds, without decoding any video."""
from __future__ import annotations

from react_ros.adapters.base import Episode
from react_ros.streams import Role


def _count(stream) -> int:
    if stream.count is not None:
        return stream.count
    return sum(1 for _ in stream.open())


def describe(episode: Episode) -> str:
    dur_s = episode.duration_ns / 1e9
    lines = [f'kind:      {episode.kind}',
             f'path:      {episode.path}',
             f'start:     {episode.start_ns / 1e9:.9f} s',
             f'duration:  {dur_s:.3f} s',
             f'streams:   {len(episode.streams)}']
    rows = []
    for s in episode.streams:
        n = _count(s)
        rate = n / dur_s if dur_s > 0 and n > 1 else 0.0
        note = []
        if s.latched:
            note.append('latched')
        if s.role is Role.ROBOT_STATE:
            note.append('robot state')
        rows.append((s.topic, s.msg_type, str(n), f'{rate:.1f} Hz' if rate else '-',
                     ', '.join(note)))
    widths = [max(len(r[i]) for r in rows) for i in range(4)] if rows else [0] * 4
    for r in rows:
        lines.append('  ' + '  '.join(c.ljust(w) for c, w in zip(r, widths)) + '  ' + r[4])
    for source, n in sorted(episode.invalid_poses.items()):
        lines.append(f'invalid poses: {source}: {n} not published')
    for w in episode.warnings:
        lines.append(f'warning: {w}')
    lines += episode.report
    return '\n'.join(line.rstrip() for line in lines)
