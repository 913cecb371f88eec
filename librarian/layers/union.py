"""What the reading commands see over a stack of layers: one name space, the nearer layer
winning a name.

Skills, recipes (and drafts) share one name space in a library, so they share it across
layers too: a project's skill ``pdf`` shadows a user's skill or recipe ``pdf``, hidden or
not (a name a project hides stays hidden, rather than showing the user's). Exposed tools
are a second name space. Managed items are named ``SOURCE:NAME`` and shadow only the same.
Drafts are never listed to an agent: they neither win nor lose a name (``cat`` and
``inspect`` still find the nearest layer's).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from librarian.errors import UsageError
from librarian.layers.stack import Layer, Stack
from librarian.library import Snapshot
from librarian.prompt.entries import Registry
from librarian.prompt.registry import load_registry


@dataclass(frozen=True, slots=True)
class Holding:
    """One layer's item or tool of a name."""

    name: str
    kind: str  # skill | recipe | tool
    state: str  # retained | managed | draft | tool
    layer: str  # the layer's root
    origin: str  # project | nearest | --layer | config | user
    path: str  # the library path (the recipe's, for a tool)
    wins: bool  # the nearest layer holding the name: what the reading commands use


def union_registry(stack: Stack) -> Registry:
    """The agent registry of every layer, nearest first: a name already listed (or hidden)
    by a nearer layer is left out of a farther one. One layer: its registry as it is."""
    registries = [load_registry(layer.library) for layer in stack.layers]
    if not stack.layered:
        return registries[0]
    taken: set[str] = set()
    tools_taken: set[str] = set()
    skills, resident, recipes, tools, hidden, problems = [], [], [], [], [], []
    for layer, registry in zip(stack.layers, registries, strict=True):
        mine = {s.name for s in registry.skills} | {r.name for r in registry.recipes} \
            | set(registry.hidden)
        skills += [s for s in registry.skills if s.name not in taken]
        resident += [r for r in registry.resident if r.name not in taken]
        recipes += [r for r in registry.recipes if r.name not in taken]
        hidden += [name for name in registry.hidden if name not in taken]
        tools += [t for t in registry.tools if t.name not in tools_taken]
        problems += [f"{layer.library.root}: {problem}" for problem in registry.problems]
        taken |= mine
        tools_taken |= {t.name for t in registry.tools}
    return Registry(
        tree=registries[0].tree, skills=tuple(skills), resident=tuple(resident),
        recipes=tuple(recipes), tools=tuple(tools), hidden=tuple(hidden),
        problems=tuple(problems),
        layers=tuple(str(layer.library.root) for layer in stack.layers))


def _holdings_of(layer: Layer) -> Iterator[Holding]:
    library = layer.library
    with library.store() as store:
        snapshot = Snapshot.head(library, store)
        if snapshot.tree is None:
            return
        for item in snapshot.items():
            yield Holding(item.name, item.kind, item.state, str(library.root), layer.origin,
                          item.path, False)
        for name, tool in sorted(snapshot.tools.items()):
            yield Holding(name, "tool", "tool", str(library.root), layer.origin, tool.recipe,
                          False)


def holdings(stack: Stack, name: str | None = None) -> list[Holding]:
    """Every layer's items and tools (of ``name``: matched as ``cat`` and ``run`` match it,
    by name or library path), nearest layer first, each marked whether it wins."""
    found: list[Holding] = []
    seen: set[tuple[str, str]] = set()
    for layer in stack.layers:
        for held in _holdings_of(layer):
            if name is not None and name.rstrip("/") != held.name and (
                    held.kind == "tool" or name.rstrip("/") != held.path):
                continue
            key = ("tool" if held.kind == "tool" else "item", held.name)
            # a draft is never listed to an agent: it neither wins a name nor loses one
            wins = held.state != "draft" and key not in seen
            if held.state != "draft":
                seen.add(key)
            found.append(Holding(held.name, held.kind, held.state, held.layer, held.origin,
                                 held.path, wins))
    return found


def shadowed(stack: Stack) -> list[str]:
    """One line per name a nearer layer shadows in a farther one (``check``)."""
    if not stack.layered:
        return []
    everything = holdings(stack)
    winners = {("tool" if h.kind == "tool" else "item", h.name): h for h in everything
               if h.wins}
    lines = []
    for held in everything:
        if held.wins or held.state == "draft":
            continue
        winner = winners[("tool" if held.kind == "tool" else "item", held.name)]
        lines.append(f"{held.name}: {winner.layer}/{winner.path} ({winner.origin}) shadows "
                     f"{held.layer}/{held.path} ({held.origin})")
    return lines


def holder(stack: Stack, name: str, *, tools: bool = False) -> Layer:
    """The nearest layer holding an item (or, with ``tools``, a tool) of ``name``; the
    nearest layer when none does (its own command then says the name is unknown)."""
    if not stack.layered:
        return stack.layers[0]
    for layer in stack.layers:
        library = layer.library
        with library.store() as store:
            snapshot = Snapshot.head(library, store)
            if snapshot.tree is None:
                continue
            if tools and name in snapshot.tools:
                return layer
            try:
                snapshot.find(name)
            except UsageError:
                continue
            return layer
    return stack.layers[0]
