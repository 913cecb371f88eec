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

from librarian.agents.claude_manifests import committed_config
from librarian.core.model import KIND_DIRS, MANIFEST_FILES
from librarian.library import Library, committed_items
from librarian.prompt.profiles import committed_profile, shown


@dataclass(frozen=True, slots=True)
class CodexConfig:
    library: str
    hidden: tuple[str, ...]  # absolute paths of the hidden skills' SKILL.md
    toml: str


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a TOML basic string has JSON's escapes


def codex_config(library: Library, profile: str | None = None) -> CodexConfig:
    """The entries disabling the hidden retained skills (and, for an agent ``profile``,
    every retained skill the profile does not show)."""
    narrowing = committed_profile(library, profile) if profile is not None else None
    with library.store() as store:
        tree = store.tree_of(store.head())
        config = committed_config(store, tree)
        hidden = set(config.hidden) if config else set()
        paths = tuple(str(library.path_of(item.path) / MANIFEST_FILES["skill"])
                      for item in committed_items(store, tree)
                      if item.kind == "skill" and item.state == "retained"
                      and (item.name in hidden or (narrowing is not None
                                                   and not shown(narrowing, item.name))))
    lines = [f"# Codex: hide the skills the librarian library at {library.root} hides.",
             "# Add to ~/.codex/config.toml (`librarian export codex-config` again after "
             "hide/show).", f"# Codex reads {library.root / KIND_DIRS['skill']} when the "
             "library is ~/.agents or <repo>/.agents."]
    for path in paths:
        lines += ["", "[[skills.config]]", f"path = {_toml_string(path)}", "enabled = false"]
    return CodexConfig(str(library.root), paths, "\n".join(lines) + "\n")
