"""The react dataset: readers, adapter (KIND), sample, config.yaml and react.rviz."""
