"""Moved to react_ros/kit/bad_input.py (installed with the package, issue 41); this name stays
for the tests that import it by its old name."""
from react_ros.kit.bad_input import *  # noqa: F401,F403
from react_ros.kit.bad_input import __all__  # noqa: F401
