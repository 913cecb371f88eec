"""``diff``: the work tree against the committed content, as a git-style unified diff."""

from __future__ import annotations

from librarian.content.patch import file_diff, tree_diff
from librarian.content.worktree import NotRegularFile, read_work_files
from librarian.core.digest import MODE_EXECUTABLE, MODE_FILE
from librarian.core.model import ItemFile
from librarian.git import GitStore, ObjectId
from librarian.library import Library, Snapshot
from librarian.ops.naming import find_named
from librarian.ops.status import library_status


def _committed_files(store: GitStore, tree: ObjectId | None) -> tuple[ItemFile, ...]:
    """The committed files; a symlink or submodule committed with plain git (which
    `check` reports) is shown as a one-line placeholder rather than failing the diff."""
    if tree is None:
        return ()
    files = []
    for path, entry in store.walk(tree):
        if entry.mode in (MODE_FILE, MODE_EXECUTABLE):
            files.append(ItemFile(path, entry.mode == MODE_EXECUTABLE, store.read_blob(entry.sha)))
        else:
            files.append(ItemFile(path, False, f"(git entry of mode {entry.mode:o}: not a "
                                  "regular file)\n".encode()))
    return tuple(files)


def _work_files(library: Library, path: str) -> tuple[ItemFile, ...]:
    directory = library.path_of(path)
    if not directory.is_dir():
        return ()
    try:
        return read_work_files(directory)
    except NotRegularFile as exc:
        return (ItemFile(str(exc.path.relative_to(directory)), False,
                         b"(not a regular file: librarian refuses symlinks and special files)\n"),)


def diff_library(library: Library, name: str | None = None) -> str:
    """The diff text (empty when there is nothing to show)."""
    lines: list[str] = []
    with library.store() as store:
        snapshot = Snapshot.head(library, store)
        if name is not None:
            item = find_named(snapshot, name)
            lines += tree_diff(item.path, _committed_files(store, item.tree),
                               _work_files(library, item.path))
        else:
            report = library_status(library)
            for status in report.changed():
                committed = snapshot.lookup(status.path) if status.state != "untracked" else None
                lines += tree_diff(status.path,
                                   _committed_files(store, committed.sha if committed else None),
                                   _work_files(library, status.path))
            for file_status in report.files:
                if file_status.status == "clean":
                    continue
                entry = snapshot.lookup(file_status.path)
                old = ItemFile("", False, store.read_blob(entry.sha)) if entry else None
                path = library.root / file_status.path
                new = ItemFile("", False, path.read_bytes()) if path.is_file() else None
                if old is not None or new is not None:  # an untracked directory: status
                    lines += file_diff(file_status.path, old, new)
    return "\n".join(lines) + ("\n" if lines else "")
