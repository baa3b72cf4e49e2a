"""Any message object to the CDR bytes a bag stores, written with ros/cdr.py's CdrWriter.

Not rclpy's serialize_message: rmw_fastrtps (Kilted) sizes its buffer with an upper
estimate that reserves alignment for empty sequences of 8-byte values and returns it
whole, and never writes alignment padding, so both carry leftover process memory
(bags would differ run to run; strict readers such as rosbags reject the size).
Walking the message here writes the content only, padding zeroed, and is faster than
serialising and cleaning up after (bench/bench_cdr.py). The walk follows rosidl's own
description of each class (SLOT_TYPES), so it covers every message type.
"""
from __future__ import annotations

import array
import struct
import sys
from typing import Any, Callable

import numpy as np
from rosidl_parser.definition import (AbstractNestedType, AbstractSequence, AbstractString,
                                      BasicType, NamespacedType)

from react_ros.ros.cdr import CdrWriter

# struct format of each CDR primitive, by rosidl type name; its size is its alignment.
# rclpy holds an octet as a bytes of length 1 ('c'), a char as an int.
_FORMAT = {'boolean': '?', 'octet': 'c', 'char': 'B', 'int8': 'b', 'uint8': 'B',
           'int16': 'h', 'uint16': 'H', 'int32': 'i', 'uint32': 'I', 'float': 'f',
           'int64': 'q', 'uint64': 'Q', 'double': 'd'}
_LITTLE = sys.byteorder == 'little'

Writer = Callable[[bytearray, Any], None]


def cdr_payload(msg: Any) -> bytearray:
    """The message's CDR: encapsulation header, then its fields, padding zero."""
    w = CdrWriter()
    _message_writer(type(msg))(w.buf, msg)
    return w.buf


# A trailing byte array at least this long stays out of the CDR buffer (cdr_pieces).
SEPARATE_BYTES = 64 * 1024


def cdr_pieces(msg: Any) -> tuple[Any, ...]:
    """The message's CDR as buffers that, one after the other, are cdr_payload(msg): where
    its last field is a uint8 sequence of SEPARATE_BYTES or more (an Image's pixels), the
    fields before it with the sequence's count, then the sequence's own array, not copied;
    else the one buffer. The array is the message's: it must not change while in use."""
    split = _split_writer(type(msg))
    if split is not None:
        name, write_head = split
        data = getattr(msg, name)
        if isinstance(data, array.array) and data.itemsize == 1 and len(data) >= SEPARATE_BYTES:
            w = CdrWriter()
            write_head(w.buf, msg)
            _pad(w.buf, 4)
            w.buf += struct.pack('<I', len(data))
            return w.buf, memoryview(data)
    return (cdr_payload(msg),)


_SPLITS: dict[type, tuple[str, Writer] | None] = {}


def _split_writer(cls: Any) -> tuple[str, Writer] | None:
    """(name of the last field, writer of the fields before it) when the last field is a
    uint8 sequence; else None."""
    if cls in _SPLITS:
        return _SPLITS[cls]
    split = None
    names = list(cls.get_fields_and_field_types()) if cls.SLOT_TYPES else []
    if names:
        last = cls.SLOT_TYPES[-1]
        if (isinstance(last, AbstractSequence) and isinstance(last.value_type, BasicType)
                and last.value_type.typename == 'uint8'):
            fields = [(n, _field_writer(k)) for n, k in zip(names[:-1], cls.SLOT_TYPES[:-1])]

            def head(buf: bytearray, msg: Any) -> None:
                for slot, write in fields:
                    write(buf, getattr(msg, slot))
            split = names[-1], head
    _SPLITS[cls] = split
    return split


def _pad(buf: bytearray, n: int) -> None:
    pad = -(len(buf) - 4) % n
    if pad:
        buf += bytes(pad)


_WRITERS: dict[type, Writer] = {}


def _message_writer(cls: type) -> Writer:
    writer = _WRITERS.get(cls)
    if writer is None:
        writer = _WRITERS[cls] = _build_message_writer(cls)
    return writer


def _build_message_writer(cls: Any) -> Writer:
    if not cls.SLOT_TYPES:  # rosidl gives an empty message one uint8 member
        def empty(buf: bytearray, msg: Any) -> None:
            buf.append(0)
        return empty
    names = cls.get_fields_and_field_types()  # in member order, as SLOT_TYPES
    fields = [(name, _field_writer(kind)) for name, kind in zip(names, cls.SLOT_TYPES)]

    def message(buf: bytearray, msg: Any) -> None:
        for slot, write in fields:
            write(buf, getattr(msg, slot))
    return message


def _field_writer(kind: Any) -> Writer:
    if isinstance(kind, BasicType):
        return _primitive_writer(kind.typename)
    if isinstance(kind, AbstractString):
        return _string
    if isinstance(kind, NamespacedType):
        return lambda buf, value: _message_writer(type(value))(buf, value)
    if isinstance(kind, AbstractNestedType):
        return _nested_writer(kind)
    raise TypeError(f'no CDR writer for {type(kind).__name__} fields (wide strings)')


def _primitive_writer(typename: str) -> Writer:
    fmt = _FORMAT.get(typename)
    if fmt is None:  # wchar, long double: in no message react_ros writes
        raise TypeError(f'no CDR writer for {typename} fields')
    packer = struct.Struct('<' + fmt)
    size = packer.size

    def primitive(buf: bytearray, value: Any) -> None:
        _pad(buf, size)
        buf += packer.pack(value)
    return primitive


def _string(buf: bytearray, value: str) -> None:
    raw = value.encode()
    _pad(buf, 4)
    buf += struct.pack('<I', len(raw) + 1)
    buf += raw
    buf.append(0)


def _nested_writer(kind: Any) -> Writer:
    """A sequence (count first) or fixed array (no count) of any member type."""
    counted = isinstance(kind, AbstractSequence)
    item = kind.value_type
    if isinstance(item, BasicType):
        fmt = _FORMAT.get(item.typename)
        if fmt is None:
            raise TypeError(f'no CDR writer for {item.typename} fields')
        size = struct.calcsize(fmt)
        dtype = None if fmt in '?c' else np.dtype('<' + fmt)

        def primitives(buf: bytearray, value: Any) -> None:
            if counted:
                _pad(buf, 4)
                buf += struct.pack('<I', len(value))
            if not len(value):  # an empty sequence is not aligned
                return
            _pad(buf, size)
            if dtype is None:  # lists of bool or bytes
                buf += struct.pack(f'<{len(value)}{fmt}', *value)
            elif _LITTLE and isinstance(value, array.array) and value.itemsize == size:
                buf += value  # uint8 image data and the like: one copy
            else:
                buf += np.ascontiguousarray(value, dtype=dtype).tobytes()
        return primitives
    write_item = _field_writer(item)

    def items(buf: bytearray, value: Any) -> None:
        if counted:
            _pad(buf, 4)
            buf += struct.pack('<I', len(value))
        for v in value:
            write_item(buf, v)
    return items


__all__ = ['cdr_payload', 'cdr_pieces']
