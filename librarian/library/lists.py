"""``library.yaml``'s ``hidden`` and ``resident`` lists as generated: they name skills only.

A maker of generated files (``library/generated.py``): a change that takes a skill out of
the tree (``retire``, ``source remove``, an update that drops it) also takes its name off
both lists in the same commit, so a list never names a skill that is gone; ``check`` (and
so a server's ``pre-receive`` gate) says which entry names no skill, as a merge made with
plain git can leave one (one side hid a skill the other retired).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace

from librarian.core.model import KIND_DIRS, SOURCES_DIR
from librarian.errors import UsageError
from librarian.formats.config import (
    LIBRARY_FILE,
    LibraryConfig,
    dump_library_config,
    library_config_of,
    load_library_config,
)
from librarian.git import GitStore, ObjectId
from librarian.library.items import committed_items, item_kind
from librarian.library.snapshot import committed_yaml


def _config(store: GitStore, tree: ObjectId | None) -> LibraryConfig | None:
    """The committed library.yaml, its document remembered by blob id (no YAML parse, no
    PyYAML import, in the commands that change skills)."""
    entry = store.lookup(tree, LIBRARY_FILE)
    if entry is None:
        return None
    try:
        return committed_yaml(store, entry.sha, LIBRARY_FILE, library_config_of)
    except UsageError:
        return None


def skill_names(store: GitStore, tree: ObjectId | None, wanted: Collection[str]) -> set[str]:
    """Which of the names ``wanted`` are skills in ``tree`` (retained ones by lookup,
    managed ones by walking only their source's collection)."""
    found = set()
    sources = set()
    for name in wanted:
        if ":" in name:
            sources.add(name.split(":", 1)[0])
            continue
        entry = store.lookup(tree, f"{KIND_DIRS['skill']}/{name}")
        if entry is not None and item_kind(store, entry.sha) == "skill":
            found.add(name)
    if sources:
        for item in committed_items(store, tree):
            if item.state == "managed" and item.kind == "skill" and item.name in wanted:
                found.add(item.name)
    return found


def name_of(path: str) -> str:
    """The name ``hide`` writes for the item at ``path``: ``pdf`` or ``team:pdf``."""
    parts = path.split("/")
    return f"{parts[1]}:{parts[-1]}" if parts[0] == SOURCES_DIR else parts[-1]


class VisibilityLists:
    """``library.yaml``'s skill lists as generated files (``GeneratedFiles``)."""

    paths: tuple[str, ...] = (LIBRARY_FILE,)

    def watches(self, path: str) -> bool:
        return path.split("/", 1)[0] in (KIND_DIRS["skill"], SOURCES_DIR)

    def keeps(self, store: GitStore, old: ObjectId, new: ObjectId) -> bool:
        kind = item_kind(store, old)
        return kind is not None and kind == item_kind(store, new)

    def expected(self, store: GitStore, tree: ObjectId | None) -> dict[str, bytes]:
        config = _config(store, tree)
        if config is None or not (config.hidden or config.resident):
            return {}
        present = skill_names(store, tree, {*config.hidden, *config.resident})
        hidden = tuple(n for n in config.hidden if n in present)
        resident = tuple(n for n in config.resident if n in present)
        if (hidden, resident) == (config.hidden, config.resident):
            return {}
        return {LIBRARY_FILE: dump_library_config(replace(config, hidden=hidden,
                                                          resident=resident))}

    def problems(self, found: Mapping[str, bytes | None], expected: Mapping[str, bytes] | None,
                 item_paths: Collection[str]) -> list[str]:
        data = found.get(LIBRARY_FILE)
        if data is None:
            return []
        try:
            config = load_library_config(data)
        except UsageError:
            return []  # said already by check
        names = {name_of(path) for path in item_paths}
        return [f"{LIBRARY_FILE}: skills.{field} names {name}, which is not a skill in the "
                "library (retired or removed)"
                for field, values in (("hidden", config.hidden), ("resident", config.resident))
                for name in values if name not in names]
