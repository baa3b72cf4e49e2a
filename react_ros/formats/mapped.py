"""The shared libraries this process has mapped, found by name (Linux's /proc/self/maps).

Used to call a library through ctypes that a Python package already loaded (PyAV's
libswscale and libx264, rclpy's librcl): the very copy the package uses, wherever its wheel put it.
"""
from __future__ import annotations

import os


def mapped_library(name: str) -> str | None:
    """The path of the mapped `name` (as 'librcl': librcl.so, librcl.so.9 and a wheel's
    librcl-88e9f973.so.9 all match, librcl_action.so does not), or None."""
    try:
        with open('/proc/self/maps') as maps:
            for line in maps:
                path = line.rsplit(None, 1)[-1]
                base = os.path.basename(path)
                if base.startswith((f'{name}.so', f'{name}-')) and '.so' in base:
                    return path
    except OSError:
        return None
    return None


__all__ = ['mapped_library']
