"""The items a committed tree holds: ``Item``, ``committed_items`` (retained, drafts and
managed, each named as a user types it), an item's kind remembered by tree id, and the
item lists of the last ``sources/`` trees listed."""

from __future__ import annotations

import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import cache, partial

from librarian.cache import LastValueMemo, ShortMemo
from librarian.core.model import DRAFTS_DIR, KIND_DIRS, MANIFEST_FILES, SOURCES_DIR, ItemKind
from librarian.core.names import qualified_names
from librarian.git import GitStore, ObjectId, TreeEntry

ItemState = str  # "retained" | "draft" | "managed"


@dataclass(frozen=True, slots=True)  # one per item: 10,000 in a large library
class Item:
    """One item as committed: ``name`` is ``SOURCE:NAME`` for managed items."""

    name: str
    kind: ItemKind
    state: ItemState
    path: str  # library path, e.g. skills/pdf
    tree: ObjectId

    @property
    def bare_name(self) -> str:
        """The directory name: ``pdf`` for ``team:pdf``, ``access`` for
        ``team:imessage:access``."""
        return self.name.rsplit(":", 1)[-1]


def item_kind(store: GitStore, tree: ObjectId) -> ItemKind | None:
    """The kind of the item whose tree is ``tree`` (None: not an item), remembered by tree
    id: listing 10,000 items then reads no item's tree again (cache/memo.py)."""
    memo = ShortMemo.of(store, "kinds")
    key = tree.decode()
    known = memo.get(key)
    if known is not None:  # "" when not an item
        return next((k for k in MANIFEST_FILES if k == known), None)
    entries = store.tree_items(tree)
    found = [k for k, manifest in MANIFEST_FILES.items() if manifest in entries]
    kind: ItemKind | None = found[0] if len(found) == 1 else None
    memo.put(key, kind or "")
    return kind


def remember_kind(store: GitStore, tree: ObjectId, paths: Iterable[str]) -> None:
    """The kind of the item whose tree ``tree`` holds files at ``paths``, as ``item_kind``
    would read it from the tree (its top entries: files and directories alike), so that
    listings need not read it (an install's commit lists all its items right away, for the
    plugin manifests). What validation calls the item does not enter: a skill holding a
    directory named like the other manifest is a skill to validation and no item here."""
    top = {path.split("/", 1)[0] for path in paths}
    found = [k for k, manifest in MANIFEST_FILES.items() if manifest in top]
    ShortMemo.of(store, "kinds").put(tree.decode(), found[0] if len(found) == 1 else "")


def committed_items(store: GitStore, root_tree: ObjectId | None) -> Iterator[Item]:
    """Retained items, drafts and managed items of ``root_tree``, in path order.

    Directories under skills/, recipes/ and drafts/ are items by position; their kind comes
    from the manifest they hold (a draft's kind is its content's). A long list is
    remembered by its top directory's tree id (``_remembered``)."""
    if root_tree is None:
        return
    top = store.tree_items(root_tree)
    for kind, directory in KIND_DIRS.items():
        yield from _remembered(store, top.get(directory), directory,
                               partial(_items_in, store, top, directory, "retained", kind))
    yield from _remembered(store, top.get(DRAFTS_DIR), DRAFTS_DIR,
                           partial(_items_in, store, top, DRAFTS_DIR, "draft", None))
    yield from _remembered(store, top.get(SOURCES_DIR), SOURCES_DIR,
                           partial(managed_items, store, top.get(SOURCES_DIR)))


#: Lists shorter than this are listed again each time: reading a file would cost more.
REMEMBERED_ITEMS = 64
_STATES = {"retained": b"r", "draft": b"d", "managed": b"m"}
_KINDS: dict[ItemKind, bytes] = {kind: kind[0].encode("ascii") for kind in MANIFEST_FILES}
_KIND_OF: dict[int, ItemKind] = {code[0]: kind for kind, code in _KINDS.items()}
_STATE_IN: dict[str, ItemState] = {
    **{directory: "retained" for directory in KIND_DIRS.values()},
    DRAFTS_DIR: "draft", SOURCES_DIR: "managed"}


def _remembered(store: GitStore, entry: TreeEntry | None, directory: str,
                listing: Callable[[], Iterator[Item]]) -> Iterator[Item]:
    """The items under one top directory: decoded from the list remembered for its tree
    id (``cache/list-<directory>.bin``), else listed, and remembered when long. Listing
    10,000 items reads 10,000 kinds and builds 30,000 strings; decoding reads one buffer."""
    if entry is None or not stat.S_ISDIR(entry.mode):
        return
    memo = LastValueMemo.of(store, f"list-{directory}")
    key = entry.sha.decode()
    known = memo.get(key)
    if known is not None:
        decoded = _decode_items(known, directory)
        if decoded is not None:
            yield from decoded
            return
    items: list[Item] = []
    for item in listing():  # streamed: a caller that stops early reads no further tree
        items.append(item)
        yield item
    # only a whole list is remembered, and only one that decodes back the same (a name
    # holding "/" in a tree made by hand would not)
    if len(items) >= REMEMBERED_ITEMS and all(map(_named_by_path, items)):
        memo.put(key, _encode_items(items))


