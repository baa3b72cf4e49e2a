"""A Fast DDS shared-memory port left half-made by a killed process does not hang us.

Twice a fresh run of the suite hung for good inside rclpy's Node(): a process killed
while its participant created its port had left /dev/shm/fastdds_port<N> unsized (or not
marked initialized) and no lock file, and the next participant to take that port index
waited in Boost's open loop forever (react_ros/ros/shm_ports.py).
"""
from __future__ import annotations

import os
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from react_ros.ros import shm_ports
from react_ros.ros.isolation import hold_domain


def _segment(shm: Path, port: int, head: int | None, size: int = 4096) -> Path:
    path = shm / f'fastdds_port{port}'
    with open(path, 'wb') as f:
        if head is not None:
            f.write(struct.pack('<I', head))
            f.truncate(size)
    (shm / f'sem.fastdds_port{port}_mutex').write_bytes(b'\0' * 32)
    return path


def test_only_ports_that_stay_half_made_are_cleared(tmp_path: Path) -> None:
    unsized = _segment(tmp_path, 17161, None)
    initializing = _segment(tmp_path, 17163, 1)
    uninitialized = _segment(tmp_path, 17165, 0)
    whole = _segment(tmp_path, 17167, 2)
    corrupted = _segment(tmp_path, 17169, 3)
    other_domain = _segment(tmp_path, 17411, None)
    (tmp_path / 'fastdds_port17171_el').write_bytes(b'')  # a lock file, not a segment
    finishing = _segment(tmp_path, 17173, 1)  # a live creator, done within the wait

    def finish() -> None:
        time.sleep(0.1)
        with open(finishing, 'r+b') as f:
            f.write(struct.pack('<I', 2))
    creator = threading.Thread(target=finish)
    creator.start()
    said: list[str] = []
    cleared = shm_ports.clear_half_made_ports(shm_ports.domain_ports(39), shm=tmp_path,
                                              settle_s=0.5, say=said.append)
    creator.join()
    assert sorted(p.path for p in cleared) == sorted([unsized, initializing, uninitialized])
    for path in (unsized, initializing, uninitialized):
        assert not path.exists() and not (tmp_path / f'sem.{path.name}_mutex').exists()
    for path in (whole, corrupted, other_domain, finishing, tmp_path / 'fastdds_port17171_el'):
        assert path.exists(), path
    assert len(said) == 3 and all('ROS domain 39' in line for line in said)


def test_a_process_spinning_on_a_half_made_port_is_let_go(tmp_path: Path) -> None:
    """Marking a dead port corrupted ends the wait of whoever already opened it: the
    unsized file is given one byte (Boost waits for a size), a sized one the mark 3."""
    unsized = _segment(tmp_path, 17161, None)
    sized = _segment(tmp_path, 17163, 1)
    fds = [os.open(p, os.O_RDONLY) for p in (unsized, sized)]  # as a waiting opener holds them
    try:
        shm_ports.clear_half_made_ports(shm=tmp_path, settle_s=0.1)
        assert os.fstat(fds[0]).st_size == 1
        assert struct.unpack('<I', os.pread(fds[1], 4, 0))[0] == 3
    finally:
        for fd in fds:
            os.close(fd)


