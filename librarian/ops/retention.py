"""``retain``: create-only admission of a skill or recipe, as one retention event."""

from __future__ import annotations

import os
from pathlib import Path

from librarian.content.validate import load_source, validate_item
from librarian.core.events import trailers
from librarian.core.manifests import ItemContent
from librarian.core.model import DRAFTS_DIR, KIND_DIRS, ItemFile
from librarian.core.names import check_name
from librarian.core.receipts import Receipt
from librarian.errors import ConflictError, UsageError
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


def in_place(library: Library, source: Path) -> tuple[str, str] | None:
    """(directory, name) when ``source`` is an item directory inside the library itself
    (``skills/x``, ``recipes/x`` or ``drafts/x``, written there by hand or by an agent)."""
    try:
        relative = Path(os.path.normpath(source.absolute())).relative_to(
            os.path.normpath(library.root.absolute()))
    except ValueError:
        return None
    parts = relative.parts
    if len(parts) != 2 or parts[0] not in (*KIND_DIRS.values(), DRAFTS_DIR):
        return None
    return parts[0], parts[1]


def _place(library: Library, source: Path, content: ItemContent,
           draft: bool) -> tuple[str, bool, bool]:
    """(item path, draft, adopt): where the item goes and whether it is adopted in place."""
    standing = in_place(library, source) if source.is_dir() else None
    if standing is None:
        directory = DRAFTS_DIR if draft else KIND_DIRS[content.kind]
        return f"{directory}/{content.name}", draft, False
    directory, dirname = standing
    where = f"{directory}/{dirname}"
    if dirname != content.name:
        raise UsageError(
            f"{where} holds the {content.kind} {content.name!r}: an item is admitted where "
            "it stands only under its own name",
            hint=f"rename the directory to {directory}/{content.name}")
    if directory == DRAFTS_DIR:
        return where, True, True
    if draft:
        raise UsageError(f"{where} is not in drafts/: --draft cannot admit it where it stands",
                         hint=f"move it to drafts/{content.name} first, or leave out --draft")
    if directory != KIND_DIRS[content.kind]:
        raise UsageError(f"{where} holds a {content.kind}, which belongs in "
                         f"{KIND_DIRS[content.kind]}/",
                         hint=f"move it to {KIND_DIRS[content.kind]}/{content.name}")
    return where, False, True


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
    content = load_source(source, policy, name=name, capture=draft)
    with Transaction(library) as tx:
        if tx.base.policy != policy:
            content = load_source(source, tx.base.policy, name=name, capture=draft)
        item_path, draft, adopt = _place(library, source, content, draft)
        result = _admit(tx, content, draft, evidence, item_path, adopt=adopt)
    return _receipt(library, content, draft, result.commit, item_path, in_place=adopt)


def retain_files(library: Library, files: tuple[ItemFile, ...], *, name: str,
                 draft: bool = False, evidence: str | None = None) -> Receipt:
    """Admit an item handed over as files (an agent over MCP writes no directory first),
    judged by the same rules under the committed policy."""
    check_name(name)
    with Transaction(library) as tx:
        where = f"{DRAFTS_DIR if draft else 'item'}/{name}"
        content = validate_item(files, tx.base.policy, expected_name=name, where=where)
        item_path = f"{DRAFTS_DIR if draft else KIND_DIRS[content.kind]}/{content.name}"
        result = _admit(tx, content, draft, evidence, item_path)
    return _receipt(library, content, draft, result.commit, item_path)


def _admit(tx: Transaction, content: ItemContent, draft: bool, evidence: str | None,
           item_path: str, *, adopt: bool = False) -> CommitResult:
    existing = tx.base.taken_by(content.name)
    if existing is not None:
        raise ConflictError(
            f"the name {content.name!r} is taken by {existing}",
            hint="retain never overwrites: use `librarian revise` for a new revision, "
            "or choose another name",
        )
    what = f"draft {content.kind}" if draft else content.kind
    if adopt:
        tx.adopt_dir(item_path, content.files)  # exactly what was validated, in place
    else:
        tx.put_dir(item_path, content.files)
    return tx.commit(f"retain {what} {content.name}", trailers(
        "retain", item=item_path, kind=content.kind, digest=content.digest,
        evidence=evidence_text(evidence)))


def _receipt(library: Library, content: ItemContent, draft: bool, commit: str,
             item_path: str, *, in_place: bool = False) -> Receipt:
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
            "in_place": in_place,
        },
        warnings=content.warnings,
    )
