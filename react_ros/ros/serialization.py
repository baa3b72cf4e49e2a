"""Serialising a message to the CDR bytes a bag stores: its content only, padding zeroed."""
from __future__ import annotations

from typing import Any

from rclpy.serialization import serialize_message
from rosidl_parser.definition import (AbstractNestedType, AbstractSequence, AbstractString,
                                      BasicType, NamespacedType)


def cdr_payload(msg: Any) -> bytes | bytearray:
    """serialize_message(msg), cut to the message's CDR content, its padding zeroed.

    rmw_fastrtps (Kilted) sizes the buffer with an upper estimate that reserves
    alignment for empty sequences of 8-byte values and returns it whole, and it never
    writes alignment padding: both carry leftover process memory, so bags would differ
    run to run and strict readers (rosbags) reject the size. Readers skip padding, so
    zeroing it changes no message.
    """
    data = serialize_message(msg)
    sizer = _Sizer()
    try:
        size = 4 + sizer.message(msg, 0)  # 4: the encapsulation header
    except _NotSized:
        return data
    if size > len(data):  # cannot happen unless the sizer is wrong: keep what rmw gave
        return data
    if not sizer.pads:
        return data[:size] if size < len(data) else data
    out = bytearray(memoryview(data)[:size])
    for a, b in sizer.pads:
        out[4 + a:4 + b] = bytes(b - a)
    return out


class _NotSized(Exception):
    pass


# Sizes (= alignments) of CDR primitives, by rosidl type name.
_PRIMITIVE = {'boolean': 1, 'octet': 1, 'char': 1, 'int8': 1, 'uint8': 1, 'int16': 2,
              'uint16': 2, 'int32': 4, 'uint32': 4, 'float': 4, 'int64': 8, 'uint64': 8,
              'double': 8}


class _Sizer:
    """Walks a message as plain (XCDR1) CDR: its end offset and its padding gaps."""

    def __init__(self) -> None:
        self.pads: list[tuple[int, int]] = []

    def _align(self, pos: int, n: int) -> int:
        new = (pos + n - 1) & -n
        if new != pos:
            self.pads.append((pos, new))
        return new

    def message(self, msg: Any, pos: int) -> int:
        if not msg.SLOT_TYPES:  # rosidl gives an empty message one uint8 member
            return pos + 1
        for slot, kind in zip(msg.__slots__, msg.SLOT_TYPES):
            pos = self._field(kind, getattr(msg, slot), pos)
        return pos

    def _field(self, kind: Any, value: Any, pos: int) -> int:
        if isinstance(kind, BasicType):
            n = _PRIMITIVE.get(kind.typename)
            if n is None:  # wchar, long double: in no message we write
                raise _NotSized(kind.typename)
            return self._align(pos, n) + n
        if isinstance(kind, AbstractString):
            return self._align(pos, 4) + 4 + len(value.encode()) + 1
        if isinstance(kind, NamespacedType):
            return self.message(value, pos)
        if not isinstance(kind, AbstractNestedType):
            raise _NotSized(type(kind).__name__)  # wide strings
        if isinstance(kind, AbstractSequence):
            pos = self._align(pos, 4) + 4  # element count
        item = kind.value_type
        if isinstance(item, BasicType) and item.typename in _PRIMITIVE:
            n = _PRIMITIVE[item.typename]
            # An empty sequence is not aligned: that is what rmw's estimate gets wrong.
            return self._align(pos, n) + n * len(value) if len(value) else pos
        for v in value:
            pos = self._field(item, v, pos)
        return pos


__all__ = ['cdr_payload']
