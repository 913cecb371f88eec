"""Caches under ``.git/librarian/cache/`` that keep ``status`` and ``inspect`` fast.

- ``items.bin``: per item directory, every file's lstat (path, size, mtime, ctime, inode,
  mode), its directories' mtime and ctime, and the ids computed from its bytes. A
  directory whose files' lstat are unchanged is not re-read. As in git, an entry is racy
  (not cached, so re-hashed next time) when it changed in the same tick of the
  filesystem's clock as the scan began: the scan starts by creating a stamp file in the
  cache directory and reads the filesystem's own time from it, so any timestamp
  granularity (ext4's clock tick, FAT's two seconds) and any clock skew of a network
  filesystem are judged by the clock that stamps the files. Where no stamp can be made
  (a read-only library), and for a directory on another device than the stamp (a mount
  in the library, with a clock of its own), the wall clock less ``RACY_SECONDS`` stands in.
  An update seeds the records of the items it wrote whole from bytes it hashed (``seed``),
  as ``git clone`` leaves an index holding every file's stat.
- ``digests.bin``: committed SHA-1 tree id -> SHA-256 digest. Tree ids are immutable, so
  entries never go stale.

Both are binary files of fixed-shape records read as one buffer (``cache/statfile.py``):
a 10,000-item library's cache is a few MB of bytes, not a few hundred thousand Python
objects. Written atomically; a damaged cache, or one from another library, is ignored and
rebuilt; a symlink in its place is never followed.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from librarian.cache.itemscan import (
    STAT,
    decode_outcomes,
    encode_outcome,
    full_scan,
    signature,
    unchanged,
)
from librarian.cache.statfile import (
    CacheFormatError,
    DigestsFile,
    Entry,
    ItemsFile,
    RawEntry,
    digest_bytes,
    encode_entry,
    identity_of,
    write_items,
)
from librarian.content.worktree import ItemHash, NotRegularFile, hash_work_dir
from librarian.core.digest import content_digest
from librarian.core.fsutil import cache_dir_ready
from librarian.core.halves import in_halves
from librarian.git import GitStore, ObjectId

RACY_SECONDS = 2
ITEMS_FILE = "items.bin"
DIGESTS_FILE = "digests.bin"
_LEGACY = {ITEMS_FILE: "items.json", DIGESTS_FILE: "digests.json"}  # the JSON caches before


def _filesystem_now_ns(cache_dir: Path) -> int | None:
    """The filesystem's clock now: the mtime of a stamp file created (and removed) in the
    cache directory, opened without following a link. None when it cannot be made."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_NOFOLLOW
    try:
        with contextlib.suppress(FileExistsError):
            if cache_dir.parent.is_dir():
                cache_dir.mkdir()
        dir_fd = os.open(cache_dir, flags)
    except OSError:
        return None
    name = f".stamp.{os.getpid()}.{time.monotonic_ns()}.tmp"
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600,
                     dir_fd=dir_fd)
        try:
            return os.fstat(fd).st_mtime_ns
        finally:
            os.close(fd)
            os.unlink(name, dir_fd=dir_fd)
    except OSError:
        return None
    finally:
        os.close(dir_fd)


def racy_after_ns(cache_dir: Path) -> int:
    """Timestamps at or after this are racy (see the module docstring)."""
    wall = time.time_ns()
    stamped = _filesystem_now_ns(cache_dir)
    if stamped is None:
        return wall - RACY_SECONDS * 1_000_000_000
    return min(stamped, wall)


def _drop_legacy(path: Path) -> None:
    with contextlib.suppress(OSError):
        (path.parent / _LEGACY[path.name]).unlink(missing_ok=True)


@dataclass(frozen=True, slots=True)
class StagedDir:
    """An item directory a change wrote whole from bytes it hashed itself, as
    ``WorkTreeCache.seed`` takes it: their ids, and each file's stat as it was written (in
    path order)."""

    ids: tuple[bytes, str]  # (hex SHA-1 tree id, sha256 digest)
    files: tuple[tuple[bytes, os.stat_result], ...]


def staged_dir(ids: tuple[bytes, str],
               written: Iterable[tuple[str, os.stat_result]]) -> StagedDir:
    """An item directory just written whole (``written``: each file's path and stat)."""
    return StagedDir(ids, tuple(sorted((os.fsencode(path), st) for path, st in written)))


#: The directories of a seeded record: a stamp no directory has (a ctime before 1970), so
#: the first look lists every directory and compares the files with the seed's.
_UNLISTED = ((b"", -1, -1),)


def _item_hash(ids: tuple[bytes, str] | None) -> ItemHash | None:
    return ItemHash(*ids) if ids is not None else None


