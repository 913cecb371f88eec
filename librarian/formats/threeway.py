"""Three-way merges of the files a library generates, by what they mean, not by their lines.

``library.yaml``'s ``hidden`` and ``resident`` lists merge as sets (an entry either side
added is kept, one either side removed goes), its sources by name, its other fields as
values; ``tools.yaml`` by tool name; ``librarian.lock`` by source; the Claude Code
manifests as the set of listed skill folders, written again in the order librarian writes
them. A key both sides changed to different values is a conflict (``ThreeWayConflict``),
named. Used by ``sync`` (a commit replayed onto another tip) and by the merge driver
plain git calls. When only one side changed a file its bytes are kept as they are.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TypeVar

from librarian.core.model import SOURCES_DIR
from librarian.errors import LibrarianError
from librarian.formats.claude_plugin import (
    MARKETPLACE_FILE,
    PLUGIN_FILE,
    VisibleSkill,
    listed_skills,
    marketplace_json,
    plugin_json,
    plugin_skills,
)
from librarian.formats.config import (
    LIBRARY_FILE,
    LOCK_FILE,
    TOOLS_FILE,
    dump_library_config,
    dump_lock,
    dump_tools,
    load_library_config,
    load_lock,
    load_tools,
)

_V = TypeVar("_V")
#: The files merged here, by library path.
MERGED_FILES = (LIBRARY_FILE, TOOLS_FILE, LOCK_FILE, PLUGIN_FILE, MARKETPLACE_FILE)


class ThreeWayConflict(Exception):
    """Both sides changed the same entries differently: ``what`` names each."""

    def __init__(self, path: str, what: list[str]) -> None:
        super().__init__(f"{path}: " + "; ".join(what))
        self.path = path
        self.what = what


def merge_keyed(base: Mapping[str, _V], ours: Mapping[str, _V], theirs: Mapping[str, _V],
                what: str, conflicts: list[str]) -> dict[str, _V]:
    """Entries by key: a side's change wins over the base; both changing a key to
    different values is a conflict (appended to ``conflicts``)."""
    merged: dict[str, _V] = {}
    for key in sorted(base.keys() | ours.keys() | theirs.keys()):
        b, o, t = base.get(key), ours.get(key), theirs.get(key)
        if o == t or t == b:
            chosen = o
        elif o == b:
            chosen = t
        else:
            conflicts.append(f"{what} {key!r} changed differently on both sides")
            chosen = o
        if chosen is not None:
            merged[key] = chosen
    return merged


def merge_set(base: tuple[str, ...], ours: tuple[str, ...],
              theirs: tuple[str, ...]) -> tuple[str, ...]:
    """What either side added, less what either side removed, sorted."""
    removed = (set(base) - set(ours)) | (set(base) - set(theirs))
    return tuple(sorted((set(ours) | set(theirs)) - removed))


def _value(base: _V, ours: _V, theirs: _V, what: str, conflicts: list[str]) -> _V:
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    conflicts.append(f"{what} changed differently on both sides")
    return ours


def _library(base: bytes, ours: bytes, theirs: bytes, conflicts: list[str]) -> bytes:
    b, o, t = (load_library_config(data) for data in (base, ours, theirs))
    merged = replace(
        o,
        name=_value(b.name, o.name, t.name, "name", conflicts),
        policy=_value(b.policy, o.policy, t.policy, "policy", conflicts),
        agents_may=_value(b.agents_may, o.agents_may, t.agents_may, "agents", conflicts),
        hidden=merge_set(b.hidden, o.hidden, t.hidden),
        resident=merge_set(b.resident, o.resident, t.resident),
        sources=merge_keyed(b.sources, o.sources, t.sources, "source", conflicts))
    return dump_library_config(merged)


def _tools(base: bytes, ours: bytes, theirs: bytes, conflicts: list[str]) -> bytes:
    b, o, t = (load_tools(data) for data in (base, ours, theirs))
    return dump_tools(merge_keyed(b, o, t, "tool", conflicts))


def _lock(base: bytes, ours: bytes, theirs: bytes, conflicts: list[str]) -> bytes:
    b, o, t = (load_lock(data) for data in (base, ours, theirs))
    return dump_lock(merge_keyed(b, o, t, "the pin of source", conflicts))


def skill_order(path: str) -> tuple[int, tuple[str, ...]]:
    """Where a visible skill stands in the manifests: retained ones first, then managed,
    each in git's tree order (the order of the committed items)."""
    return (path.startswith(SOURCES_DIR + "/"), tuple(part + "/" for part in path.split("/")))


def _manifest(path: str) -> Callable[[bytes, bytes, bytes, list[str]], bytes]:
    read = listed_skills if path == MARKETPLACE_FILE else plugin_skills
    write = marketplace_json if path == MARKETPLACE_FILE else plugin_json

    def merge(base: bytes, ours: bytes, theirs: bytes, conflicts: list[str]) -> bytes:
        listed = [read(data) for data in (base, ours, theirs)]
        try:
            name = json.loads(ours)["name"]
        except (ValueError, KeyError, TypeError):
            name = None
        b, o, t = listed
        if b is None or o is None or t is None or not isinstance(name, str):
            conflicts.append("not the manifest librarian writes on one side")
            return ours
        paths = sorted(merge_set(b, o, t), key=skill_order)
        skills = [VisibleSkill(p, p.startswith(SOURCES_DIR + "/")) for p in paths]
        return write(name, skills)
    return merge


_MERGERS: dict[str, Callable[[bytes, bytes, bytes, list[str]], bytes]] = {
    LIBRARY_FILE: _library, TOOLS_FILE: _tools, LOCK_FILE: _lock,
    PLUGIN_FILE: _manifest(PLUGIN_FILE), MARKETPLACE_FILE: _manifest(MARKETPLACE_FILE)}


def merge_generated(path: str, base: bytes | None, ours: bytes | None,
                    theirs: bytes | None) -> bytes | None:
    """The merge of one generated file (None: absent on that side, or the result)."""
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    if base is None:  # added on both sides: merged against an empty one
        base = _EMPTY.get(path)
    if ours is None or theirs is None or base is None:
        raise ThreeWayConflict(path, ["removed or added on one side, changed on the other"])
    merger = _MERGERS.get(path)
    if merger is None:
        raise ThreeWayConflict(path, ["not a file librarian merges"])
    conflicts: list[str] = []
    try:
        merged = merger(base, ours, theirs, conflicts)
    except LibrarianError as exc:
        raise ThreeWayConflict(path, [exc.message]) from None
    if conflicts:
        raise ThreeWayConflict(path, conflicts)
    return merged


_EMPTY = {TOOLS_FILE: dump_tools({}), LOCK_FILE: dump_lock({}),
          PLUGIN_FILE: plugin_json("empty", []), MARKETPLACE_FILE: marketplace_json("empty", [])}
