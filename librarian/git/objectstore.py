"""How objects are found (loose objects first, then packs, newest first) and written.

dulwich searches every pack before the loose objects, in the order of a set (a new one in
every process), and lists the pack directory again after each miss in case another
process has just landed a pack. A library holds 25-50 packs between two consolidations
(``git/packs.py``) and what its last commands wrote is loose, so reading one of those
cost ~40 index searches in Python and a directory listing; the update of 100 items of
1,000 made 835 such listings. git searches its packs in C, most recently used first,
then the loose objects. Here a read tries the pack that answered the last read, then the
loose object (one open), then the packs newest first (what the last fetch brought is in
the first one). Answers are dulwich's own: an object is found if and only if dulwich
would find it, with the same bytes (ids name contents).
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Sequence
from pathlib import Path

from dulwich.errors import FileFormatException
from dulwich.object_store import DiskObjectStore
from dulwich.objects import Blob, ObjectID, RawObjectID, ShaFile, Tree
from dulwich.pack import PackFileDisappeared
from dulwich.repo import Repo

from librarian.core.fsutil import fsync_dir, fsync_file
from librarian.core.model import ItemFile
from librarian.errors import UsageError
from librarian.git.rawtree import entries as parsed_entries

# Above this many new objects, one pack is cheaper than many loose files.
PACK_THRESHOLD = 256
#: Questions about one fan-out directory answered by an lstat before it is listed.
_LSTATS_BEFORE_LISTING = 4
#: Bytes of blob content one store keeps once read (``BlobMemo``).
BLOB_MEMO_BYTES = 32 * 1024 * 1024
#: Read raw: a blob as it is, a tree once it parses (kept for its next reader). A commit
#: or a tag is small, and parsed by dulwich as before, which refuses a malformed one.
_RAW_TYPES = {b"blob": Blob.type_num, b"tree": Tree.type_num}
#: The most a loose object may inflate to (dulwich's own bound, 512 MiB).
_LOOSE_LIMIT = 512 * 1024 * 1024


class LibraryObjectStore(DiskObjectStore):
    """dulwich's object store with git's lookup order (see the module docstring)."""

    _last_pack: str | None = None  # the name of the pack that answered the last read

    def get_raw(self, name: RawObjectID | ObjectID) -> tuple[int, bytes]:
        # Consecutive reads are mostly of one fetch or one commit: the pack that answered
        # last, then the loose objects, then every pack (dulwich's own lookup, which also
        # lists the pack directory again on a miss and asks the alternates).
        if len(name) != self.object_format.hex_length:
            return super().get_raw(name)
        last = self._pack_cache.get(self._last_pack) if self._last_pack else None
        if last is not None:  # not when it has gone from the cache since
            try:
                return last.get_raw(name)
            except KeyError:
                pass
            except (OSError, PackFileDisappeared):
                self._last_pack = None
        found = self._loose_raw(ObjectID(name))
        if found is not None:
            return found
        for pack_name, pack in list(self._pack_cache.items()):
            if pack is last:
                continue
            try:
                found = pack.get_raw(name)
            except KeyError:
                continue
            except (OSError, PackFileDisappeared):
                break  # repacked away since it was listed: dulwich's lookup evicts it
            self._last_pack = pack_name
            return found
        return super().get_raw(name)

    def _loose_raw(self, sha: ObjectID) -> tuple[int, bytes] | None:
        """A loose object's type and content as git reads them: the file inflated and its
        header checked, no dulwich object built (which parses a tree whole: a 10,000-entry
        tree in ~6 ms, inflated in ~1). Anything else in the file is dulwich's to read."""
        try:
            data = Path(self._get_shafile_path(sha)).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError:
            data = b""
        inflater = zlib.decompressobj()
        try:  # bounded as dulwich bounds it (a small file may inflate to gigabytes)
            whole = inflater.decompress(data, _LOOSE_LIMIT + 1)
        except zlib.error:
            whole = b""
        if not inflater.eof or len(whole) > _LOOSE_LIMIT:  # truncated, or too large
            whole = b""
        end = whole.find(b"\0", 0, 32)
        kind, _, size = whole[:end].partition(b" ")
        type_num = _RAW_TYPES.get(kind)
        if end > 0 and type_num is not None and size.isdigit() \
                and int(size) == len(whole) - end - 1:
            content = whole[end + 1 :]
            try:  # a tree dulwich would not parse is dulwich's to refuse, as it refuses it
                if type_num == Tree.type_num:
                    parsed_entries(content)
                return type_num, content
            except (ValueError, FileFormatException):
                pass
        try:  # damaged, or a format git no longer writes: dulwich's reader judges
            loose = self._get_loose_object(sha)
        except (OSError, ValueError, zlib.error, FileFormatException):
            loose = None  # damaged: a packed copy answers, as in dulwich's own order
        return (loose.type_num, loose.as_raw_string()) if loose is not None else None

    def loose_file(self, sha: ObjectID) -> bool:
        """Whether a loose file (not a link) is named ``sha``: an lstat for the first few
        questions about its fan-out directory, then one listing of it, kept until this
        store writes a loose object there (``add_object``). A file another process writes
        after the listing is not seen; ``held`` allows that (a duplicate), ``__contains__``
        then asks dulwich."""
        # A dict of this instance's own: the class is swapped onto dulwich's instance.
        fanouts = self.__dict__.setdefault("_fanouts", {})
        text = sha.decode("ascii", "replace")
        try:
            bytes.fromhex(text)
        except ValueError:
            return False  # not an object id: no path is built from it
        names = fanouts.get(text[:2])
        if names is None:
            # The first few questions about a directory: one lstat each (an update asks
            # about a few hundred objects spread over many directories); then a listing.
            asked = self.__dict__.setdefault("_asked", {})
            asked[text[:2]] = count = asked.get(text[:2], 0) + 1
            if count <= _LSTATS_BEFORE_LISTING:
                return _regular_file(f"{self.path}/{text[:2]}/{text[2:]}")
            try:
                with os.scandir(f"{self.path}/{text[:2]}") as entries:
                    names = frozenset(e.name for e in entries if e.is_file(follow_symlinks=False))
            except (FileNotFoundError, NotADirectoryError):
                names = frozenset()
            fanouts[text[:2]] = names
        return text[2:] in names

    def add_object(self, obj: ShaFile) -> None:
        super().add_object(obj)
        self.__dict__.get("_fanouts", {}).pop(obj.id.decode()[:2], None)  # listed again

    def __contains__(self, sha: ObjectID) -> bool:
        # Held (loose, or in a pack already open) answers at once; only a miss lists the
        # pack directory again, so a pack another process landed meanwhile is seen (a
        # closure check must not call a held object missing). Where a miss is the common
        # case and a wrong one only costs a duplicate, callers ask ``held`` instead.
        return held(self, sha) or super().__contains__(sha)

    def prefer_newest_packs(self) -> None:
        """Order the packs newest first, as git sorts them by mtime; called on opening and
        when a fetch has added a pack."""
        self._update_pack_cache()
        cache = self._pack_cache
        pack_dir = Path(self.pack_dir)

        def age(name: str) -> int:
            try:
                return -(pack_dir / f"{name}.pack").stat().st_mtime_ns
            except OSError:
                return 0

        ordered = sorted(cache, key=age)
        if list(cache) != ordered:
            packs = dict(cache)
            cache.clear()
            cache.update((name, packs[name]) for name in ordered)


