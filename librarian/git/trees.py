"""Tree ids without a walk: a blob's SHA-1 from its bytes, nested trees built from entries
that already exist in the store (an update assembles a collection this way), and the
entries that differ between two trees (a directory changed in place)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from librarian.core.digest import MODE_EXECUTABLE, MODE_FILE, MODE_TREE, PathClash, nest
from librarian.errors import UsageError
from librarian.git.repo import GitStore, ObjectId, TreeEntry

_PLAIN = (MODE_FILE, MODE_EXECUTABLE, MODE_TREE)


def blob_sha1(data: bytes) -> ObjectId:
    """Hex SHA-1 blob id without touching any store (for the index and the stat cache)."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest().encode()


def make_tree(store: GitStore, entries: Iterable[tuple[str, TreeEntry]]) -> ObjectId | None:
    """Stage the nested trees holding ``entries`` ((posix path, existing tree or blob),
    each path once), reusing every entry's object by id; None when there are none."""
    try:
        nested = nest(entries)
    except PathClash as exc:
        raise UsageError(f"items overlap: {exc}") from None
    return store.nested_tree(nested) if nested else None


def entry_changes(store: GitStore, old: ObjectId, new: ObjectId,
                  prefix: str = "") -> list[tuple[str, TreeEntry | None]] | None:
    """The fewest paths (``prefix`` + posix path) that turn a work-tree directory holding
    tree ``old`` into one holding ``new``: each with the entry of ``new`` to put there (a
    blob, or a whole tree where a directory is new or was a file) or None to remove it (a
    directory gone entirely is one path). No path is inside another, so their order does
    not matter. None when either side holds anything but files and directories."""
    if old == new:
        return []
    out: list[tuple[str, TreeEntry | None]] = []
    before, after = store.tree_items(old), store.tree_items(new)
    for name in sorted(before.keys() | after.keys()):
        was, now = before.get(name), after.get(name)
        if was == now:
            continue
        if any(e is not None and e.mode not in _PLAIN for e in (was, now)):
            return None
        path = prefix + name
        if was is not None and now is not None and was.mode == now.mode == MODE_TREE:
            inner = entry_changes(store, was.sha, now.sha, path + "/")
            if inner is None:
                return None
            out += inner
        else:
            out.append((path, now))
    return out
