"""One folder per dataset kind; react_ros.adapters finds them here (see its docstring).

A kind's package imports nothing on its own: its readers stay importable without
ROS (test/test_formats_without_rclpy.py), and its adapter is imported by the registry.
"""
