"""The local usage ledger: ``.git/librarian/usage.jsonl``, one JSON object per line.

Every run is appended once when it ends (sync, async, lost) and every refusal when it is
refused. Lines are appended with one ``write`` on an ``O_APPEND`` descriptor and fsynced,
so concurrent writers never interleave and a crash loses at most the line being written
(a torn last line is skipped when reading). The ledger is keyed by the recipe's library
path, so withdrawing, re-exposing or revising never erases usage.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from librarian.core.fsutil import fsync_now
from librarian.library import Library

LEDGER_FILE = "usage.jsonl"
SUCCESS = frozenset({"succeeded"})
REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    time: float  # when the run ended (or was refused), seconds since the epoch
    entry: str  # "tool" | "recipe": how the run was asked for
    name: str  # the tool or recipe name as given
    recipe: str  # library path of the recipe, e.g. recipes/word-count
    digest: str | None
    status: str  # succeeded | failed | timed_out | lost | refused
    duration: float | None = None
    run_id: str | None = None
    mode: str | None = None  # sync | async
    reason: str | None = None  # for refusals


@dataclass(frozen=True, slots=True)
class Usage:
    """Per item: runs that executed, how they ended, refusals, and when last used."""

    runs: int = 0
    successes: int = 0
    failures: int = 0
    refusals: int = 0
    last_used: float | None = None


def ledger_path(library: Library) -> Path:
    return library.state_dir / LEDGER_FILE


def append(library: Library, entry: LedgerEntry) -> None:
    library.state_dir.mkdir(parents=True, exist_ok=True)
    line = json.dumps(_as_dict(entry), sort_keys=True, separators=(",", ":")) + "\n"
    fd = os.open(ledger_path(library), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
        fsync_now(fd)
    finally:
        os.close(fd)


def _as_dict(entry: LedgerEntry) -> dict[str, Any]:
    values = {f.name: getattr(entry, f.name) for f in dataclasses.fields(entry)}
    return {k: v for k, v in values.items() if v is not None}


def read_ledger(library: Library) -> Iterator[LedgerEntry]:
    try:
        with ledger_path(library).open("rb") as handle:
            lines = handle.readlines()
    except FileNotFoundError:
        return
    for raw in lines:
        try:
            doc = json.loads(raw)
        except ValueError:
            continue  # a torn last line after a crash
        if not isinstance(doc, dict):
            continue
        try:
            yield LedgerEntry(
                time=float(doc["time"]),
                entry=str(doc["entry"]),
                name=str(doc["name"]),
                recipe=str(doc["recipe"]),
                digest=doc.get("digest"),
                status=str(doc["status"]),
                duration=doc.get("duration"),
                run_id=doc.get("run_id"),
                mode=doc.get("mode"),
                reason=doc.get("reason"),
            )
        except (KeyError, TypeError, ValueError):
            continue


def usage_by_recipe(library: Library) -> dict[str, Usage]:
    """Recipe library path -> usage. A run counts as a success only if it succeeded."""
    counts: dict[str, dict[str, Any]] = {}
    for entry in read_ledger(library):
        c = counts.setdefault(entry.recipe, {"runs": 0, "successes": 0, "failures": 0,
                                             "refusals": 0, "last_used": None})
        if entry.status == REFUSED:
            c["refusals"] += 1
            continue
        c["runs"] += 1
        if entry.status in SUCCESS:
            c["successes"] += 1
        else:
            c["failures"] += 1
        if c["last_used"] is None or entry.time > c["last_used"]:
            c["last_used"] = entry.time
    return {path: Usage(**c) for path, c in counts.items()}


def now() -> float:
    return round(time.time(), 3)
