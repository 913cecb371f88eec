"""Applying a commit to the work tree: staging, the swap by renames, its undo, the index.

Used by the transaction (``txn``) on the way forward and by ``recovery`` to finish a change
whose branch already moved; every step here is idempotent for that reason. A path may get
a work tree other than the commit's (``TreeChange.work``, a merged local edit): it is staged
and rebuilt from that tree, and the index records the committed blobs, so ``git status``
shows the difference as a modification. A directory the caller knows holds the base's tree
(``TreeChange.work_is_base``) is changed in place: only the entries that differ are staged,
swapped and re-indexed (``slots``), as ``git checkout`` rewrites only the files that changed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from librarian.content.worktree import (
    NotRegularFile,
    hash_files,
    hash_work_dir,
    iter_work_files,
    write_files,
)
from librarian.core.digest import MODE_EXECUTABLE, MODE_TREE
from librarian.core.fsutil import fsync_dir, sync_filesystem, write_file_durably
from librarian.core.progress import counted
from librarian.errors import ConflictError, UsageError
from librarian.git import (
    GitStore,
    IndexEntry,
    IndexFormatError,
    IndexLockedError,
    ObjectId,
    TreeEntry,
    blob_sha1,
    entry_changes,
    splice_index,
)
from librarian.library import Library
from librarian.txn.changes import Change, DirChange, EntryChange, FileChange, TreeChange
from librarian.txn.leftovers import index_marker
from librarian.txn.staging import StagedTree


def check_unmodified(library: Library, store: GitStore, base_tree: ObjectId | None,
                     change: Change) -> None:
    """The work tree at ``change.path`` must hold what ``base_tree`` holds there, so the
    change cannot clobber a local edit (or an untracked directory)."""
    target = library.path_of(change.path)
    committed = store.lookup(base_tree, change.path)
    exists = target.exists() or target.is_symlink()
    if committed is None:
        if exists and isinstance(change, DirChange) and change.adopt and change.files:
            _check_adoptable(target, change)
            return
        if exists:
            raise ConflictError(
                f"{change.path} already exists in the work tree but is not committed",
                hint="move it away (or retain it) first",
                path=str(target),
            )
        return
    if not exists:
        raise ConflictError(
            f"{change.path} is missing from the work tree",
            hint="run `librarian status`; restore it with `git checkout -- " + change.path + "`",
        )
    if isinstance(change, FileChange):
        current = blob_sha1(target.read_bytes()) if target.is_file() else b""
        same = current == committed.sha
    else:
        try:
            work = hash_work_dir(target) if target.is_dir() else None
        except NotRegularFile:
            work = None
        same = work is not None and work.tree_sha1 == committed.sha
    if not same:
        raise ConflictError(
            f"{change.path} has local edits that this command would overwrite",
            hint="see `librarian diff`; commit or revert them first",
            path=str(target),
        )


def _check_adoptable(target: Path, change: DirChange) -> None:
    """Adopting an untracked directory: it must hold exactly the validated files, no more
    (nothing ignored is dropped silently) and unchanged since they were read."""
    assert change.files is not None
    try:
        work = hash_work_dir(target) if target.is_dir() and not target.is_symlink() else None
    except NotRegularFile:
        work = None
    if work is None or work.tree_sha1 != hash_files(change.files).tree_sha1:
        raise ConflictError(
            f"{change.path} is untracked and holds more than (or other than) what retain "
            "admits: files it ignores, links, or edits made while it was read",
            hint="retain it from a copy outside the library, or remove the extra files",
            path=str(target),
        )


def undo(
    library: Library,
    store: GitStore,
    tx: str,
    paths: Sequence[str],
    done: list[tuple[str, int]],
    base: ObjectId | None,
    new: ObjectId,
) -> None:
    if base is None:
        return  # the branch was born here: `init` removes the whole library itself
    stage, trash = library.stage_dir / tx, library.trash_dir / tx
    for step, number in reversed(done):
        target = library.path_of(paths[number])
        if step == "placed":
            target.rename(stage / str(number))
        else:  # "moved": the old content back into place
            target.parent.mkdir(parents=True, exist_ok=True)
            (trash / str(number)).rename(target)
    # The renames back must be on disk before the journal that could redo them goes;
    # undo is rare, so one sync of the file system is the simple sure way.
    sync_filesystem(library.git_dir)
    store.set_ref(store.branch(), new, base, b"librarian: undo an unfinished change")
    discard(library, tx)


def slots(store: GitStore, base_tree: ObjectId | None,
          changes: Sequence[Change]) -> list[Change]:
    """The paths a commit swaps, in order (slot i is path i of the journal): each change as
    it is, except that a ``TreeChange`` over a work tree known to hold the base's tree
    becomes one ``EntryChange`` per entry that differs (none when nothing does)."""
    out: list[Change] = []
    for change in changes:
        if isinstance(change, TreeChange) and change.work_is_base and change.tree is not None \
                and change.work is None:
            old = store.lookup(base_tree, change.path)
            inner = entry_changes(store, old.sha, change.tree, change.path + "/") \
                if old is not None and old.mode == MODE_TREE else None
            if inner is not None:
                out += [EntryChange(path, entry) for path, entry in inner]
                continue
        out.append(change)
    return out


def swap_in(
    library: Library,
    store: GitStore,
    tx: str,
    paths: Sequence[str],
    new_tree: ObjectId,
    done: list[tuple[str, int]] | None = None,
    work: Mapping[int, ObjectId] | None = None,
    held: bool = False,
    staged: Mapping[int, StagedTree] | None = None,
) -> None:
    """Steps 5 and 6; also the roll-forward of ``recovery.recover`` (idempotent). ``done``
    records each rename ("moved" old content to trash, "placed" new content) for ``_undo``;
    ``work`` maps the slots whose work tree is not the commit's to the tree it gets;
    ``held``: this process holds git's index.lock (``leftovers.hold_index``); ``staged``: what
    ``stage_changes`` returned, whose index entries are used for the slots this call places."""
    stage, trash = library.stage_dir / tx, library.trash_dir / tx
    steps = done if done is not None else []
    work = work or {}
    known: dict[int, list[IndexEntry]] = {}
    parents: set[str] = set()  # directories made or found here (an install: one for all)
    lexists = os.path.lexists  # a link counts as there: it is moved, never followed
    # Paths as strings (an install swaps 10,000: a Path each cost more than the rename).
    root, staged_at, trashed_at = str(library.root), str(stage), str(trash)
    for number, path in enumerate(counted("install", paths)):
        target, slot = f"{root}/{path}", f"{staged_at}/{number}"
        desired = store.lookup(new_tree, path)
        if desired is not None and number in work:
            desired = TreeEntry(MODE_TREE, work[number])  # rebuilt as merged, never bare
        # A slot staged by this process is there; recovery's (``staged`` None) is asked.
        if desired is None or (staged is not None and number in staged) or lexists(slot):
            if lexists(target):
                trash.mkdir(parents=True, exist_ok=True)
                os.rename(target, f"{trashed_at}/{number}")  # noqa: PTH104 (strings, above)
                steps.append(("moved", number))
            parent = os.path.dirname(target)  # noqa: PTH120
            if desired is not None:
                if parent not in parents:
                    _make_parents(Path(parent))
                    parents.add(parent)
                os.rename(slot, target)  # noqa: PTH104
                steps.append(("placed", number))
                if staged is not None and number in staged and number not in work:
                    known[number] = staged[number].entries
            # A path removed where its parent is gone already: nothing to sync there.
            if parent not in parents and os.path.isdir(parent):  # noqa: PTH112
                parents.add(parent)
        elif not lexists(target):
            # Roll-forward after the stage was lost: rebuild from the object store.
            _materialize(store, desired, Path(target))
    for parent in parents:  # each directory renamed into, once (an install: one for all)
        fsync_dir(parent)
    _update_index(library, store, tx, paths, new_tree, work, held, known)


def _make_parents(directory: Path) -> None:
    """Create ``directory`` and missing parents, fsyncing each new entry's parent."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        path.mkdir()
        fsync_dir(path.parent)


