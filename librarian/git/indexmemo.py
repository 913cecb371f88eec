"""Which index is known to hold no entry in a merge stage, so that the check for
conflicts every changing command makes (``guard.conflicted_paths``) need not read and scan
a 10,000-entry index each time; and where the entries of that index begin, so that the
next splice (``gitindex``) need not scan it for them either.

An index's trailer is the SHA-1 of its content. An index librarian writes (``gitindex``)
from one that held no entry in a merge stage holds none either (it only adds stage-0
entries, and what it copies was checksummed as it was copied), so its trailer is
remembered in ``.git/librarian/cache/index-clean``; the guard reads the current index's
trailer (20 bytes) and scans only when it is another. A cache: absent, unreadable or
naming another index, it costs one scan; git's ``index.skipHash`` (a zero trailer) is
never remembered. The entry lengths the splice wrote that index with are kept beside it
(``index-lengths``: its trailer, then one native 32-bit length an entry, ~200 KB at 50,000
entries), used only for the index of that trailer (the SHA-1 of its content: the very
bytes whose lengths they are) and only when they add up within its size. Like every cache
here, both are believed: someone who can write ``.git`` can forge them (docs/decisions.md);
forged lengths that add up could make the next splice write an index git refuses to read,
in ``.git``, which that person can do directly. Imports core, ``indexscan`` and
``statfile`` only.
"""

from __future__ import annotations

import contextlib
import os
import sys
from array import array
from pathlib import Path

from librarian.core.fsutil import atomic_write, cache_dir_ready, read_regular
from librarian.git.indexscan import TRAILER

_UNHASHED = bytes(TRAILER)  # index.skipHash
#: The lengths file's first line: its format, and how its numbers are stored.
_LENGTHS_MAGIC = f"librarian index-lengths 1 I{array('I').itemsize} {sys.byteorder}\n".encode()


def _memo(index_path: Path) -> Path:
    return index_path.parent / "librarian" / "cache" / "index-clean"


def known_clean(index_path: Path) -> bool:
    """Whether the index at ``index_path`` is the one last remembered clean."""
    remembered = read_regular(_memo(index_path))
    if remembered is None or len(remembered) != 2 * TRAILER:
        return False
    try:
        fd = os.open(index_path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        size = os.fstat(fd).st_size
        trailer = os.pread(fd, TRAILER, size - TRAILER) if size >= TRAILER else b""
    except OSError:
        return False
    finally:
        os.close(fd)
    return len(trailer) == TRAILER and trailer != _UNHASHED and \
        trailer.hex().encode() == remembered


def remember_clean(index_path: Path, trailer: bytes) -> None:
    """Remember that the index whose trailer is ``trailer`` holds no entry in a merge
    stage (a cache: a failure to write it only costs the next command a scan)."""
    _remember(_memo(index_path), trailer, trailer.hex().encode())


def _lengths_memo(index_path: Path) -> Path:
    return index_path.parent / "librarian" / "cache" / "index-lengths"


def remembered_lengths(index_path: Path, trailer: bytes, count: int) -> array[int] | None:
    """The length of each of the ``count`` entries of the index whose trailer is
    ``trailer``, as librarian wrote it; None if that is not the index remembered."""
    data = read_regular(_lengths_memo(index_path))
    start = len(_LENGTHS_MAGIC) + TRAILER
    if data is None or trailer == _UNHASHED or not data.startswith(_LENGTHS_MAGIC) or \
            data[len(_LENGTHS_MAGIC):start] != trailer:
        return None
    lengths = array("I")
    if len(data) - start != count * lengths.itemsize:
        return None
    lengths.frombytes(data[start:])
    # No entry is shorter than its fixed part, a one-byte name and its padding.
    return lengths if not lengths or min(lengths) >= 64 else None


def remember_lengths(index_path: Path, trailer: bytes, lengths: array[int]) -> None:
    """Remember the entry lengths of the index whose trailer is ``trailer`` (a cache, as
    ``remember_clean``)."""
    _remember(_lengths_memo(index_path), trailer, _LENGTHS_MAGIC + trailer + lengths.tobytes())


def _remember(path: Path, trailer: bytes, data: bytes) -> None:
    """Write a memo of the index whose trailer is ``trailer``: never for one without a
    checksum, never through a link, and a failure only costs the next command a scan."""
    if len(trailer) != TRAILER or trailer == _UNHASHED or not cache_dir_ready(path):
        return
    with contextlib.suppress(OSError):
        atomic_write(path, data)
