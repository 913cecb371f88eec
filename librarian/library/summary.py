"""What an item's committed manifest says, in the shape the registry and tool contracts use.

Read from the object store only (SKILL.md or recipe.yaml of one item tree); an item whose
manifest is missing or invalid summarises as ``{"kind": "invalid", "problem": …}``.
"""

from __future__ import annotations

from typing import Any

from librarian.core.manifests import RecipeManifest
from librarian.core.model import MANIFEST_FILES
from librarian.errors import UsageError
from librarian.formats.recipe import parse_recipe
from librarian.formats.skillmd import parse_skill_md
from librarian.git import GitStore
from librarian.library.items import Item


def summarize(store: GitStore, item: Item) -> dict[str, Any]:
    """What the registry needs from an item's manifest, or ``{"kind": "invalid", …}``."""
    manifest_file = MANIFEST_FILES[item.kind]
    entry = store.lookup(item.tree, manifest_file)
    expected = item.bare_name
    try:
        if entry is None:
            raise UsageError(f"holds no {manifest_file}")
        data = store.read_blob(entry.sha)
        if item.kind == "skill":
            # The item is its directory: a differing or invalid frontmatter name is a
            # nonconformity (check says so), not a reason to hide the skill.
            skill = parse_skill_md(data, f"{item.path}/{manifest_file}")
            return {"kind": "skill", "name": expected, "description": skill.description}
        recipe = parse_recipe(data, f"{item.path}/{manifest_file}")
        if recipe.name != expected:
            raise UsageError(f"name {recipe.name!r} does not match the directory")
        return {"kind": "recipe", **_recipe_summary(recipe)}
    except UsageError as exc:
        return {"kind": "invalid", "problem": exc.message}


def _recipe_summary(recipe: RecipeManifest) -> dict[str, Any]:
    effects = None
    if recipe.effects is not None:
        effects = {k: v for k, v in (("filesystem", recipe.effects.filesystem),
                                     ("network", recipe.effects.network)) if v is not None}
    return {
        "name": recipe.name,
        "description": recipe.description,
        "execution": recipe.execution,
        "environment": recipe.environment,
        "inputs": [
            {"name": i.name, "type": i.type, "required": i.required, "default": i.default,
             "description": i.description}
            for i in recipe.inputs
        ],
        "result": recipe.result,
        "effects": effects,
        "timeout": recipe.timeout,
    }
