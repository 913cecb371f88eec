"""Looking at an item directory in the work tree: the quick look at its cached lstats
(``unchanged``), the full scan (``full_scan``), and what a forked child worked out for
the items of a status, framed (``encode_outcome``, ``decode_outcomes``).

A directory's mtime and ctime move whenever an entry is added, removed or renamed in it
(ctime also when the mtime is set back, e.g. by ``touch -d``), and a file's lstat whenever
its content is written; so an item whose directories and files all lstat as cached holds
the bytes it held, and the 40,000 directories of a 10,000-item library are not read. The
90,000 lstats of such a library are most of its status, so ``WorkTreeCache.look_ahead``
has a forked child (``core/halves``) work out the first half of the items while this
process works out the rest: each of the child's outcomes comes back as the ids it found
and what the stat cache is to keep for the item.
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

from librarian.cache.statfile import SIGNATURE, CacheFormatError, RawEntry, digest_bytes
from librarian.content.worktree import NotRegularFile

STAT = struct.Struct("<qqqQL")  # size, mtime_ns, ctime_ns, inode, mode: what is signed
_DIR_STAMP = struct.Struct("<qq")  # mtime_ns, ctime_ns: as items.bin stores them
ItemHashIds = tuple[bytes, str]  # (hex SHA-1 tree id, sha256 digest), as ``Entry.ids``


def unchanged(directory: str, entry: RawEntry, racy_after_ns: int) -> bool:
    """Whether every directory's and file's cached lstat in ``entry`` still holds; compares
    packed bytes, one comparison per item. Raises OSError (a directory gone, a file or a
    link loop now): look again."""
    base = os.fsencode(directory)
    lstat = os.lstat
    # names are stored as b"sub/": the slash is dropped so that a link put in a
    # directory's place is looked at, never followed
    found = [lstat(base + b"/" + relative.rstrip(b"/") if relative else base)
             for relative in entry.dir_names]
    stamp = _DIR_STAMP.pack
    if b"".join([stamp(st.st_mtime_ns, st.st_ctime_ns) for st in found]) != (
            entry.dir_times) or not all(
            st.st_ctime_ns < racy_after_ns and stat.S_ISDIR(st.st_mode) for st in found):
        return False
    pack = STAT.pack
    base += b"/"
    # the signature is over each file's path and lstat in path order (``signature``); the
    # mode is signed too, so a file replaced by anything else never matches
    signed = b"".join([relative + pack(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino,
                                       st.st_mode)
                       for relative in entry.files for st in (lstat(base + relative),)])
    return hashlib.blake2b(signed, digest_size=SIGNATURE).digest() == entry.signature


@dataclass(frozen=True, slots=True)
class Scan:
    """What one look at an item directory found (names as bytes, as in ``Entry``)."""

    signature: bytes  # over every file's (path, size, mtime, ctime, inode, mode)
    racy: bool  # a file or directory changed too recently to be trusted next time
    dirs: tuple[tuple[bytes, int, int], ...]  # (relative dir, b"" for the item; mtime; ctime)
    files: tuple[bytes, ...]  # relative paths, sorted


def signature(records: list[tuple[bytes, bytes]]) -> bytes:
    hasher = hashlib.blake2b(digest_size=SIGNATURE)
    for name, record in records:
        hasher.update(name)
        hasher.update(record)
    return hasher.digest()


def full_scan(directory: str, racy_after_ns: int, device: int | None = None,
               elsewhere_ns: int | None = None) -> Scan:
    """Read every directory: the first look, or after a directory's entries changed. A
    directory on another device than ``device`` (the stamp's: a mount inside the library,
    whose clock may tick in seconds) is judged by ``elsewhere_ns`` instead."""
    records: list[tuple[bytes, bytes]] = []
    dirs: list[tuple[bytes, int, int]] = []
    racy = False
    pack = STAT.pack
    pending = [(os.fsencode(directory), b"")]
    while pending:
        current, prefix = pending.pop()
        st_dir = os.lstat(current)
        if not stat.S_ISDIR(st_dir.st_mode):
            raise NotRegularFile(Path(os.fsdecode(current)))
        mtime, ctime = st_dir.st_mtime_ns, st_dir.st_ctime_ns
        limit = racy_after_ns if elsewhere_ns is None or st_dir.st_dev == device else (
            elsewhere_ns)
        racy = racy or mtime >= limit or ctime >= limit
        dirs.append((prefix, mtime, ctime))
        with os.scandir(current) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, prefix + entry.name + b"/"))
                elif entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    if st.st_mtime_ns >= limit or st.st_ctime_ns >= limit:
                        racy = True
                    records.append((prefix + entry.name, pack(
                        st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)))
                else:
                    raise NotRegularFile(Path(os.fsdecode(entry.path)))
    records.sort()
    return Scan(signature(records), racy, tuple(dirs), tuple(name for name, _ in records))


#: An outcome: the child found ids, found no file, or left it to this process (it raised).
_IDS, _NO_FILES, NOT_DONE = 1, 2, 0
#: What the stat cache keeps: nothing new, its old record (by index), a new record.
_KEEP_NOTHING, _KEEP_OLD, _KEEP_NEW = 0, 1, 2
_INDEX = struct.Struct("<I")

Outcome = tuple[ItemHashIds | None, int | bytes | None] | None


def encode_outcome(found: Outcome) -> bytes:
    """One item's outcome, as the child sends it: None (not worked out), or the ids found
    (None: no file) and what the cache keeps (its old record's index, a new record, None)."""
    if found is None:
        return bytes((NOT_DONE,))
    ids, kept = found
    if ids is None:
        head = bytes((_NO_FILES,))
    else:
        digest = digest_bytes(ids[1])
        if len(ids[0]) != 40 or digest is None:
            return bytes((NOT_DONE,))
        head = bytes((_IDS,)) + bytes.fromhex(ids[0].decode("ascii")) + digest
    if kept is None:
        return head + bytes((_KEEP_NOTHING,))
    if isinstance(kept, int):
        return head + bytes((_KEEP_OLD,)) + _INDEX.pack(kept)
    return head + bytes((_KEEP_NEW,)) + _INDEX.pack(len(kept)) + kept


def decode_outcomes(data: bytes, count: int) -> list[Outcome]:
    """``count`` outcomes from the child's bytes; CacheFormatError if they do not frame."""
    found: list[Outcome] = []
    pos = 0
    try:
        for _ in range(count):
            kind = data[pos]
            pos += 1
            if kind == NOT_DONE:
                found.append(None)
                continue
            ids: ItemHashIds | None = None
            if kind == _IDS:
                ids = (data[pos:pos + 20].hex().encode(), "sha256:" + data[pos + 20:pos + 52].hex())
                pos += 52
            elif kind != _NO_FILES:
                raise CacheFormatError("an outcome of an unknown kind")
            keep = data[pos]
            pos += 1
            kept: int | bytes | None = None
            if keep == _KEEP_OLD:
                (kept,) = _INDEX.unpack_from(data, pos)
                pos += _INDEX.size
            elif keep == _KEEP_NEW:
                (length,) = _INDEX.unpack_from(data, pos)
                kept = data[pos + _INDEX.size:pos + _INDEX.size + length]
                pos += _INDEX.size + length
            elif keep != _KEEP_NOTHING:
                raise CacheFormatError("an outcome keeps something unknown")
            found.append((ids, kept))
    except (IndexError, struct.error) as error:
        raise CacheFormatError(f"the outcomes end early: {error}") from None
    if pos != len(data):
        raise CacheFormatError("the outcomes do not fill the child's bytes")
    return found
