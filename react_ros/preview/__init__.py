"""`react-ros preview EPISODE|BAG -o sheet.png|clip.mp4`: pictures a person checks at a glance.

Drawn by message type, never by kind, so a bag someone else wrote previews as an episode
does: every image topic with a CameraInfo gets, through that CameraInfo and the TF at
the image's stamp, the TF axes of the frames in view, Marker(Array)s, PointCloud2 points
(coloured by depth), WrenchStamped forces as arrows, PoseArray keypoints and PoseStamped
axes; depth and label images go beside the colour image of their frame. Below: each
topic's messages over time (gaps marked) and the TF tree. Modules: tf_buffer (TF),
projection (CameraInfo models), scene (one pass over the streams), state (what is
current at t), draw (overlays), render (tiles), sheet (the PNG), clip (the mp4),
output (written aside, renamed at the end).
"""
from __future__ import annotations

from react_ros.preview.run import preview

__all__ = ['preview']
