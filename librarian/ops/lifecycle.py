"""The review lifecycle of drafts: ``promote``, ``discard`` and ``defer``.

Each decision is one commit with trailers (``Librarian-Event``, ``-Item``, ``-Digest``,
``-Evidence``, ``-Reason`` where given). A promotion moves the draft's tree unchanged, so its
digest is the draft's digest; ``defer`` changes no file and is an empty-tree-change commit.
Changing retained items (``revise``, ``retire``, ``restore``) lives in ``revisions.py``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

from librarian.content.validate import validate_item
from librarian.core.model import KIND_DIRS, ItemContent
from librarian.core.receipts import Receipt
from librarian.errors import ConflictError, LibrarianError, UsageError
from librarian.ops.retention import evidence_text, taken_by
from librarian.store.gitstore import GitStore, ObjectId
from librarian.store.library import Item, Library
from librarian.store.resolve import find_item
from librarian.store.statcache import DigestCache
from librarian.store.txn import DirChange, commit_changes, mutation

MANAGED_HINT = "change it upstream or retain a copy under a new name"


def read_base(store: GitStore) -> tuple[ObjectId | None, ObjectId | None]:
    """(HEAD commit, its tree), either None in an empty repository."""
    base = store.head()
    return base, (store.tree_of(base))


def require(store: GitStore, tree: ObjectId | None, name: str, state: str, action: str) -> Item:
    """The item called ``name``, which must be in ``state`` (``draft`` or ``retained``) for
    ``action``; unknown is exit 2, the wrong state exit 3 with a hint to the right command."""
    item = find_item(store, tree, name)
    if item.state == state:
        return item
    if item.state == "managed":
        raise ConflictError(
            f"{item.name} is managed by source {item.name.split(':', 1)[0]!r}; "
            f"{action} applies to {state} items",
            hint=MANAGED_HINT,
        )
    if item.state == "retained":
        hints = {
            "discard": f"a retained item is removed with `librarian retire {item.name}`",
            "promote": "it is already retained",
            "defer": "defer records a review decision about a draft",
        }
        raise ConflictError(
            f"{item.name} is a retained {item.kind} ({item.path}), not a draft",
            hint=hints.get(action, "this command works on drafts only"),
        )
    hint = (
        f"a draft is removed with `librarian discard {item.name} --reason …`"
        if action == "retire"
        else f"promote it first (`librarian promote {item.name}`), or discard it"
    )
    raise ConflictError(f"{item.name} is a draft ({item.path}), not a retained item", hint=hint)


def committed_content(library: Library, store: GitStore, item: Item) -> ItemContent:
    """The item's committed files, judged by the same rules as any admission."""
    return validate_item(
        store.read_files(item.tree),
        library.config().policy,
        expected_name=item.name.split(":", 1)[-1],
        where=item.path,
    )


def committed_digest(library: Library, store: GitStore, tree: ObjectId) -> str:
    """The digest of a committed item tree (from the digest cache when known). The cache is
    not written here: a command that goes on to fail leaves nothing behind."""
    return DigestCache(library.cache_dir).digest(store, tree)


def reason_text(reason: str | None, *, required: bool) -> str | None:
    text = " ".join(reason.split()) if reason else ""
    if not text:
        if required:
            raise UsageError("a reason is required", hint="pass --reason TEXT")
        return None
    return text


def promote(library: Library, name: str, *, evidence: str | None = None) -> Receipt:
    """Move ``drafts/NAME`` to ``skills/`` or ``recipes/`` by its kind, digest unchanged."""
    with mutation(library) as store:
        base, tree = read_base(store)
        draft = require(store, tree, name, "draft", "promote")
        content = committed_content(library, store, draft)
        target = f"{KIND_DIRS[content.kind]}/{content.name}"
        existing = taken_by(store, tree, content.name)
        if existing not in (None, draft.path):
            raise ConflictError(f"the name {content.name!r} is taken by {existing}")
        # The files written are the draft's tree, byte for byte and mode for mode.
        if store.files_tree(content.files) != draft.tree:
            raise LibrarianError(f"internal: promoting {draft.path} would change its digest")
        digest = content.digest
        result = commit_changes(
            library,
            store,
            base=base,
            subject=f"promote {content.kind} {content.name}",
            trailers=[
                ("Librarian-Event", "promote"),
                ("Librarian-Item", target),
                ("Librarian-Previous-Item", draft.path),
                ("Librarian-Kind", content.kind),
                ("Librarian-Digest", digest),
                ("Librarian-Evidence", evidence_text(evidence)),
            ],
            changes=[DirChange(draft.path, None), DirChange(target, content.files)],
        )
    return Receipt(
        kind=f"retained_{content.kind}",
        name=content.name,
        path=target,
        digest=digest,
        commit=result.commit,
        details={
            "event": "promote",
            "previous_path": draft.path,
            "evidence": evidence_text(evidence),
            "activation": "not_requested",
            "location": str(library.path_of(target)),
        },
        warnings=content.warnings,
    )