def _materialize(store: GitStore, entry: TreeEntry, target: Path) -> None:
    _make_parents(target.parent)
    if entry.mode == MODE_TREE:
        write_files(target, store.read_files(entry.sha))
    else:
        data = store.read_blob(entry.sha)
        write_file_durably(target, data, executable=entry.mode == MODE_EXECUTABLE)
    fsync_dir(target.parent)


def _update_index(
    library: Library, store: GitStore, tx: str, paths: Sequence[str], new_tree: ObjectId,
    work_of: Mapping[int, ObjectId], held: bool = False,
    known: Mapping[int, list[IndexEntry]] | None = None,
) -> None:
    entries: list[IndexEntry] = []
    for number, path in enumerate(paths):
        if known is not None and number in known:
            entries += known[number]  # staged whole and placed by this process
            continue
        desired = store.lookup(new_tree, path)
        if desired is None:
            continue
        target = library.path_of(path)
        if number in work_of:
            entries += _modified_entries(store, target, path, desired.sha, work_of[number])
        elif desired.mode == MODE_TREE:
            committed = dict(store.walk(desired.sha, path + "/"))
            for work in iter_work_files(target, path + "/"):
                entry = committed[work.path]
                entries.append(IndexEntry(work.path, bytes.fromhex(entry.sha.decode()),
                                          entry.mode, work.stat))
        else:
            entries.append(IndexEntry(path, bytes.fromhex(desired.sha.decode()), desired.mode,
                                      target.lstat()))
    removed = list(paths)
    if library.prefix:  # a library in a folder: the index names the project's paths
        removed = [library.repo_path(path) for path in paths]
        entries = [IndexEntry(library.repo_path(e.path), e.blob_sha, e.mode, e.stat)
                   for e in entries]
    marker = index_marker(library)
    marker.write_text(tx)  # names git's index.lock as this transaction's (see leftovers)
    try:
        splice_index(library.index_path, remove_prefixes=removed, add=entries, held=held)
    except IndexLockedError:
        raise ConflictError(
            "the git index is locked (.git/index.lock exists)",
            hint="another git command is running; nothing was changed: run the command "
            "again when it is done (or remove a stale .git/index.lock)",
        ) from None
    except IndexFormatError as exc:
        raise UsageError(f"cannot update the git index: {exc}") from None
    finally:
        marker.unlink(missing_ok=True)


def _modified_entries(store: GitStore, target: Path, path: str, committed_tree: ObjectId,
                      work_tree: ObjectId) -> list[IndexEntry]:
    """Index entries for a directory whose work tree is not the commit (a merged edit): the
    committed blobs, as git keeps them; a file the work tree holds unchanged gets its stat,
    every other one git's zeroed stat, so that git re-reads it and reports it modified."""
    committed = dict(store.walk(committed_tree, path + "/"))
    in_work = dict(store.walk(work_tree, path + "/"))
    entries = []
    for name, entry in sorted(committed.items()):
        file = target / name[len(path) + 1:]
        if in_work.get(name) == entry and file.is_file():
            st = file.lstat()
        else:
            st = os.stat_result((entry.mode, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.0, 0.0, 0.0, 0, 0, 0))
        entries.append(IndexEntry(name, bytes.fromhex(entry.sha.decode()), entry.mode, st))
    return entries


def discard(library: Library, tx: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        library.journal_path.unlink()
        fsync_dir(library.state_dir)
    for directory in (library.stage_dir, library.trash_dir):
        shutil.rmtree(directory / tx, ignore_errors=True)
        with contextlib.suppress(OSError):  # another transaction's leftovers keep it
            directory.rmdir()
