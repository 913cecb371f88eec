"""``retain``: create-only admission of a skill or recipe, as one retention event."""

from __future__ import annotations

from pathlib import Path

from librarian.content.validate import load_source, validate_item
from librarian.core.events import trailers
from librarian.core.model import DRAFTS_DIR, KIND_DIRS, ItemContent, ItemFile
from librarian.core.names import check_name
from librarian.core.receipts import Receipt
from librarian.errors import ConflictError
from librarian.store.changes import CommitResult
from librarian.store.library import Library
from librarian.store.snapshot import head_policy
from librarian.store.txn import Transaction

UNKNOWN_EVIDENCE = "unknown"


def evidence_text(evidence: str | None) -> str:
    # Missing evidence is recorded as "unknown", never as a low score (spec §2).
    return evidence.strip() if evidence and evidence.strip() else UNKNOWN_EVIDENCE


def receipt_kind(content: ItemContent, draft: bool) -> str:
    return "draft" if draft else f"retained_{content.kind}"


def retain(
    library: Library,
    source: Path,
    *,
    name: str | None = None,
    draft: bool = False,
    evidence: str | None = None,
) -> Receipt:
    # Judged before the lock is taken (reading and scanning a large source takes time a
    # concurrent writer would spend waiting); judged again only if the committed policy
    # moved in between.
    policy = head_policy(library)
    content = load_source(source, policy, name=name)
    with Transaction(library) as tx:
        if tx.base.policy != policy:
            content = load_source(source, tx.base.policy, name=name)
        result = _admit(tx, content, draft, evidence)
    return _receipt(library, content, draft, result.commit)


def retain_files(library: Library, files: tuple[ItemFile, ...], *, name: str,
                 draft: bool = False, evidence: str | None = None) -> Receipt:
    """Admit an item handed over as files (an agent over MCP writes no directory first),
    judged by the same rules under the committed policy."""
    check_name(name)
    with Transaction(library) as tx:
        where = f"{DRAFTS_DIR if draft else 'item'}/{name}"
        content = validate_item(files, tx.base.policy, expected_name=name, where=where)
        result = _admit(tx, content, draft, evidence)
    return _receipt(library, content, draft, result.commit)


def _admit(tx: Transaction, content: ItemContent, draft: bool,
           evidence: str | None) -> CommitResult:
    directory = DRAFTS_DIR if draft else KIND_DIRS[content.kind]
    item_path = f"{directory}/{content.name}"
    existing = tx.base.taken_by(content.name)
    if existing is not None:
        raise ConflictError(
            f"the name {content.name!r} is taken by {existing}",
            hint="retain never overwrites: use `librarian revise` for a new revision, "
            "or choose another name",
        )
    what = f"draft {content.kind}" if draft else content.kind
    tx.put_dir(item_path, content.files)
    return tx.commit(f"retain {what} {content.name}", trailers(
        "retain", item=item_path, kind=content.kind, digest=content.digest,
        evidence=evidence_text(evidence)))


def _receipt(library: Library, content: ItemContent, draft: bool, commit: str) -> Receipt:
    item_path = f"{DRAFTS_DIR if draft else KIND_DIRS[content.kind]}/{content.name}"
    return Receipt(
        kind=receipt_kind(content, draft),
        name=content.name,
        path=item_path,
        digest=content.digest,
        commit=commit,
        details={
            "activation": "not_requested",
            "location": str(library.path_of(item_path)),
            "files": len(content.files),
            "bytes": content.total_bytes,
        },
        warnings=content.warnings,
    )
