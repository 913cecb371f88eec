"""``retain``: create-only admission of skills and recipes, as one retention event (one
commit, however many items)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from librarian.content.validate import load_source, validate_item
from librarian.core.events import trailers
from librarian.core.manifests import ItemContent
from librarian.core.model import DRAFTS_DIR, KIND_DIRS, ItemFile
from librarian.core.names import check_name
from librarian.core.receipts import Receipt
from librarian.errors import ConflictError, UsageError
from librarian.library import Library, head_policy
from librarian.txn import CommitResult, Transaction

UNKNOWN_EVIDENCE = "unknown"


def evidence_text(evidence: str | None) -> str:
    # Missing evidence is recorded as "unknown", never as a low score (spec §2.15).
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
    return retain_all(library, [source], name=name, draft=draft, evidence=evidence)[0]


def retain_all(
    library: Library,
    sources: Sequence[Path],
    *,
    name: str | None = None,
    draft: bool = False,
    evidence: str | None = None,
) -> tuple[Receipt, ...]:
    """Admit every source in ONE commit, as a package manager installs several packages:
    all are judged first, and one refused (invalid, a name taken, two of one name) leaves
    the library as it was. ``name`` asserts the name of the one source."""
    if name is not None and len(sources) != 1:
        raise UsageError("--name names one item; retain several sources without it")
    # Judged before the lock is taken (reading and scanning a large source takes time a
    # concurrent writer would spend waiting); judged again only if the committed policy
    # moved in between.
    policy = head_policy(library)
    contents = [load_source(source, policy, name=name, capture=draft) for source in sources]
    with Transaction(library) as tx:
        if tx.base.policy != policy:
            contents = [load_source(source, tx.base.policy, name=name, capture=draft)
                        for source in sources]
        placed = []
        for source, content in zip(sources, contents, strict=True):
            item_path, as_draft, adopt = _place(library, source, content, draft)
            placed.append((content, item_path, as_draft, adopt))
        _refuse_twice([content for content, *_ in placed], sources)
        if len(placed) == 1:
            content, item_path, as_draft, adopt = placed[0]
            commit = _admit(tx, content, as_draft, evidence, item_path, adopt=adopt).commit
        else:
            commit = _admit_all(tx, placed, evidence).commit
    return tuple(_receipt(library, content, as_draft, commit, item_path, in_place=adopt)
                 for content, item_path, as_draft, adopt in placed)


def _refuse_twice(contents: Sequence[ItemContent], sources: Sequence[Path]) -> None:
    seen: dict[str, Path] = {}
    for content, source in zip(contents, sources, strict=True):
        if content.name in seen:
            raise UsageError(f"{seen[content.name]} and {source} are both the item "
                             f"{content.name!r}; nothing was retained",
                             hint="retain one of them, or give the other another name")
        seen[content.name] = source


def _admit_all(tx: Transaction, placed: Sequence[tuple[ItemContent, str, bool, bool]],
               evidence: str | None) -> CommitResult:
    """Several items, one commit: ``Librarian-Item``, ``-Kind`` and ``-Digest`` repeat in
    step, one of each per item, in the order given."""
    for content, item_path, _, adopt in placed:
        _refuse_taken(tx, content)
        if adopt:
            tx.adopt_dir(item_path, content.files)
        else:
            tx.put_dir(item_path, content.files)
    names = ", ".join(content.name for content, *_ in placed)
    return tx.commit(f"retain {len(placed)} items: {names}", trailers(
        "retain", item=[p for _, p, _, _ in placed], kind=[c.kind for c, *_ in placed],
        digest=[c.digest for c, *_ in placed], evidence=evidence_text(evidence)))


def _refuse_taken(tx: Transaction, content: ItemContent) -> None:
    existing = tx.base.taken_by(content.name)
    if existing is not None:
        raise ConflictError(
            f"the name {content.name!r} is taken by {existing}",
            hint="retain never overwrites: use `librarian revise` for a new revision, "
            "or choose another name",
        )


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
    _refuse_taken(tx, content)
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
