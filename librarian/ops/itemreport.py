"""``inspect NAME``: one item whole. Its digest and state, the work tree against the commit,
its revisions (the retention events ``log NAME`` lists), the tools exposing it, its
approvals and usage, and for a managed item its source, URL, upstream commit and the
digest ``librarian.lock`` pins beside the one HEAD holds. Read-only: creates nothing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from librarian.cache import DigestCache
from librarian.content.worktree import NotRegularFile, hash_work_dir
from librarian.gate.checks import approvals_of
from librarian.gate.enforcement import summary_enforceability
from librarian.gate.ledger import Usage, usage_by_recipe
from librarian.gate.tools import tool_state
from librarian.library import Item, Library, Snapshot, summarize
from librarian.ops.history import read_log
from librarian.ops.inventory import ItemInfo, describe
from librarian.ops.naming import find_named
from librarian.sources.subscriptions import source_infos


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a managed item comes from, and whether HEAD still holds what was locked."""

    source: str
    url: str | None
    ref: str | None
    upstream_path: str
    upstream_commit: str | None
    locked_digest: str | None
    head_digest: str | None
    matches_lock: bool


@dataclass(frozen=True, slots=True)
class ItemReport:
    item: ItemInfo
    work_tree: str  # clean | modified | missing
    revisions: tuple[dict[str, Any], ...]
    exposed_as: tuple[dict[str, Any], ...]
    approvals: tuple[dict[str, Any], ...]
    usage: dict[str, Any] | None
    provenance: Provenance | None
    #: a recipe: whether this machine enforces its declared effects, and what it cannot
    enforceable: bool | None = None
    not_enforceable: tuple[str, ...] = ()


def inspect_item(library: Library, name: str) -> ItemReport:
    with library.store() as store:
        snapshot = Snapshot.head(library, store)
        tool = snapshot.tools.get(name)  # a tool's name: its recipe
        item = find_named(snapshot, name if tool is None or snapshot.taken_by(name)
                          else tool.recipe)
        info = describe(snapshot, item, verbose=True)
        work = _work_tree_state(library, item)
        digests = DigestCache(library.cache_dir)
        exposed = tuple(
            {"tool": tool, "digest": entry.digest,
             "status": tool_state(snapshot, entry, digests).status}
            for tool, entry in sorted(snapshot.tools.items()) if entry.recipe == item.path)
        provenance = _provenance(snapshot, item) if item.state == "managed" else None
        enforceable, missing = (summary_enforceability(summarize(store, item))
                                if item.kind == "recipe" else (None, ()))
    revisions = tuple(
        {"event": e.event, "commit": e.commit, "time": e.time, "author": e.author,
         "subject": e.subject, "digest": e.trailer_of(item.path, "Librarian-Digest")}
        for e in read_log(library, item.path))
    approvals: tuple[dict[str, Any], ...] = ()
    usage = None
    if item.kind == "recipe":
        approvals = tuple({"digest": a.get("digest"), "commit": a.get("commit"),
                           "time": a.get("time"), "current": a.get("digest") == info.digest}
                          for a in approvals_of(library, item.path))
        usage = dataclasses.asdict(usage_by_recipe(library).get(item.path) or Usage())
    return ItemReport(info, work, revisions, exposed, approvals, usage, provenance,
                      enforceable, missing)


def _work_tree_state(library: Library, item: Item) -> str:
    target = library.path_of(item.path)
    if not target.exists() and not target.is_symlink():
        return "missing"
    try:
        work = hash_work_dir(target) if target.is_dir() and not target.is_symlink() else None
    except NotRegularFile:
        work = None
    return "clean" if work is not None and work.tree_sha1 == item.tree else "modified"


def _provenance(snapshot: Snapshot, item: Item) -> Provenance:
    source = item.name.split(":", 1)[0]
    upstream_path = item.path.removeprefix(f"sources/{source}/")
    info = next((s for s in source_infos(snapshot) if s.name == source), None)
    locked = snapshot.lock.get(source)
    head_digest = DigestCache(snapshot.library.cache_dir).digest(snapshot.store, item.tree)
    return Provenance(
        source=source,
        url=info.url if info else None,
        ref=info.ref if info else None,
        upstream_path=upstream_path,
        upstream_commit=locked.commit if locked else None,
        locked_digest=locked.items.get(upstream_path) if locked else None,
        head_digest=head_digest,
        matches_lock=locked is not None and locked.items.get(upstream_path) == head_digest,
    )
