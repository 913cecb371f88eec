"""Exposed tools as committed: ``tools.yaml`` read from a tree, whether each tool is current
(``ok``) or ``stale`` and why, and the contract each tool offers.

Every reader of tools goes through here (``status``, ``run``'s gate, ``inspect tools``,
``prompt``, ``revise``/``retire``), so a tool is stale for the same reasons everywhere:

- its recipe is gone (no directory at the pinned path);
- its recipe's committed content cannot be read or parsed (invalid);
- its recipe's committed digest differs from the pin (changed since it was exposed).
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from librarian.cache import DigestCache
from librarian.core.model import SOURCES_DIR
from librarian.errors import UsageError
from librarian.formats.config import ToolEntry
from librarian.git import ObjectId
from librarian.library import Item, Snapshot

Staleness = Literal["gone", "invalid", "changed"]
GONE = "the recipe is gone"
CHANGED = "the recipe changed since it was exposed"


@dataclass(frozen=True, slots=True)
class ToolState:
    """Whether an exposed tool is current, decided by ``tool_state``."""

    stale: Staleness | None = None  # None: ok
    detail: str | None = None  # what is wrong with an invalid recipe
    recipe_tree: ObjectId | None = None  # the recipe's committed tree, when it is there

    @property
    def status(self) -> Literal["ok", "stale"]:
        return "ok" if self.stale is None else "stale"

    @property
    def reason(self) -> str | None:
        """Why the tool is stale (``None`` when it is ok)."""
        if self.stale == "gone":
            return GONE
        if self.stale == "invalid":
            return f"the recipe is invalid: {self.detail}"
        if self.stale == "changed":
            return CHANGED
        return None


def tool_state(snapshot: Snapshot, tool: ToolEntry, digests: DigestCache, *,
               problem: str | None = None) -> ToolState:
    """The one decision of whether ``tool`` is current in ``snapshot``: its recipe is
    there, readable (``problem``: what a caller that parsed the manifest found wrong with
    it) and has the pinned digest."""
    store = snapshot.store
    entry = snapshot.lookup(tool.recipe)
    if entry is None or not stat.S_ISDIR(entry.mode):
        return ToolState("gone")
    try:
        current = digests.digest(store, entry.sha)
    except UsageError as exc:  # e.g. a symlink committed by plain git
        return ToolState("invalid", exc.message, entry.sha)
    if current != tool.digest:
        return ToolState("changed", recipe_tree=entry.sha)
    if problem is not None:
        return ToolState("invalid", problem, entry.sha)
    return ToolState(recipe_tree=entry.sha)


# -- contracts (inspect tools, prompt) -------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolInput:
    name: str
    type: str
    required: bool
    default: Any
    description: str | None


@dataclass(frozen=True, slots=True)
class ToolContract:
    """An exposed tool with its contract as committed (the pinned recipe's manifest when
    the recipe is still there and readable)."""

    name: str
    recipe: str
    digest: str  # the pin
    status: str  # ok | stale
    reason: str | None  # why stale
    description: str | None = None
    execution: str | None = None
    environment: str | None = None
    inputs: tuple[ToolInput, ...] = ()
    result: str | None = None
    effects: dict[str, Any] | None = None
    timeout: int | None = None


#: A recipe's manifest summary (``library.summary.summarize``'s shape), possibly cached.
Summarize = Callable[[Item], dict[str, Any]]


def recipe_item(path: str, tree: ObjectId) -> Item:
    """The committed recipe at ``path`` as an item (``SOURCE:NAME`` under sources/)."""
    parts = path.split("/")
    if parts[0] == SOURCES_DIR and len(parts) > 2:
        return Item(f"{parts[1]}:{parts[-1]}", "recipe", "managed", path, tree)
    return Item(parts[-1], "recipe", "retained", path, tree)


def tool_contracts(snapshot: Snapshot,
                   summarize: Summarize | None = None) -> tuple[ToolContract, ...]:
    """Every tool ``tools.yaml`` exposes in ``snapshot``, by name, with its state and
    contract."""
    if summarize is None:
        # Imported here: status reads tool states, never manifests.
        from librarian.library import summarize as summarize_manifest

        def summarize(item: Item) -> dict[str, Any]:
            return summarize_manifest(snapshot.store, item)

    digests = DigestCache(snapshot.library.cache_dir)
    contracts = []
    for name, tool in sorted(snapshot.tools.items()):
        state = tool_state(snapshot, tool, digests)
        summary: dict[str, Any] = {}
        if state.recipe_tree is not None:
            summary = summarize(recipe_item(tool.recipe, state.recipe_tree))
            if summary.get("kind") != "recipe":
                problem = str(summary.get("problem", "it is not a recipe"))
                state = tool_state(snapshot, tool, digests, problem=problem)
                summary = {}
        contracts.append(ToolContract(
            name=name, recipe=tool.recipe, digest=tool.digest, status=state.status,
            reason=state.reason,
            description=summary.get("description"),
            execution=summary.get("execution"),
            environment=summary.get("environment"),
            inputs=tuple(ToolInput(**i) for i in summary.get("inputs", ())),
            result=summary.get("result"),
            effects=summary.get("effects"),
            timeout=summary.get("timeout"),
        ))
    digests.save()
    return tuple(contracts)
