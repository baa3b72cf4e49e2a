"""react_ros: dataset episodes as ROS 2 topics or rosbag2 MCAP bags."""

__version__ = '0.1.0'
