"""Staging a commit's changes: each slot's new content written under the transaction's stage.

``stage_changes`` writes slot i for change i, verified against what the plan checked; the
slots staged whole from a stored tree come back as ``StagedTree`` (their index entries,
and the stat cache's seed).

Imports ``core``, ``content`` and the store's ``changes``, ``gitindex``, ``gitstore``,
``statcache`` and ``trees``; ``apply`` builds on it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from librarian.cache import StagedDir, staged_dir
from librarian.content.worktree import ItemHash, git_ids, hash_files, write_files
from librarian.core.digest import MODE_EXECUTABLE, MODE_FILE, MODE_TREE
from librarian.core.fsutil import fsync_dir, write_file_durably
from librarian.core.model import ItemFile
from librarian.core.progress import counted
from librarian.errors import TrustError
from librarian.git import GitStore, IndexEntry, ObjectId, TreeEntry, blob_sha1
from librarian.txn.changes import Change, DirChange, EntryChange, FileChange, TreeChange


class StagedTree(NamedTuple):
    """A slot staged whole from a stored tree: its index entries (each file's stat as written:
    ``swap_in`` need not stat it again); if the plan hashed its bytes, the stat cache's seed."""

    entries: list[IndexEntry]
    seed: StagedDir | None


def stage_changes(stage: Path, changes: Sequence[Change],
                  store: GitStore) -> dict[int, StagedTree]:
    """Write every change's new content into ``stage`` (slot i for change i); the slots
    staged whole from a stored tree, by number."""
    stage.mkdir(parents=True)
    entries: dict[int, StagedTree] = {}
    _stage_each(stage, changes, store, entries)  # in slot order: the stat cache is seeded
    fsync_dir(stage)  # in this order, and the next status reads its records in step
    return entries


def _stage_each(stage: Path, changes: Sequence[Change], store: GitStore,
                entries: dict[int, StagedTree]) -> None:
    for number, change in enumerate(counted("stage", changes)):
        slot = stage / str(number)
        if isinstance(change, EntryChange):
            if change.entry is not None:
                _stage_entry(store, slot, change.path, change.entry)
        elif isinstance(change, DirChange) and change.files:
            write_files(slot, change.files)
        elif isinstance(change, FileChange) and change.data is not None:
            write_file_durably(slot, change.data)
        elif isinstance(change, TreeChange) and change.work is not None:
            # A merged edit: the stage holds the merge; what the commit installs is checked
            # against the plan's digest from the object store.
            _stage_tree(store, slot, change.path, change.work, None)
            if change.tree is not None and change.digest is not None:
                _verify(change.path, hash_files(store.read_files(change.tree)), change.tree,
                        change.digest)
        elif isinstance(change, TreeChange) and change.tree is not None:
            entries[number] = _stage_tree(store, slot, change.path, change.tree, change.digest)


Written = list[tuple[str, bool, bytes, os.stat_result]]  # path, executable, blob id, stat


def _written(files: Sequence[ItemFile], blobs: Sequence[bytes],
             stats: Sequence[os.stat_result]) -> Written:
    return [(f.path, f.executable, blob, st) for f, blob, st in zip(files, blobs, stats,
                                                                      strict=True)]


def _staged(store: GitStore, path: str, tree: ObjectId, written: Written) -> StagedTree:
    """The ``StagedTree`` of the slot at ``path`` written from ``tree``: its index entries
    and, if the plan hashed its bytes (the digest it computed with ``tree``), its seed."""
    seen = store.checked.digests.get(tree)
    seed = staged_dir((tree, seen), ((rel, st) for rel, _, _, st in written)) if seen else None
    return StagedTree([IndexEntry(f"{path}/{rel}", blob, MODE_EXECUTABLE if executable
                                  else MODE_FILE, st) for rel, executable, blob, st in written],
                      seed)


def _tree_files(store: GitStore, path: str, tree: ObjectId,
                digest: str | None) -> tuple[tuple[ItemFile, ...], list[bytes]]:
    """The files of the stored ``tree`` and their blob ids, read once and checked: the
    bytes to write are the bytes hashed, and they must be the planned ones. Their git tree
    id is enough: the planner computed the digest from the bytes of this same tree id (and
    checked both)."""
    checked = store.checked.pop(tree, None)  # the plan's own bytes, hashed to ``tree``
    if checked is not None:
        return checked
    files = store.read_files(tree)
    staged, blobs = git_ids(files) if files else (b"", [])
    if staged != tree:
        raise TrustError(
            f"{path}: the staged content does not match the planned digest "
            f"{digest or ''}".rstrip(),
            hint="the object store may be damaged; run `git fsck`",
        )
    return files, blobs


def _stage_tree(store: GitStore, slot: Path, path: str, tree: ObjectId,
                digest: str | None) -> StagedTree:
    """Write the stored ``tree`` at ``slot`` (``_tree_files``)."""
    files, blobs = _tree_files(store, path, tree, digest)
    return _staged(store, path, tree, _written(files, blobs, write_files(slot, files)))


def _stage_entry(store: GitStore, slot: Path, path: str, entry: TreeEntry) -> None:
    """One entry of a directory changed in place, checked against its id in the commit."""
    if entry.mode == MODE_TREE:
        _stage_tree(store, slot, path, entry.sha, None)  # re-indexed from the work tree
        return
    data = store.read_blob(entry.sha)
    if blob_sha1(data) != entry.sha:
        raise TrustError(f"{path}: the staged content does not match the planned blob "
                         f"{entry.sha.decode()}",
                         hint="the object store may be damaged; run `git fsck`")
    write_file_durably(slot, data, executable=entry.mode == MODE_EXECUTABLE)


def _verify(path: str, staged: ItemHash | None, tree: ObjectId, digest: str | None) -> None:
    """The staged copy must be exactly the planned content (digest and git tree id)."""
    ok = staged is not None and staged.tree_sha1 == tree and (
        digest is None or staged.digest == digest)
    if not ok:
        raise TrustError(
            f"{path}: the staged content does not match the planned digest "
            f"{digest or ''}".rstrip(),
            hint="the object store may be damaged; run `git fsck`",
        )
