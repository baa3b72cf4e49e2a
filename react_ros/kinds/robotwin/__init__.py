"""The robotwin dataset: readers, adapter (KIND), sample, config.yaml and robotwin.rviz."""
