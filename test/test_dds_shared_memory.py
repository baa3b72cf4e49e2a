"""Fast DDS shared-memory files no live process maps are removed before a test run
(react_ros/ros/dds.py): a port mutex left locked by a killed participant made the next
participant on that port wait for ever."""
from __future__ import annotations

import mmap
import os
from pathlib import Path

from react_ros.ros.dds import remove_stale_shared_memory, stale_shared_memory


def test_only_files_no_process_maps_are_stale(tmp_path: Path) -> None:
    shm = Path('/dev/shm')
    stale = shm / f'fastdds_react_ros_test_{os.getpid()}'
    held = shm / f'sem.fastdds_react_ros_test_{os.getpid()}_mutex'
    lock = shm / f'fastdds_react_ros_test_{os.getpid()}_el'  # held open, as a live one's is
    other = shm / f'react_ros_test_{os.getpid()}'  # not Fast DDS's: never touched
    for p in (stale, held, lock, other):
        p.write_bytes(b'\0' * 4096)
    try:
        with open(held, 'r+b') as f, mmap.mmap(f.fileno(), 4096) as view, open(lock, 'rb'):
            found = stale_shared_memory()
            assert stale in found and held not in found and lock not in found
            assert other not in found
            assert remove_stale_shared_memory() >= 1
            assert not stale.exists() and held.exists() and lock.exists() and other.exists()
            view[0] = 1  # still ours, still mapped
        found = stale_shared_memory()  # closed and unmapped now: stale
        assert held in found and lock in found
    finally:
        for p in (stale, held, lock, other):
            p.unlink(missing_ok=True)
