"""Opening a library's repository, asking whether an object is held, writing objects.

Reads are dulwich's own (``DiskObjectStore``: the packs, then the loose objects). Loose
objects are written as git writes them (best-speed compression unless the config says
otherwise) and fsynced before any ref can name them; many at once go into one pack.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from dulwich.object_store import DiskObjectStore
from dulwich.objects import Blob, ObjectID, ShaFile, hex_to_filename, valid_hexsha
from dulwich.pack import PackFileDisappeared
from dulwich.repo import Repo

from librarian.core.fsutil import fsync_dir, fsync_file
from librarian.core.model import ItemFile
from librarian.errors import UsageError
from librarian.git.dulwich_private import open_packs

# Above this many new objects, one pack is cheaper than many loose files.
PACK_THRESHOLD = 256
#: Bytes of blob content one store keeps once read (``BlobMemo``).
BLOB_MEMO_BYTES = 32 * 1024 * 1024


def pack_added(store: DiskObjectStore) -> None:
    """On opening, and after a fetch added a pack to ``store``: open the packs not yet
    open, so ``held`` sees their objects."""
    store.packs  # noqa: B018  (lists the pack directory, opening a pack landed since)


def open_repository(root: str, alternates: Sequence[str] = ()) -> Repo:
    """``Repo(root)`` (``alternates``: more object directories to read), its packs open
    (``held`` sees what they hold), its loose objects compressed as git compresses them."""
    repo = Repo(root, alternates=alternates) if alternates else Repo(root)
    store = repo.object_store
    if isinstance(store, DiskObjectStore):
        pack_added(store)
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
    ``has_object`` sees it (an lstat), not dulwich's read and parse of the file (an
    install asks about 60,000 objects the library does not hold)."""
    if len(sha) == store.object_format.hex_length and _loose_file(store, sha):
        return True
    for pack in list(open_packs(store).values()):
        try:
            if sha in pack:
                return True
        except (OSError, PackFileDisappeared):
            continue  # repacked away since it was listed: dulwich's lookups evict it
    return False


def _loose_file(store: DiskObjectStore, sha: ObjectID) -> bool:
    if not valid_hexsha(sha):  # not a hex object id: no path is built from it
        return False
    return _regular_file(hex_to_filename(str(store.path), sha))


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
