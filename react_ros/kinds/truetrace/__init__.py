"""The truetrace dataset: readers, adapter (KIND), sample, config.yaml and truetrace.rviz."""
