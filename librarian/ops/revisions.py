"""Changing retained items: ``revise`` (a new revision), ``retire`` and ``restore``.

``retain`` stays create-only; ``revise`` is the explicit way to replace a retained item's
content. Managed items (``SOURCE:NAME``) are read-only here: they change upstream.
"""

from __future__ import annotations

from pathlib import Path

from librarian.content.validate import load_source
from librarian.core.events import trailers
from librarian.core.model import KIND_DIRS, MANIFEST_FILES, ItemKind
from librarian.core.names import check_name, name_problem
from librarian.core.receipts import Receipt
from librarian.errors import ConflictError, UsageError
from librarian.formats.config import TOOLS_FILE
from librarian.git import GitStore, ObjectId, resolve, walk_history
from librarian.library import Item, Library, Snapshot
from librarian.ops.lifecycle import (
    committed_digest,
    exposing_tools,
    reason_text,
    require,
)
from librarian.ops.retention import evidence_text
from librarian.txn import Transaction


def _tools_by_recipe(snapshot: Snapshot) -> dict[str, str]:
    return {n: t.recipe for n, t in snapshot.tools.items()}


def _same_directory(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def revise(
    library: Library, name: str, source: Path, *, evidence: str | None = None
) -> Receipt:
    """Replace a retained item's (or a draft's) content with ``source`` (same kind, same
    name)."""
    with Transaction(library) as tx:
        item = tx.base.find(name)
        if item.state != "draft":
            item = require(tx.base, name, "retained", "revise")
        content = load_source(source, tx.base.policy)
        if content.kind != item.kind:
            raise UsageError(
                f"wrong kind: {source} holds a {content.kind} ({MANIFEST_FILES[content.kind]})"
                f" but {item.name} is a {item.kind}",
                hint="a revision keeps the item's kind; retain the new content under "
                "another name instead",
            )
        if content.name != item.name:
            raise UsageError(
                f"{source} holds the {content.kind} {content.name!r}, not {item.name!r}",
                hint="a revision keeps the item's name (the 'name:' in its manifest)",
            )
        if tx.store.files_tree(content.files) == item.tree:
            raise UsageError(
                f"{source} is identical to the retained {item.path}; nothing to revise",
                hint="edit the content first (see `librarian diff`)",
            )
        old = committed_digest(tx.base, item.tree)
        new = content.digest
        # Revising from the item's own work-tree directory (edited in place) takes those
        # edits as the new revision instead of refusing them as edits in the way.
        in_place = _same_directory(source, library.path_of(item.path))
        tx.put_dir(item.path, content.files)
        subject = f"revise {item.kind} {item.name}"
        revision_trailers = trailers(
            "revise", item=item.path, kind=item.kind, previous_digest=old, digest=new,
            evidence=evidence_text(evidence))
        result = (tx.commit_over_local_edits if in_place else tx.commit)(
            subject, revision_trailers)
        stale = exposing_tools(_tools_by_recipe(tx.base), item.path)
    warnings = list(content.warnings)
    warnings += [
        f"tool {tool} exposes the previous revision and is now stale: review the change, "
        f"then re-expose it (`librarian expose {item.name} --as {tool} --refresh`)"
        for tool in stale
    ]
    return Receipt(
        kind=f"revised_{item.kind}",
        name=item.name,
        path=item.path,
        digest=new,
        commit=result.commit,
        details={
            "event": "revise",
            "previous_digest": old,
            "evidence": evidence_text(evidence),
            "activation": "not_requested",
            "location": str(library.path_of(item.path)),
        },
        warnings=tuple(warnings),
    )


def retire(library: Library, name: str, *, reason: str | None = None) -> Receipt:
    """Remove a retained item in one commit; refused while a tool exposes it."""
    why = reason_text(reason, required=False)
    with Transaction(library) as tx:
        try:
            item = require(tx.base, name, "retained", "retire")
        except UsageError:
            _refuse_retired_again(tx.base, name)
            raise
        tools = exposing_tools(_tools_by_recipe(tx.base), item.path)
        if tools:
            raise ConflictError(
                f"{item.name} is exposed as tool {', '.join(tools)} in {TOOLS_FILE}",
                hint="withdraw it first: "
                + "; ".join(f"`librarian withdraw {tool}`" for tool in tools),
            )
        digest = committed_digest(tx.base, item.tree)
        tx.put_dir(item.path, None)
        result = tx.commit(f"retire {item.kind} {item.name}", trailers(
            "retire", item=item.path, kind=item.kind, digest=digest, reason=why))
    details: dict[str, object] = {
        "event": "retire",
        "hint": f"bring it back with `librarian restore {item.name}`",
    }
    return Receipt(
        kind=f"retired_{item.kind}",
        name=item.name,
        path=item.path,
        digest=digest,
        commit=result.commit,
        details=details,
        reason=why,
    )


def _refuse_retired_again(snapshot: Snapshot, name: str) -> None:
    """A name no item has, that a retained item had: it was retired already; say so and
    point at ``restore`` (nothing when the history never held it)."""
    if name_problem(name) is not None:
        return
    try:
        commit, kind, _ = _find_previous(snapshot.store, snapshot.commit, name, None)
    except UsageError:
        return
    raise UsageError(f"{name} is already retired (the {kind} was last retained at "
                     f"{commit[:12]})", hint=f"bring it back with `librarian restore {name}`")


def _retained_at(
    store: GitStore, tree: ObjectId | None, name: str
) -> tuple[ItemKind, ObjectId] | None:
    for kind, directory in KIND_DIRS.items():
        entry = store.lookup(tree, f"{directory}/{name}")
        if entry is not None:
            return kind, entry.sha
    return None


def _find_previous(
    store: GitStore, head: ObjectId | None, name: str, revision: str | None
) -> tuple[str, ItemKind, ObjectId]:
    """(commit, kind, item tree) of the content to restore."""
    if revision is not None:
        commit = resolve(store, revision)
        found = _retained_at(store, store.tree_of(commit), name)
        if found is None:
            raise UsageError(
                f"{revision} holds no retained item named {name!r}",
                hint=f"`librarian log {name}` lists the commits that touched it",
            )
        return commit.decode(), found[0], found[1]
    for info in walk_history(store, head):
        found = _retained_at(store, store.tree_of(info.id), name)
        if found is not None:
            return info.id.decode(), found[0], found[1]
    raise UsageError(
        f"no retained item named {name!r} in this library's history",
        hint="`librarian log` lists retention events",
    )


def restore(
    library: Library,
    name: str,
    *,
    revision: str | None = None,
    evidence: str | None = None,
) -> Receipt:
    """Bring back the last retained content of ``name`` (or the one at ``revision``)."""
    check_name(name, "item name")
    with Transaction(library) as tx:
        store = tx.store
        existing = tx.base.taken_by(name)
        if existing is not None:
            raise ConflictError(
                f"the name {name!r} is taken by {existing}",
                hint="restore brings back a retired item; to go back to an earlier revision "
                "of a retained one, use `librarian revise`",
            )
        commit, kind, item_tree = _find_previous(store, tx.base.commit, name, revision)
        path = f"{KIND_DIRS[kind]}/{name}"
        item = Item(name, kind, "retained", path, item_tree)
        content = tx.base.content(item, where=f"{path} at {commit[:12]}")
        digest = content.digest
        tx.put_dir(path, content.files)
        result = tx.commit(f"restore {kind} {name}", trailers(
            "restore", item=path, kind=kind, digest=digest, restored_from=commit,
            evidence=evidence_text(evidence)))
    return Receipt(
        kind=f"restored_{kind}",
        name=name,
        path=path,
        digest=digest,
        commit=result.commit,
        details={
            "event": "restore",
            "restored_from": commit,
            "activation": "not_requested",
            "location": str(library.path_of(path)),
        },
        warnings=content.warnings,
    )
