"""The binary files behind the stat caches (``cache/statcache.py``), shaped like git's index:
fixed-shape records read as one bytes buffer, decoded only where a command asks.

``items.bin`` (the work tree's item directories)::

    header  b"LBWT" | u32 version | u64 st_dev | u64 st_ino | u32 count
    record  u32 length | u16 key length | key | u8 has ids | 20-byte SHA-1 tree id
            | 32-byte SHA-256 digest | 16-byte signature of the files' lstat
            | u16 dirs  | u32 length | their names, NUL-separated | (i64 mtime_ns, i64 ctime_ns)*
            | u32 files | u32 length | their names, NUL-separated
    trailer BLAKE2b-128 of everything before it

``digests.bin`` (committed tree id -> digest) and the short memos (``cache/memo.py``,
tree id -> a word of at most 8 ASCII bytes, e.g. an item's kind: ``kinds.bin``)::

    header  b"LBDG" (b"LBSM") | u32 version | u64 st_dev | u64 st_ino | u32 count
    record  20-byte SHA-1 tree id | 32-byte SHA-256 (8-byte word, NUL-padded)
            (sorted by tree id, no duplicates)
    trailer BLAKE2b-128 of everything before it

``<name>.bin`` of a last-value memo (``cache/memo.py``: one value derived from one tree
id, e.g. the item list of ``sources/``)::

    header  b"LBBL" | u32 version | u64 st_dev | u64 st_ino | u32 count (1)
    record  20-byte SHA-1 tree id | the value's bytes
    trailer BLAKE2b-128 of everything before it

Little-endian; names are UTF-8 (surrogate escapes for undecodable bytes). ``st_dev`` and
``st_ino`` are those of the library's ``.git`` directory, so a cache copied from another
library is not read. A cache is never the truth: a file that is absent, a symlink, of
another version or library, truncated, or whose checksum or records do not add up reads as
empty, and the next save rebuilds it (always a new file renamed over the old one). Pure:
no dulwich, no work-tree access.
"""

from __future__ import annotations

import contextlib
import hashlib
import stat
import struct
from array import array
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from librarian.core.fsutil import atomic_write, read_regular

VERSION = 1
ITEMS_MAGIC = b"LBWT"
DIGESTS_MAGIC = b"LBDG"
SHORT_MEMO_MAGIC = b"LBSM"
BLOB_MAGIC = b"LBBL"
HEADER = struct.Struct("<4sLQQL")
TRAILER = 16
SIGNATURE = 16
_U16, _U32 = struct.Struct("<H"), struct.Struct("<L")
_DIRS, _FILES = struct.Struct("<HL"), struct.Struct("<LL")  # count, names' length
_DIGEST_PREFIX = "sha256:"
Identity = tuple[int, int]  # (st_dev, st_ino) of the library's .git directory


class CacheFormatError(Exception):
    """A record that does not decode (only possible in a file that passed its checksum)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """What the cache remembers of one item directory. Names are bytes (``os.fsencode``):
    the quick look hands them to ``os.lstat`` as they are, decoding nothing."""

    ids: tuple[bytes, str] | None  # (hex SHA-1 tree id, sha256 digest); None: no files
    signature: bytes  # BLAKE2b-128 over every file's path and stat record, in path order
    dirs: tuple[tuple[bytes, int, int], ...]  # (relative dir, b"" for the item; mtime; ctime)
    files: tuple[bytes, ...]  # relative paths, sorted


def identity_of(git_dir: Path) -> Identity | None:
    try:
        st = git_dir.lstat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _name(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _read(path: Path, magic: bytes, identity: Identity | None) -> tuple[bytes, int] | None:
    """The file's bytes (checksum verified) and its record count, or None."""
    if identity is None:
        return None
    data = read_regular(path)
    if data is None:
        return None
    if len(data) < HEADER.size + TRAILER:
        return None
    if hashlib.blake2b(memoryview(data)[:-TRAILER], digest_size=TRAILER).digest() != (
            data[-TRAILER:]):
        return None
    found, version, dev, ino, count = HEADER.unpack_from(data)
    if found != magic or version != VERSION or (dev, ino) != identity:
        return None
    return data, count



def _write(path: Path, magic: bytes, identity: Identity,
           records: Iterable[bytes | memoryview], count: int | None = None) -> None:
    """One buffer, built in place: the file's bytes exist once while it is written.
    ``count``: how many records ``records`` holds, when a piece may hold several."""
    out = bytearray(HEADER.size)
    pieces = 0
    for record in records:
        out += record
        pieces += 1
    count = pieces if count is None else count
    HEADER.pack_into(out, 0, magic, VERSION, *identity, count)
    out += hashlib.blake2b(out, digest_size=TRAILER).digest()
    with contextlib.suppress(OSError):  # a cache that cannot be written is only slower
        atomic_write(path, out)


# -- items.bin -----------------------------------------------------------------------------


