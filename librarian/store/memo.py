"""Facts derived from immutable git objects, remembered across commands.

A tree id names its content forever, so what is computed from it (an item's kind, an
item's description and digest as ``inspect`` shows them) never goes stale. A ``TreeMemo``
keeps one such map per name in ``.git/librarian/cache/<name>.json``; it is read the first
time a command asks, and written back (atomically; a cache that cannot be written is only
slower) by ``save_all`` where a command has succeeded (``status``, ``inspect``, a
committed transaction), so a refused command leaves nothing behind. Never created in a
directory that is not a library. A memo past ``MAX_ENTRIES`` starts over.
"""

from __future__ import annotations

import contextlib
import json
import weakref
from pathlib import Path
from typing import Any

from librarian.core.fsutil import atomic_write
from librarian.store.gitstore import GitStore

MAX_ENTRIES = 500_000
_VERSION = 1
_open: weakref.WeakKeyDictionary[GitStore, dict[str, TreeMemo]] = weakref.WeakKeyDictionary()


class TreeMemo:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._entries: dict[str, Any] = {}
        self._dirty = False
        with contextlib.suppress(OSError, ValueError):
            document = json.loads(path.read_bytes())
            if isinstance(document, dict) and document.get("version") == _VERSION and \
                    isinstance(document.get("entries"), dict):
                self._entries = document["entries"]

    @classmethod
    def of(cls, store: GitStore, name: str) -> TreeMemo:
        """The memo ``name`` of this open store (one per store and name)."""
        memos = _open.setdefault(store, {})
        memo = memos.get(name)
        if memo is None:
            memo = memos[name] = cls(store.root / ".git" / "librarian" / "cache" /
                                     f"{name}.json")
        return memo

    @staticmethod
    def save_all(store: GitStore) -> None:
        """Write back every memo of ``store`` that learned something."""
        for memo in _open.get(store, {}).values():
            memo.save()

    def get(self, key: str) -> Any:
        return self._entries.get(key)

    def put(self, key: str, value: Any) -> None:
        if self._entries.get(key) != value:
            if len(self._entries) >= MAX_ENTRIES:
                self._entries = {}
            self._entries[key] = value
            self._dirty = True

    def save(self) -> None:
        if not self._dirty or not self._path.parent.parent.is_dir():
            return
        self._dirty = False
        with contextlib.suppress(OSError):
            self._path.parent.mkdir(exist_ok=True)
            atomic_write(self._path, json.dumps(
                {"version": _VERSION, "entries": self._entries},
                separators=(",", ":")).encode())
