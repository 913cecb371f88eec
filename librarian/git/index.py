"""Keep the git index (``.git/index``) in step with commits written straight into the store.

librarian writes commits without going through the index, so afterwards plain ``git status``
would report every changed path as staged-and-modified. Rewriting the index through dulwich's
``Index`` costs a Python object per entry (~0.7 s at 50,000 entries); instead the raw bytes are
spliced: entry boundaries are found by a tight scan, names are read only where a binary search
looks, untouched byte ranges are copied verbatim and only the changed entries are encoded.

Versions 2 and 3 are spliced; version 4 (prefix-compressed names, where every entry depends on
the one before) falls back to dulwich's full read/modify/write. Writes follow git's own lock
protocol (``index.lock`` created with O_EXCL, fsynced, renamed over ``index``; inside
``core.fsutil.one_sync`` the fsyncs join that block's one sync).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import os
import re
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from librarian.core.fsutil import fsync_dir, fsync_fd
from librarian.git.indexmemo import remember_clean, remember_lengths, remembered_lengths
from librarian.git.indexscan import (
    ENTRY,
    HEADER,
    MODES,
    NAME_MASK,
    TRAILER,
    WINDOW,
    FileScan,
    IndexFormatError,
    IndexScan,
    read_at,
    scan_index,
    scan_index_file,
)

__all__ = ["IndexEntry", "IndexFormatError", "IndexLockedError", "build_index", "splice_index"]


class IndexLockedError(Exception):
    """``index.lock`` exists: a git command is running (or one crashed and left it)."""


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One stage-0 entry to put into the index."""

    path: str  # posix path relative to the work tree
    blob_sha: bytes  # 20-byte raw SHA-1 of the blob
    mode: int  # 0o100644 or 0o100755 (symlinks and gitlinks are accepted too)
    stat: os.stat_result  # lstat of the file in the work tree, for the cached stat fields


#: An empty, "." or ".." component, or one that is ".git" in any case: never in an index.
_BAD_COMPONENT = re.compile(rb"(?:\A|/)(?:\.{0,2}|\.[gG][iI][tT])(?:/|\Z)")


def _encode_path(path: str) -> bytes:
    name = os.fsencode(path)
    if b"\0" in name or _BAD_COMPONENT.search(name):
        raise ValueError(f"not a valid index path: {path!r}")
    return name


def _stat_fields(st: os.stat_result, mode: int) -> tuple[int, ...]:
    """The ten cached stat words, as git stores them: each truncated to 32 bits."""
    m = 0xFFFFFFFF
    ctime, ctime_ns = divmod(st.st_ctime_ns, 1_000_000_000)
    mtime, mtime_ns = divmod(st.st_mtime_ns, 1_000_000_000)
    # The stored mode is the git mode, not st_mode.
    return (ctime & m, ctime_ns, mtime & m, mtime_ns, st.st_dev & m, st.st_ino & m, mode,
            st.st_uid & m, st.st_gid & m, st.st_size & m)  # fmt: skip


def _encode_entry(entry: IndexEntry) -> tuple[bytes, bytes]:
    name = _encode_path(entry.path)
    if len(entry.blob_sha) != 20 or entry.mode not in MODES:
        raise ValueError(f"{entry.path}: need a 20-byte blob id and a git file mode")
    head = ENTRY.pack(
        *_stat_fields(entry.stat, entry.mode), entry.blob_sha, min(len(name), NAME_MASK)
    )
    return name, head + name + b"\0" * (8 - (62 + len(name)) % 8)


def _encode_all(entries: Sequence[IndexEntry]) -> list[tuple[bytes, bytes]]:
    encoded = sorted(_encode_entry(e) for e in entries)
    for (a, _), (b, _) in pairwise(encoded):
        if a == b:
            raise ValueError(f"path given twice: {os.fsdecode(a)!r}")
    return encoded


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


#: Index entries per added entry or removed prefix below which every name is read before
#: planning (measured at 50,000 entries: ~150 us of searches per add, 23 ms to read all).
LOAD_NAMES_PER_ADD = 256


