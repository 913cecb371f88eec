"""Reading the git index file (``.git/index``): header, entry boundaries, names, extensions.

A tight scan over the raw bytes finds where each entry starts without building an object
per entry; names are decoded only where asked (version 4 decodes all, as it must). The
splice (``gitindex``) and ``check --staged`` both read through here.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
from array import array
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
from operator import sub
from pathlib import Path

HEADER = struct.Struct(">4sLL")
# ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size, sha-1, flags: 62 bytes.
ENTRY = struct.Struct(">10L20sH")
U32 = struct.Struct(">L")
FLAG_EXTENDED = 0x4000
NAME_MASK = 0x0FFF
STAGE_MASK = 0x3000
TRAILER = 20
MODES = frozenset({0o100644, 0o100755, 0o120000, 0o160000})
# REUC (resolve-undo) is keyed by path, not by entry position, so it survives a splice. All
# other optional extensions (TREE, UNTR, FSMN, EOIE, IEOT, unknown) are dropped: they hold
# positions, offsets or caches that would be stale, and git rebuilds them when it wants them.
_KEEP_EXTENSIONS = frozenset({b"REUC"})
# Required extensions that change what the entries mean; splicing around them would corrupt.
_REFUSED = {
    b"link": "the index is split (core.splitIndex); run `git update-index --no-split-index`",
    b"sdir": "the index is sparse (index.sparse); run `git sparse-checkout disable`",
}


class IndexFormatError(Exception):
    """The index cannot be updated safely (corrupt, split, sparse, or unsupported)."""


@dataclass
class IndexScan:
    data: bytes
    version: int
    offsets: array[int]  # start of every entry, plus the end of the last one
    names: list[bytes] | None  # every name: version 4 always, others once ``load_names`` ran
    keep: list[memoryview]  # raw extension blocks to carry over

    def name_at(self, i: int) -> bytes:
        if self.names is not None:
            return self.names[i]
        return _name_in(self.data, self.offsets[i])

    @classmethod
    def empty(cls) -> IndexScan:
        return cls(b"", 2, array("Q", [HEADER.size]), None, [])

    @property
    def count(self) -> int:
        return len(self.offsets) - 1

    def load_names(self) -> None:
        if self.names is None:
            self.names = [self.name_at(i) for i in range(self.count)]

    def entry_lengths(self) -> array[int]:
        return lengths_of(self.offsets)

    def find(self, key: bytes) -> int:
        """Position of the first entry whose name sorts at or after ``key`` (git's order)."""
        if self.names is not None:
            return bisect_left(self.names, key)
        return bisect_left(range(self.count), key, key=self.name_at)


def _name_in(data: bytes, off: int) -> bytes:
    """The name of the version 2/3 entry at ``off`` in ``data`` (which holds it whole)."""
    flags = data[off + 60] << 8 | data[off + 61]
    start = off + (64 if flags & FLAG_EXTENDED else 62)
    length = flags & NAME_MASK
    # A name of 0xFFF bytes or more stores 0xFFF in the flags; the NUL ends it.
    end = start + length if length < NAME_MASK else data.index(b"\0", start + length)
    return data[start:end]


def scan_index(data: bytes) -> IndexScan:
    if len(data) < HEADER.size + TRAILER:
        raise IndexFormatError("index file is truncated")
    signature, version, count = HEADER.unpack_from(data)
    if signature != b"DIRC" or version not in (2, 3, 4):
        raise IndexFormatError(f"unsupported index (signature {signature!r}, version {version})")
    trailer = data[-TRAILER:]
    # An all-zero trailer is git's index.skipHash; anything else must match (a SHA-256
    # repository's index fails here too, which is right: its entries are laid out differently).
    # A memoryview: a slice of the bytes would copy a 5 MB index once more.
    if trailer != bytes(TRAILER) and hashlib.sha1(memoryview(data)[:-TRAILER]).digest() != trailer:
        raise IndexFormatError("index checksum mismatch")
    try:
        if version == 4:
            offsets, names = _scan_v4(data, count)
        else:
            offsets, names = _scan_v2(data, count, version), None
    except (IndexError, ValueError):
        raise IndexFormatError("index entries are truncated or malformed") from None
    if offsets[-1] > len(data) - TRAILER:
        raise IndexFormatError("index entries run past the end of the file")
    return IndexScan(data, version, offsets, names, _extensions(data, offsets[-1]))


def _scan_v2(data: bytes, count: int, version: int) -> array[int]:
    # The hot loop of a splice: integers only, no per-entry objects kept.
    offsets = array("Q", bytes(8 * (count + 1)))
    off = HEADER.size
    extended_ok = version == 3
    for i in range(count):
        offsets[i] = off
        flags = data[off + 60] << 8 | data[off + 61]
        length = flags & NAME_MASK
        fixed = 64 if flags & FLAG_EXTENDED else 62
        if fixed == 64 and not extended_ok:
            raise IndexFormatError("extended flags in a version 2 index")
        if length == NAME_MASK:
            length = data.index(b"\0", off + fixed + length) - off - fixed
        # 1 to 8 NULs pad the entry to a multiple of 8 bytes.
        off += (fixed + length + 8) & ~7
    offsets[count] = off
    return offsets


def _scan_v4(data: bytes, count: int) -> tuple[array[int], list[bytes]]:
    offsets = array("Q", bytes(8 * (count + 1)))
    names: list[bytes] = []
    off, prev = HEADER.size, b""
    for i in range(count):
        offsets[i] = off
        pos = off + (64 if data[off + 60] & 0x40 else 62)
        # git's offset varint (varint.c), not LEB128: bytes to strip from the previous name.
        byte = data[pos]
        strip = byte & 0x7F
        while byte & 0x80:
            pos += 1
            byte = data[pos]
            strip = ((strip + 1) << 7) | (byte & 0x7F)
        if strip > len(prev):
            raise IndexFormatError("bad prefix compression in a version 4 index")
        end = data.index(b"\0", pos + 1)
        prev = prev[: len(prev) - strip] + data[pos + 1 : end]
        names.append(prev)
        off = end + 1
    offsets[count] = off
    return offsets, names


def _extensions(data: bytes, pos: int) -> list[memoryview]:
    keep: list[memoryview] = []
    limit = len(data) - TRAILER
    while pos < limit:
        signature = data[pos : pos + 4]
        end = pos + 8 + U32.unpack_from(data, pos + 4)[0]  # safe: the trailer follows
        if pos + 8 > limit or end > limit:
            raise IndexFormatError("truncated index extension")
        if signature in _REFUSED:
            raise IndexFormatError(_REFUSED[signature])
        # Lower-case signatures are extensions a reader must understand to use the index.
        if not 0x41 <= signature[0] <= 0x5A:
            raise IndexFormatError(f"unsupported required index extension {signature!r}")
        if signature in _KEEP_EXTENSIONS:
            keep.append(memoryview(data)[pos:end])
        pos = end
    return keep


@dataclass(frozen=True, slots=True)
class IndexRecord:
    """One entry as read back: path, mode, hex blob id and merge stage (0 unless conflicted)."""

    path: str
    mode: int
    sha: bytes  # 40 hex digits
    stage: int


def read_index(index_path: Path) -> list[IndexRecord]:
    """Every entry in index order (a conflicted path once per stage); [] if absent."""
    try:
        data = index_path.read_bytes()
    except FileNotFoundError:
        return []
    scan = scan_index(data)
    out = []
    for i in range(scan.count):
        off = scan.offsets[i]
        flags = data[off + 60] << 8 | data[off + 61]
        out.append(IndexRecord(os.fsdecode(scan.name_at(i)), U32.unpack_from(data, off + 24)[0],
                               data[off + 40:off + 60].hex().encode(), (flags >> 12) & 3))
    return out


def read_index_paths(index_path: Path) -> list[str]:
    """Paths of all entries in index order (a conflicted path once per stage); [] if absent."""
    return [record.path for record in read_index(index_path)]


# -- an index read in windows (the splice) -------------------------------------------------

#: Bytes read at a time; more than one entry with the longest name git stores inline.
WINDOW = 1 << 18


def read_at(fd: int, start: int, length: int) -> bytes:
    """``length`` bytes at ``start`` (fewer only at the end of the file)."""
    parts = []
    while length > 0:
        part = os.pread(fd, length, start)
        if not part:
            break
        parts.append(part)
        start, length = start + len(part), length - len(part)
    return b"".join(parts)


class FileScan:
    """The entry boundaries of an index file, read a window at a time and then by offset:
    neither the file (5 MB at 50,000 entries) nor an object per entry is held. Only the
    splice reads an index this way (``gitindex``, which checksums it as it copies from
    it); version 4 is read whole (``scan_index``)."""

    def __init__(self, fd: int, size: int, version: int, offsets: array[int],
                 keep: list[bytes], trailer: bytes, identity: tuple[int, int, int, int],
                 staged: bool) -> None:
        self.fd, self.size, self.version, self.offsets, self.keep = fd, size, version, offsets, keep
        self.trailer, self.identity = trailer, identity  # (inode, size, mtime, ctime) read
        self.staged = staged  # whether any entry is in a merge stage (1-3)
        self.names: list[bytes] | None = None  # every name, once ``load_names`` has run
        self.lengths: array[int] | None = None  # every entry's length, once asked for

    def entry_lengths(self) -> array[int]:
        if self.lengths is None:
            self.lengths = lengths_of(self.offsets)
        return self.lengths

    @property
    def count(self) -> int:
        return len(self.offsets) - 1

    def load_names(self) -> None:
        """Read every name, a window at a time, for a plan that looks up many: a first
        install asks ~300,000 times, each a binary search of preads of names otherwise."""
        names, offsets = [], self.offsets
        base, buf = 0, b""
        for i in range(self.count):
            lo, hi = offsets[i], offsets[i + 1]
            if hi > base + len(buf):
                base, buf = lo, read_at(self.fd, lo, max(WINDOW, hi - lo))
            names.append(_name_in(buf, lo - base))
        self.names = names

    def name_at(self, i: int) -> bytes:
        if self.names is not None:
            return self.names[i]
        off = self.offsets[i]
        head = read_at(self.fd, off + 60, 2)
        flags = head[0] << 8 | head[1]
        start = off + (64 if flags & FLAG_EXTENDED else 62)
        length = flags & NAME_MASK
        if length < NAME_MASK:
            return read_at(self.fd, start, length)
        # A name of 0xFFF bytes or more stores 0xFFF in the flags; the NUL ends it.
        return read_at(self.fd, start, self.offsets[i + 1] - start).split(b"\0", 1)[0]

    def find(self, key: bytes) -> int:
        """Position of the first entry whose name sorts at or after ``key`` (git's order)."""
        if self.names is not None:
            return bisect_left(self.names, key)
        return bisect_left(range(self.count), key, key=self.name_at)


def lengths_of(offsets: array[int]) -> array[int]:
    """The length of each entry, from the offsets of all and of the end of the last."""
    return array("I", map(sub, offsets[1:], offsets[:-1]))


#: The entry lengths remembered for the index whose trailer and entry count are given
#: (``indexmemo``), or None.
Remembered = Callable[[bytes, int], "array[int] | None"]


def scan_index_file(fd: int, remembered: Remembered | None = None) -> FileScan | None:
    """Scan the index open at ``fd``; None for a version 4 index (its names depend on each
    other: read it whole). Its checksum is the reader's to check (``gitindex._Copy``).
    Where ``remembered`` knows this index (by its trailer), its entries are not scanned:
    the entry lengths librarian wrote it with give every boundary."""
    st = os.fstat(fd)
    size = st.st_size
    head = read_at(fd, 0, HEADER.size)
    if size < HEADER.size + TRAILER:
        raise IndexFormatError("index file is truncated")
    signature, version, count = HEADER.unpack_from(head)
    if signature != b"DIRC" or version not in (2, 3, 4):
        raise IndexFormatError(f"unsupported index (signature {signature!r}, version {version})")
    if version == 4:
        return None
    identity = (st.st_ino, size, st.st_mtime_ns, st.st_ctime_ns)
    lengths = remembered(read_at(fd, size - TRAILER, TRAILER), count) if remembered else None
    if lengths:
        offsets = array("Q", accumulate(lengths, initial=HEADER.size))
        with contextlib.suppress(IndexFormatError):  # lengths that do not fit: scanned
            # remembered only for an index with no entry in a merge stage
            scan = _file_scan(fd, size, version, offsets, identity, staged=False)
            scan.lengths = lengths
            return scan
    try:
        offsets, staged = _scan_v2_file(fd, size, count, version)
    except (IndexError, ValueError):
        raise IndexFormatError("index entries are truncated or malformed") from None
    return _file_scan(fd, size, version, offsets, identity, staged)


def _file_scan(fd: int, size: int, version: int, offsets: array[int],
               identity: tuple[int, int, int, int], staged: bool) -> FileScan:
    """The scan of entries ending at ``offsets[-1]``: the extensions after them read."""
    if offsets[-1] > size - TRAILER:
        raise IndexFormatError("index entries run past the end of the file")
    tail = read_at(fd, offsets[-1], size - offsets[-1])
    return FileScan(fd, size, version, offsets, [bytes(m) for m in _extensions(tail, 0)],
                    tail[-TRAILER:], identity, staged)


#: Room for one entry with the longest name git stores inline, and its padding.
_ENTRY_MAX = 64 + NAME_MASK + 8


def _scan_v2_file(fd: int, size: int, count: int, version: int) -> tuple[array[int], bool]:
    """``_scan_v2`` over windows of the file: each entry is read from the window holding
    it whole, the next window starting at the first entry that may not fit; and whether
    any entry is in a merge stage."""
    offsets = array("Q", bytes(8 * (count + 1)))
    off = HEADER.size
    stages = 0
    extended_ok = version == 3
    base, buf = off, read_at(fd, off, WINDOW)
    limit = base + len(buf) - _ENTRY_MAX if base + len(buf) < size else size
    for i in range(count):
        offsets[i] = off
        if off > limit:
            base, buf = off, read_at(fd, off, WINDOW)
            limit = base + len(buf) - _ENTRY_MAX if base + len(buf) < size else size
        rel = off - base
        flags = buf[rel + 60] << 8 | buf[rel + 61]
        stages |= flags
        length = flags & NAME_MASK
        fixed = 64 if flags & FLAG_EXTENDED else 62
        if fixed == 64 and not extended_ok:
            raise IndexFormatError("extended flags in a version 2 index")
        if length == NAME_MASK:  # a long name: read on until its NUL
            rest = buf[rel + fixed + length:]
            while b"\0" not in rest and base + len(buf) < size:
                more = read_at(fd, base + len(buf), WINDOW)
                buf, rest = buf + more, rest + more
            length += rest.index(b"\0")
        # 1 to 8 NULs pad the entry to a multiple of 8 bytes.
        off += (fixed + length + 8) & ~7
    offsets[count] = off
    return offsets, bool(stages & STAGE_MASK)