def _name_of(path: str, managed: bool) -> str:
    """An item's name as its path gives it: ``pdf``, or ``team:pdf`` for a managed one."""
    name = path.rsplit("/", 1)[-1]
    return f"{path.split('/', 2)[1]}:{name}" if managed else name


def _named_by_path(item: Item) -> bool:
    return item.name == _name_of(item.path, item.state == "managed")


def _encode_items(items: Iterable[Item]) -> bytes:
    return b"\0".join(_STATES[item.state] + _KINDS[item.kind] + item.tree
                      + item.path.encode("utf-8", "surrogateescape") for item in items)


#: One component of a path: not empty, "." or ".." (nor holding "/" or NUL)
_COMPONENT = rb"(?!\.\.?(?:/|\x00|\Z))[^\x00/]+"


@cache
def _list_shape(directory: str) -> re.Pattern[bytes]:
    """A whole remembered list of ``directory``: records of its items' state, a kind, 40
    hex digits and a path under it; matched in one pass, not a check per record."""
    state = re.escape(_STATES[_STATE_IN[directory]])
    kinds = b"".join(re.escape(code) for code in _KINDS.values())
    record = (state + b"[" + kinds + b"][0-9a-f]{40}" + re.escape(directory.encode())
              + b"(?:/" + _COMPONENT + b")+")
    return re.compile(record + b"(?:\x00" + record + b")*")


def _decode_items(data: bytes, directory: str) -> list[Item] | None:
    """The items of a remembered list, or None if it is not one (then listed again), so
    that a forged list can neither crash a command nor name a path elsewhere. Each
    record: state, kind, 40 hex digits of the tree id, the library path."""
    if _list_shape(directory).fullmatch(data) is None:
        return None
    items: list[Item] = []
    append = items.append
    state = _STATE_IN[directory]
    managed = state == "managed"
    for record in data.split(b"\0"):
        path = record[42:].decode("utf-8", "surrogateescape")
        append(Item(_name_of(path, managed), _KIND_OF[record[1]], state, path, record[2:42]))
    return items


def _items_in(
    store: GitStore,
    top: Mapping[str, TreeEntry],
    directory: str,
    state: str,
    kind: ItemKind | None,
) -> Iterator[Item]:
    entry = top.get(directory)
    if entry is None or not stat.S_ISDIR(entry.mode):
        return
    for name, child in store.tree_children(entry.sha):
        if not stat.S_ISDIR(child.mode):
            continue
        found = kind or item_kind(store, child.sha) or "skill"
        yield Item(name, found, state, f"{directory}/{name}", child.sha)


def managed_items(store: GitStore, sources_entry: TreeEntry | None) -> Iterator[Item]:
    """Items under ``sources/<source>/<upstream path>``: any directory holding exactly one
    manifest is an item (its upstream path may be nested, e.g. skills/pdf)."""
    if sources_entry is None or not stat.S_ISDIR(sources_entry.mode):
        return
    for source, source_entry in sorted(store.tree_items(sources_entry.sha).items()):
        if stat.S_ISDIR(source_entry.mode):
            yield from _source_items(store, source, source_entry.sha)


def _source_items(store: GitStore, source: str, tree: ObjectId) -> Iterator[Item]:
    """One source's items. Items sharing a folder name are named apart
    (``core.names.qualified_names``), which takes the whole collection; whether a
    collection's names are all unique is remembered by its tree id, so a lookup that
    stops at its item walks no further in the usual case."""
    root = f"{SOURCES_DIR}/{source}"
    memo = ShortMemo.of(store, "names")
    key = tree.decode()
    if memo.get(key) == "unique":
        yield from _managed_walk(store, source, tree, root)
        return
    items = list(_managed_walk(store, source, tree, root))
    names = qualified_names(i.path[len(root) + 1:] for i in items)
    named = [item if (name := f"{source}:{names[item.path[len(root) + 1:]]}") == item.name
             else replace(item, name=name) for item in items]
    memo.put(key, "unique" if named == items else "apart")
    yield from named


def _managed_walk(store: GitStore, source: str, tree: ObjectId, path: str) -> Iterator[Item]:
    kind = item_kind(store, tree)
    if kind is not None:
        yield Item(f"{source}:{path.rsplit('/', 1)[-1]}", kind, "managed", path, tree)
        return
    for name, child in store.tree_children(tree):
        if stat.S_ISDIR(child.mode):
            yield from _managed_walk(store, source, child.sha, f"{path}/{name}")