@pytest.mark.skipif(not shm_ports.SHM.is_dir(), reason='no /dev/shm here')
def test_a_node_comes_up_past_a_port_a_killed_process_left_half_made() -> None:
    """Participant 0's port of a domain of our own, as a process killed while creating it
    leaves it: the kit's Listener (any of our nodes: they all clear first) comes up and
    says what it removed. Without the clearing this child waits forever (watched: the
    bound below ran out)."""
    env = {k: v for k, v in os.environ.items() if k != 'REACT_ROS_DOMAIN_HELD'}
    lease = hold_domain(env)
    port = shm_ports.domain_ports(lease.domain_id).start + 11  # LOCALHOST: user unicast, index 0
    path = shm_ports.SHM / f'fastdds_port{port}'
    try:
        path.write_bytes(b'')
        child = subprocess.Popen(
            [sys.executable, '-c', 'from react_ros.kit.live import Listener\n'
             'Listener().close()\nprint("up")'],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = child.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            child.kill()  # stuck in the open loop, not creating: safe to kill
            out, err = child.communicate()
            pytest.fail(f'the node did not come up in 120 s past {path}: {err}')
        assert child.returncode == 0 and out.strip() == 'up', err
        assert f'note: removed {path}' in err and f'ROS domain {lease.domain_id}' in err
    finally:
        shm_ports.clear_half_made_ports([port], settle_s=0)  # if the test failed first
        lease.release()


def _data_segment(shm: Path, name: str, age_s: float) -> tuple[Path, Path]:
    segment, lock = shm / name, shm / f'{name}_el'
    segment.write_bytes(b'\0' * 4096)
    lock.write_bytes(b'')
    then = time.time() - age_s
    for path in (segment, lock):
        os.utime(path, (then, then))
    return segment, lock


def test_only_segments_whose_participant_is_gone_are_removed(tmp_path: Path) -> None:
    """A killed player leaves its 32 MiB segment (ros/dds.py) and its lock file; a live one
    holds the lock (flock), and a new one is given time to take it."""
    import fcntl
    dead = _data_segment(tmp_path, 'fastdds_00d98038049c1a48', 60)
    live = _data_segment(tmp_path, 'fastdds_17417a87ad401859', 60)
    new = _data_segment(tmp_path, 'fastdds_1e7d1960a2cfcdd7', 0)
    other = _data_segment(tmp_path, 'fastdds_port7413', 60)  # a port: not this function's
    held = os.open(live[1], os.O_RDONLY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert shm_ports.clear_dead_segments(tmp_path) == [dead[0]]
    finally:
        os.close(held)
    assert not dead[0].exists() and not dead[1].exists()
    assert all(p.exists() for p in (*live, *new, *other))


def _held(segment: str) -> bool:
    """Whether a live participant holds the segment's lock."""
    import fcntl
    fd = os.open(segment + '_el', os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # (closing lets a lock taken here go)


def test_a_real_killed_participants_segment_is_removed_and_a_live_ones_kept(
        tmp_path: Path) -> None:
    """Fast DDS's own files: a process that made a participant and was killed, and one
    still running. Each process lists the segments it maps: its own, and the other's once
    it has discovered it (so a segment's owner is told by its lock, not by the list)."""
    # each waits (bounded) until it has matched the other, so that it has most likely
    # mapped the other's segment too: the case only the lock tells apart
    code = ('import rclpy, sys, time\n'
            'from std_msgs.msg import Empty\n'
            'rclpy.init(); node = rclpy.create_node("segment_probe")\n'
            'pub = node.create_publisher(Empty, "/segment_probe", 10)\n'
            'node.create_subscription(Empty, "/segment_probe", lambda m: None, 10)\n'
            'end = time.monotonic() + 60\n'
            'while pub.get_subscription_count() < 2 and time.monotonic() < end:\n'
            '    time.sleep(0.05)\n'
            'names = [l.rsplit(None, 1)[-1] for l in open("/proc/self/maps")]\n'
            'print(sorted({n for n in names if n.startswith("/dev/shm/fastdds_")'
            ' and "port" not in n}), flush=True)\n'
            'sys.stdin.read()\n')
    procs = [subprocess.Popen([sys.executable, '-c', code], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        segments = [eval(p.stdout.readline()) for p in procs]  # noqa: S307 (our own print)
        assert all(segments), segments
        procs[0].kill()
        procs[0].wait(timeout=30)
        live = [s for s in segments[1] if _held(s)]
        dead = [s for s in segments[0] if s not in live]
        assert live and dead, segments
        assert not any(_held(s) for s in dead)
        # all made long ago, as far as the settling time goes: only the lock decides
        then = time.time() - 60
        for name in set(live + dead):
            for path in (Path(name), Path(name + '_el')):
                os.utime(path, (then, then))
        removed = {str(p) for p in shm_ports.clear_dead_segments()}
        assert removed >= set(dead)
        assert all(Path(s).exists() and Path(s + '_el').exists() for s in live)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=30)
