"""The objects dataset: readers, adapter (KIND), sample, config.yaml and objects.rviz."""
