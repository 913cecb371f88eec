"""The registry's caches under ``.git/librarian/cache/`` (see ``prompt.registry``)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from librarian.core.fsutil import atomic_write, read_regular
from librarian.git import GitStore
from librarian.library import Item, Library, summarize

CACHE_VERSION = 3  # 2: tool contracts carry their pinned digest; 3: YAML 1.2 frontmatter
REGISTRY_CACHE = "prompt.json"
ITEMS_CACHE = "prompt-items.json"


def read_json(path: Path) -> dict[str, Any]:
    data = read_regular(path)  # a link is never followed, a FIFO never waited on
    try:
        document = json.loads(data) if data is not None else None
    except ValueError:
        return {}
    if not isinstance(document, dict) or document.get("version") != CACHE_VERSION:
        return {}
    return document


def write_json(library: Library, path: Path, document: dict[str, Any]) -> None:
    if not library.git_dir.is_dir():
        return
    with contextlib.suppress(OSError):  # a cache that cannot be written is only slower
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"version": CACHE_VERSION, **document}).encode())


class ItemSummaries:
    """(item tree id, directory name) -> parsed summary, kept in ``prompt-items.json``."""

    def __init__(self, library: Library) -> None:
        self._library = library
        self._path = library.cache_dir / ITEMS_CACHE
        entries = read_json(self._path).get("items")
        self._entries: dict[str, Any] = entries if isinstance(entries, dict) else {}
        self._used: dict[str, Any] = {}
        self._dirty = False

    def summary(self, store: GitStore, item: Item) -> dict[str, Any]:
        # The directory name is part of the key: the manifest's name must equal it.
        key = f"{item.tree.decode()} {item.path.rsplit('/', 1)[-1]}"
        cached = self._entries.get(key)
        if not isinstance(cached, dict):
            cached = summarize(store, item)
            self._dirty = True
        self._used[key] = cached
        return cached

    def save(self) -> None:
        # Entries of items no longer in the tree are dropped, so the file never outgrows
        # the library.
        if self._dirty or set(self._used) != set(self._entries):
            write_json(self._library, self._path, {"items": self._used})
