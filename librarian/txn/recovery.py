"""Recovery: finish or roll back a transaction (see ``txn``) that a crash interrupted."""

from __future__ import annotations

import contextlib
import shutil

from librarian.errors import UsageError
from librarian.git import GitStore, ObjectId, walk_log
from librarian.library import Library
from librarian.txn.apply import discard, swap_in
from librarian.txn.journal import Journal
from librarian.txn.leftovers import clear_leftovers
from librarian.txn.lock import library_lock


def recover_library(library: Library) -> str | None:
    """``librarian recover``: take the lock and finish or roll back an interrupted change."""
    with library_lock(library.lock_path), library.store() as store:
        return recover(library, store)


def recover(library: Library, store: GitStore) -> str | None:
    """Finish or roll back an interrupted transaction. Returns what was done, or None."""
    journal = Journal.read(library)
    if journal is not None and journal.prefix != library.prefix:
        raise UsageError(
            f"{library.journal_path} is the journal of the library in "
            f"{journal.prefix or 'the top'} of this repository, not of this one; nothing "
            "was changed", hint="if no librarian command was interrupted, remove the file")
    cleared = clear_leftovers(library, journal)
    if journal is None:
        swept = _sweep(library)
        return swept or ("removed files a killed command left: " + ", ".join(cleared)
                         if cleared else None)
    new = journal.new.encode()
    head = store.ref(journal.branch.encode("utf-8", "surrogateescape"))
    tree = store.tree_of(new) if head is not None and _reaches(store, head, new) else None
    if tree is not None:
        swap_in(library, store, journal.tx, journal.paths, tree, work=journal.work_of())
        outcome = f"finished the interrupted change {journal.new[:12]}"
    else:
        outcome = "rolled back an interrupted change (nothing had been committed)"
    discard(library, journal.tx)
    return outcome


def _sweep(library: Library) -> str | None:
    """Remove stage and trash left by a command killed before it wrote its journal: under
    the lock, with no journal, no transaction can still need them."""
    leftovers = [
        entry
        for directory in (library.stage_dir, library.trash_dir)
        if directory.is_dir()
        for entry in directory.iterdir()
    ]
    for entry in leftovers:
        shutil.rmtree(entry, ignore_errors=True)
    for directory in (library.stage_dir, library.trash_dir):
        with contextlib.suppress(OSError):  # empty now: librarian makes it when it needs it
            directory.rmdir()
    return "removed the staging area of a change that never started" if leftovers else None


def _reaches(store: GitStore, head: ObjectId, target: ObjectId, limit: int = 64) -> bool:
    for count, info in enumerate(walk_log(store, head)):
        if info.id == target:
            return True
        if count >= limit:
            break
    return False
