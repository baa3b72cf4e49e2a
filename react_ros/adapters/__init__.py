"""What every dataset adapter is built from: the interface (base.py: DatasetKind, Episode,
EpisodeOptions, EpisodeRef) and the builders kinds share (poses, video-backed and
still-frame cameras). The registry of kinds is react_ros.registry."""
