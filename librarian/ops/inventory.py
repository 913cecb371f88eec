"""``inspect`` and ``cat``: read-only views of the committed library. Never writes."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from librarian.content.validate import validate_item
from librarian.core.model import MANIFEST_FILES, RecipeManifest, SkillManifest
from librarian.errors import LibrarianError, UsageError
from librarian.formats.config import LOCK_FILE, load_lock
from librarian.gate.ledger import Usage, usage_by_recipe
from librarian.ops.history import LogEntry, read_log
from librarian.store.gitstore import GitStore, ObjectId
from librarian.store.library import Item, Library, committed_items
from librarian.store.resolve import find_item

Section = Literal["skills", "recipes", "drafts", "tools", "sources"]
SECTIONS: tuple[Section, ...] = ("skills", "recipes", "drafts", "tools", "sources")


@dataclass(frozen=True)
class FileInfo:
    path: str
    bytes: int
    executable: bool


@dataclass(frozen=True)
class ItemInfo:
    name: str
    kind: str
    state: str
    path: str
    location: str
    digest: str | None
    description: str | None
    details: dict[str, Any] = field(default_factory=dict)
    files: tuple[FileInfo, ...] = ()
    last_event: dict[str, Any] | None = None
    diagnostics: tuple[str, ...] = ()
    usage: dict[str, Any] | None = None  # recipes, with --verbose: from the usage ledger


@dataclass(frozen=True)
class Inventory:
    items: tuple[ItemInfo, ...]
    tools: tuple[dict[str, Any], ...]
    sources: tuple[dict[str, Any], ...]


def _section_of(item: Item) -> Section:
    if item.state == "draft":
        return "drafts"
    return "skills" if item.kind == "skill" else "recipes"


def describe(library: Library, store: GitStore, item: Item, *, verbose: bool) -> ItemInfo:
    diagnostics: list[str] = []
    description: str | None = None
    digest: str | None = None
    details: dict[str, Any] = {}
    files: tuple[FileInfo, ...] = ()
    try:
        content_files = store.read_files(item.tree)
        expected = item.name.split(":", 1)[-1]
        content = validate_item(content_files, library.config().policy,
                                expected_name=expected, where=item.path)
        digest = content.digest
        manifest = content.manifest
        description = manifest.description
        if isinstance(manifest, RecipeManifest):
            details = {"execution": manifest.execution, "environment": manifest.environment}
        elif isinstance(manifest, SkillManifest) and manifest.unknown_keys:
            diagnostics.append("unknown frontmatter keys: " + ", ".join(manifest.unknown_keys))
        files = tuple(FileInfo(f.path, len(f.data), f.executable) for f in content_files)
    except LibrarianError as exc:
        problems = getattr(exc, "problems", ()) or (exc.message,)
        diagnostics.extend(problems)
    return ItemInfo(
        name=item.name,
        kind=item.kind,
        state=item.state,
        path=item.path,
        location=str(library.path_of(item.path)),
        digest=digest,
        description=description,
        details=details,
        files=files if verbose else (),
        diagnostics=tuple(diagnostics),
    )


def inspect_library(
    library: Library, section: str | None = None, *, verbose: bool = False
) -> Inventory:
    if section is not None and section not in SECTIONS:
        raise UsageError(f"unknown section {section!r}", hint="one of: " + ", ".join(SECTIONS))
    with library.store() as store:
        head = store.head()
        tree = store.tree_of(head)
        items = []
        for item in committed_items(store, tree):
            if section not in (None, _section_of(item)) and not (
                section == "sources" and item.state == "managed"
            ):
                continue
            items.append(describe(library, store, item, verbose=verbose))
        tools = _tools(library, store, tree) if section in (None, "tools") else ()
        sources = _sources(library, store, tree) if section in (None, "sources") else ()
    if verbose:
        items = _with_last_events(library, items)
        items = _with_usage(library, items)
    return Inventory(tuple(items), tools, sources)


def _with_last_events(library: Library, items: list[ItemInfo]) -> list[ItemInfo]:
    latest: dict[str, LogEntry] = {}
    for entry in read_log(library):
        path = entry.trailer("Librarian-Item")
        if path is not None and path not in latest:
            latest[path] = entry
    out = []
    for info in items:
        last = latest.get(info.path)
        event = None
        if last is not None:
            event = {"event": last.event, "commit": last.commit, "time": last.time,
                     "subject": last.subject}
        out.append(ItemInfo(**{**info.__dict__, "last_event": event}))
    return out


def _tools(library: Library, store: GitStore,
           tree: ObjectId | None) -> tuple[dict[str, Any], ...]:
    """Exposed tools with their contract (name, description, typed inputs, execution,
    effects) and whether the pin is current."""
    from librarian.gate.exposure import tool_contracts

    return tuple(dataclasses.asdict(c) for c in tool_contracts(library, store, tree))


def _with_usage(library: Library, items: list[ItemInfo]) -> list[ItemInfo]:
    usage = usage_by_recipe(library)
    return [ItemInfo(**{**info.__dict__, "usage": dataclasses.asdict(
        usage.get(info.path) or Usage())}) if info.kind == "recipe" else info for info in items]


def _sources(
    library: Library, store: GitStore, tree: ObjectId | None
) -> tuple[dict[str, Any], ...]:
    from librarian.store.gitremote import strip_credentials  # a hand-edited URL may hold a secret

    entry = store.lookup(tree, LOCK_FILE)
    locked = load_lock(store.read_blob(entry.sha)) if entry else {}
    out = []
    for name, source in sorted(library.config().sources.items()):
        pin = locked.get(name)
        out.append({
            "name": name,
            "url": strip_credentials(source.url),
            "ref": source.ref,
            "commit": pin.commit if pin else None,
            "items": len(pin.items) if pin else 0,
        })
    return tuple(out)


def cat_item(library: Library, name: str) -> bytes:
    """The item's body as committed: SKILL.md or recipe.yaml."""
    with library.store() as store:
        head = store.head()
        tree = store.tree_of(head)
        item = find_item(store, tree, name)
        entry = store.lookup(item.tree, MANIFEST_FILES[item.kind])
        if entry is None:
            raise UsageError(f"{item.path} holds no {MANIFEST_FILES[item.kind]}")
        return store.read_blob(entry.sha)