def _plan(
    scan: IndexScan | FileScan, remove: Sequence[bytes], adds: list[tuple[bytes, bytes]]
) -> tuple[list[tuple[int, int]], list[int]]:
    """Entry ranges to delete (merged) and the position each added entry goes before."""
    # An added name or removed prefix costs four lookups or more, each a binary search of
    # preads (37 us at 50,000 entries); reading every name once costs ~0.5 us an entry.
    if LOAD_NAMES_PER_ADD * (len(adds) + len(remove)) > scan.count:
        scan.load_names()
    # An added name replaces all stages of that name; it goes where the first of them was.
    spans = [(scan.find(name), scan.find(name + b"\0")) for name, _ in adds]
    positions = [lo for lo, _ in spans]
    # A prefix names a file (the name itself, all stages) and a directory (name + "/" ...);
    # "name-x" sorts between the two, hence two ranges. b"\0" and b"0" bound them since
    # names hold no NUL and "0" is the byte after "/".
    for prefix in remove:
        spans += [(scan.find(prefix), scan.find(prefix + b"\0"))]
        spans += [(scan.find(prefix + b"/"), scan.find(prefix + b"0"))]
    dels = _merge([s for s in spans if s[0] < s[1]])
    _check_file_dir_conflicts(scan, dels, [name for name, _ in adds])
    return dels, positions


def _check_file_dir_conflicts(
    scan: IndexScan | FileScan, dels: list[tuple[int, int]], names: list[bytes]
) -> None:
    # git refuses an index holding both "a" and "a/b"; so must we, cheaply, by binary search.
    starts = [lo for lo, _ in dels]

    def kept(lo: int, hi: int) -> bool:  # does any entry in [lo, hi) survive?
        k = bisect_right(starts, lo) - 1
        return lo < hi and not (k >= 0 and dels[k][1] >= hi)

    added = set(names)
    cleared: set[bytes] = set()  # parents found not to be files (an install: 50,000 names)
    for name in names:
        parts = name.split(b"/")
        for depth in range(1, len(parts)):
            parent = b"/".join(parts[:depth])
            if parent in cleared:
                continue
            if parent in added or kept(scan.find(parent), scan.find(parent + b"\0")):
                raise ValueError(f"file/directory clash: {os.fsdecode(parent)!r} is a file")
            cleared.add(parent)
        if kept(scan.find(name + b"/"), scan.find(name + b"0")):
            raise ValueError(f"file/directory clash: {os.fsdecode(name)!r} is a directory")


#: A run of the old index file to copy: (start, end) byte offsets.
Run = tuple[int, int]


def _splice_raw(
    scan: IndexScan | FileScan, dels: list[tuple[int, int]], positions: list[int],
    adds: list[tuple[bytes, bytes]],
) -> tuple[list[bytes | memoryview | Run], array[int]]:
    """What to write, and the length of each entry written (``indexmemo``)."""
    n, offsets, old = scan.count, scan.offsets, scan.entry_lengths()
    lengths = array("I")
    deleted = sum(hi - lo for lo, hi in dels)
    header = HEADER.pack(b"DIRC", scan.version, n - deleted + len(adds))
    chunks: list[bytes | memoryview | Run] = [header]
    # Every boundary between kept, deleted and inserted runs; each run is copied whole.
    points = sorted({0, n, *positions, *(b for span in dels for b in span)})
    k = d = 0
    for lo, hi in pairwise(points):
        while k < len(adds) and positions[k] == lo:
            chunks.append(adds[k][1])
            lengths.append(len(adds[k][1]))
            k += 1
        while d < len(dels) and dels[d][1] <= lo:
            d += 1
        if not (d < len(dels) and dels[d][0] <= lo):
            chunks.append((offsets[lo], offsets[hi]))
            lengths += old[lo:hi]
    chunks += [blob for _, blob in adds[k:]]
    lengths.extend(len(blob) for _, blob in adds[k:])
    return chunks + list(scan.keep), lengths


