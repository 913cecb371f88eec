"""``log``: retention events with their trailers, newest first."""

from __future__ import annotations

from dataclasses import dataclass

from .events import parse_message
from .library import Library


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
    """Whether an event is about the item (or tool, or source) called ``name``: its library
    path ends in ``/name`` whichever directory it was in (a draft, then retained)."""
    for key, value in entry.trailers:
        if key in ("Librarian-Item", "Librarian-Previous-Item") and (
            value == name or value.endswith("/" + name)
        ):
            return True
        if key in ("Librarian-Tool", "Librarian-Source") and value == name:
            return True
    return False


def read_log(library: Library, name: str | None = None, limit: int | None = None) -> list[LogEntry]:
    entries: list[LogEntry] = []
    managed_name = name.split(":", 1) if name and ":" in name else None
    with library.store() as store:
        for info in store.walk_log(store.head()):
            event = parse_message(info.message)
            if event is None or event.kind is None:
                continue
            entry = LogEntry(info.id.decode(), info.time, info.author, event.subject, event.kind,
                             event.trailers)
            if name is not None:
                target = f"sources/{managed_name[0]}" if managed_name else name
                if managed_name:
                    if not any(v.startswith(target + "/") and v.endswith("/" + managed_name[1])
                               for _, v in entry.trailers):
                        continue
                elif not _concerns(entry, target):
                    continue
            entries.append(entry)
            if limit is not None and len(entries) >= limit:
                break
    return entries