def pack_added(store: object) -> None:
    """After a fetch added a pack to ``store``: it is searched first."""
    if isinstance(store, LibraryObjectStore):
        store.prefer_newest_packs()


def open_repository(root: str, alternates: Sequence[str] = ()) -> Repo:
    """``Repo(root)`` whose object store looks objects up in git's order."""
    repo = Repo(root, alternates=alternates) if alternates else Repo(root)
    store = repo.object_store
    if type(store) is DiskObjectStore:
        # dulwich built and configured the store from the repository's config; the
        # subclass adds no state and changes only the lookup order, so it is kept as is.
        store.__class__ = LibraryObjectStore
    if isinstance(store, LibraryObjectStore):
        store.prefer_newest_packs()
        if not _compression_set(repo):
            # git's default for loose objects is 1, best speed; dulwich's is zlib's 6,
            # 2.4x slower on a 10,000-item lock (1 MB) for 3% smaller files.
            store.loose_compression_level = GIT_LOOSE_COMPRESSION
    return repo


#: ``core.looseCompression`` when neither it nor ``core.compression`` is set, as in git.
GIT_LOOSE_COMPRESSION = 1


def _compression_set(repo: Repo) -> bool:
    """Whether the repository's config sets either level (read once per open)."""
    config = repo.get_config()
    for name in (b"looseCompression", b"compression"):
        try:
            config.get((b"core",), name)
        except KeyError:
            continue
        return True
    return False


