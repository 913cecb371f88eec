"""Planning a merge: an installed item with a local edit that upstream also changed.

The three sides of one item (spec §6.3): *base*, the locked upstream version (the item's
committed tree, whose digest is the lock's); *ours*, the work tree; *theirs*, the new
upstream (the admitted tree). The per-file merge itself is ``librarian.git.merge``'s;
this module reads the sides and turns the result into a ``MergeOutcome`` the plan carries.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from librarian.content.worktree import NotRegularFile, hash_files, read_work_files
from librarian.core.digest import MODE_EXECUTABLE, MODE_FILE
from librarian.core.model import ItemFile
from librarian.errors import UsageError
from librarian.git import (
    FileConflict,
    FileVersion,
    GitStore,
    ObjectId,
    describe_hunk,
    merge_files,
    merge_marked,
)
from librarian.library import Library


@dataclass(frozen=True, slots=True)
class MergeOutcome:
    """The merge of one item: the merged files (None on conflict), every file conflict,
    the work-tree files it starts from and the files both sides changed."""

    merged: tuple[ItemFile, ...] | None = field(metadata={"json": False})
    conflicts: tuple[FileConflict, ...]
    work: tuple[ItemFile, ...] = field(metadata={"json": False})
    combined: tuple[str, ...]  # paths changed on both sides, merged line by line
    problem: str | None = None  # why no merge could be tried (a link in the work tree…)
    #: on conflict, the files with git-style markers in the conflicting ones (None: a
    #: conflict no file can show: binary, mode, removed on one side)
    marked: tuple[ItemFile, ...] | None = field(default=None, metadata={"json": False})
    #: ``merged`` holds ``marked``: written with markers (``update --merge-conflicts``)
    markers: bool = False
    clean: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "clean", self.merged is not None and not self.markers)

    def with_markers(self) -> MergeOutcome:
        """The conflict's outcome as ``--merge-conflicts`` installs it: ``marked`` goes
        into the work tree."""
        assert self.marked is not None
        return MergeOutcome(self.marked, self.conflicts, self.work, self.combined,
                            marked=self.marked, markers=True)

    def summary(self) -> str:
        """One line: the conflicting files with their hunks, or what merged."""
        if self.problem is not None:
            return self.problem
        if self.merged is None:
            return "; ".join(conflict_line(c) for c in self.conflicts)
        both = f" ({', '.join(self.combined)} changed on both sides)" if self.combined else ""
        return "local edit merged with the upstream change" + both


def conflict_line(conflict: FileConflict) -> str:
    hunks = ", ".join(describe_hunk(h) for h in conflict.hunks)
    return f"{conflict.path}: {conflict.detail}" + (f": {hunks}" if hunks else "")


def _versions(files: Iterable[ItemFile]) -> dict[str, FileVersion]:
    return {f.path: FileVersion(MODE_EXECUTABLE if f.executable else MODE_FILE, f.data)
            for f in files}


def _files(versions: dict[str, FileVersion]) -> tuple[ItemFile, ...]:
    return tuple(ItemFile(p, v.mode == MODE_EXECUTABLE, v.data)
                 for p, v in sorted(versions.items()))


def plan_merge(
    library: Library, store: GitStore, library_path: str, committed: ObjectId,
    pin: str | None, upstream: ObjectId,
) -> MergeOutcome:
    """Merge the work tree at ``library_path`` (ours) with the new ``upstream`` tree
    (theirs) over the ``committed`` tree (base). Reads three small items; writes nothing."""
    try:
        base = store.read_files(committed)
        theirs = store.read_files(upstream)
    except UsageError as exc:
        return MergeOutcome(None, (), (), (), f"cannot merge: {exc.message}")
    if pin is not None and hash_files(base).digest != pin:
        # The committed tree is not the locked upstream version (an edit committed with
        # git): it is no base for a merge, and guessing one could drop the edit.
        return MergeOutcome(None, (), (), (), "local edit committed with git, changed "
                            "upstream (no locked base to merge over)")
    try:
        ours = read_work_files(library.path_of(library_path))
    except NotRegularFile as exc:
        return MergeOutcome(None, (), (), (), f"cannot merge: {exc.path.name} in the work "
                            "tree is not a regular file")
    base_v, ours_v, theirs_v = _versions(base), _versions(ours), _versions(theirs)
    result = merge_files(base_v, ours_v, theirs_v)
    combined = tuple(p for p in sorted(set(ours_v) & set(theirs_v))
                     if ours_v[p] != theirs_v[p] and ours_v[p] != base_v.get(p)
                     and theirs_v[p] != base_v.get(p))
    if result.files is None:
        marked = merge_marked(base_v, ours_v, theirs_v)
        return MergeOutcome(None, result.conflicts, ours, combined,
                            marked=_files(marked) if marked else None)
    if not result.files:
        return MergeOutcome(None, (), ours, combined,
                            "local edit removed every file the merge would keep")
    return MergeOutcome(_files(dict(result.files)), (), ours, combined)
