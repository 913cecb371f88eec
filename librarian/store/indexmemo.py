"""Which index is known to hold no entry in a merge stage, so that the check for
conflicts every changing command makes (``guard.conflicted_paths``) need not read and scan
a 10,000-entry index each time.

An index's trailer is the SHA-1 of its content. An index librarian writes (``gitindex``)
from one that held no entry in a merge stage holds none either (it only adds stage-0
entries, and what it copies was checksummed as it was copied), so its trailer is
remembered in ``.git/librarian/cache/index-clean``; the guard reads the current index's
trailer (20 bytes) and scans only when it is another. A cache: absent, unreadable or
naming another index, it costs one scan; git's ``index.skipHash`` (a zero trailer) is
never remembered. Like every cache here, it is believed: someone who can write ``.git``
can forge it (docs/decisions.md). Imports core, ``indexscan`` and ``statfile`` only.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from librarian.core.fsutil import atomic_write, read_regular
from librarian.store.indexscan import TRAILER
from librarian.store.statfile import cache_dir_ready

_UNHASHED = bytes(TRAILER)  # index.skipHash


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
    path = _memo(index_path)
    if len(trailer) != TRAILER or trailer == _UNHASHED or not cache_dir_ready(path):
        return
    with contextlib.suppress(OSError):
        atomic_write(path, trailer.hex().encode())
