"""The library as committed at one commit: a ``Snapshot``.

Every command reads policy, visibility, sources, tools and pins from here: the committed
``library.yaml`` is the one truth (spec §2.11), an uncommitted edit takes effect once it is
committed. Parsed files are kept on the snapshot, so a command parses each at most once;
the YAML document of a committed ``library.yaml`` or ``tools.yaml`` is remembered by its
blob id (``committed_yaml``), so a later command validates it again (the same rules, the
same errors) without parsing it, or importing PyYAML.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar

from librarian.cache import TreeMemo
from librarian.core.digest import MODE_TREE
from librarian.core.model import DRAFTS_DIR, KIND_DIRS, ItemFile, Policy
from librarian.errors import UsageError
from librarian.formats.config import (
    LIBRARY_FILE,
    LOCK_FILE,
    TOOLS_FILE,
    LibraryConfig,
    LockedSource,
    ToolEntry,
    library_config_of,
    load_lock,
    tools_of,
)
from librarian.formats.yamlio import load_yaml
from librarian.git import GitStore, ObjectId, TreeEntry
from librarian.library.items import Item, committed_items
from librarian.library.layout import Library
from librarian.library.resolve import find_item

if TYPE_CHECKING:
    from librarian.core.manifests import ItemContent

_Value = TypeVar("_Value")
#: The memo of parsed configuration documents, by blob id: a few versions of two files.
DOCUMENTS_MEMO = "yaml-documents-strict"  # not the memo of a loader keeping duplicate keys
_DOCUMENTS_LIMIT = 16


def committed_yaml(store: GitStore, blob: ObjectId, where: str,
                   build: Callable[[object, str], _Value]) -> _Value:
    """``build(document, where)`` of the committed YAML file ``blob``: the document is
    parsed (``load_yaml``) the first time, and remembered once ``build`` has accepted it;
    a remembered document is validated by ``build`` again. A document JSON cannot hold
    exactly (a date, a NaN, a number as a key) is parsed every time."""
    memo = TreeMemo.of(store, DOCUMENTS_MEMO, limit=_DOCUMENTS_LIMIT)
    key = blob.decode()
    remembered = memo.get(key)
    if isinstance(remembered, dict) and "document" in remembered:
        try:
            return build(remembered["document"], where)
        except UsageError:
            pass  # a damaged memo is only slower: the blob decides
    document = load_yaml(store.read_blob(blob), where)
    value = build(document, where)
    try:
        exact = json.loads(json.dumps(document)) == document
    except (TypeError, ValueError, RecursionError):
        exact = False
    if exact:
        memo.put(key, {"document": document})
    return value


@dataclass(frozen=True, eq=False)  # not slotted: a cached_property needs __dict__
class Snapshot:
    """One commit of one library (``commit`` None: the unborn branch, an empty tree)."""

    library: Library
    store: GitStore
    commit: ObjectId | None
    tree: ObjectId | None

    @classmethod
    def at(cls, library: Library, store: GitStore, commit: ObjectId | None) -> Snapshot:
        return cls(library, store, commit, store.tree_of(commit))

    @classmethod
    def head(cls, library: Library, store: GitStore) -> Snapshot:
        return cls.at(library, store, store.head())

    # -- paths ---------------------------------------------------------------------------

    def lookup(self, path: str) -> TreeEntry | None:
        return self.store.lookup(self.tree, path)

    def read(self, path: str) -> bytes | None:
        """A committed file's bytes, or None when the path holds no file."""
        entry = self.lookup(path)
        return None if entry is None or entry.mode == MODE_TREE else self.store.read_blob(
            entry.sha)

    # -- the committed configuration ----------------------------------------------------

    def _file(self, path: str) -> ObjectId | None:
        """The blob id of the committed file at ``path``, or None."""
        entry = self.lookup(path)
        return None if entry is None or entry.mode == MODE_TREE else entry.sha

    @cached_property
    def library_yaml(self) -> bytes:
        data = self.read(LIBRARY_FILE)
        if data is None:
            raise UsageError(f"{LIBRARY_FILE} is not committed", hint="restore it with git")
        return data

    @cached_property
    def config(self) -> LibraryConfig:
        blob = self._file(LIBRARY_FILE)
        if blob is None:
            raise UsageError(f"{LIBRARY_FILE} is not committed", hint="restore it with git")
        return committed_yaml(self.store, blob, LIBRARY_FILE, library_config_of)

    @property
    def policy(self) -> Policy:
        return self.config.policy

    @cached_property
    def tools(self) -> dict[str, ToolEntry]:
        blob = self._file(TOOLS_FILE)
        return committed_yaml(self.store, blob, TOOLS_FILE, tools_of) if blob else {}

    @cached_property
    def lock(self) -> dict[str, LockedSource]:
        data = self.read(LOCK_FILE)
        return load_lock(data) if data is not None else {}

    # -- items ---------------------------------------------------------------------------

    def items(self) -> Iterator[Item]:
        return committed_items(self.store, self.tree)

    def find(self, name: str) -> Item:
        """The item a user names: ``pdf``, ``team:pdf`` or a library path (exit 2 if none)."""
        return find_item(self.store, self.tree, name)

    def taken_by(self, name: str) -> str | None:
        """The library path already using ``name`` (one name space for skills, recipes and
        drafts), or None."""
        for directory in (*KIND_DIRS.values(), DRAFTS_DIR):
            if self.lookup(f"{directory}/{name}") is not None:
                return f"{directory}/{name}"
        return None

    def files(self, item: Item) -> tuple[ItemFile, ...]:
        return self.store.read_files(item.tree)

    def content(self, item: Item, *, where: str | None = None) -> ItemContent:
        """The item's committed files judged by the same rules as any admission, under
        this commit's policy (``item`` may be another revision, e.g. one being restored)."""
        # Imported here: reading the committed view (status, prompt) must not pay for the
        # validation stack (the format parsers and the secret scan) it does not use.
        from librarian.content.validate import validate_item

        files = self.store.read_files(item.tree)
        return validate_item(files, self.policy, expected_name=item.bare_name,
                             where=where or item.path)


def head_policy(library: Library) -> Policy:
    """The committed policy at HEAD, read without the mutation lock (to judge content
    before taking it; a transaction re-checks its base)."""
    with library.store() as store:
        return Snapshot.head(library, store).policy
