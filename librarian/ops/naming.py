"""The item a read-only command names, or what the name is when it is no committed item:
an untracked item directory (``skills/x`` written by hand or by an agent) is said to be
untracked, with the command that admits it where it stands."""

from __future__ import annotations

import stat

from librarian.core.model import DRAFTS_DIR, KIND_DIRS
from librarian.errors import UsageError
from librarian.library import Item, Snapshot


def find_named(snapshot: Snapshot, name: str) -> Item:
    """``snapshot.find(name)``; for a name no committed item has but an untracked item
    directory does, a UsageError saying so and how to retain it."""
    try:
        return snapshot.find(name)
    except UsageError:
        untracked = untracked_path(snapshot, name)
        if untracked is None:
            raise
        draft = " --draft" if untracked.startswith(f"{DRAFTS_DIR}/") else ""
        raise UsageError(
            f"{untracked} is untracked: not retained yet, so it has no committed content",
            hint=f"retain it where it stands: `librarian retain {untracked}{draft}`",
            path=untracked) from None


def untracked_path(snapshot: Snapshot, name: str) -> str | None:
    """The library path of an uncommitted item directory called ``name`` (or at the path
    ``name``), or None. Never follows a link."""
    wanted = name.rstrip("/")
    candidates = [wanted] if "/" in wanted else [
        f"{directory}/{wanted}" for directory in (*KIND_DIRS.values(), DRAFTS_DIR)]
    for path in candidates:
        if path.split("/", 1)[0] not in (*KIND_DIRS.values(), DRAFTS_DIR) or (
                path.count("/") != 1):
            continue
        try:
            mode = snapshot.library.path_of(path).lstat().st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode) and snapshot.lookup(path) is None:
            return path
    return None
