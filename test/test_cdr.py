"""ros/serialization.cdr_payload, the one CDR writer for message objects, on every kind of
member rosidl has: its bytes are rclpy's but for padding (zero here, uninitialised in
rmw's), end where the content ends, and equal mcap_ros2's independent encoder's."""
from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from foxglove_msgs.msg import CompressedVideo
from mcap.reader import make_reader
from mcap.writer import CompressionType
from mcap_ros2.writer import Writer
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import BatteryState, JointState, NavSatFix, PointCloud2, PointField
from std_msgs.msg import (Bool, Byte, ByteMultiArray, Char, Empty, Float32MultiArray,
                          MultiArrayDimension, MultiArrayLayout, String)
from unique_identifier_msgs.msg import UUID

from react_ros.ros.msgs import definition_text
from react_ros.ros.serialization import cdr_payload

MESSAGES = [
    Empty(), Bool(data=True), Byte(data=b'\xfe'), Char(data=65), String(data='héllo wörld'),
    ByteMultiArray(data=[b'\x01', b'\xff', b'\x00']),
    JointState(), JointState(name=['ä'], position=[1.0], velocity=[], effort=[]),  # empty f64[]
    UUID(uuid=np.arange(16, dtype=np.uint8)),  # fixed uint8 array
    NavSatFix(status=NavSatFix().status, latitude=1.5,
              position_covariance=np.linspace(0, 1, 9)),  # fixed float64 array after int8
    BatteryState(voltage=12.5, present=True, cell_voltage=[3.1, 3.2], cell_temperature=[],
                 location='bay', serial_number=''),
    Float32MultiArray(layout=MultiArrayLayout(dim=[MultiArrayDimension(label='rows', size=2,
                                                                        stride=6)],
                                              data_offset=1), data=[1.0, -2.5]),
    PointCloud2(height=1, width=2, fields=[PointField(name='x', offset=0, datatype=7, count=1)],
                is_bigendian=False, point_step=4, row_step=8, data=list(range(8)),
                is_dense=True),
    DiagnosticArray(status=[DiagnosticStatus(level=b'\x01', name='n', values=[
        KeyValue(key='k', value='v'), KeyValue(key='', value='')])] * 2),
    CompressedVideo(frame_id='cam', data=b'\x00\x00\x00\x01\x67', format='h264'),
]


def _type_name(msg: Any) -> str:
    return f'{type(msg).__module__.split(".")[0]}/msg/{type(msg).__name__}'


def _mcap_ros2_cdr(msg: Any) -> bytes:
    """The same message through mcap_ros2's public writer, which pads with zeros too."""
    out = io.BytesIO()
    name = _type_name(msg)
    with Writer(out, compression=CompressionType.NONE) as writer:
        schema = writer.register_msgdef(name, definition_text(name))
        writer.write_message('/t', schema, msg, log_time=0)
    out.seek(0)
    return next(iter(make_reader(out).iter_messages()))[2].data


@pytest.mark.parametrize('msg', MESSAGES, ids=lambda m: type(m).__name__)
def test_cdr_payload_is_rclpys_content_with_zero_padding(msg: Any) -> None:
    ours, theirs = bytes(cdr_payload(msg)), serialize_message(msg)
    assert len(ours) <= len(theirs)
    assert all(o == 0 for o, t in zip(ours, theirs) if o != t)
    assert deserialize_message(ours, type(msg)) == msg
    with pytest.raises(Exception):  # nothing real is missing, nothing extra kept
        deserialize_message(ours[:-1], type(msg))


# mcap_ros2's encoder takes neither rclpy's octets (bytes) nor its fixed arrays (numpy)
NOT_FOR_MCAP_ROS2 = (Byte, ByteMultiArray, DiagnosticArray, UUID, NavSatFix)


@pytest.mark.parametrize('msg', [m for m in MESSAGES if not isinstance(m, NOT_FOR_MCAP_ROS2)],
                         ids=lambda m: type(m).__name__)
def test_cdr_payload_equals_mcap_ros2s_encoder(msg: Any) -> None:
    assert bytes(cdr_payload(msg)) == _mcap_ros2_cdr(msg)