def _joined(names: tuple[bytes, ...]) -> bytes:
    if any(b"\0" in name for name in names):
        raise ValueError("a name holds NUL")
    return b"\0".join(names)


def encode_entry(key: str, entry: Entry) -> bytes:
    parts = [b"", _U16.pack(len(_name(key))), _name(key)]
    if entry.ids is None:
        parts += [b"\0", bytes(52)]
    else:
        tree, digest = entry.ids
        raw = digest_bytes(digest)
        if raw is None:
            raise ValueError(f"not a sha256 digest: {digest!r}")
        parts += [b"\1", bytes.fromhex(tree.decode("ascii")), raw]
    if len(entry.signature) != SIGNATURE:
        raise ValueError("a signature is 16 bytes")
    dirs = _joined(tuple(name for name, _, _ in entry.dirs))
    files = _joined(entry.files)
    parts += [entry.signature, _DIRS.pack(len(entry.dirs), len(dirs)), dirs,
              struct.pack(f"<{2 * len(entry.dirs)}q",
                          *(t for _, mtime, ctime in entry.dirs for t in (mtime, ctime))),
              _FILES.pack(len(entry.files), len(files)), files]
    body = b"".join(parts)
    return _U32.pack(len(body) + 4) + body


def _split(data: bytes, count: int) -> list[bytes]:
    names = data.split(b"\0") if count else []
    if len(names) != count:
        raise CacheFormatError("a name list does not hold its count")
    return names


class RawEntry(NamedTuple):
    """A record's parts as stored, for the quick look (``statcache._unchanged``): names not
    decoded, the directories' stamps as the bytes they are stored as. A named tuple: one
    is built per item a status looks at, and a frozen dataclass costs four times more."""

    key: str
    ids: tuple[bytes, str] | None
    signature: bytes
    dir_names: list[bytes]
    dir_times: bytes  # (i64 mtime_ns, i64 ctime_ns) per directory, little-endian
    files: list[bytes]

    def entry(self) -> Entry:
        times = struct.unpack(f"<{2 * len(self.dir_names)}q", self.dir_times)
        return Entry(self.ids, self.signature,
                     tuple(zip(self.dir_names, times[0::2], times[1::2], strict=True)),
                     tuple(self.files))


def decode_raw(data: bytes, start: int = 0, end: int | None = None) -> RawEntry:
    """The record at ``data[start:end]`` (exactly one record)."""
    end = len(data) if end is None else end
    try:
        pos = start + 4
        (length,) = _U16.unpack_from(data, pos)
        key = data[pos + 2:pos + 2 + length].decode("utf-8", "surrogateescape")
        pos += 2 + length
        has_ids = data[pos]
        tree = data[pos + 1:pos + 21]
        raw = data[pos + 21:pos + 53]
        signature = data[pos + 53:pos + 53 + SIGNATURE]
        pos += 53 + SIGNATURE
        if has_ids not in (0, 1) or len(signature) != SIGNATURE or pos > end:
            raise CacheFormatError("bad ids")
        ids = (tree.hex().encode(), _DIGEST_PREFIX + raw.hex()) if has_ids == 1 else None
        count, length = _DIRS.unpack_from(data, pos)
        pos += _DIRS.size + length
        names = _split(data[pos - length:pos], count)
        times = data[pos:pos + 16 * count]
        pos += 16 * count
        if len(times) != 16 * count:
            raise CacheFormatError("a record ends inside its directories' stamps")
        count, length = _FILES.unpack_from(data, pos)
        pos += _FILES.size + length
        files = _split(data[pos - length:pos], count)
    except (struct.error, IndexError) as error:
        raise CacheFormatError(str(error)) from None
    if pos != end:
        raise CacheFormatError("a record's length does not match its content")
    return RawEntry(key, ids, signature, names, times, files)


def decode_entry(data: bytes, start: int = 0, end: int | None = None) -> tuple[str, Entry]:
    """The key and entry of the record at ``data[start:end]`` (exactly one record)."""
    raw = decode_raw(data, start, end)
    return raw.key, raw.entry()


class ItemsFile:
    """A read ``items.bin``: the file's bytes and where each record starts."""

    def __init__(self, path: Path, identity: Identity | None) -> None:
        self.data = b""
        self.offsets = array("Q", [0])  # start of every record, plus the end of the last
        found = _read(path, ITEMS_MAGIC, identity)
        if found is None:
            return
        data, count = found
        limit = len(data) - TRAILER
        offsets = array("Q", bytes(8 * (count + 1)))
        pos = HEADER.size
        for i in range(count):
            offsets[i] = pos
            if pos + 4 > limit:
                return
            (length,) = _U32.unpack_from(data, pos)
            if length < 4:
                return
            pos += length
        if pos != limit:
            return
        offsets[count] = pos
        self.data, self.offsets = data, offsets

    @property
    def count(self) -> int:
        return len(self.offsets) - 1

    def record(self, index: int) -> memoryview:
        return memoryview(self.data)[self.offsets[index]:self.offsets[index + 1]]

    def decode(self, index: int) -> tuple[str, Entry]:
        return decode_entry(self.data, self.offsets[index], self.offsets[index + 1])

    def decode_raw(self, index: int) -> RawEntry:
        return decode_raw(self.data, self.offsets[index], self.offsets[index + 1])

    def key(self, index: int) -> str | None:
        """The key of record ``index`` (None if it does not decode)."""
        start, end = self.offsets[index], self.offsets[index + 1]
        try:
            (length,) = _U16.unpack_from(self.data, start + 4)
        except struct.error:
            return None
        if start + 6 + length > end:
            return None
        return self.data[start + 6:start + 6 + length].decode("utf-8", "surrogateescape")


