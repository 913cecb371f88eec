"""``log``: retention events with their trailers, newest first.

``log NAME`` follows exactly one thing. An item is followed by its library path in the
``Librarian-Item`` trailers, and across a promotion by ``Librarian-Previous-Item`` (the
draft's path, for the events older than the promotion); ``pdf`` is the local item,
``team:pdf`` the managed one, never another source's ``pdf``. A name that is no item (now or
in the history) is a tool (``Librarian-Tool``) or a source (``Librarian-Source``); none of
those is exit 2, as for ``cat``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from librarian.core.events import parse_message
from librarian.errors import UsageError
from librarian.git import GitStore, ObjectId, walk_history
from librarian.library import Library, committed_items

ITEM_KEYS = ("Librarian-Item", "Librarian-Previous-Item")


@dataclass(frozen=True, slots=True)
class LogEntry:
    commit: str
    time: int
    author: str
    subject: str
    event: str
    trailers: tuple[tuple[str, str], ...]

    def trailer(self, key: str) -> str | None:
        return next((v for k, v in self.trailers if k == key), None)

    def values(self, *keys: str) -> list[str]:
        return [v for k, v in self.trailers if k in keys]

    def trailer_of(self, path: str, key: str) -> str | None:
        """``key``'s value for the item at ``path``: an event about several items (``retain
        A B``) repeats ``Librarian-Item`` and its ``-Kind`` and ``-Digest`` in step."""
        items, values = self.values("Librarian-Item"), self.values(key)
        if path in items and len(values) == len(items) > 1:
            return values[items.index(path)]
        return self.trailer(key)


def item_name_of(path: str) -> str:
    """The name a user types for a library path: ``skills/pdf`` -> ``pdf``,
    ``sources/team/skills/pdf`` -> ``team:pdf``."""
    parts = path.split("/")
    if parts[0] == "sources" and len(parts) > 2:
        return f"{parts[1]}:{parts[-1]}"
    return parts[-1]


@dataclass
class _Follow:
    """What one ``log NAME`` follows: item paths (growing across promotions), else a tool
    or a source."""

    paths: set[str]
    tool: str | None = None
    source: str | None = None

    def concerns(self, entry: LogEntry) -> bool:
        if self.paths:
            if not any(v in self.paths for v in entry.values("Librarian-Item")):
                return False
            # Older than a promotion, the item lived at its draft path.
            self.paths.update(entry.values("Librarian-Previous-Item"))
            return True
        if self.tool is not None:
            return self.tool in entry.values("Librarian-Tool")
        return self.source in entry.values("Librarian-Source")


def _entries(store: GitStore, head: ObjectId | None) -> Iterator[LogEntry]:
    """The events of the library's history; of a library in a folder of a project, the
    commits that changed that folder, or nothing at all (a decision such as ``defer``),
    not another library's of the same project, which changed its own folder only."""
    for info in walk_history(store, head):
        event = parse_message(info.message)
        if event is None or event.kind is None:
            continue
        if store.prefix and info.parents and store.tree_of(info.id) == store.tree_of(
                info.parents[0]) and info.tree != store.commit(info.parents[0]).tree:
            continue
        yield LogEntry(info.id.decode(), info.time, info.author, event.subject, event.kind,
                       event.trailers)


def _follow(store: GitStore, head: ObjectId | None, name: str) -> _Follow:
    wanted = name.rstrip("/")
    for item in committed_items(store, store.tree_of(head)):
        if wanted in (item.name, item.path):
            return _Follow({item.path})
    entries = list(_entries(store, head))  # only for a name no item has now
    for entry in entries:  # an item no longer in the library: its newest path
        for path in entry.values(*ITEM_KEYS):
            if wanted in (path, item_name_of(path)):
                return _Follow({path})
    for entry in entries:
        if wanted in entry.values("Librarian-Tool"):
            return _Follow(set(), tool=wanted)
        if wanted in entry.values("Librarian-Source"):
            return _Follow(set(), source=wanted)
    raise UsageError(
        f"no item, tool or source named {name!r} in this library's history",
        hint="`librarian inspect` lists every item; managed items are SOURCE:NAME",
    )


def read_log(
    library: Library, name: str | None = None, limit: int | None = None
) -> list[LogEntry]:
    if limit is not None and limit < 0:
        raise UsageError(f"-n {limit}: the number of events cannot be negative",
                         hint="leave out -n for every event")
    entries: list[LogEntry] = []
    if limit == 0:
        return entries  # as `git log -n 0`: nothing, and no error
    with library.store() as store:
        head = store.head()
        follow = _follow(store, head, name) if name is not None else None
        for entry in _entries(store, head):
            if follow is not None and not follow.concerns(entry):
                continue
            entries.append(entry)
            if limit is not None and len(entries) >= limit:
                break
    return entries
