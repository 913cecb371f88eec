"""``prompt``: the registry an agent reads at every session start (spec §4).

The registry is built from the committed tree (HEAD): retained and managed skills that are
not hidden (name, description, location of SKILL.md), the bodies of resident skills,
recipes by name with environment and execution mode, and the tools ``tools.yaml`` exposes
with their contract. Drafts are never listed. Visibility comes from the committed
``library.yaml``, so the whole registry is a function of the HEAD tree id and the
library's location.

Two caches under ``.git/librarian/cache/`` keep it fast:

- ``prompt.json``: the last registry, keyed by HEAD tree id and library root. A hit reads
  one file and no git object beyond the HEAD commit.
- ``prompt-items.json``: item tree id (and directory name) -> parsed summary (name,
  description, recipe contract). Tree ids are immutable, so after a retention only the
  new item is parsed.

Rendering (formats, ``--budget``) lives in ``promptrender.py``.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from librarian.core.fsutil import atomic_write
from librarian.gate.tools import ToolContract, ToolInput
from librarian.store.gitstore import GitStore
from librarian.store.library import Item, Library

CACHE_VERSION = 2  # 2: tool contracts carry their pinned digest
REGISTRY_CACHE = "prompt.json"
ITEMS_CACHE = "prompt-items.json"


@dataclass(frozen=True)
class SkillEntry:
    name: str
    description: str
    location: str  # absolute path of SKILL.md
    state: str  # retained | managed
    resident: bool = False


@dataclass(frozen=True)
class ResidentSkill:
    name: str
    location: str
    body: str


@dataclass(frozen=True)
class RecipeEntry:
    name: str
    environment: str
    execution: str
    state: str


@dataclass(frozen=True)
class Registry:
    tree: str | None
    skills: tuple[SkillEntry, ...]
    resident: tuple[ResidentSkill, ...]
    recipes: tuple[RecipeEntry, ...]
    tools: tuple[ToolContract, ...]
    hidden: tuple[str, ...]
    problems: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        from librarian.cli.render import to_jsonable

        document: dict[str, Any] = to_jsonable(self)
        return document

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Registry:
        tools = []
        for tool in doc["tools"]:
            inputs = tuple(ToolInput(**i) for i in tool.pop("inputs"))
            tools.append(ToolContract(**tool, inputs=inputs))
        return cls(
            tree=doc["tree"],
            skills=tuple(SkillEntry(**s) for s in doc["skills"]),
            resident=tuple(ResidentSkill(**r) for r in doc["resident"]),
            recipes=tuple(RecipeEntry(**r) for r in doc["recipes"]),
            tools=tuple(tools),
            hidden=tuple(doc["hidden"]),
            problems=tuple(doc["problems"]),
        )


def load_registry(library: Library, *, use_cache: bool = True) -> Registry:
    """The registry of the committed library (from the cache when HEAD's tree is known)."""
    with library.store() as store:
        head = store.head()
        tree = store.tree_of(head)
        key = f"{tree.decode() if tree else '-'} {library.root}"
        cache_path = library.cache_dir / REGISTRY_CACHE
        if use_cache:
            cached = _read_json(cache_path)
            if cached.get("key") == key and isinstance(cached.get("registry"), dict):
                with contextlib.suppress(KeyError, TypeError):
                    return Registry.from_json(cached["registry"])
        from librarian.prompt.build import build_registry

        registry = build_registry(library, store, tree)
    _write_json(library, cache_path, {"key": key, "registry": registry.to_json()})
    return registry


def _read_json(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(document, dict) or document.get("version") != CACHE_VERSION:
        return {}
    return document


def _write_json(library: Library, path: Path, document: dict[str, Any]) -> None:
    if not library.git_dir.is_dir():
        return
    with contextlib.suppress(OSError):  # a cache that cannot be written is only slower
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"version": CACHE_VERSION, **document}).encode())


class ItemSummaries:
    """(item tree id, directory name) -> parsed summary, kept in ``prompt-items.json``."""

    def __init__(self, library: Library) -> None:
        self._library = library
        self._path = library.cache_dir / ITEMS_CACHE
        entries = _read_json(self._path).get("items")
        self._entries: dict[str, Any] = entries if isinstance(entries, dict) else {}
        self._used: dict[str, Any] = {}
        self._dirty = False

    def summary(self, store: GitStore, item: Item) -> dict[str, Any]:
        # The directory name is part of the key: the manifest's name must equal it.
        key = f"{item.tree.decode()} {item.path.rsplit('/', 1)[-1]}"
        cached = self._entries.get(key)
        if not isinstance(cached, dict):
            from librarian.prompt.build import summarize

            cached = summarize(store, item)
            self._dirty = True
        self._used[key] = cached
        return cached

    def save(self) -> None:
        # Entries of items no longer in the tree are dropped, so the file never outgrows
        # the library.
        if self._dirty or set(self._used) != set(self._entries):
            _write_json(self._library, self._path, {"items": self._used})
