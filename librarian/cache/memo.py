"""Facts derived from immutable git objects, remembered across commands.

A tree id names its content forever, so what is computed from it (an item's kind, an
item's description and digest as ``inspect`` shows them) never goes stale. A ``TreeMemo``
keeps one such map per name in ``.git/librarian/cache/<name>.json``; it is read the first
time a command asks, and written back (atomically; a cache that cannot be written is only
slower) by ``save_all`` where a command has succeeded (``status``, ``inspect``, a
committed transaction), so a refused command leaves nothing behind. Never created in a
directory that is not a library. A memo past ``MAX_ENTRIES`` (or the smaller limit it
was opened with) starts over.

A ``ShortMemo`` holds one short word per tree id (an item's kind, read for every item a
command lists) in ``<name>.bin``: sorted fixed-shape records (``cache/statfile.py``)
read as one buffer, so 10,000 kinds are 280 KB of bytes rather than a JSON map.

A ``LastValueMemo`` holds one value for one tree id in ``<name>.bin`` (the item list of the
last ``sources/`` tree listed, read whole by every command that lists items): a new tree
id replaces it.
"""

from __future__ import annotations

import contextlib
import json
import weakref
from abc import ABC, abstractmethod
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from librarian.cache.statfile import (
    SHORT_MEMO_MAGIC,
    SortedFile,
    identity_of,
    read_blob,
    write_blob,
)
from librarian.core.fsutil import atomic_write, cache_dir_ready, read_regular
from librarian.git import GitStore

MAX_ENTRIES = 500_000
_VERSION = 1
#: The memos of each open store, by file name in its ``.git/librarian/cache``.
_open: weakref.WeakKeyDictionary[GitStore, dict[str, TreeMemo | _BinaryMemo]] = \
    weakref.WeakKeyDictionary()
_WORD = 8
_Memo = TypeVar("_Memo", bound="TreeMemo | _BinaryMemo")
_Binary = TypeVar("_Binary", bound="_BinaryMemo")


def _one_per_store(kind: type[_Memo], store: GitStore, file_name: str) -> _Memo:
    """The memo in ``cache/<file_name>`` of this open store (one per store and file)."""
    memos = _open.setdefault(store, {})
    memo = memos.get(file_name)
    if not isinstance(memo, kind):
        memo = kind(store.root / ".git" / "librarian" / "cache" / file_name)
        memos[file_name] = memo
    return memo


def _tree_id(key: str) -> bytes | None:
    """The 20 bytes of a hex tree id; None for anything else (never remembered)."""
    try:
        tree = bytes.fromhex(key)
    except ValueError:
        return None
    return tree if len(tree) == 20 else None


class TreeMemo:
    def __init__(self, path: Path, limit: int = MAX_ENTRIES) -> None:
        self._path = path
        self._limit = limit
        self._entries: dict[str, Any] = {}
        self._dirty = False
        with contextlib.suppress(OSError, ValueError):
            if path.parent.is_symlink():
                return  # a link in the cache is never followed: the memo starts empty
            data = read_regular(path)
            if data is None:
                return
            document = json.loads(data)
            if isinstance(document, dict) and document.get("version") == _VERSION and \
                    isinstance(document.get("entries"), dict):
                self._entries = document["entries"]

    @classmethod
    def of(cls, store: GitStore, name: str, *, limit: int = MAX_ENTRIES) -> TreeMemo:
        """The memo ``name`` of this open store (one per store and name), holding at most
        ``limit`` entries (give the same limit wherever the name is opened)."""
        memo = _one_per_store(cls, store, f"{name}.json")
        memo._limit = min(memo._limit, limit)
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
            if len(self._entries) >= self._limit:
                self._entries = {}
            self._entries[key] = value
            self._dirty = True

    def save(self) -> None:
        if not self._dirty or not cache_dir_ready(self._path):
            return
        self._dirty = False
        with contextlib.suppress(OSError):
            atomic_write(self._path, json.dumps(
                {"version": _VERSION, "entries": self._entries},
                separators=(",", ":")).encode())


class _BinaryMemo(ABC):
    """A memo in a binary ``<name>.bin``, bound to this ``.git`` (``statfile``)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._identity = identity_of(path.parent.parent.parent)  # .git

    @classmethod
    def of(cls: type[_Binary], store: GitStore, name: str) -> _Binary:
        """The memo ``name`` of this open store (one per store and name)."""
        return _one_per_store(cls, store, f"{name}.bin")

    @abstractmethod
    def save(self) -> None:
        """Write what was put since it was read, if anything."""


class ShortMemo(_BinaryMemo):
    """Tree id (hex) -> a word of at most 8 ASCII bytes, in ``<name>.bin``."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._file = SortedFile(path, SHORT_MEMO_MAGIC, self._identity, _WORD)
        self._new: dict[bytes, bytes] = {}

    def get(self, key: str) -> str | None:
        tree = _tree_id(key)
        if tree is None:
            return None
        value = self._new.get(tree)
        if value is None:
            value = self._file.get(tree)
        if value is None:
            return None
        try:
            return value.rstrip(b"\0").decode("ascii")
        except UnicodeDecodeError:
            return None

    def put(self, key: str, value: str) -> None:
        tree = _tree_id(key)
        try:
            word = value.encode("ascii")
        except UnicodeEncodeError:
            return  # not a word: not remembered
        if tree is None or len(word) > _WORD or self.get(key) == value:
            return
        self._new[tree] = word.ljust(_WORD, b"\0")

    def save(self) -> None:
        if not self._new or self._identity is None or not cache_dir_ready(self._path):
            return
        with contextlib.suppress(OSError):
            if len(self._file) + len(self._new) > MAX_ENTRIES:  # start over
                self._file = SortedFile(self._path, SHORT_MEMO_MAGIC, None, _WORD)
            self._file.write(self._path, self._identity, self._new)
            (self._path.parent / f"{self._path.stem}.json").unlink(missing_ok=True)
        self._new = {}


class LastValueMemo(_BinaryMemo):
    """One tree id (hex) -> bytes, in ``<name>.bin``; read only when first asked."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._new: tuple[bytes, bytes] | None = None

    def get(self, key: str) -> bytes | None:
        tree = _tree_id(key)
        if tree is None:
            return None
        if self._new is not None and self._new[0] == tree:
            return self._new[1]
        held = self._held  # the file is read only when the new value is not the one
        return held[1] if held is not None and held[0] == tree else None

    @cached_property
    def _held(self) -> tuple[bytes, bytes] | None:
        return read_blob(self._path, self._identity)

    def put(self, key: str, value: bytes) -> None:
        tree = _tree_id(key)
        if tree is not None and self.get(key) != value:
            self._new = (tree, value)

    def save(self) -> None:
        if self._new is None or self._identity is None or not cache_dir_ready(self._path):
            return
        with contextlib.suppress(OSError):
            write_blob(self._path, self._identity, *self._new)
        self._held, self._new = self._new, None
