"""Publish a message's CDR bytes through rcl with Python's GIL let go.

rclpy's `Publisher.publish(bytes)` copies the bytes into a C++ string and calls
rcl_publish_serialized_message, holding the GIL throughout; rmw_fastrtps copies the
bytes again into the writer's history. For a 1920x1200 image that is two 6.9 MB
copies during which the player's read-ahead threads (rgb24 conversion, CDR heads) cannot
run. Here the same rcl call is made through ctypes, which lets the GIL go for the call,
on the bytes' own buffer, or on a camera frame's in the frame pool (a writable
memoryview): one copy, Fast DDS's. Measured with bench_player's full-resolution run, six
runs each way alternating: 100–114 Images/s (median 112) against 97–108 (median 101)
through rclpy (issue 43).

Where librcl is not mapped into this process, publish() is rclpy's.
"""
from __future__ import annotations

import ctypes
import functools
from typing import Any

from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

from react_ros.formats.mapped import mapped_library

_RCL_RET_OK = 0


class _Allocator(ctypes.Structure):
    # rcutils_allocator_t: allocate, deallocate, reallocate, zero_allocate, state
    _fields_ = [('allocate', ctypes.c_void_p), ('deallocate', ctypes.c_void_p),
                ('reallocate', ctypes.c_void_p), ('zero_allocate', ctypes.c_void_p),
                ('state', ctypes.c_void_p)]


class _SerializedMessage(ctypes.Structure):
    # rcl_serialized_message_t (rcutils_uint8_array_t); the allocator stays zero, as
    # rclpy's publish_raw leaves it: rmw only reads the buffer
    _fields_ = [('buffer', ctypes.c_void_p), ('buffer_length', ctypes.c_size_t),
                ('buffer_capacity', ctypes.c_size_t), ('allocator', _Allocator)]


class _ErrorString(ctypes.Structure):
    # rcutils_error_string_t, returned by value
    _fields_ = [('str', ctypes.c_char * 1024)]  # RCUTILS_ERROR_MESSAGE_MAX_LENGTH


@functools.cache  # every publish asks: a C-level lookup once known
def _rcl() -> Any:
    """(librcl, librcutils) through ctypes, or False (then rclpy publishes)."""
    rcl, rcutils = mapped_library('librcl'), mapped_library('librcutils')
    if not (rcl and rcutils):
        return False
    try:
        lib, utils = ctypes.CDLL(rcl), ctypes.CDLL(rcutils)
        lib.rcl_publish_serialized_message.restype = ctypes.c_int
        lib.rcl_publish_serialized_message.argtypes = [
            ctypes.c_void_p, ctypes.POINTER(_SerializedMessage), ctypes.c_void_p]
        utils.rcutils_get_error_string.restype = _ErrorString
        utils.rcutils_reset_error.restype = None
    except (OSError, AttributeError):
        return False
    return lib, utils


def publish_cdr(publisher: Any, data: bytes | memoryview) -> None:
    """`publisher.publish(data)` for CDR bytes (or a writable memoryview of them: a
    camera's frame in the pool's buffer, swscale.cdr_in_place), the GIL let go while rmw
    takes them; an rcl failure is rclpy's RCLError, as publish() raises it."""
    libs = _rcl()
    if not libs:
        publisher.publish(data if isinstance(data, bytes) else bytes(data))
        return
    with publisher.handle:  # as rclpy's publish: the publisher is not destroyed meanwhile
        _publish(libs, publisher.handle.pointer, data)


def _publish(libs: Any, pointer: int, data: bytes | memoryview) -> None:
    """rcl_publish_serialized_message on the rcl_publisher_t at `pointer`."""
    lib, utils = libs
    address, size, _shared = _buffer(data)  # (_shared keeps the memory until the call ends)
    msg = _SerializedMessage(address, size, size)
    ret = lib.rcl_publish_serialized_message(pointer, ctypes.byref(msg), None)
    if ret != _RCL_RET_OK:
        detail = utils.rcutils_get_error_string().str.decode(errors='replace')
        utils.rcutils_reset_error()
        raise _rclpy.RCLError(f'failed to publish serialized message: {detail or ret}')


def _buffer(data: bytes | memoryview) -> tuple[int | None, int, Any]:
    """The address and length of `data`'s own memory, and what keeps it there."""
    if isinstance(data, memoryview) and not data.readonly:
        shared: Any = (ctypes.c_char * data.nbytes).from_buffer(data)
        return ctypes.addressof(shared), data.nbytes, shared
    raw = data if isinstance(data, bytes) else bytes(data)
    shared = ctypes.c_char_p(raw)  # the bytes' own buffer
    return ctypes.cast(shared, ctypes.c_void_p).value, len(raw), (shared, raw)


__all__ = ['publish_cdr']
