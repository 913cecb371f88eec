"""The one way the library changes: a journaled transaction ending in one commit.

Order of work, chosen so that a crash at any instant leaves the library recoverable:

1. write the new objects and the commit into the object store (unreferenced until step 4);
2. write the new work-tree content into ``.git/librarian/stage/<tx>/`` (fsynced);
3. write the journal (base commit, new commit, paths);
4. move the branch base -> new by compare-and-swap (a moved branch: exit 3, nothing done);
5. swap each path: old content to ``trash/<tx>/``, staged content into place (renames);
6. splice the changed entries into the git index, so plain ``git status`` stays clean;
7. delete the journal, then the stage and trash.

``recovery.recover`` finishes a transaction whose branch moved (roll forward from stage or
objects) and discards one whose branch did not (the work tree was not touched before step 4).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from librarian.content.worktree import NotRegularFile, hash_work_dir, iter_work_files, write_files
from librarian.core.digest import MODE_EXECUTABLE, MODE_FILE, MODE_TREE
from librarian.core.events import format_message
from librarian.core.fsutil import atomic_write, fsync_dir, write_file_durably
from librarian.core.model import ItemFile
from librarian.errors import ConflictError, LibrarianError, TrustError, UsageError
from librarian.store.gitindex import IndexEntry, IndexFormatError, IndexLockedError, splice_index
from librarian.store.gitstore import GitStore, ObjectId, TreeEntry, blob_sha1
from librarian.store.library import Library
from librarian.store.lock import library_lock


@dataclass(frozen=True)
class DirChange:
    """Set a directory to ``files``; ``None`` removes it."""

    path: str
    files: tuple[ItemFile, ...] | None


@dataclass(frozen=True)
class FileChange:
    """Set a top-level file such as tools.yaml to ``data``; ``None`` removes it."""

    path: str
    data: bytes | None


@dataclass(frozen=True)
class TreeChange:
    """Set a directory to a tree already in the object store (e.g. fetched from a source);
    ``None`` removes it. When ``digest`` is given, the staged copy must hash to it."""

    path: str
    tree: ObjectId | None
    digest: str | None = None


Change = DirChange | FileChange | TreeChange


@dataclass(frozen=True)
class CommitResult:
    commit: str  # hex id of the new commit
    base: str | None


def crash_point(name: str) -> None:
    """Fault injection for the recovery tests: ``LIBRARIAN_CRASH_AT=<name>`` kills the
    process here with SIGKILL, exactly as an outside kill would."""
    if os.environ.get("LIBRARIAN_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


@contextlib.contextmanager
def mutation(library: Library) -> Iterator[GitStore]:
    """Hold the library lock, finish any interrupted transaction, yield the store."""
    from librarian.store.recovery import recover  # imported here: recovery imports this module

    with library_lock(library.lock_path), library.store() as store:
        recover(library, store)
        yield store


def _committed_entry(store: GitStore, base_tree: ObjectId | None, path: str) -> TreeEntry | None:
    return store.lookup(base_tree, path)


def check_unmodified(library: Library, store: GitStore, base_tree: ObjectId | None,
                     change: Change) -> None:
    """The work tree at ``change.path`` must hold what ``base_tree`` holds there, so the
    change cannot clobber a local edit (or an untracked directory)."""
    target = library.path_of(change.path)
    committed = _committed_entry(store, base_tree, change.path)
    exists = target.exists() or target.is_symlink()
    if committed is None:
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


def commit_changes(
    library: Library,
    store: GitStore,
    *,
    base: ObjectId | None,
    subject: str,
    trailers: Sequence[tuple[str, str]],
    changes: Sequence[Change],
    allow_empty: bool = False,
    overwrite_local: bool = False,
    root_tree: ObjectId | None = None,
) -> CommitResult:
    """Make exactly one commit applying ``changes`` on top of ``base`` (see module doc).

    ``root_tree``: the new root tree, already staged by the caller (an update builds the
    collection tree from fetched objects at once); ``changes`` then name the work-tree paths
    to swap, and each must agree with it."""
    base_tree = store.tree_of(base)
    if not overwrite_local:
        for change in changes:
            check_unmodified(library, store, base_tree, change)
    new_tree = base_tree
    for change in changes:
        entry: TreeEntry | None
        if isinstance(change, DirChange):
            entry = (
                TreeEntry(MODE_TREE, store.files_tree(change.files)) if change.files else None
            )
        elif isinstance(change, TreeChange):
            entry = TreeEntry(MODE_TREE, change.tree) if change.tree else None
        else:
            entry = None if change.data is None else TreeEntry(MODE_FILE, store.blob(change.data))
        if root_tree is None:
            new_tree = store.with_path(new_tree, change.path, entry)
        elif isinstance(change, TreeChange) and store.lookup(root_tree, change.path) != entry:
            raise ValueError(f"{change.path}: the change disagrees with the given tree")
    if root_tree is not None:
        new_tree = root_tree
    assert new_tree is not None
    if new_tree == base_tree and not allow_empty:
        raise UsageError("nothing to change: the library already holds exactly this content")
    new = store.make_commit(new_tree, [base] if base else [], format_message(subject, trailers))
    store.flush(new)
    crash_point("after-objects")

    if (library.git_dir / "index.lock").exists():
        # Checked before the branch moves: once it has, the change is made.
        raise ConflictError(
            "the git index is locked (.git/index.lock exists); nothing was changed",
            hint="another git command is running; if none is, remove .git/index.lock",
        )
    tx = uuid.uuid4().hex[:12]
    stage = library.stage_dir / tx
    paths = [c.path for c in changes]
    try:
        _stage_changes(stage, changes, store)
        journal = {
            "tx": tx,
            "branch": store.branch().decode(),
            "base": base.decode() if base else None,
            "new": new.decode(),
            "paths": paths,
        }
        atomic_write(library.journal_path, json.dumps(journal, indent=1).encode())
        crash_point("after-journal")
        store.move_branch(base, new, message=subject.encode())
    except BaseException:
        # An interrupt can land after the ref file was replaced but before move_branch
        # returned: then the change is made and the journal must stay for recovery.
        if store.ref(store.branch()) != new:
            discard(library, tx)
        raise
    crash_point("after-cas")
    done: list[tuple[str, int]] = []
    try:
        swap_in(library, store, tx, paths, new_tree, done)
    except (LibrarianError, OSError):
        # A failure after the branch moved (a vanished directory, a full disk, an index
        # locked since the check): put everything back so the command changed nothing.
        # If even that fails, the journal stays and the next command finishes the change.
        _undo(library, store, tx, paths, done, base, new)
        raise
    crash_point("after-swap")
    discard(library, tx)
    return CommitResult(new.decode(), base.decode() if base else None)


def _undo(
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
    store.set_ref(store.branch(), new, base, b"librarian: undo an unfinished change")
    discard(library, tx)


def _stage_changes(stage: Path, changes: Sequence[Change], store: GitStore) -> None:
    stage.mkdir(parents=True)
    for number, change in enumerate(changes):
        slot = stage / str(number)
        if isinstance(change, DirChange) and change.files:
            write_files(slot, change.files)
        elif isinstance(change, FileChange) and change.data is not None:
            write_file_durably(slot, change.data)
        elif isinstance(change, TreeChange) and change.tree is not None:
            write_files(slot, store.read_files(change.tree))
            _verify_staged(slot, change)
    fsync_dir(stage)


def _verify_staged(slot: Path, change: TreeChange) -> None:
    """The staged copy must be exactly the planned content (digest and git tree id)."""
    staged = hash_work_dir(slot)
    ok = staged is not None and staged.tree_sha1 == change.tree and (
        change.digest is None or staged.digest == change.digest)
    if not ok:
        raise TrustError(
            f"{change.path}: the staged content does not match the planned digest "
            f"{change.digest or ''}".rstrip(),
            hint="the object store may be damaged; run `git fsck`",
        )


def swap_in(
    library: Library,
    store: GitStore,
    tx: str,
    paths: Sequence[str],
    new_tree: ObjectId,
    done: list[tuple[str, int]] | None = None,
) -> None:
    """Steps 5 and 6; also the roll-forward of ``recovery.recover`` (idempotent). ``done``
    records each rename ("moved" old content to trash, "placed" new content) for ``_undo``."""
    stage, trash = library.stage_dir / tx, library.trash_dir / tx
    steps = done if done is not None else []
    for number, path in enumerate(paths):
        target, slot = library.path_of(path), stage / str(number)
        desired = store.lookup(new_tree, path)
        if slot.exists() or slot.is_symlink() or desired is None:
            if target.exists() or target.is_symlink():
                trash.mkdir(parents=True, exist_ok=True)
                target.rename(trash / str(number))
                steps.append(("moved", number))
            if desired is not None:
                _make_parents(target.parent)
                slot.rename(target)
                steps.append(("placed", number))
            if target.parent.is_dir():  # removing a path whose parent is gone already
                fsync_dir(target.parent)
        elif not (target.exists()):
            # Roll-forward after the stage was lost: rebuild from the object store.
            _materialize(store, desired, target)
    _update_index(library, store, paths, new_tree)


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
    library: Library, store: GitStore, paths: Sequence[str], new_tree: ObjectId
) -> None:
    entries: list[IndexEntry] = []
    for path in paths:
        desired = store.lookup(new_tree, path)
        if desired is None:
            continue
        target = library.path_of(path)
        if desired.mode == MODE_TREE:
            committed = dict(store.walk(desired.sha, path + "/"))
            for work in iter_work_files(target, path + "/"):
                entry = committed[work.path]
                entries.append(IndexEntry(work.path, bytes.fromhex(entry.sha.decode()),
                                          entry.mode, work.stat))
        else:
            entries.append(IndexEntry(path, bytes.fromhex(desired.sha.decode()), desired.mode,
                                      target.lstat()))
    try:
        splice_index(library.index_path, remove_prefixes=list(paths), add=entries)
    except IndexLockedError:
        raise ConflictError(
            "the git index is locked (.git/index.lock exists)",
            hint="another git command is running; nothing was changed: run the command "
            "again when it is done (or remove a stale .git/index.lock)",
        ) from None
    except IndexFormatError as exc:
        raise UsageError(f"cannot update the git index: {exc}") from None


def discard(library: Library, tx: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        library.journal_path.unlink()
        fsync_dir(library.state_dir)
    for directory in (library.stage_dir, library.trash_dir):
        shutil.rmtree(directory / tx, ignore_errors=True)
        with contextlib.suppress(OSError):  # another transaction's leftovers keep it
            directory.rmdir()


__all__ = [
    "Change",
    "CommitResult",
    "DirChange",
    "FileChange",
    "TreeChange",
    "check_unmodified",
    "crash_point",
    "commit_changes",
    "mutation",
]
