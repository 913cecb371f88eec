"""Codex reads a library made with ``librarian init ~/.agents`` (or ``<repo>/.agents``) as
its skills root: it lists ``skills/*/SKILL.md`` by itself. What Codex cannot know is what
the library hides; ``export codex-config`` writes the ``~/.codex/config.toml`` entries that
disable exactly the hidden retained skills (``[[skills.config]]`` with ``path`` and
``enabled = false``, verified with Codex 0.171's ``codex debug prompt-input``).
Managed skills (under ``sources/``) and drafts are outside ``skills/``: Codex never sees them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from librarian.agents.claude_manifests import committed_config
from librarian.core.model import KIND_DIRS, MANIFEST_FILES
from librarian.layers.stack import Stack
from librarian.layers.union import holdings
from librarian.library import Library, committed_items
from librarian.prompt.profiles import committed_profile, shown


@dataclass(frozen=True, slots=True)
class CodexConfig:
    library: str
    hidden: tuple[str, ...]  # absolute paths of the hidden skills' SKILL.md
    toml: str


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a TOML basic string has JSON's escapes


def _hidden_paths(library: Library, profile: str | None = None) -> list[str]:
    """The SKILL.md of each retained skill ``library`` hides (and, for an agent ``profile``,
    each one the profile does not show)."""
    narrowing = committed_profile(library, profile) if profile is not None else None
    with library.store() as store:
        tree = store.tree_of(store.head())
        config = committed_config(store, tree)
        hidden = set(config.hidden) if config else set()
        return [str(library.path_of(item.path) / MANIFEST_FILES["skill"])
                for item in committed_items(store, tree)
                if item.kind == "skill" and item.state == "retained"
                and (item.name in hidden or (narrowing is not None
                                             and not shown(narrowing, item.name)))]


def codex_config(stack: Stack, profile: str | None = None) -> CodexConfig:
    """The entries that disable, in Codex, every skill a layer hides (and, for an agent
    ``profile`` of the nearest layer, every retained skill it does not show) and, over
    layers, every retained skill of a farther layer whose name a nearer layer holds (Codex
    reads ``<repo>/.agents/skills`` and ``~/.agents/skills`` both, and would list the
    two)."""
    library = stack.nearest
    paths = [path for layer in stack.layers for path in _hidden_paths(
        layer.library, profile if layer.library == library else None)]
    paths += [str(Path(held.layer, held.path, MANIFEST_FILES["skill"]))
              for held in holdings(stack) if stack.layered and not held.wins
              and held.kind == "skill" and held.state == "retained"]
    lines = [f"# Codex: hide the skills the librarian library at {library.root} hides.",
             "# Add to ~/.codex/config.toml (`librarian export codex-config` again after "
             "hide/show).", f"# Codex reads {library.root / KIND_DIRS['skill']} when the "
             "library is ~/.agents or <repo>/.agents."]
    if stack.layered:
        lines.append("# Over its layers: " + ", ".join(
            str(layer.library.root) for layer in stack.layers[1:])
            + "; a name a nearer layer holds is disabled in the farther ones.")
    for path in paths:
        lines += ["", "[[skills.config]]", f"path = {_toml_string(path)}", "enabled = false"]
    return CodexConfig(str(library.root), tuple(paths), "\n".join(lines) + "\n")
