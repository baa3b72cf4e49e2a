"""rosbag2's split events, as a recorded bag holds them (/events/write_split).

The set-up builds rosbag2_interfaces from its upstream definitions (interfaces/); a bag
recorded with `ros2 bag record --max-bag-size` carries rosbag2_interfaces/msg/WriteSplitEvent,
which was skipped as "not installed" while only the services were built.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, \
    QosReliability, QosTime
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from react_ros import cli

EVENTS = ('rosbag2_interfaces/msg/WriteSplitEvent', 'rosbag2_interfaces/msg/ReadSplitEvent')


@pytest.mark.parametrize('msg_type', EVENTS)
def test_the_split_events_hash_as_upstream(msg_type: str) -> None:
    """rosidl here and rosbags (an independent REP 2011 implementation, from its own copy
    of Kilted's definitions) give the same RIHS01 hash: same fields, same types."""
    import rosbag2_interfaces
    pkg, _, name = msg_type.split('/')
    share = Path(rosbag2_interfaces.__file__).resolve().parents[4] / 'share' / pkg / 'msg'
    ours = json.loads((share / f'{name}.json').read_text())['type_hashes'][0]
    assert ours['type_name'] == msg_type
    assert ours['hash_string'] == get_typestore(Stores.ROS2_KILTED).hash_rihs01(msg_type)


def test_a_bag_with_split_events_shows_and_plays_them(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    store = get_typestore(Stores.ROS2_KILTED)
    event = store.types['rosbag2_interfaces/msg/WriteSplitEvent']
    zero = QosTime(0, 0)
    qos = Qos(QosHistory.KEEP_LAST, 10, QosReliability.RELIABLE, QosDurability.VOLATILE, zero,
              zero, QosLiveliness.AUTOMATIC, zero, False)
    bag = tmp_path / 'recorded'
    with Writer(bag, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conn = writer.add_connection('/events/write_split', EVENTS[0], typestore=store,
                                     offered_qos_profiles=[qos])
        for i in range(3):
            msg = event(closed_file=f'recorded_{i}.mcap', opened_file=f'recorded_{i + 1}.mcap',
                        node_name='/rosbag2_recorder')
            writer.write(conn, 1_700_000_000_000_000_000 + i * 10**9,
                         store.serialize_cdr(msg, EVENTS[0]))
    assert cli.main(['info', str(bag)]) == 0
    out = capsys.readouterr()
    assert '/events/write_split' in out.out and EVENTS[0] in out.out
    assert 'not installed' not in out.out + out.err
    assert cli.main(['play', str(bag), '--rate', '10', '-q', '--wait-for-subscribers', '0',
                     '--disable-keyboard-controls']) == 0
    assert 'not installed' not in capsys.readouterr().err
