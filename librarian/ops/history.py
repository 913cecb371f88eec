"""``log``: retention events with their trailers, newest first."""

from __future__ import annotations

from dataclasses import dataclass

from librarian.core.events import parse_message
from librarian.store.library import Library


@dataclass(frozen=True)
class LogEntry:
    commit: str
    time: int
    author: str
    subject: str
    event: str
    trailers: tuple[tuple[str, str], ...]

    def trailer(self, key: str) -> str | None:
        return next((v for k, v in self.trailers if k == key), None)


def _concerns(entry: LogEntry, name: str) -> bool:
    """Whether an event is about the item, tool or source called ``name``. An item is
    matched by the last part of its library path whichever directory it was in (a draft,
    then retained); ``SOURCE:NAME`` matches the managed item and its source's updates."""
    source, _, item = name.rpartition(":")
    for key, value in entry.trailers:
        if key in ("Librarian-Item", "Librarian-Previous-Item"):
            if source:
                if value.startswith(f"sources/{source}/") and value.endswith("/" + item):
                    return True
            elif value == name or value.endswith("/" + name):
                return True
        elif key == "Librarian-Tool" and value == name:
            return True
        elif key == "Librarian-Source" and value in (name, source):
            return True
    return False


def read_log(
    library: Library, name: str | None = None, limit: int | None = None
) -> list[LogEntry]:
    entries: list[LogEntry] = []
    with library.store() as store:
        for info in store.walk_log(store.head()):
            event = parse_message(info.message)
            if event is None or event.kind is None:
                continue
            entry = LogEntry(info.id.decode(), info.time, info.author, event.subject, event.kind,
                             event.trailers)
            if name is not None and not _concerns(entry, name):
                continue
            entries.append(entry)
            if limit is not None and len(entries) >= limit:
                break
    return entries
