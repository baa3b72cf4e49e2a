"""Moved to react_ros/kit/live.py (installed with the package, issue 41); this name stays
for the tests that import it by its old name."""
from react_ros.kit.live import *  # noqa: F401,F403
from react_ros.kit.live import __all__  # noqa: F401