class WorkTreeCache:
    """Ids of work-tree item directories, re-reading only directories that changed.

    Records are looked up in the order they were written (the order of the last pass),
    so a pass in the same order decodes each record once and builds no index."""

    def __init__(self, cache_dir: Path) -> None:
        self._path = cache_dir / ITEMS_FILE
        self._identity = identity_of(cache_dir.parent.parent)
        self._file = ItemsFile(self._path, self._identity)
        self._cursor = 0
        self._index: dict[str, int] | None = None
        self._seen: dict[str, int | bytes] = {}  # key -> index of its old record, or new
        # key -> what item_hash gives or raises for root/key, from ``look_ahead``
        self._ahead: dict[str, ItemHash | None | Exception] = {}
        self._ahead_root = ""
        self._dirty = False
        self._racy_after_ns = racy_after_ns(cache_dir)
        # The stamp tells the clock of its own file system only: a directory elsewhere (a
        # mount in the library) is judged by the wall clock less RACY_SECONDS, as before.
        try:
            self._device: int | None = cache_dir.lstat().st_dev
        except OSError:
            self._device = None
        self._elsewhere_ns = min(self._racy_after_ns,
                                 time.time_ns() - RACY_SECONDS * 1_000_000_000)

    def _find(self, key: str) -> int | None:
        file = self._file
        if self._cursor < file.count and file.key(self._cursor) == key:
            self._cursor += 1
            return self._cursor - 1
        if self._index is None:
            self._index = {}
            for i in range(file.count):
                found = file.key(i)
                if found is not None:
                    self._index.setdefault(found, i)
        index = self._index.get(key)
        if index is not None:
            self._cursor = index + 1
        return index

    def _cached(self, key: str) -> tuple[int, RawEntry] | None:
        index = self._find(key)
        if index is None:
            return None
        try:
            entry = self._file.decode_raw(index)
        except CacheFormatError:
            return None
        return (index, entry) if entry.key == key else None

    def look_ahead(self, root: str, keys: Sequence[str]) -> None:
        """Work out ``item_hash`` now for every key about to be asked (its directory
        ``root/key``), the first half in a forked child on two processors (``core/halves``,
        ``itemscan``); what is not worked out so (too few items, a failed child) is when
        asked."""
        ahead: dict[str, ItemHash | None | Exception] = {}

        def mine(start: int, stop: int) -> None:
            self._cursor = start  # the cache is in the order of the last pass
            for key in keys[start:stop]:
                try:
                    ahead[key] = self.item_hash(key, f"{root}/{key}")
                except (NotRegularFile, OSError) as error:
                    ahead[key] = error

        def theirs(start: int, stop: int) -> bytes:
            made = []
            for key in keys[start:stop]:
                try:
                    found = self.item_hash(key, f"{root}/{key}")
                except (NotRegularFile, OSError):  # raised again here when asked
                    made.append(encode_outcome(None))
                    continue
                made.append(encode_outcome(((found.tree_sha1, found.digest) if found else None,
                                            self._seen.get(key))))
            return b"".join(made)

        made = in_halves(len(keys), theirs, mine)
        if made is not None:
            self._take(keys[:len(keys) // 2], made, ahead)
        self._ahead, self._ahead_root = ahead, root

    def _take(self, keys: Sequence[str], made: bytes,
              ahead: dict[str, ItemHash | None | Exception]) -> None:
        """The child's outcomes for ``keys``, kept as if worked out here, in their order."""
        try:
            outcomes = decode_outcomes(made, len(keys))
        except CacheFormatError:
            return
        for key, outcome in zip(keys, outcomes, strict=True):
            if outcome is None:
                continue
            ids, kept = outcome
            if isinstance(kept, int) and not 0 <= kept < self._file.count:
                continue
            if kept is not None:
                self._seen[key] = kept
                self._dirty = self._dirty or isinstance(kept, bytes)
            ahead[key] = _item_hash(ids)
        # kept in the order asked (the order of this pass), as a pass item by item keeps it
        order = {key: self._seen[key] for key in keys if key in self._seen}
        self._seen = {**order, **self._seen}

    def item_hash(self, key: str, directory: str) -> ItemHash | None:
        """Ids of ``directory``; None when it holds no files. Raises NotRegularFile."""
        if self._ahead and key in self._ahead and directory == f"{self._ahead_root}/{key}":
            ahead = self._ahead.pop(key)  # worked out by ``look_ahead``
            if isinstance(ahead, Exception):
                raise ahead
            return ahead
        cached = self._cached(key)
        if cached is not None:
            index, entry = cached
            try:
                same = unchanged(directory, entry, self._racy_after_ns)
            except OSError:  # gone, a file or a link loop now, not searchable: look again
                same = False
            if same:
                self._seen[key] = index
                return _item_hash(entry.ids)
        scan = full_scan(directory, self._racy_after_ns, self._device, self._elsewhere_ns)
        if cached is not None and cached[1].signature == scan.signature:
            # Same files, but a directory changed (an empty one added, a swap file come
            # and gone): keep the ids, refresh the directory list for the next look.
            index, entry = cached
            if scan.racy:
                self._seen[key] = index
            else:
                self._seen[key] = encode_entry(key, Entry(entry.ids, scan.signature, scan.dirs,
                                                          scan.files))
                self._dirty = True
            return _item_hash(entry.ids)
        ids = hash_work_dir(Path(directory))  # NotRegularFile: one appeared since the scan
        if not scan.racy:
            self._seen[key] = encode_entry(key, Entry(
                (ids.tree_sha1, ids.digest) if ids else None, scan.signature, scan.dirs,
                scan.files))
            self._dirty = True
        elif key in self._seen:
            del self._seen[key]
        return ids

    def seed(self, key: str, staged: StagedDir, stamp: int) -> None:
        """Remember the ids of ``staged`` without reading its files (else the first status
        after an install of 10,000 items hashes 50,000 of them). Its files' stats are
        those taken as each was written, so any change since is a mismatch; its
        directories are not looked at here: the first look lists them (``_UNLISTED``) and
        keeps these ids only if it finds exactly these files, unchanged. ``stamp`` is
        ``racy_after_ns`` taken after the last write and before the files could be seen:
        a file stamped in that tick of the file system's clock or later could change
        again without its stat moving (a one-second clock), so it is not remembered."""
        # Written even if every seed is racy: a change's write steps then do not depend on
        # the clock (tests/txn/test_kill_every_step.py kills at each of them, counted once).
        self._dirty = True
        limit = min(self._racy_after_ns, stamp)
        if any(st.st_mtime_ns >= limit or st.st_ctime_ns >= limit for _, st in staged.files):
            return
        pack = STAT.pack
        signed = signature([(name, pack(st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                                        st.st_ino, st.st_mode))
                             for name, st in staged.files])
        self._seen[key] = encode_entry(key, Entry(staged.ids, signed, _UNLISTED,
                                                  tuple(name for name, _ in staged.files)))

    def _merged(self) -> Iterator[bytes | memoryview]:
        """The old records with this pass's in their place, new ones at the end: streamed,
        so a pass over a few items keeps no map of the others' keys."""
        file, seen = self._file, self._seen
        done: set[str] = set()  # keys of this pass already written
        for i in range(file.count):
            key = file.key(i)
            if key is None:
                continue
            value = seen.get(key)
            if value is None:
                yield file.record(i)
            elif key not in done:
                done.add(key)
                yield file.record(value) if isinstance(value, int) else value
        for key, value in seen.items():
            if key not in done:
                yield file.record(value) if isinstance(value, int) else value

    def save(self, *, partial: bool = False) -> None:
        # Entries of directories not seen this time are dropped, so the cache never grows
        # past the library's size. ``partial``: this pass looked at only some directories
        # (e.g. one source's collection), so the others' entries are kept.
        file, seen = self._file, self._seen
        unchanged = not self._dirty and all(isinstance(v, int) for v in seen.values())
        if unchanged and (partial or len(seen) == file.count):
            return
        if self._identity is None or not cache_dir_ready(self._path):
            return
        write_items(self._path, self._identity, self._merged() if partial else (
            file.record(v) if isinstance(v, int) else v for v in seen.values()))
        _drop_legacy(self._path)


class DigestCache:
    """Committed tree id (SHA-1) -> item digest (SHA-256)."""

    def __init__(self, cache_dir: Path) -> None:
        self._path = cache_dir / DIGESTS_FILE
        self._identity = identity_of(cache_dir.parent.parent)
        self._file = DigestsFile(self._path, self._identity)
        self._new: dict[bytes, bytes] = {}

    def _known(self, key: bytes) -> bytes | None:
        new = self._new.get(key)
        return new if new is not None else self._file.get(key)

    def remember(self, tree: ObjectId, digest: str) -> None:
        key, value = bytes.fromhex(tree.decode()), digest_bytes(digest)
        if value is not None and self._known(key) != value:  # raw bytes: no hex
            self._new[key] = value

    def digest(self, store: GitStore, tree: ObjectId) -> str:
        cached = self._known(bytes.fromhex(tree.decode()))
        if cached is not None:
            return "sha256:" + cached.hex()
        files = store.read_files(tree)
        digest = content_digest((f.path, f.executable, f.data) for f in files)
        self.remember(tree, digest)
        return digest

    def save(self) -> None:
        if not self._new or self._identity is None or not cache_dir_ready(self._path):
            return
        self._file.write(self._path, self._identity, self._new)
        self._new = {}
        _drop_legacy(self._path)
