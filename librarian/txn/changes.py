"""What a transaction changes: a directory, a top-level file, or a path set to a stored tree."""

from __future__ import annotations

from dataclasses import dataclass

from librarian.core.model import ItemFile
from librarian.git import ObjectId, TreeEntry


@dataclass(frozen=True, slots=True)
class DirChange:
    """Set a directory to ``files``; ``None`` removes it. ``adopt``: the path is untracked
    and the work tree already holds exactly ``files`` there (``retain`` of an item written in
    place); the commit checks that instead of refusing an untracked path."""

    path: str
    files: tuple[ItemFile, ...] | None
    adopt: bool = False


@dataclass(frozen=True, slots=True)
class FileChange:
    """Set a top-level file such as tools.yaml to ``data``; ``None`` removes it."""

    path: str
    data: bytes | None


@dataclass(frozen=True, slots=True)
class TreeChange:
    """Set a directory to a tree already in the object store (e.g. fetched from a source);
    ``None`` removes it. When ``digest`` is given, the staged copy must hash to it."""

    path: str
    tree: ObjectId | None
    digest: str | None = None
    #: what the work tree gets instead of ``tree`` (a merged local edit, already in the
    #: store): the commit and the index hold ``tree``, so the difference shows as modified
    work: ObjectId | None = None
    #: the caller checked that the work tree holds exactly the base commit's tree at
    #: ``path``: only the entries that differ from it are staged and swapped (``EntryChange``)
    work_is_base: bool = False


@dataclass(frozen=True, slots=True)
class EntryChange:
    """One entry inside a directory changed in place (``TreeChange.work_is_base``): set
    ``path`` to a blob or tree of the new commit, or remove it (``None``). The commit is
    built already; only the work tree and the index follow it, entry by entry."""

    path: str
    entry: TreeEntry | None


Change = DirChange | FileChange | TreeChange | EntryChange


def work_trees(changes: tuple[Change, ...] | list[Change]) -> tuple[tuple[int, str], ...]:
    """(change number, tree) of each change whose work tree differs from the commit."""
    return tuple((number, change.work.decode()) for number, change in enumerate(changes)
                 if isinstance(change, TreeChange) and change.work is not None)


@dataclass(frozen=True, slots=True)
class CommitResult:
    commit: str  # hex id of the new commit
    base: str | None