def held(store: DiskObjectStore, sha: ObjectID) -> bool:
    """Whether ``store`` holds ``sha``, loose or in a pack it has open, without listing
    the pack directory again on a miss (a pack landed meanwhile only makes a written
    object a harmless duplicate). A loose object is held if its file is there, as git's
    ``has_object`` sees it (``LibraryObjectStore.loose_file``: an lstat, then a listing
    of its fan-out directory), not dulwich's read and parse of the file (an install asks
    about 60,000 objects the library does not hold)."""
    if len(sha) == store.object_format.hex_length and _loose_file(store, sha):
        return True
    for pack in list(store._pack_cache.values()):
        try:
            if sha in pack:
                return True
        except (OSError, PackFileDisappeared):
            continue  # repacked away since it was listed: dulwich's lookups evict it
    return False


def _loose_file(store: DiskObjectStore, sha: ObjectID) -> bool:
    if isinstance(store, LibraryObjectStore):
        return store.loose_file(sha)
    try:
        return _regular_file(store._get_shafile_path(sha))
    except ValueError:  # not a hex id: dulwich builds no path from it
        return False


def _regular_file(path: str) -> bool:
    """Whether a regular file (not a link) is at ``path``."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def write_objects(store: DiskObjectStore, fresh: list[ShaFile]) -> None:
    """Write ``fresh`` (each object after what it names): loose and fsynced when few, one
    pack when many (or fsynced with the transaction's batch: core/fsutil.py)."""
    objects_dir = Path(str(store.path))
    if len(fresh) > PACK_THRESHOLD:
        # dulwich writes the pack and its index without fsync (unless
        # core.fsyncObjectFiles); they are synced here like loose objects, before any ref
        # can name what they hold.
        pack_dir = objects_dir / "pack"
        before = set(pack_dir.iterdir()) if pack_dir.is_dir() else set()
        store.add_objects([(o, None) for o in fresh])
        for path in sorted(set(pack_dir.iterdir()) - before):
            fsync_file(path)
        fsync_dir(pack_dir)
        return
    directories = set()
    for obj in reversed(fresh):  # what an object names first: a held object is whole
        store.add_object(obj)
        hexsha = obj.id.decode()
        path = objects_dir / hexsha[:2] / hexsha[2:]
        # dulwich does not fsync loose objects unless core.fsyncObjectFiles is set, a
        # setting git itself warns about; a ref must never name an object still in the
        # page cache only (inside a transaction: one sync before the ref moves).
        fsync_file(path)
        directories.add(path.parent)
    for directory in directories:
        fsync_dir(directory)


class BlobMemo(dict[bytes, bytes]):
    """Blob contents by (hex) id, kept once read up to ``BLOB_MEMO_BYTES``: an install
    reads each item's blobs to validate it, then again to stage it (and a local fetch has
    just read them all)."""

    def __init__(self) -> None:
        super().__init__()
        self.room = BLOB_MEMO_BYTES

    def keep(self, sha: bytes, kind: int, data: bytes) -> bytes:
        """The content of blob ``sha`` (``kind`` and ``data`` as read), kept if there is
        room; a UsageError when ``sha`` is not a blob."""
        if kind != Blob.type_num:
            raise UsageError(f"{sha.decode()} is not a blob")
        if len(data) <= self.room and sha not in self:
            self[sha] = data
            self.room -= len(data)
        return data


class CheckedTrees(dict[bytes, tuple[tuple[ItemFile, ...], list[bytes]]]):
    """Items' files by the git tree id they were checked to have, with each file's blob id,
    up to ``BLOB_MEMO_BYTES`` of content: planning validates a new item from its files and
    hashes them; staging then writes those same bytes instead of reading and hashing the
    tree again (an install of 10,000 items: 10,000 tree walks). ``digests`` keeps the
    digest computed with every tree id, room or not: staging binds what it writes to the
    tree id, so the stat cache may be told both (``statcache.WorkTreeCache.seed``)."""

    def __init__(self) -> None:
        super().__init__()
        self.room = BLOB_MEMO_BYTES
        self.digests: dict[bytes, str] = {}

    def keep(self, tree: bytes, files: tuple[ItemFile, ...], blobs: list[bytes],
             digest: str) -> None:
        """Remember ``files``, whose tree id and digest the caller computed from them."""
        self.digests[tree] = digest
        size = sum(len(f.data) for f in files)
        if size <= self.room and tree not in self:
            self[tree] = (files, blobs)
            self.room -= size