def write_items(path: Path, identity: Identity, records: Iterable[bytes | memoryview]) -> None:
    _write(path, ITEMS_MAGIC, identity, records)


# -- digests.bin ---------------------------------------------------------------------------


def digest_bytes(digest: str) -> bytes | None:
    """The 32 bytes of a ``sha256:`` digest; None for anything else (not cached)."""
    if not digest.startswith(_DIGEST_PREFIX) or len(digest) != len(_DIGEST_PREFIX) + 64:
        return None
    try:
        return bytes.fromhex(digest[len(_DIGEST_PREFIX):])
    except ValueError:
        return None


class SortedFile:
    """A read file of sorted fixed-shape records: a 20-byte tree id, then ``width`` bytes
    of value; found by bisection over the ids."""

    def __init__(self, path: Path, magic: bytes, identity: Identity | None,
                 width: int) -> None:
        self._magic, self._width, self._size = magic, width, 20 + width
        self._data = b""  # the whole file: records start at HEADER.size
        self._keys: list[bytes] = []
        found = _read(path, magic, identity)
        if found is None:
            return
        data, count = found
        if len(data) - HEADER.size - TRAILER != count * self._size:
            return
        keys = [data[i:i + 20] for i in range(HEADER.size, len(data) - TRAILER, self._size)]
        if any(a >= b for a, b in zip(keys, keys[1:], strict=False)):
            return  # not sorted, or a duplicate
        self._data, self._keys = data, keys

    def __len__(self) -> int:
        return len(self._keys)

    def get(self, tree: bytes) -> bytes | None:
        """The value of the binary tree id ``tree``, or None."""
        i = bisect_left(self._keys, tree)
        if i == len(self._keys) or self._keys[i] != tree:
            return None
        start = HEADER.size + i * self._size + 20
        return self._data[start:start + self._width]

    def merged(self, new: dict[bytes, bytes]) -> tuple[list[bytes | memoryview], int]:
        """The records of this file with ``new`` (tree id -> value) added or replacing, in
        order, as pieces (a run of this file's records is one piece), and their count:
        ten new kinds of 10,000 are 21 pieces, not 10,000."""
        keys, size, base = self._keys, self._size, HEADER.size
        data = memoryview(self._data)
        pieces: list[bytes | memoryview] = []
        start = 0  # the first of this file's records not yet taken
        replaced = 0
        for key, value in sorted(new.items()):
            at = bisect_left(keys, key, start)
            if at > start:
                pieces.append(data[base + start * size:base + at * size])
            pieces.append(key + value)
            if at < len(keys) and keys[at] == key:
                at += 1
                replaced += 1
            start = at
        if start < len(keys):
            pieces.append(data[base + start * size:base + len(keys) * size])
        return pieces, len(keys) + len(new) - replaced

    def write(self, path: Path, identity: Identity, new: dict[bytes, bytes]) -> None:
        """This file with ``new`` merged in, written to ``path`` (atomically)."""
        if any(len(key) != 20 or len(value) != self._width for key, value in new.items()):
            raise ValueError("a record of the wrong shape")
        pieces, count = self.merged(new)
        _write(path, self._magic, identity, pieces, count)


class DigestsFile(SortedFile):
    """A read ``digests.bin``."""

    def __init__(self, path: Path, identity: Identity | None) -> None:
        super().__init__(path, DIGESTS_MAGIC, identity, 32)

    def digest(self, tree: bytes) -> str | None:
        """The digest of the binary tree id ``tree``, or None."""
        value = self.get(tree)
        return None if value is None else _DIGEST_PREFIX + value.hex()


# -- a last-value memo --------------------------------------------------------------------


def read_blob(path: Path, identity: Identity | None) -> tuple[bytes, bytes] | None:
    """The (binary tree id, value) a last-value memo holds, or None."""
    found = _read(path, BLOB_MAGIC, identity)
    if found is None:
        return None
    data, count = found
    if count != 1 or len(data) < HEADER.size + 20 + TRAILER:
        return None
    return data[HEADER.size:HEADER.size + 20], data[HEADER.size + 20:-TRAILER]


def write_blob(path: Path, identity: Identity, tree: bytes, value: bytes) -> None:
    if len(tree) != 20:
        raise ValueError("a tree id is 20 bytes")
    _write(path, BLOB_MAGIC, identity, (tree + value,))
