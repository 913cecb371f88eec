"""``diff``: the work tree against the committed content, as a git-style unified diff."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from librarian.content.worktree import NotRegularFile, read_work_files
from librarian.core.digest import MODE_EXECUTABLE, MODE_FILE
from librarian.core.model import ItemFile
from librarian.ops.status import library_status
from librarian.store.gitstore import GitStore, ObjectId
from librarian.store.library import Library
from librarian.store.resolve import find_item


def _is_binary(data: bytes) -> bool:
    return b"\x00" in data[:8000]


def _lines(data: bytes) -> list[str]:
    """Lines as git sees them: split at ``\n`` only (``str.splitlines`` would also split
    at form feeds, lone carriage returns and Unicode separators)."""
    parts = data.decode("utf-8", "replace").split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def file_diff(path: str, old: ItemFile | None, new: ItemFile | None) -> Iterator[str]:
    """One file's diff in git's format (``diff --git a/… b/…``)."""
    old_data = old.data if old else b""
    new_data = new.data if new else b""
    old_mode = "100755" if old and old.executable else "100644"
    new_mode = "100755" if new and new.executable else "100644"
    if old and new and old_data == new_data and old_mode == new_mode:
        return
    yield f"diff --git a/{path} b/{path}"
    if old is None:
        yield f"new file mode {new_mode}"
    elif new is None:
        yield f"deleted file mode {old_mode}"
    elif old_mode != new_mode:
        yield f"old mode {old_mode}"
        yield f"new mode {new_mode}"
    if old_data == new_data:
        return
    a, b = (f"a/{path}" if old else "/dev/null"), (f"b/{path}" if new else "/dev/null")
    if _is_binary(old_data) or _is_binary(new_data):
        yield f"Binary files {a} and {b} differ"
        return
    old_lines = _lines(old_data)
    new_lines = _lines(new_data)
    for line in difflib.unified_diff(old_lines, new_lines, a, b, n=3):
        if line.startswith(("---", "+++", "@@")):
            yield line.rstrip("\n")
        elif line.endswith("\n"):
            yield line[:-1]
        else:
            yield line
            yield "\\ No newline at end of file"


def tree_diff(
    prefix: str, old: tuple[ItemFile, ...], new: tuple[ItemFile, ...]
) -> Iterator[str]:
    old_by_path = {f.path: f for f in old}
    new_by_path = {f.path: f for f in new}
    for path in sorted(set(old_by_path) | set(new_by_path)):
        yield from file_diff(f"{prefix}/{path}", old_by_path.get(path), new_by_path.get(path))


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
        head = store.head()
        root = store.tree_of(head)
        if name is not None:
            item = find_item(store, root, name)
            lines += tree_diff(item.path, _committed_files(store, item.tree),
                               _work_files(library, item.path))
        else:
            report = library_status(library)
            for status in report.changed():
                committed = store.lookup(root, status.path) if status.state != "untracked" else None
                lines += tree_diff(status.path,
                                   _committed_files(store, committed.sha if committed else None),
                                   _work_files(library, status.path))
            for file_status in report.files:
                if file_status.status == "clean":
                    continue
                entry = store.lookup(root, file_status.path)
                old = ItemFile("", False, store.read_blob(entry.sha)) if entry else None
                path = library.root / file_status.path
                new = ItemFile("", False, path.read_bytes()) if path.is_file() else None
                lines += file_diff(file_status.path, old, new)
    return "\n".join(lines) + ("\n" if lines else "")
