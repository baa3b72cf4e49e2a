"""The umi dataset: readers, adapter (KIND), sample, config.yaml and umi.rviz."""
