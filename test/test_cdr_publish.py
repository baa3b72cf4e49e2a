"""ros/cdr_publish.py: CDR bytes published through rcl with the GIL let go arrive as they were,
over real DDS, and a failing publish is rclpy's RCLError as publish() raises it."""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
import rclpy
from rclpy.context import Context
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.serialization import serialize_message
from sensor_msgs.msg import Image

from react_ros.formats.mapped import mapped_library
from react_ros.ros import cdr_publish, qos
from react_ros.ros.cdr_publish import publish_cdr
from react_ros.ros.dds import clear_dead_ports

WAIT_S = 20.0  # bound on every wait for an event below


def _image(i: int, width: int, height: int) -> bytes:
    msg = Image(height=height, width=width, encoding='rgb8', step=width * 3)
    msg.header.frame_id = f'cam{i}'
    msg.data = np.random.default_rng(i).integers(0, 256, width * height * 3,
                                                 np.uint8).tobytes()
    return bytes(serialize_message(msg))


@pytest.fixture
def ros() -> Iterator[tuple[object, list[bytes], Context]]:
    """A publisher and a raw subscription in one context: the publisher, what arrived, the
    context."""
    clear_dead_ports()
    context = Context()
    rclpy.init(args=[], context=context)
    node = rclpy.create_node('cdr_publish_test', context=context)
    got: list[bytes] = []
    node.create_subscription(Image, '/cdr_test', got.append, qos.live_writer(False), raw=True)
    pub = node.create_publisher(Image, '/cdr_test', qos.live_writer(False))
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    def spin() -> None:
        try:
            executor.spin()
        except ExternalShutdownException:  # the failure test shuts the context down
            pass
    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    deadline = time.monotonic() + WAIT_S
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pub.get_subscription_count() == 1
    try:
        yield pub, got, context
    finally:
        executor.shutdown()
        node.destroy_node()
        if context.ok():
            rclpy.shutdown(context=context)
        spinner.join(WAIT_S)


def _wait_for(got: list[bytes], n: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while len(got) < n and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.mark.parametrize('through_rcl', [True, False])
def test_the_bytes_arrive_as_they_were_sent(ros, monkeypatch: pytest.MonkeyPatch,
                                            through_rcl: bool) -> None:
    if not through_rcl:  # where librcl is not found: rclpy's publish
        monkeypatch.setattr(cdr_publish, '_rcl', lambda: False)
    else:
        assert cdr_publish._rcl(), 'librcl is mapped into every process that runs rclpy here'
    pub, got, _ = ros
    sent = [_image(i, w, h) for i, (w, h) in enumerate([(4, 2), (1920, 1200), (640, 480)])]
    for data in sent:
        publish_cdr(pub, data)
    _wait_for(got, len(sent))
    assert got == sent


def test_a_memoryview_arrives_as_its_bytes(ros) -> None:
    """A camera's frame is published from the frame pool's own buffer (a writable
    memoryview: swscale.cdr_in_place); a read-only one is published as its bytes."""
    pub, got, _ = ros
    sent = [_image(i, 1920, 1200) for i in range(2)]
    publish_cdr(pub, memoryview(bytearray(sent[0])))
    publish_cdr(pub, memoryview(sent[1]))
    _wait_for(got, len(sent))
    assert got == sent


def test_a_publisher_gone_is_refused_as_rclpy_refuses_it(ros) -> None:
    """With its context shut down, rclpy's publish and ours raise the same error."""
    pub, _, context = ros
    data = _image(0, 4, 2)
    rclpy.shutdown(context=context)
    with pytest.raises(Exception) as theirs:
        pub.publish(data)
    with pytest.raises(type(theirs.value)):
        publish_cdr(pub, data)


def test_the_mapped_library_is_found_by_its_whole_name() -> None:
    assert mapped_library('librcl') and mapped_library('librcutils')
    assert mapped_library('librc') is None and mapped_library('librcl_') is None


def test_an_rcl_failure_is_rclpys_error_with_rcls_words() -> None:
    """The player counts an RCLError as a failed publish and goes on (sinks/live.py)."""
    if not cdr_publish._rcl():
        pytest.skip('librcl not mapped')
    with pytest.raises(_rclpy.RCLError, match='failed to publish serialized message: .*invalid'):
        cdr_publish._publish(cdr_publish._rcl(), 0, _image(0, 4, 2))  # no publisher there
    with pytest.raises(_rclpy.RCLError, match='invalid') as again:
        cdr_publish._publish(cdr_publish._rcl(), 0, _image(0, 4, 2))
    assert 'error not set' not in str(again.value)  # (the error state was reset between)
