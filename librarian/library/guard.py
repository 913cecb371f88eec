"""Refusing a hostile or half-finished library before anything is written (spec §2.7).

A work tree arriving by ``git pull`` can hold a symlink where librarian writes
(``skills/`` -> ``/home/you``); a git operation can be half done (a merge with conflicts);
``.git/librarian`` can hold links or a journal nobody trusts. Every changing command calls
``refuse_unsafe_library`` under the lock and before recovery, so such a library is
refused with exit 2 and nothing is written. Checks use ``lstat`` only and never follow a
link.

Imported by ``txn``, ``library`` and ``lock``; imports ``indexscan``, ``indexmemo``, core,
errors and dulwich's config reader only.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Iterable
from pathlib import Path

from librarian.core.gitpaths import visible
from librarian.core.model import DRAFTS_DIR, KIND_DIRS, SOURCES_DIR
from librarian.errors import UsageError
from librarian.formats.claude_plugin import PLUGIN_DIR
from librarian.git import core_worktree

#: Top-level entries librarian writes into (the folders and the committed files).
WRITTEN_TOP = (*KIND_DIRS.values(), DRAFTS_DIR, SOURCES_DIR, "library.yaml", "tools.yaml",
               "librarian.lock", ".gitattributes", PLUGIN_DIR)
#: Entries of ``.git/librarian`` whose children are also checked.
STATE_FOLDERS = ("stage", "trash", "cache", "runs")
#: Those that reading commands open (checked before they read, without the lock): a
#: transaction's stage and trash are opened under the lock only, while another command
#: may be removing them.
READ_FOLDERS = ("cache", "runs")
#: Files of ``.git`` that say a git operation is not finished.
UNFINISHED = {
    "MERGE_HEAD": "a merge", "CHERRY_PICK_HEAD": "a cherry-pick", "REVERT_HEAD": "a revert",
    "rebase-merge": "a rebase", "rebase-apply": "a rebase or git am",
}


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(path.lstat().st_mode)
    except FileNotFoundError:
        return False


def _refuse_link(path: Path, shown: str) -> None:
    if _is_link(path):
        raise UsageError(
            f"{shown} is a symbolic link; librarian never writes through one",
            hint=f"replace it with a real directory or file (git rm {shown}), then retry",
            path=str(path),
        )


def refuse_linked_state(git_dir: Path, state: Path | None = None, *,
                        folders: Collection[str] = STATE_FOLDERS) -> None:
    """``.git`` itself, ``.git/librarian`` and the entries librarian opens there: none may be a
    symbolic link (local state is opened without following links). ``state``: the state
    folder of a library kept in a folder of the repository (below ``.git/librarian``),
    checked the same way, with each folder on the way to it. ``folders``: whose children
    are checked too; all of them under the library lock, the ``READ_FOLDERS`` of a reading
    command, none before the lock is taken."""
    top = git_dir / "librarian"
    _refuse_link(git_dir, ".git")
    _refuse_link(top, ".git/librarian")
    _refuse_links_in(top, ".git/librarian", folders)
    if state is not None and state != top:
        for folder in reversed(state.relative_to(top).parents[:-1]):
            _refuse_link(top / folder, f".git/librarian/{folder.as_posix()}")
        shown = ".git/" + state.relative_to(git_dir).as_posix()
        _refuse_link(state, shown)
        _refuse_links_in(state, shown, folders)


def _refuse_links_in(state: Path, shown_dir: str, folders: Collection[str]) -> None:
    if not state.is_dir():
        return
    with os.scandir(state) as entries:
        for entry in entries:
            shown = f"{shown_dir}/{entry.name}"
            if entry.is_symlink():
                _refuse_link(Path(entry.path), shown)
            elif entry.name in folders and entry.is_dir(follow_symlinks=False):
                try:
                    with os.scandir(entry.path) as children:
                        for child in children:
                            if child.is_symlink():
                                _refuse_link(Path(child.path), f"{shown}/{child.name}")
                except FileNotFoundError:
                    continue  # removed since it was listed: nothing in it to follow


def refuse_linked_paths(root: Path, paths: Iterable[str]) -> None:
    """Every top-level entry librarian writes, and every ancestor of ``paths`` (library
    paths a change is about to write), must be real: no link on the way out."""
    for name in WRITTEN_TOP:
        _refuse_link(root / name, name)
    # Each ancestor once (an install names 10,000 paths under one collection directory),
    # and nothing below an entry that is not there: it cannot hold a link.
    present: dict[str, bool] = {}
    for path in paths:
        parts = path.split("/")
        for depth in range(1, len(parts) + 1):
            partial = "/".join(parts[:depth])
            there = present.get(partial)
            if there is None:
                there = present[partial] = _real_entry(root / partial, partial)
            if not there:
                break


def refuse_committed_non_directory(name: str, mode: int | None) -> None:
    """A top-level directory librarian writes into (``.claude-plugin``) committed as a
    symbolic link or a file: refused before anything is written, naming it."""
    if mode is None or stat.S_ISDIR(mode):
        return
    what = "a symbolic link" if stat.S_ISLNK(mode) else "a file"
    raise UsageError(f"{name} is committed as {what}; librarian writes files into it "
                     "and never through a link",
                     hint=f"replace it with a real directory (git rm {name}; commit), then "
                     "retry: the next change writes its manifests")


def _real_entry(path: Path, shown: str) -> bool:
    """Whether ``path`` exists; a UsageError if it is a symbolic link."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(mode):
        _refuse_link(path, shown)
    return True


