"""Bad input given as a bag (`info BAG`, `play BAG`, `list`): the bag reader's bad-input table.

The promise is every kind's (react_ros/kit/bad_input.py): exit 2, one line naming the file
(or the bag) and what is wrong, nothing written, the input unchanged. The rows are issue
39's: damaged MCAP whose error had nothing in its parentheses, a folder that lost its
metadata.yaml beside other files, a symlink loop, a selection that leaves no topic, and
remaps that put two types on one topic. Bags without metadata.yaml that *can* be read are
accepted: test_bag_without_metadata.py.
"""
from __future__ import annotations

import struct
from pathlib import Path

import pytest
from bad_input_support import Refused, check_refused, ids
from rosbag_support import _write, expected, typestore

PLAY_ONLY = ('play',)
BOTH = ('info', 'play')
MCAP = 'bag.mcap'


def plain_bag(path: Path) -> Path:
    """The foreign bag's topics without the one whose type is not installed: `play` then
    warns about nothing, and a refusal is the only line."""
    store = typestore()
    return _write(path, [m for m in expected(store) if m[0] != '/gizmo'], store, 9)


def _cut(size: int):
    def breaker(root: Path) -> None:
        data = (root / MCAP).read_bytes()
        (root / MCAP).write_bytes(data[:size])
    return breaker


def _chunk_past_the_end(root: Path) -> None:
    """The summary's first chunk index points past the end of the file: the summary reads,
    the chunk does not (a file cut after its index was copied, say)."""
    path = root / MCAP
    data = bytearray(path.read_bytes())
    # footer: opcode, length, summary_start, summary_offset_start, crc; then the magic
    footer = len(data) - 8 - (1 + 8 + 8 + 8 + 4)
    at = struct.unpack_from('<Q', data, footer + 9)[0]
    while data[at] != 0x08:  # CHUNK_INDEX
        at += 1 + 8 + struct.unpack_from('<Q', data, at + 1)[0]
    # its chunk_start_offset, after the opcode, the length and two times
    struct.pack_into('<Q', data, at + 1 + 8 + 16, len(data) + 4096)
    path.write_bytes(bytes(data))


def _lost_metadata_among_other_files(root: Path) -> None:
    (root / 'metadata.yaml').unlink()
    (root / 'notes.txt').write_text('recorded on the lab robot\n')


def _symlink_loop(root: Path) -> None:
    (root / 'loop').symlink_to(root / 'loop')


def _link_to_nothing(root: Path) -> None:
    (root / 'gone').symlink_to(root / 'nowhere')


REFUSED = [
    # today: "not a readable MCAP file ()"
    Refused('MCAP cut after its magic', _cut(8), MCAP, ('not a readable MCAP file',
                                                        'ends inside a record'),
            commands=BOTH),
    # today: "MCAP data is corrupt ()"; play reads the chunks while it plays, info at once
    Refused('a chunk that runs past the end of the file', _chunk_past_the_end, MCAP,
            ('MCAP data is corrupt', 'ends inside a record'), commands=('info',)),
    # today: "not an episode of any known dataset" and nothing more
    Refused('metadata.yaml lost, other files beside the MCAP', _lost_metadata_among_other_files,
            '', ('no metadata.yaml', MCAP, 'give the .mcap file itself'), commands=BOTH),
    # today: "no such directory" / "no such file or directory"
    Refused('a symlink loop', _symlink_loop, 'loop', ('symlink loop',), target='loop',
            commands=('list', 'info', 'play')),
    Refused('a symlink to nothing', _link_to_nothing, 'gone', ('symlink to', 'nowhere'),
            target='gone', commands=('list', 'info')),
    Refused('an exclude that leaves no topic', None, '', ('leave no topic',),
            args=('-x', '.*'), commands=PLAY_ONLY),
    Refused('--topics of only /clock', None, '', ('leave no topic',),
            args=('--topics', '/clock'), commands=PLAY_ONLY),
    # today: exit 1 and an RCLError traceback ("incompatible type")
    Refused('a remap onto a topic of another type', None, '',
            ('/chatter:=/tf', '/chatter (std_msgs/msg/String)', '/tf (tf2_msgs/msg/TFMessage)',
             'one type'), args=('-m', '/chatter:=/tf'), commands=PLAY_ONLY),
    Refused('two topics of two types remapped onto one name', None, '',
            ('/chatter (std_msgs/msg/String)', '/camera/image_raw (sensor_msgs/msg/Image)',
             'on /seen'), args=('-m', '/chatter:=/seen', '/camera/image_raw:=/seen'),
            commands=PLAY_ONLY),
    Refused("a remap onto the player's /clock", None, '',
            ('/clock (rosgraph_msgs/msg/Clock', '/chatter (std_msgs/msg/String)'),
            args=('-m', 'chatter:=clock'), commands=PLAY_ONLY),
]


@pytest.fixture(scope='module')
def bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return plain_bag(tmp_path_factory.mktemp('bag') / 'bag')


@pytest.mark.parametrize('case', REFUSED, ids=ids(REFUSED))
def test_bad_bag_input_is_refused_in_one_line(case: Refused, bag: Path, tmp_path: Path,
                                              capfd: pytest.CaptureFixture[str]) -> None:
    check_refused(case, bag, tmp_path, capfd)


def test_two_topics_of_one_type_may_share_a_name(bag: Path) -> None:
    """As ROS allows: the remap check refuses types, not names."""
    from react_ros.rosbag2.episode import open_bag
    from react_ros.play_options import PlayOptions
    from react_ros.sinks.live import check_playable
    check_playable(open_bag(bag), PlayOptions(remap=('/tf_static:=/tf',)))