def discard(
    library: Library, name: str, *, reason: str, evidence: str | None = None
) -> Receipt:
    """Remove a draft (drafts only: a retained item is retired, not discarded)."""
    why = reason_text(reason, required=True)
    assert why is not None
    with mutation(library) as store:
        base, tree = read_base(store)
        draft = require(store, tree, name, "draft", "discard")
        digest = committed_digest(library, store, draft.tree)
        result = commit_changes(
            library,
            store,
            base=base,
            subject=f"discard draft {draft.kind} {draft.name}",
            trailers=_decision_trailers("discard", draft, digest, evidence, why),
            changes=[DirChange(draft.path, None)],
        )
    return Receipt(
        kind="discarded_draft",
        name=draft.name,
        path=draft.path,
        digest=digest,
        commit=result.commit,
        details={"event": "discard", "item_kind": draft.kind, "reason": why},
    )


def defer(
    library: Library,
    name: str,
    *,
    reason: str,
    until: str | None = None,
    evidence: str | None = None,
    today: dt.date | None = None,
) -> Receipt:
    """Record a decision to look at a draft again later; the draft stays as it is."""
    why = reason_text(reason, required=True)
    assert why is not None
    due = parse_until(until, today or dt.date.today()) if until is not None else None
    with mutation(library) as store:
        base, tree = read_base(store)
        draft = require(store, tree, name, "draft", "defer")
        digest = committed_digest(library, store, draft.tree)
        trailers = _decision_trailers("defer", draft, digest, evidence, why)
        if due is not None:
            trailers.append(("Librarian-Until", due.isoformat()))
        result = commit_changes(
            library,
            store,
            base=base,
            subject=f"defer draft {draft.kind} {draft.name}"
            + (f" until {due.isoformat()}" if due else ""),
            trailers=trailers,
            changes=[],
            allow_empty=True,
        )
    details: dict[str, object] = {"event": "defer", "item_kind": draft.kind, "reason": why}
    if due is not None:
        details["until"] = due.isoformat()
    return Receipt(
        kind="deferred_draft",
        name=draft.name,
        path=draft.path,
        digest=digest,
        commit=result.commit,
        details=details,
    )


def _decision_trailers(
    event: str, draft: Item, digest: str, evidence: str | None, reason: str | None
) -> list[tuple[str, str]]:
    trailers = [
        ("Librarian-Event", event),
        ("Librarian-Item", draft.path),
        ("Librarian-Kind", draft.kind),
        ("Librarian-Digest", digest),
        ("Librarian-Evidence", evidence_text(evidence)),
    ]
    if reason:
        trailers.append(("Librarian-Reason", reason))
    return trailers


_RELATIVE_RE = re.compile(r"\+?(\d{1,4})([dw])")


def parse_until(text: str, today: dt.date) -> dt.date:
    """``YYYY-MM-DD``, or ``Nd`` / ``Nw`` (days or weeks from today)."""
    value = text.strip()
    relative = _RELATIVE_RE.fullmatch(value)
    if relative:
        count = int(relative.group(1)) * (7 if relative.group(2) == "w" else 1)
        return today + dt.timedelta(days=count)
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise UsageError(
            f"--until {text!r} is not a date",
            hint="use YYYY-MM-DD, or a count of days or weeks such as 14d or 2w",
        ) from None


def exposing_tools(tools: dict[str, str], path: str) -> Sequence[str]:
    """Names of the tools (tool -> recipe path) that expose the item at ``path``."""
    return sorted(tool for tool, recipe in tools.items() if recipe == path)
