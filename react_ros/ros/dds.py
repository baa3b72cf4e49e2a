"""Process-wide DDS settings the player asks for before it creates its node."""
from __future__ import annotations

import os


def prefer_async_publishing() -> None:
    """Let Fast DDS send from its own thread instead of inside publish().

    In synchronous mode a publish() of a 7 MB image copies it into the shared
    memory transport on the calling thread, which holds Python's GIL for the
    whole copy; the video decoding threads then wait. Measured here on the
    1920x1200 UMI sample with one subscriber: 82 Images/s synchronous, 120
    asynchronous. Only rmw_fastrtps reads the variable, and a user's own
    setting wins.
    """
    os.environ.setdefault('RMW_FASTRTPS_PUBLICATION_MODE', 'ASYNCHRONOUS')
