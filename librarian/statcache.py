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
import struct
import time
from pathlib import Path
from typing import Any

from .digest import content_digest
from .fsutil import atomic_write
from .gitstore import GitStore, ObjectId
from .worktree import ItemHash, NotRegularFile, hash_work_dir

RACY_SECONDS = 2
_VERSION = 1


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


class SpecialFileError(Exception):
    """The directory holds a symlink or special file: it cannot be clean."""


_STAT = struct.Struct("<qqqqI")


def _signature(directory: str, racy_after_ns: int) -> tuple[str, bool]:
    """(signature of every file's lstat below ``directory``, whether any file is racy).

    The hot loop of ``status``: string paths, d_type from scandir (no stat for
    directories), one packed record per file."""
    parts: list[tuple[str, bytes]] = []
    racy = False
    pack = _STAT.pack
    pending = [(directory, "")]
    while pending:
        current, prefix = pending.pop()
        with os.scandir(current) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, f"{prefix}{entry.name}/"))
                elif entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    mtime, ctime = st.st_mtime_ns, st.st_ctime_ns
                    if mtime >= racy_after_ns or ctime >= racy_after_ns:
                        racy = True
                    parts.append((prefix + entry.name,
                                  pack(st.st_size, mtime, ctime, st.st_ino, st.st_mode)))
                else:
                    raise SpecialFileError(entry.path)
    parts.sort()
    hasher = hashlib.blake2b(digest_size=16)
    for name, record in parts:
        hasher.update(name.encode("utf-8", "surrogateescape"))
        hasher.update(record)
    return hasher.hexdigest(), racy


class WorkTreeCache:
    """Ids of work-tree item directories, re-reading only directories that changed."""

    def __init__(self, cache_dir: Path) -> None:
        self._path = cache_dir / "items.json"
        self._entries = _load(self._path)
        self._seen: dict[str, Any] = {}
        self._dirty = False
        self._racy_after_ns = time.time_ns() - RACY_SECONDS * 1_000_000_000

    def item_hash(self, key: str, directory: str) -> ItemHash | None:
        """Ids of ``directory``; None when it holds no files. Raises SpecialFileError."""
        signature, racy = _signature(directory, self._racy_after_ns)
        cached = self._entries.get(key)
        if isinstance(cached, list) and len(cached) == 3 and cached[0] == signature:
            self._seen[key] = cached
            return ItemHash(cached[1].encode(), cached[2]) if cached[1] else None
        try:
            ids = hash_work_dir(Path(directory))
        except NotRegularFile as exc:  # appeared between the signature and the read
            raise SpecialFileError(str(directory)) from exc
        if not racy:
            entry = [signature, ids.tree_sha1.decode() if ids else "", ids.digest if ids else ""]
            self._seen[key] = entry
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
