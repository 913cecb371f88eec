"""``retain``: create-only admission of a skill or recipe, as one retention event."""

from __future__ import annotations

from pathlib import Path

from librarian.content.validate import load_source
from librarian.core.model import DRAFTS_DIR, KIND_DIRS, ItemContent
from librarian.core.receipts import Receipt
from librarian.errors import ConflictError
from librarian.store.gitstore import GitStore, ObjectId
from librarian.store.library import Library
from librarian.store.txn import DirChange, commit_changes, mutation

UNKNOWN_EVIDENCE = "unknown"


def taken_by(store: GitStore, tree: ObjectId | None, name: str) -> str | None:
    """The library path already using ``name`` (one name space for skills, recipes and
    drafts), or None."""
    for directory in (*KIND_DIRS.values(), DRAFTS_DIR):
        if store.lookup(tree, f"{directory}/{name}") is not None:
            return f"{directory}/{name}"
    return None


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
    content = load_source(source, library.config().policy, name=name)
    directory = DRAFTS_DIR if draft else KIND_DIRS[content.kind]
    item_path = f"{directory}/{content.name}"
    digest = content.digest
    with mutation(library) as store:
        base = store.head()
        tree = store.tree_of(base)
        existing = taken_by(store, tree, content.name)
        if existing is not None:
            raise ConflictError(
                f"the name {content.name!r} is taken by {existing}",
                hint="retain never overwrites: use `librarian revise` for a new revision, "
                "or choose another name",
            )
        what = f"draft {content.kind}" if draft else content.kind
        result = commit_changes(
            library,
            store,
            base=base,
            subject=f"retain {what} {content.name}",
            trailers=[
                ("Librarian-Event", "retain"),
                ("Librarian-Item", item_path),
                ("Librarian-Kind", content.kind),
                ("Librarian-Digest", digest),
                ("Librarian-Evidence", evidence_text(evidence)),
            ],
            changes=[DirChange(item_path, content.files)],
        )
    return Receipt(
        kind=receipt_kind(content, draft),
        name=content.name,
        path=item_path,
        digest=digest,
        commit=result.commit,
        details={
            "activation": "not_requested",
            "location": str(library.path_of(item_path)),
            "files": len(content.files),
            "bytes": content.total_bytes,
        },
        warnings=content.warnings,
    )
