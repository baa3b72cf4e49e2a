"""Moved to react_ros/kit/contract.py (installed with the package, issue 41); this name stays
for the tests that import it by its old name."""
from react_ros.kit.contract import *  # noqa: F401,F403
from react_ros.kit.contract import __all__  # noqa: F401
