"""The quick look: whether an item directory's cached lstats (``items.bin``) still hold,
for one item or, on two processors at once, for every item a status is about to report.

A directory's mtime and ctime move whenever an entry is added, removed or renamed in it
(ctime also when the mtime is set back, e.g. by ``touch -d``), and a file's lstat whenever
its content is written; so an item whose directories and files all lstat as cached holds
the bytes it held, and the 40,000 directories of a 10,000-item library are not read. The
90,000 lstats of such a library are most of its status: ``look_ahead`` judges the first
half of the items in a forked child while this process judges the rest (``core/halves``).
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
from collections.abc import Callable, Sequence

from librarian.core.halves import in_halves
from librarian.store.statfile import SIGNATURE, CacheFormatError, RawEntry

STAT = struct.Struct("<qqqQL")  # size, mtime_ns, ctime_ns, inode, mode: what is signed
_DIR_STAMP = struct.Struct("<qq")  # mtime_ns, ctime_ns: as items.bin stores them
SAME, CHANGED = 1, 2  # verdicts of ``look_ahead``; 0 (not done): look as if never asked


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
    # the signature is over each file's path and lstat in path order (``_signature``); the
    # mode is signed too, so a file replaced by anything else never matches
    signed = b"".join([relative + pack(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino,
                                       st.st_mode)
                       for relative in entry.files for st in (lstat(base + relative),)])
    return hashlib.blake2b(signed, digest_size=SIGNATURE).digest() == entry.signature


def look_ahead(asked: Sequence[tuple[str, str]],
               cached: Callable[[int, str], RawEntry | None], racy_after_ns: int) -> bytes:
    """The verdict (``SAME``, ``CHANGED``, ``NOT_DONE``) of ``unchanged`` for each
    ``(key, directory)`` asked, in order, the first half judged in a forked child.
    ``cached(position, key)``: the cached record of the key asked at that position, or
    None (never cached: changed)."""

    def judge(start: int, stop: int) -> bytes:
        verdicts = bytearray(stop - start)
        for position in range(start, stop):
            key, directory = asked[position]
            try:
                entry = cached(position, key)
                same = entry is not None and unchanged(directory, entry, racy_after_ns)
            except (CacheFormatError, OSError):
                same = False
            verdicts[position - start] = SAME if same else CHANGED
        return bytes(verdicts)

    return in_halves(len(asked), judge)
