"""Caches under ``.git/librarian/cache/`` that keep ``status`` and ``inspect`` fast.

- ``items.json``: per item directory, a signature of every file's lstat (path, size,
  mtime, ctime, inode, mode) and the ids computed from its bytes. A directory whose
  signature is unchanged is not re-read. As in git, a file modified within
  ``RACY_SECONDS`` of the scan is not cached (mtime granularity), so it is re-hashed.
- ``digests.json``: committed SHA-1 tree id -> SHA-256 digest. Tree ids are immutable, so
  entries never go stale.

Both are plain JSON, written atomically; a damaged cache is ignored and rebuilt.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from librarian.content.worktree import ItemHash, NotRegularFile, hash_work_dir
from librarian.core.digest import content_digest
from librarian.core.fsutil import atomic_write
from librarian.store.gitstore import GitStore, ObjectId

RACY_SECONDS = 2
_VERSION = 3


def _load(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(document, dict) or document.get("version") != _VERSION:
        return {}
    entries = document.get("entries")
    return entries if isinstance(entries, dict) else {}


def _save(path: Path, entries: dict[str, Any]) -> None:
    if not path.parent.parent.is_dir():  # never create .git/librarian in a non-library
        return
    path.parent.mkdir(exist_ok=True)
    with contextlib.suppress(OSError):  # a cache that cannot be written is only slower
        atomic_write(path, json.dumps({"version": _VERSION, "entries": entries}).encode())


_STAT = struct.Struct("<qqqqI")


@dataclass(frozen=True)
class Scan:
    """What one look at an item directory found."""

    signature: str  # over every file's (path, size, mtime, ctime, inode, mode)
    racy: bool  # a file or directory changed too recently to be trusted next time
    dirs: list[list[Any]]  # [relative dir ("" for the item itself), mtime_ns, ctime_ns]
    files: list[str]  # relative paths, sorted


def _digest_records(records: list[tuple[str, bytes]]) -> str:
    hasher = hashlib.blake2b(digest_size=16)
    for name, record in records:
        hasher.update(name.encode("utf-8", "surrogateescape"))
        hasher.update(record)
    return hasher.hexdigest()


def _full_scan(directory: str, racy_after_ns: int) -> Scan:
    """Read every directory: the first look, or after a directory's entries changed."""
    records: list[tuple[str, bytes]] = []
    dirs: list[list[Any]] = []
    racy = False
    pack = _STAT.pack
    pending = [(directory, "")]
    while pending:
        current, prefix = pending.pop()
        st_dir = os.stat(current)  # noqa: PTH116 - hot loop, str paths
        mtime, ctime = st_dir.st_mtime_ns, st_dir.st_ctime_ns
        racy = racy or mtime >= racy_after_ns or ctime >= racy_after_ns
        dirs.append([prefix, mtime, ctime])
        with os.scandir(current) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, f"{prefix}{entry.name}/"))
                elif entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    if st.st_mtime_ns >= racy_after_ns or st.st_ctime_ns >= racy_after_ns:
                        racy = True
                    records.append((prefix + entry.name, pack(
                        st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)))
                else:
                    raise NotRegularFile(Path(entry.path))
    records.sort()
    return Scan(_digest_records(records), racy, dirs, [name for name, _ in records])


def _quick_scan(
    directory: str, dirs: list[list[Any]], files: list[str], racy_after_ns: int
) -> str | None:
    """The signature from the cached file list, when no directory's entries changed
    (a directory's mtime and ctime move whenever an entry is added, removed or renamed in
    it; ctime also moves when the mtime is set back, e.g. by ``touch -d``); None when one
    did. Saves reading 40,000 directories on a 10,000-item library."""
    for relative, mtime, ctime in dirs:
        path = f"{directory}/{relative}" if relative else directory
        st = os.stat(path)  # noqa: PTH116 - hot loop, str paths
        if st.st_mtime_ns != mtime or st.st_ctime_ns != ctime or ctime >= racy_after_ns:
            return None
    pack = _STAT.pack
    records = []
    for relative in files:
        st = os.lstat(directory + "/" + relative)
        if not stat.S_ISREG(st.st_mode):
            return None
        records.append((relative, pack(
            st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)))
    return _digest_records(records)


class WorkTreeCache:
    """Ids of work-tree item directories, re-reading only directories that changed.

    Entry per item: [signature, sha1 tree id, sha256 digest, dirs, files]."""

    def __init__(self, cache_dir: Path) -> None:
        self._path = cache_dir / "items.json"
        self._entries = _load(self._path)
        self._seen: dict[str, Any] = {}
        self._dirty = False
        self._racy_after_ns = time.time_ns() - RACY_SECONDS * 1_000_000_000

    def item_hash(self, key: str, directory: str) -> ItemHash | None:
        """Ids of ``directory``; None when it holds no files. Raises NotRegularFile."""
        cached = self._entries.get(key)
        if isinstance(cached, list) and len(cached) == 5:
            try:
                signature = _quick_scan(directory, cached[3], cached[4], self._racy_after_ns)
            except (FileNotFoundError, NotADirectoryError):
                signature = None
            if signature is not None and signature == cached[0]:
                self._seen[key] = cached
                return ItemHash(cached[1].encode(), cached[2]) if cached[1] else None
        scan = _full_scan(directory, self._racy_after_ns)
        if isinstance(cached, list) and len(cached) == 5 and cached[0] == scan.signature:
            # Same files, but a directory changed (an empty one added, a swap file come
            # and gone): keep the ids, refresh the directory list for the next quick scan.
            self._seen[key] = cached if scan.racy else [*cached[:3], scan.dirs, scan.files]
            self._dirty = self._dirty or not scan.racy
            return ItemHash(cached[1].encode(), cached[2]) if cached[1] else None
        ids = hash_work_dir(Path(directory))  # NotRegularFile: one appeared since the scan
        if not scan.racy:
            self._seen[key] = [scan.signature, ids.tree_sha1.decode() if ids else "",
                               ids.digest if ids else "", scan.dirs, scan.files]
            self._dirty = True
        return ids

    def save(self, *, partial: bool = False) -> None:
        # Entries of directories not seen this time are dropped, so the cache never grows
        # past the library's size. ``partial``: this pass looked at only some directories
        # (e.g. one source's collection), so the others' entries are kept.
        if partial:
            if self._dirty:
                _save(self._path, {**self._entries, **self._seen})
        elif self._dirty or set(self._seen) != set(self._entries):
            _save(self._path, self._seen)


class DigestCache:
    """Committed tree id (SHA-1) -> item digest (SHA-256)."""

    def __init__(self, cache_dir: Path) -> None:
        self._path = cache_dir / "digests.json"
        self._entries = _load(self._path)
        self._dirty = False

    def remember(self, tree: ObjectId, digest: str) -> None:
        if self._entries.get(tree.decode()) != digest:
            self._entries[tree.decode()] = digest
            self._dirty = True

    def digest(self, store: GitStore, tree: ObjectId) -> str:
        cached = self._entries.get(tree.decode())
        if isinstance(cached, str):
            return cached
        files = store.read_files(tree)
        digest = content_digest((f.path, f.executable, f.data) for f in files)
        self.remember(tree, digest)
        return digest

    def save(self) -> None:
        if self._dirty:
            _save(self._path, self._entries)
