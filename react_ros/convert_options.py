"""What `convert` and `convert-all` are asked for, declared once (react_ros/options.py's
`option()`): their flags are made from these fields and the bag writer is handed the
object itself.

`BagOptions` is how a bag is written, shared by both commands; `ConvertOptions` adds
which topics; `ConvertAllOptions` what a whole release run needs. What belongs to the
command line only stays there: the episode or release path, -o, --overwrite, --kind,
--episode, -q and --progress.

No import of the writers here: the CLI builds its parser without them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from react_ros.options import Option, Options, between, option, options_of, same_as
from react_ros.play_options import H264_HELP, PlayOptions

# raw: sensor_msgs/Image; jpeg, png: CompressedImage as image_transport writes it;
# h264: the videos as foxglove_msgs/CompressedVideo (sinks/compressed_video.py).
IMAGE_MODES = ('raw', 'jpeg', 'png', 'h264')
COMPRESSIONS = ('auto', 'none', 'zstd', 'lz4')
# 'auto', per channel: what is compressed already in uncompressed chunks, small messages
# lz4, a heavy stream lz4 when that saves a quarter of its first message (why: the
# measurements beside rosbag2/writer.py's PRECOMPRESSED).
DEFAULT_COMPRESSION = 'auto'
JPEG_QUALITY = 95


@dataclass(frozen=True)
class BagOptions(Options):
    """How a bag is written (convert and convert-all alike)."""

    images: str = option('raw', 'raw (the default): sensor_msgs/Image; jpeg, png: '
                         'sensor_msgs/CompressedImage as image_transport publishes it (labels '
                         'and ids always lossless; depth: lossless TIFF with png, '
                         'compressedDepth with jpeg); h264: ' + H264_HELP, choices=IMAGE_MODES)
    no_reencode: bool = same_as(PlayOptions, 'no_reencode')
    jpeg_quality: int = option(JPEG_QUALITY, '1-100 (default 95)', metavar='Q',
                               check=between(1, 100))
    compression: str = option(DEFAULT_COMPRESSION, 'MCAP chunk compression. auto (the '
                              'default): per channel, CompressedImage and CompressedVideo '
                              'uncompressed, small messages lz4, a raw image or point cloud '
                              'stream lz4 unless lz4 saves under 25%% of its first message; '
                              'none, lz4, zstd: every chunk so', choices=COMPRESSIONS)
    no_space_check: bool = option(False, 'write the bag even when its size, estimated early in '
                                  'the write, is more than the free space of the output\'s '
                                  'disk (by default such a bag is refused, leaving nothing '
                                  'behind)')


@dataclass(frozen=True)
class ConvertOptions(BagOptions):
    """`react-ros convert`: one episode to a bag."""

    topics: tuple[str, ...] | None = same_as(PlayOptions, 'topics')
    regex: str = same_as(PlayOptions, 'regex')
    exclude_topics: tuple[str, ...] = same_as(PlayOptions, 'exclude_topics')
    exclude_regex: str = same_as(PlayOptions, 'exclude_regex')


def _workers(value: Any) -> str | None:
    return None if value is None or value >= 1 else f'must be >= 1, got {value}'


@dataclass(frozen=True)
class ConvertAllOptions(BagOptions):
    """`react-ros convert-all`: every episode of a release, resumably."""

    image_scale: float = same_as(PlayOptions, 'image_scale')
    workers: int | None = option(None, 'episodes converted at once, in processes (default: the '
                                 f'cores, {os.cpu_count()})', metavar='N', check=_workers)
    ray: str | None = option(None, 'run the episodes as Ray tasks (a local Ray without '
                             'ADDRESS); ROOT and OUTDIR must be storage every Ray node sees',
                             metavar='ADDRESS', const='')
    # Also what a kind's run_option fields follow (TrueTrace's --verify: KindOptions).
    verify: bool = option(False, 'fingerprint sources by their contents (sha256), not size and '
                          'mtime; TrueTrace episodes are also checked against MANIFEST.sha256')

    def bag(self) -> ConvertOptions:
        """How each episode's bag is written: this run's bag options, every topic."""
        return ConvertOptions(**{opt.name: getattr(self, opt.name) for opt in BAG_OPTIONS})

    def key(self, own: dict[str, Any]) -> dict[str, Any]:
        """What changes a bag's bytes (with the kind's options `own`): a run with another
        key converts again. --no-space-check is not in it: it changes whether a bag is
        written, never its bytes."""
        key: dict[str, Any] = {'image_scale': self.image_scale, 'images': self.images,
                               'compression': self.compression,
                               'own': {k: _plain(v) for k, v in sorted(own.items())}}
        if self.images == 'jpeg':
            key['jpeg_quality'] = self.jpeg_quality
        if self.images == 'h264':  # refusing or re-encoding: another outcome, so convert again
            key['no_reencode'] = self.no_reencode
        return key


def _plain(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None))) else str(value)


BAG_OPTIONS: tuple[Option, ...] = options_of(BagOptions)
CONVERT_OPTIONS: tuple[Option, ...] = options_of(ConvertOptions)
CONVERT_ALL_OPTIONS: tuple[Option, ...] = options_of(ConvertAllOptions)

__all__ = ['BAG_OPTIONS', 'BagOptions', 'COMPRESSIONS', 'CONVERT_ALL_OPTIONS', 'CONVERT_OPTIONS',
           'ConvertAllOptions', 'ConvertOptions', 'DEFAULT_COMPRESSION', 'IMAGE_MODES',
           'JPEG_QUALITY']
