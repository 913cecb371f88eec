"""Unified diffs of item files in git's format (``diff --git a/… b/…``), pure over bytes."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from librarian.core.model import ItemFile


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
