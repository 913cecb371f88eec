"""A committed blob's size, read from its object header without reading the blob.

A loose object's header is its first inflated bytes (``blob SIZE\\0``); a packed object's
header is a few bytes at its offset in the pack: its size, or, for a delta, the delta's
first inflated bytes (base size, then result size). So refusing a 400 MB blob costs a few
hundred bytes of reading, not 400 MB. ``None`` when the header cannot be read that way
(the caller then reads the object as usual, under its own bound).
"""

from __future__ import annotations

import zlib
from pathlib import Path

from dulwich.objects import ObjectID

from librarian.git.repo import GitStore

_OFS_DELTA, _REF_DELTA = 6, 7
_HEADER_BYTES = 64


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """A delta header's little-endian base-128 number at ``at``: (value, next offset)."""
    value = shift = 0
    while at < len(data):
        byte = data[at]
        value |= (byte & 0x7F) << shift
        shift += 7
        at += 1
        if not byte & 0x80:
            return value, at
    raise ValueError("truncated size")


def _loose_size(path: Path) -> int | None:
    try:
        with path.open("rb") as handle:
            head = handle.read(_HEADER_BYTES)
    except OSError:
        return None
    try:
        inflated = zlib.decompressobj().decompress(head, 32)
    except zlib.error:
        return None
    kind, _, rest = inflated.partition(b" ")
    size, sep, _ = rest.partition(b"\0")
    return int(size) if kind == b"blob" and sep and size.isdigit() else None


def _packed_size(pack_path: str, offset: int, sha_length: int) -> int | None:
    with Path(pack_path).open("rb") as handle:
        handle.seek(offset)
        head = handle.read(_HEADER_BYTES + sha_length)
    byte = head[0]
    kind = (byte >> 4) & 7
    size = byte & 0x0F
    at, shift = 1, 4
    while byte & 0x80:
        byte = head[at]
        size |= (byte & 0x7F) << shift
        shift += 7
        at += 1
    if kind not in (_OFS_DELTA, _REF_DELTA):
        return size
    if kind == _OFS_DELTA:
        while head[at] & 0x80:
            at += 1
        at += 1
    else:
        at += sha_length
    with Path(pack_path).open("rb") as handle:  # the delta's own header, inflated
        handle.seek(offset + at)
        delta = zlib.decompressobj().decompress(handle.read(256), 32)
    _, next_at = _varint(delta, 0)
    result, _ = _varint(delta, next_at)
    return result


def blob_size(store: GitStore, sha: bytes) -> int | None:
    """The size of the blob ``sha`` (hex id) from its header, or None when unknown."""
    repo = store.dulwich_repo
    objects = repo.object_store
    try:
        loose = Path(objects._get_shafile_path(ObjectID(sha)))
        if loose.is_file():
            return _loose_size(loose)
        for pack in list(objects.packs):
            try:
                offset = pack.index.object_offset(ObjectID(sha))
            except KeyError:
                continue
            return _packed_size(str(pack.data.path), offset,
                                objects.object_format.oid_length)
    except (OSError, ValueError, IndexError, zlib.error, AttributeError):
        return None
    return None
