"""``inspect`` and ``cat``: read-only views of the committed library. Never writes."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from librarian.cache import DigestCache, TreeMemo
from librarian.core.manifests import RecipeManifest
from librarian.core.model import MANIFEST_FILES
from librarian.core.progress import counted
from librarian.errors import LibrarianError, UsageError
from librarian.gate.ledger import Usage, usage_by_recipe
from librarian.gate.tools import tool_contracts
from librarian.library import Item, Library, Snapshot
from librarian.ops.history import LogEntry, read_log
from librarian.sources.subscriptions import source_infos

Section = Literal["skills", "recipes", "drafts", "tools", "sources"]
SECTIONS: tuple[Section, ...] = ("skills", "recipes", "drafts", "tools", "sources")


@dataclass(frozen=True, slots=True)
class FileInfo:
    path: str
    bytes: int
    executable: bool


@dataclass(frozen=True, slots=True)
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
    #: nonconformities of the Agent Skills format the item was admitted with
    warnings: tuple[str, ...] = ()
    usage: dict[str, Any] | None = None  # recipes, with --verbose: from the usage ledger


@dataclass(frozen=True, slots=True)
class Inventory:
    items: tuple[ItemInfo, ...]
    tools: tuple[dict[str, Any], ...]
    sources: tuple[dict[str, Any], ...]


def _section_of(item: Item) -> Section:
    if item.state == "draft":
        return "drafts"
    return "skills" if item.kind == "skill" else "recipes"


def describe(snapshot: Snapshot, item: Item, *, verbose: bool) -> ItemInfo:
    """The item as ``inspect`` shows it. What is judged from its content is remembered by
    tree id and policy (cache/memo.py): a second ``inspect`` of 10,000 items reads none."""
    memo = TreeMemo.of(snapshot.store, "inspect")
    key = f"2:{item.tree.decode()}:{_policy_key(snapshot)}"  # 2: the shape of the value
    known = memo.get(key)
    if not isinstance(known, dict):
        known = _judge(snapshot, item)
        memo.put(key, known)
    return ItemInfo(
        name=item.name,
        kind=item.kind,
        state=item.state,
        path=item.path,
        location=str(snapshot.library.path_of(item.path)),
        digest=known["digest"],
        description=known["description"],
        details=dict(known["details"]),
        files=tuple(FileInfo(p, n, x) for p, n, x in known["files"]) if verbose else (),
        diagnostics=tuple(known["diagnostics"]),
        warnings=tuple(known.get("warnings", ())),
    )


def _policy_key(snapshot: Snapshot) -> str:
    return ",".join(str(v) for v in dataclasses.astuple(snapshot.policy))


def _judge(snapshot: Snapshot, item: Item) -> dict[str, Any]:
    diagnostics: list[str] = []
    warnings: tuple[str, ...] = ()
    description: str | None = None
    digest: str | None = None
    details: dict[str, Any] = {}
    files: tuple[FileInfo, ...] = ()
    try:
        content = snapshot.content(item)
        content_files = content.files
        digest = content.digest
        manifest = content.manifest
        description = manifest.description
        if isinstance(manifest, RecipeManifest):
            details = {"execution": manifest.execution, "environment": manifest.environment}
        warnings = content.warnings
        files = tuple(FileInfo(f.path, len(f.data), f.executable) for f in content_files)
    except LibrarianError as exc:
        problems = getattr(exc, "problems", ()) or (exc.message,)
        diagnostics.extend(problems)
    return {"digest": digest, "description": description, "details": details,
            "files": [[f.path, f.bytes, f.executable] for f in files],
            "diagnostics": list(diagnostics), "warnings": list(warnings)}


def inspect_library(
    library: Library, section: str | None = None, *, verbose: bool = False
) -> Inventory:
    if section is not None and section not in SECTIONS:
        raise UsageError(f"unknown section {section!r}", hint="one of: " + ", ".join(SECTIONS))
    with library.store() as store:
        snapshot = Snapshot.head(library, store)
        items = []
        for item in counted("inspect", list(snapshot.items())):
            if section not in (None, _section_of(item)) and not (
                section == "sources" and item.state == "managed"
            ):
                continue
            items.append(describe(snapshot, item, verbose=verbose))
        tools = _tools(snapshot) if section in (None, "tools") else ()
        sources = tuple(dataclasses.asdict(s) for s in source_infos(snapshot)) if section in (
            None, "sources") else ()
        TreeMemo.save_all(store)
    if verbose:
        items = _with_last_events(library, items)
        items = _with_usage(library, items)
    return Inventory(tuple(items), tools, sources)


def _with_last_events(library: Library, items: list[ItemInfo]) -> list[ItemInfo]:
    latest: dict[str, LogEntry] = {}
    for entry in read_log(library):
        for path in entry.values("Librarian-Item"):
            latest.setdefault(path, entry)
    out = []
    for info in items:
        last = latest.get(info.path)
        event = None
        if last is not None:
            event = {"event": last.event, "commit": last.commit, "time": last.time,
                     "subject": last.subject}
        out.append(dataclasses.replace(info, last_event=event))
    return out


def _tools(snapshot: Snapshot) -> tuple[dict[str, Any], ...]:
    """Exposed tools with their contract (name, description, typed inputs, execution,
    effects) and whether the pin is current."""
    return tuple(dataclasses.asdict(c) for c in tool_contracts(snapshot))


def _with_usage(library: Library, items: list[ItemInfo]) -> list[ItemInfo]:
    usage = usage_by_recipe(library)
    return [dataclasses.replace(info, usage=dataclasses.asdict(usage.get(info.path) or Usage()))
            if info.kind == "recipe" else info for info in items]


@dataclass(frozen=True, slots=True)
class Body:
    """``cat``: an item's committed manifest and where it comes from."""

    name: str
    path: str  # the item's library path
    file: str  # SKILL.md or recipe.yaml
    digest: str
    commit: str | None
    body: bytes


def cat_item(library: Library, name: str) -> Body:
    """The item's body as committed: SKILL.md or recipe.yaml."""
    with library.store() as store:
        snapshot = Snapshot.head(library, store)
        item = snapshot.find(name)
        entry = store.lookup(item.tree, MANIFEST_FILES[item.kind])
        if entry is None:
            raise UsageError(f"{item.path} holds no {MANIFEST_FILES[item.kind]}")
        digest = DigestCache(library.cache_dir).digest(store, item.tree)
        commit = snapshot.commit.decode() if snapshot.commit else None
        return Body(item.name, item.path, MANIFEST_FILES[item.kind], digest, commit,
                    store.read_blob(entry.sha))