def _splice_dulwich(
    scan: IndexScan, dels: list[tuple[int, int]], adds: Sequence[IndexEntry]
) -> list[bytes | memoryview]:
    from dulwich.index import IndexEntry as DulwichEntry
    from dulwich.index import IndexExtension, read_index_dict_with_version, write_index_dict
    from dulwich.objects import ObjectID

    assert scan.names is not None
    _check_dulwich_v4(scan.names)  # before dulwich misreads what it cannot decode
    entries, _, _ = read_index_dict_with_version(io.BytesIO(scan.data))
    for lo, hi in dels:
        for name in scan.names[lo:hi]:
            entries.pop(name, None)
    for e in adds:
        cs, cn, ms, mn, dev, ino, mode, uid, gid, size = _stat_fields(e.stat, e.mode)
        entries[os.fsencode(e.path)] = DulwichEntry(
            (cs, cn), (ms, mn), dev, ino, mode, uid, gid, size, ObjectID(e.blob_sha.hex().encode())
        )
    _check_dulwich_v4(sorted(entries))
    out = io.BytesIO()
    extensions = [IndexExtension(bytes(m[:4]), bytes(m[8:])) for m in scan.keep]
    write_index_dict(out, entries, version=4, extensions=extensions)
    return [out.getvalue()]


def _check_dulwich_v4(names: list[bytes]) -> None:
    # dulwich 1.2.21 encodes the v4 strip count as LEB128 where git uses its offset varint
    # (they differ from 128 up) and lets a name of 4096+ bytes overflow into the flag bits.
    prev = b""
    for name in names:
        common = len(os.path.commonprefix([prev, name]))
        if len(prev) - common >= 0x80 or len(name) >= NAME_MASK:
            raise IndexFormatError(
                "version 4 index with very long paths; run `git update-index --index-version 2`"
            )
        prev = name


#: What to write, from the current index's descriptor (None: no index): the chunks, the
#: scan of the index when runs are copied from it (None otherwise), whether what is
#: written is known to hold no entry in a merge stage, and the length of each entry
#: written (None: not known) (``indexmemo``).
Build = Callable[[int | None], tuple[list[bytes | memoryview | Run], FileScan | None, bool,
                                     "array[int] | None"]]


def _write_locked(index_path: Path, build: Build, held: bool = False) -> None:
    """Take git's lock (or use it, when ``held`` by this process since before the branch
    moved), open the current index (None if absent) and write what ``build`` returns from
    its descriptor: bytes as they are, runs copied from the current index a window at a
    time (``_Copy``: the old index is checksummed as it is copied)."""
    lock = index_path.with_name(index_path.name + ".lock")
    try:
        flags = os.O_WRONLY | os.O_TRUNC if held else os.O_WRONLY | os.O_CREAT | os.O_EXCL
        fd = os.open(lock, flags, 0o666)
    except FileExistsError:
        raise IndexLockedError(f"{lock} exists: another git command holds the index") from None
    try:
        with os.fdopen(fd, "wb") as out:  # owns fd from here on: closed on every path
            # Read only while holding the lock, so no other writer can slip in between.
            with contextlib.ExitStack() as stack:
                current: int | None = None
                with contextlib.suppress(FileNotFoundError):
                    current = os.open(index_path, os.O_RDONLY)
                    stack.callback(os.close, current)
                digest = hashlib.sha1()
                chunks, scan, clean, lengths = build(current)
                copy = _Copy(scan) if scan is not None else None
                for chunk in chunks:
                    if isinstance(chunk, tuple):
                        assert copy is not None
                        pieces: Iterable[bytes | memoryview] = copy.run(*chunk)
                    else:
                        pieces = (chunk,)
                    for piece in pieces:
                        digest.update(piece)
                        out.write(piece)
                if copy is not None:
                    copy.finish()
            out.write(digest.digest())
            out.flush()
            # Inside a transaction's swap (``fsutil.one_sync``) both fsyncs join its one
            # sync, which comes before the journal goes; the content is then synced under
            # its final name.
            fsync_fd(fd, index_path)
        lock.replace(index_path)
    except BaseException:
        lock.unlink(missing_ok=True)  # never leave git locked out
        raise
    fsync_dir(index_path.parent)  # make the rename durable
    if clean:
        remember_clean(index_path, digest.digest())
        if lengths is not None:
            remember_lengths(index_path, digest.digest(), lengths)


