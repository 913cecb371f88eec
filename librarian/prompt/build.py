"""Building the agent registry from a committed tree (a cache miss of ``prompt``).

Only manifests are read: SKILL.md of each listed skill (once per item tree id, see
``prompt.cache.ItemSummaries``), recipe.yaml of recipes, and the bodies of resident skills.
"""

from __future__ import annotations

from librarian.core.model import MANIFEST_FILES
from librarian.formats.config import LIBRARY_FILE
from librarian.formats.skillmd import parse_skill_md
from librarian.gate.tools import tool_contracts
from librarian.git import GitStore
from librarian.library import Item, Snapshot
from librarian.prompt.cache import ItemSummaries
from librarian.prompt.entries import (
    RecipeEntry,
    Registry,
    ResidentSkill,
    SkillEntry,
)


def build_registry(snapshot: Snapshot) -> Registry:
    library, store, tree = snapshot.library, snapshot.store, snapshot.tree
    config = snapshot.config if snapshot.lookup(LIBRARY_FILE) is not None else None
    hidden = set(config.hidden) if config else set()
    residents = set(config.resident) if config else set()
    summaries = ItemSummaries(library)
    skills: list[SkillEntry] = []
    resident: list[ResidentSkill] = []
    recipes: list[RecipeEntry] = []
    hidden_found: list[str] = []
    problems: list[str] = []
    for item in snapshot.items():
        if item.state == "draft":
            continue  # never listed to the agent
        summary = summaries.summary(store, item)
        if summary["kind"] == "invalid":
            problems.append(f"{item.path}: not listed: {summary['problem']}")
            continue
        if item.kind == "recipe":
            recipes.append(RecipeEntry(item.name, summary["environment"], summary["execution"],
                                       item.state))
            continue
        if item.name in hidden:
            hidden_found.append(item.name)
            continue
        location = str(library.path_of(item.path) / MANIFEST_FILES["skill"])
        is_resident = item.name in residents
        skills.append(SkillEntry(item.name, summary["description"], location, item.state,
                                 is_resident))
        if is_resident:
            resident.append(ResidentSkill(item.name, location, _body(store, item)))
    for name in sorted(residents - {s.name for s in skills} - hidden):
        problems.append(f"library.yaml: resident skill {name!r} is not in the library")
    tools = tool_contracts(snapshot, lambda item: summaries.summary(store, item))
    summaries.save()
    return Registry(
        tree=tree.decode() if tree else None,
        skills=tuple(skills),
        resident=tuple(resident),
        recipes=tuple(recipes),
        tools=tools,
        hidden=tuple(hidden_found),
        problems=tuple(problems),
    )


def _body(store: GitStore, item: Item) -> str:
    entry = store.lookup(item.tree, MANIFEST_FILES["skill"])
    if entry is None:
        return ""
    return parse_skill_md(store.read_blob(entry.sha), item.path).body
