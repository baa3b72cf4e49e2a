"""One folder per dataset kind; react_ros.adapters finds them here (see its docstring).

A kind's package imports nothing on its own: its readers stay importable without
ROS (test/test_formats_without_rclpy.py), and its adapter is imported by the registry.

Kinds kept outside this package (a lab's own dataset) are folders of the same
shape under a directory named in REACT_ROS_KINDS_PATH (':'-separated, as PATH):
each <dir>/<kind>/ is imported as react_ros.kinds.<kind>, so it is found, installed
nowhere, and used exactly as the kinds shipped here.
"""
from __future__ import annotations

import os

PATH_VARIABLE = 'REACT_ROS_KINDS_PATH'

# Extending a package's __path__ is how pkgutil.extend_path adds folders to one package.
__path__ += [d for d in os.environ.get(PATH_VARIABLE, '').split(os.pathsep) if d]