def refuse_unfinished_git(git_dir: Path, has_head: bool, conflicted: Iterable[str],
                          worktree_config: str | None) -> None:
    """A half-done merge, rebase or cherry-pick, a conflicted index, an unborn branch or a
    ``core.worktree`` elsewhere: a librarian commit on top would be wrong, so refuse."""
    for name, what in UNFINISHED.items():
        if (git_dir / name).exists():
            raise UsageError(
                f"the library is in the middle of {what} (.git/{name} exists)",
                hint="finish it (git commit, git rebase --continue) or abort it, then retry",
            )
    first = next(iter(conflicted), None)
    if first is not None:
        raise UsageError(
            f"the git index has unresolved conflicts ({visible(first)})",
            hint="resolve them and commit (or git merge --abort), then retry",
        )
    if worktree_config is not None:
        raise UsageError(
            f"core.worktree is set ({worktree_config!r}); librarian works only in the work "
            "tree that holds .git",
            hint="unset it (git config --unset core.worktree) or use a plain clone",
        )
    if not has_head:
        raise UsageError(
            "the current branch has no commit yet (library.yaml is not committed)",
            hint="commit the library first (git add -A && git commit) or run `librarian init`",
        )


def conflicted_paths(index_path: Path) -> list[str]:
    """Paths of the index entries in a merge stage (1-3): only the stage bits of each
    entry's flags are read (7 ms for 20,000 entries, where a full read costs 30 ms), and
    nothing when the index is one librarian wrote from a clean one (``indexmemo``)."""
    # Imported here: only changing commands read the index; a status does not pay for it.
    from librarian.git import known_clean, scan_index

    if known_clean(index_path):  # the index librarian last wrote, from a clean one
        return []
    try:
        data = index_path.read_bytes()
    except FileNotFoundError:
        return []
    scan = scan_index(data)
    offsets = scan.offsets
    return [os.fsdecode(scan.name_at(i)) for i in range(scan.count)
            if data[offsets[i] + 60] & 0x30]


def refuse_unsafe_library(root: Path, has_head: bool, repo_root: Path | None = None,
                          state: Path | None = None) -> None:
    """Everything a changing command checks before it writes (and before recovery).
    ``repo_root``: the work tree holding ``.git`` when the library is a folder in it, each
    folder on the way to the library real; ``state``: that library's state folder. What the
    project holds uncommitted elsewhere is none of this: only a git operation half done."""
    from librarian.git import IndexFormatError  # see conflicted_paths

    top = repo_root or root
    git_dir = top / ".git"
    refuse_linked_state(git_dir, state)
    if repo_root is not None:
        parts = root.relative_to(repo_root).parts
        for depth in range(1, len(parts) + 1):
            _refuse_link(repo_root.joinpath(*parts[:depth]), "/".join(parts[:depth]))
    refuse_linked_paths(root, ())
    try:
        conflicted = conflicted_paths(git_dir / "index")
    except (IndexFormatError, OSError):
        conflicted = []  # the index splice reports a damaged index itself, with its reason
    worktree = core_worktree(git_dir)
    refuse_unfinished_git(git_dir, has_head, conflicted, worktree)
