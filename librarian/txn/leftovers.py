"""Files a killed librarian command leaves behind, and only those, cleared by recovery.

Recovery runs under the library lock, so no other librarian command is running; plain git
may be. Each rule below therefore names a file no git command makes, or one whose content
proves librarian made it:

- ``.git/librarian/.*.tmp`` and ``.git/librarian/cache/.*.tmp``: ``atomic_write``'s
  temporary files (the journal's, the approvals', the memos'); ``.git/librarian`` is
  librarian's alone. ``.git/hooks/.<hook>.*.tmp`` for
  the hooks librarian ships: a killed ``hooks install``.
- ``.git/objects/??/<id>.lock``, ``objects/pack/tmp*.pack`` and ``pack-*.idx.lock``:
  dulwich's while it writes a loose object or a pack (git's own are ``tmp_obj_*``,
  ``tmp_pack_*`` and ``tmp_idx_*``); and ``.git/refs/librarian/**/*.lock``: refs only
  librarian moves.
- ``.git/.shallow.*.tmp``: a fetch's new shallow boundary being written (git's own is
  ``shallow.lock``).
- ``.git/objects/incoming-librarian-*/``: a fetch's quarantine (``git.quarantine``; git's
  own is ``tmp_objdir-incoming-*``), with a pack it had moved into ``objects/pack`` while
  its index was still in the quarantine.
- ``.git/<branch>.lock`` holding nothing or the journal's new commit: the compare-and-swap
  of a journaled transaction, killed between taking git's lock and renaming it.
- ``.git/index.lock`` holding ``HELD_INDEX``: taken by ``hold_index`` (here) before the
  branch moved; or while ``.git/librarian/index-splice`` names the journal's transaction:
  the new index being written into it (the marker is written just before and removed
  after the rename).

Anything else stays, and the command that trips on it names it (exit 3).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from librarian.core.resources import hooks_dir
from librarian.errors import ConflictError
from librarian.git import sweep
from librarian.library import Library
from librarian.txn.journal import Journal

#: Written by ``apply`` around the index splice: the transaction id.
INDEX_MARKER = "index-splice"
#: What ``hold_index`` writes into git's index.lock while it holds it (an index
#: starts with "DIRC", so no git command writes this).
HELD_INDEX = b"librarian holds the index for transaction "


def index_marker(library: Library) -> Path:
    return library.state_dir / INDEX_MARKER


def hold_index(library: Library, tx: str) -> None:
    """Take git's index.lock before the branch moves and keep it until the index is
    written, as git does: a plain ``git commit`` in between would build on the old index.
    It holds ``HELD_INDEX`` + the transaction until the new index is written into it, so
    recovery knows it as librarian's. A lock held already is exit 3, nothing changed."""
    lock = library.git_dir / "index.lock"
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        raise ConflictError(
            "the git index is locked (.git/index.lock exists); nothing was changed",
            hint="another git command is running; if none is, remove .git/index.lock",
        ) from None
    try:
        os.write(fd, HELD_INDEX + tx.encode() + b"\n")
    finally:
        os.close(fd)


def release_index(library: Library) -> None:
    """Give back a lock ``hold_index`` took (when the change did not go ahead)."""
    lock = library.git_dir / "index.lock"
    with contextlib.suppress(OSError):
        if lock.read_bytes().startswith(HELD_INDEX):
            lock.unlink()


def clear_leftovers(library: Library, journal: Journal | None) -> list[str]:
    """Remove what a killed librarian command left; the paths removed, relative to .git."""
    git_dir = library.git_dir
    found: list[Path] = []
    if library.state_dir.is_dir():
        found += [p for p in library.state_dir.glob(".*.tmp") if p.is_file()]
        cache = library.state_dir / "cache"
        if cache.is_dir() and not cache.is_symlink():  # the memos' (cache/memo.py)
            found += [p for p in cache.glob(".*.tmp") if p.is_file()]
    found += [p for p in (git_dir / "objects").glob("??/*.lock") if p.is_file()]
    found += [p for p in git_dir.glob(".shallow.*.tmp") if p.is_file()]
    packs = git_dir / "objects" / "pack"
    found += [p for pattern in ("tmp*.pack", "pack-*.lock") for p in packs.glob(pattern)
              if p.is_file()]
    hooks = {p.name for p in hooks_dir().iterdir()}
    found += [p for p in (git_dir / "hooks").glob(".*.tmp")
              if p.name[1:].split(".", 1)[0] in hooks and p.is_file()]
    own_refs = git_dir / "refs" / "librarian"
    if own_refs.is_dir():
        found += [p for p in own_refs.rglob("*.lock") if p.is_file()]
    marker = index_marker(library)
    with contextlib.suppress(OSError):
        if (git_dir / "index.lock").read_bytes().startswith(HELD_INDEX):
            found.append(git_dir / "index.lock")
    if journal is not None:
        branch_lock = git_dir.joinpath(*f"{journal.branch}.lock".split("/"))
        with contextlib.suppress(OSError):
            if branch_lock.read_bytes().strip() in (b"", journal.new.encode()):
                found.append(branch_lock)
        with contextlib.suppress(OSError):
            if marker.read_text().strip() == journal.tx and (git_dir / "index.lock").is_file():
                found.append(git_dir / "index.lock")
    removed = [p.relative_to(git_dir).as_posix() for p in sweep(git_dir / "objects")]
    for path in found:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed.append(path.relative_to(git_dir).as_posix())
    if journal is None:  # no transaction in flight: a marker left is stale
        marker.unlink(missing_ok=True)
    return removed