class _Copy:
    """Runs copied from a scanned index in file order, with the whole old file read once
    in order and checksummed on the way (deleted entries too): at ``finish`` its SHA-1 must
    be its trailer (unless git's skipHash zeroed it) and its stat unchanged since the scan,
    so what is copied is what was judged, checksum included."""

    def __init__(self, scan: FileScan) -> None:
        self.scan, self.pos, self.hasher = scan, 0, hashlib.sha1()

    def _read(self, end: int) -> Iterator[bytes]:
        while self.pos < end:
            piece = read_at(self.scan.fd, self.pos, min(WINDOW, end - self.pos))
            if not piece:
                raise IndexFormatError("the index changed while it was rewritten")
            self.hasher.update(piece)
            self.pos += len(piece)
            yield piece

    def run(self, start: int, end: int) -> Iterator[bytes]:
        for _ in self._read(start):  # a deleted range: checksummed, not copied
            pass
        yield from self._read(end)

    def finish(self) -> None:
        scan = self.scan
        for _ in self._read(scan.size - TRAILER):
            pass
        if _identity(os.fstat(scan.fd)) != scan.identity:
            raise IndexFormatError("the index changed while it was rewritten")
        if scan.trailer != bytes(TRAILER) and self.hasher.digest() != scan.trailer:
            raise IndexFormatError("index checksum mismatch")


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def splice_index(
    index_path: Path, *, remove_prefixes: Sequence[str], add: Sequence[IndexEntry],
    held: bool = False,
) -> None:
    """Remove every entry at or under each of ``remove_prefixes``, then insert ``add``.

    Added entries replace entries of the same path (any stage). A missing index counts as
    empty. Raises IndexLockedError if ``index.lock`` exists, IndexFormatError for an index
    that cannot be spliced safely, ValueError for bad paths or file/directory clashes.
    """
    remove = [_encode_path(p) for p in remove_prefixes]
    adds = _encode_all(add)

    def build(current: int | None) -> tuple[list[bytes | memoryview | Run],
                                            FileScan | None, bool, array[int] | None]:
        remembered = functools.partial(remembered_lengths, index_path)
        scan = scan_index_file(current, remembered) if current is not None \
            else IndexScan.empty()
        if scan is None:  # version 4: read whole, rewritten by dulwich
            assert current is not None
            whole = scan_index(read_at(current, 0, os.fstat(current).st_size))
            dels, _ = _plan(whole, remove, adds)
            return [*_splice_dulwich(whole, dels, add)], None, False, None
        dels, positions = _plan(scan, remove, adds)
        chunks, lengths = _splice_raw(scan, dels, positions, adds)
        # Only stage-0 entries are added: the index stays clean if it was (its copied
        # runs are checksummed against the scan's trailer as they are copied).
        if isinstance(scan, FileScan):
            return chunks, scan, not scan.staged, lengths
        return chunks, None, True, lengths

    _write_locked(index_path, build, held)


def build_index(index_path: Path, entries: Sequence[IndexEntry]) -> None:
    """Write a fresh version 2 index holding exactly ``entries`` (replacing any index)."""
    encoded = _encode_all(entries)
    _check_file_dir_conflicts(IndexScan.empty(), [], [name for name, _ in encoded])
    header = HEADER.pack(b"DIRC", 2, len(encoded))
    lengths = array("I", (len(blob) for _, blob in encoded))
    _write_locked(index_path, lambda _current: (
        [header, *(blob for _, blob in encoded)], None, True, lengths))
