"""Tree ids without a walk: a blob's SHA-1 from its bytes, and nested trees built from
entries that already exist in the store (an update assembles a collection this way)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from librarian.core.digest import PathClash, nest
from librarian.errors import UsageError
from librarian.store.gitstore import GitStore, ObjectId, TreeEntry


def blob_sha1(data: bytes) -> ObjectId:
    """Hex SHA-1 blob id without touching any store (for the index and the stat cache)."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest().encode()


def make_tree(store: GitStore, entries: Mapping[str, TreeEntry]) -> ObjectId | None:
    """Stage the nested trees holding ``entries`` (posix path -> existing tree or blob),
    reusing every entry's object by id; None when ``entries`` is empty."""
    try:
        nested = nest(entries.items())
    except PathClash as exc:
        raise UsageError(f"items overlap: {exc}") from None
    return store.nested_tree(nested) if nested else None
