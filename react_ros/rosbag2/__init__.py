"""rosbag2 bags, in one place: what react_ros reads of any bag and what it writes.

- reader.py: a bag folder (metadata.yaml and its MCAP files), a lone .mcap or a folder of
  them read from their own summary; no ROS needed.
- episode.py: a bag as an Episode, its topics as recorded, for `play`, `info`, `preview`.
- info.py: `react-ros info BAG`, as `ros2 bag info` and more.
- writer.py: `convert`'s sink, an episode's streams into a bag (rosbag2's metadata.yaml,
  MCAP with its QoS profiles), through chunk_writer.py (chunks compressed on worker
  threads), direct_file.py (the file written past the page cache), write_behind.py (or
  written behind the producer, where a filesystem refuses that) and disk_space.py (the
  size estimated early, refused when the disk cannot hold it).

Nothing is imported here: `react_ros.rosbag2.reader` loads no writer and no ROS.
"""
