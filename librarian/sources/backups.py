"""Backups of local edits a forced ``update`` or ``source remove`` would overwrite.

A backup is a commit whose parent is the library's HEAD and whose tree is HEAD's with each
overwritten item replaced by its work-tree content; it is referenced by
``refs/librarian/backups/<source>/<UTC timestamp>`` and written (objects fsynced, ref
moved) before anything else changes, so an edit is never lost, even if the process dies.
``git restore --source=<ref> -- <path>`` brings an edit back into the work tree.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from librarian.content.worktree import NotRegularFile, read_work_files
from librarian.core.digest import MODE_TREE
from librarian.core.events import format_message
from librarian.errors import ConflictError
from librarian.git import GitStore, ObjectId, TreeEntry
from librarian.library import Library

BACKUP_PREFIX = "refs/librarian/backups"


@dataclass(frozen=True, slots=True)
class Backup:
    ref: str
    commit: str
    paths: tuple[str, ...]

    @property
    def restore(self) -> tuple[str, ...]:
        """One command per saved item that puts the edit back into the work tree."""
        return tuple(restore_command(self.ref, path) for path in self.paths)


def restore_command(ref: str, path: str) -> str:
    return f"git restore --source={ref} -- {path}"


def back_up(
    library: Library, store: GitStore, base: ObjectId | None, source: str,
    paths: Sequence[str], reason: str,
) -> Backup | None:
    """Save the work-tree content at ``paths`` as one commit under a new backup ref."""
    base_tree = store.tree_of(base)
    tree = base_tree
    saved: list[str] = []
    for path in sorted(paths):
        target = library.path_of(path)
        if not target.is_dir() or target.is_symlink():
            continue  # nothing local to keep: the item is missing
        try:
            files = read_work_files(target)
        except NotRegularFile as exc:
            raise ConflictError(
                f"cannot back up {path}: {exc.path} is not a regular file",
                hint="move the link or special file away, then run the command again",
            ) from None
        entry = TreeEntry(MODE_TREE, store.files_tree(files)) if files else None
        tree = store.with_path(tree, path, entry)
        saved.append(path)
    if not saved or tree is None:
        return None
    # Not a retention event (it is never on the branch, only under its ref): no
    # Librarian-Event trailer.
    message = format_message(f"backup of local edits before {reason}",
                             [("Librarian-Backup", source),
                              *(("Librarian-Item", p) for p in saved)])
    commit = store.make_commit(tree, [base] if base else [], message)
    store.flush(commit)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    ref = f"{BACKUP_PREFIX}/{source}/{stamp}"
    existing = store.refs_under(f"{BACKUP_PREFIX}/{source}/".encode())
    number = 1
    while ref.encode() in existing:
        number += 1
        ref = f"{BACKUP_PREFIX}/{source}/{stamp}-{number}"
    store.set_ref(ref.encode(), None, commit, b"librarian: " + message.split("\n")[0].encode())
    return Backup(ref, commit.decode(), tuple(saved))
