"""Finding an item by the name a user types: ``pdf``, ``team:pdf`` or a library path."""

from __future__ import annotations

from librarian.errors import UsageError
from librarian.git import GitStore, ObjectId
from librarian.library.items import Item, committed_items


def find_item(store: GitStore, tree: ObjectId | None, name: str) -> Item:
    """The committed item called ``name`` (``SOURCE:NAME`` for managed items), also
    accepting its library path (``skills/pdf``)."""
    wanted = name.rstrip("/")
    for item in committed_items(store, tree):
        if item.name == wanted or item.path == wanted:
            return item
    raise UsageError(
        f"no item named {name!r} in this library",
        hint="`librarian inspect` lists every item; managed items are SOURCE:NAME",
    )
