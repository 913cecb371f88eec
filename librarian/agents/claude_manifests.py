"""Keeping the committed Claude Code manifests in step with the visible skills.

``ClaudeManifests`` is the maker of generated files (``library/generated.py``) that the
command line hands to every library it opens: a transaction whose changes touch
``skills/``, ``sources/``, ``library.yaml`` or ``.claude-plugin/`` asks it for the
manifests of its new root tree, so every change to the set of visible skills (retain,
promote, retire, restore, hide/show, update, source remove, …) carries its rewritten
``.claude-plugin/`` files in the same commit.
The visible skills are the retained and managed skills of the tree that its
``library.yaml`` does not hide (drafts never), in the order ``prompt`` lists them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from librarian.core.model import KIND_DIRS, MANIFEST_FILES, SOURCES_DIR
from librarian.errors import UsageError
from librarian.formats.claude_plugin import (
    MARKETPLACE_FILE,
    PLUGIN_DIR,
    PLUGIN_FILE,
    VisibleSkill,
    listed_skills,
    plugin_files,
    plugin_skills,
)
from librarian.formats.config import LIBRARY_FILE, LibraryConfig, library_config_of
from librarian.git import GitStore, ObjectId
from librarian.library import (
    GeneratedFiles,
    VisibilityLists,
    committed_items,
    committed_yaml,
    item_kind,
)


def affects_visible_skills(path: str) -> bool:
    """Whether a change at ``path`` can change the visible skills (or the manifests)."""
    top = path.split("/", 1)[0]
    return top in (KIND_DIRS["skill"], SOURCES_DIR, LIBRARY_FILE, PLUGIN_DIR)


def same_item(store: GitStore, old: ObjectId, new: ObjectId) -> bool:
    """Whether two trees at one path are both an item holding the same manifests, so that
    changing one into the other keeps the item, its kind and so the visible skills (an
    update of an item's content: no walk of the committed items needed)."""
    kind = item_kind(store, old)  # remembered by tree id: mostly no tree read at all
    if kind is not None and kind == item_kind(store, new):
        return True
    before, after = store.tree_items(old), store.tree_items(new)
    held = [name in before for name in MANIFEST_FILES.values()]
    return any(held) and held == [name in after for name in MANIFEST_FILES.values()]


def committed_config(store: GitStore, tree: ObjectId | None) -> LibraryConfig | None:
    """``library.yaml`` as committed in ``tree``; None when it is missing or invalid."""
    entry = store.lookup(tree, LIBRARY_FILE)
    if entry is None:
        return None
    try:
        return committed_yaml(store, entry.sha, LIBRARY_FILE, library_config_of)
    except UsageError:
        return None


def visible_skills(store: GitStore, tree: ObjectId | None,
                   config: LibraryConfig) -> list[VisibleSkill]:
    """The visible skills, each bare name once: Claude Code names a plugin's skills by
    folder, so a managed ``team:pdf`` beside a retained ``pdf`` (or a second source's
    ``pdf``) would load as a second ``pdf``. The retained skill, else the first in path
    order, keeps the name; ``check`` reports the others (``librarian mcp`` serves all)."""
    hidden = set(config.hidden)
    found = [item for item in committed_items(store, tree)
             if item.kind == "skill" and item.state != "draft" and item.name not in hidden]
    taken = {item.bare_name for item in found if item.state != "managed"}
    listed = []
    for item in found:
        if item.state == "managed":
            if item.bare_name in taken:
                continue
            taken.add(item.bare_name)
        listed.append(VisibleSkill(item.path, item.state == "managed"))
    return listed


def expected_plugin_files(store: GitStore, tree: ObjectId | None) -> dict[str, bytes]:
    """The manifests ``tree`` should hold (empty when its library.yaml is unreadable)."""
    config = committed_config(store, tree)
    if config is None:
        return {}
    return plugin_files(config.name, visible_skills(store, tree, config))


def plugin_problems(files: Mapping[str, bytes | None], expected: Mapping[str, bytes] | None,
                    skill_paths: Collection[str]) -> list[str]:
    """What ``check`` says about the two manifests: ``files`` as found (None: missing),
    ``expected`` as HEAD's visible skills want them (None: not compared, e.g. the index),
    ``skill_paths`` the skill directories that exist."""
    problems = []
    for path in (PLUGIN_FILE, MARKETPLACE_FILE):
        data = files.get(path)
        if data is None:
            problems.append(f"{path}: missing; the next change to the library writes it")
            continue
        listed = (listed_skills(data) if path == MARKETPLACE_FILE else plugin_skills(data))
        if listed is None:
            problems.append(f"{path}: not the manifest librarian writes (invalid JSON or "
                            "shape)")
            continue
        for skill in listed:
            if skill not in skill_paths:
                problems.append(f"{path}: lists {skill}, which is not a visible skill")
        if expected is not None and path in expected and data != expected[path]:
            problems.append(f"{path}: out of step with the visible skills; the next change "
                            "to the library rewrites it")
    return problems


class ClaudeManifests:
    """The Claude Code manifests as generated files of a library (``GeneratedFiles``)."""

    paths: tuple[str, ...] = (PLUGIN_FILE, MARKETPLACE_FILE)

    def watches(self, path: str) -> bool:
        return affects_visible_skills(path)

    def keeps(self, store: GitStore, old: ObjectId, new: ObjectId) -> bool:
        return same_item(store, old, new)

    def expected(self, store: GitStore, tree: ObjectId | None) -> dict[str, bytes]:
        return expected_plugin_files(store, tree)

    def problems(self, found: Mapping[str, bytes | None], expected: Mapping[str, bytes] | None,
                 item_paths: Collection[str]) -> list[str]:
        return plugin_problems(found, expected, item_paths)


#: What every library opened by the command line or the MCP server generates: the skill
#: lists of library.yaml first (they name present skills only), then the manifests.
GENERATED: tuple[GeneratedFiles, ...] = (VisibilityLists(), ClaudeManifests())
