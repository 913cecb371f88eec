"""The SSH wire encoding (RFC 4251 §5): ``uint32`` and length-prefixed ``string``."""

from __future__ import annotations

import struct

MAX_STRING = 1 << 20  # no field of a key or signature comes near this


class WireError(ValueError):
    """Malformed SSH wire data."""


def uint32(value: int) -> bytes:
    return struct.pack(">I", value)


def string(data: bytes) -> bytes:
    return uint32(len(data)) + data


class Reader:
    """Reads fields in order; every read checks the bounds."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.offset = 0

    def raw(self, size: int) -> bytes:
        end = self.offset + size
        if size < 0 or end > len(self.data):
            raise WireError("truncated")
        chunk = self.data[self.offset:end]
        self.offset = end
        return chunk

    def uint32(self) -> int:
        value: int = struct.unpack(">I", self.raw(4))[0]
        return value

    def string(self) -> bytes:
        size = self.uint32()
        if size > MAX_STRING:
            raise WireError("a field is implausibly long")
        return self.raw(size)

    def end(self) -> None:
        if self.offset != len(self.data):
            raise WireError("trailing bytes")
