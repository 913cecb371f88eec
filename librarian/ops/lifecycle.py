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

from librarian.cache import DigestCache
from librarian.core.events import trailers
from librarian.core.model import KIND_DIRS
from librarian.core.receipts import Receipt
from librarian.errors import ConflictError, LibrarianError, UsageError, ValidationError
from librarian.git import ObjectId
from librarian.library import Item, Library, Snapshot
from librarian.ops.retention import evidence_text
from librarian.txn import Transaction

MANAGED_HINT = "change it upstream or retain a copy under a new name"


def require(snapshot: Snapshot, name: str, state: str, action: str) -> Item:
    """The item called ``name``, which must be in ``state`` (``draft`` or ``retained``) for
    ``action``; unknown is exit 2, the wrong state exit 3 with a hint to the right command."""
    item = snapshot.find(name)
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


def committed_digest(snapshot: Snapshot, tree: ObjectId) -> str:
    """The digest of a committed item tree (from the digest cache when known). The cache is
    not written here: a command that goes on to fail leaves nothing behind."""
    return DigestCache(snapshot.library.cache_dir).digest(snapshot.store, tree)


def reason_text(reason: str | None, *, required: bool) -> str | None:
    text = " ".join(reason.split()) if reason else ""
    if not text:
        if required:
            raise UsageError("a reason is required", hint="pass --reason TEXT")
        return None
    return text


def promote(library: Library, name: str, *, evidence: str | None = None) -> Receipt:
    """Move ``drafts/NAME`` to ``skills/`` or ``recipes/`` by its kind, digest unchanged."""
    with Transaction(library) as tx:
        draft = require(tx.base, name, "draft", "promote")
        content = tx.base.content(draft)
        if content.warnings:
            # A draft is a capture; a retained skill is what agents are shown: it must
            # conform to the Agent Skills format.
            raise ValidationError(
                f"{draft.path}: promote needs a conforming {content.kind}: "
                + "; ".join(content.warnings), problems=content.warnings,
                hint=f"fix the draft and `librarian revise {name} SOURCE`, then promote",
                path=draft.path)
        target = f"{KIND_DIRS[content.kind]}/{content.name}"
        existing = tx.base.taken_by(content.name)
        if existing not in (None, draft.path):
            raise ConflictError(f"the name {content.name!r} is taken by {existing}")
        # The files written are the draft's tree, byte for byte and mode for mode.
        if tx.store.files_tree(content.files) != draft.tree:
            raise LibrarianError(f"internal: promoting {draft.path} would change its digest")
        digest = content.digest
        tx.put_dir(draft.path, None)
        tx.put_dir(target, content.files)
        result = tx.commit(f"promote {content.kind} {content.name}", trailers(
            "promote", item=target, previous_item=draft.path, kind=content.kind,
            digest=digest, evidence=evidence_text(evidence)))
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
    with Transaction(library) as tx:
        draft = require(tx.base, name, "draft", "discard")
        digest = committed_digest(tx.base, draft.tree)
        tx.put_dir(draft.path, None)
        result = tx.commit(f"discard draft {draft.kind} {draft.name}",
                           _decision_trailers("discard", draft, digest, evidence, why))
    return Receipt(
        kind="discarded_draft",
        name=draft.name,
        path=draft.path,
        digest=digest,
        commit=result.commit,
        details={"event": "discard", "item_kind": draft.kind}, reason=why,
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
    with Transaction(library) as tx:
        draft = require(tx.base, name, "draft", "defer")
        digest = committed_digest(tx.base, draft.tree)
        result = tx.commit(
            f"defer draft {draft.kind} {draft.name}"
            + (f" until {due.isoformat()}" if due else ""),
            _decision_trailers("defer", draft, digest, evidence, why,
                               until=due.isoformat() if due else None),
            allow_empty=True)
    details: dict[str, object] = {"event": "defer", "item_kind": draft.kind}
    if due is not None:
        details["until"] = due.isoformat()
    return Receipt(
        kind="deferred_draft",
        name=draft.name,
        path=draft.path,
        digest=digest,
        commit=result.commit,
        details=details,
        reason=why,
    )


def _decision_trailers(
    event: str, draft: Item, digest: str, evidence: str | None, reason: str | None,
    until: str | None = None,
) -> tuple[tuple[str, str], ...]:
    return trailers(event, item=draft.path, kind=draft.kind, digest=digest,
                    evidence=evidence_text(evidence), reason=reason or None, until=until)


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
