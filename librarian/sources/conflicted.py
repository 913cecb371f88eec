"""Items an ``update --merge-conflicts`` left conflicted, and ``resolve``.

Such an update installs upstream's new version (the commit, the lock) and writes the
conflicting files into the work tree with git-style markers (``git.merge.merge_marked``);
the item is then recorded here, in local state (``.git/librarian/conflicts.json``, as git
keeps unmerged paths in its index, never in a commit). While it is recorded, ``status``
shows it ``conflicted`` and ``update`` of its source refuses (exit 3), as ``git merge``
refuses over unmerged paths; ``check`` and the pre-commit hook refuse any item file
holding the markers, so they never reach a commit. ``resolve NAME`` ends it once no file
of the item holds markers: no commit is made; what the user kept is a local edit like any
other (``status`` shows it ``modified``, or ``clean`` when it equals upstream's version).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from librarian.content.worktree import NotRegularFile, read_work_files
from librarian.core.fsutil import atomic_write, read_regular
from librarian.errors import ConflictError, UsageError
from librarian.library import Library, refuse_linked_state

if TYPE_CHECKING:
    from librarian.core.receipts import Receipt


@dataclass(frozen=True, slots=True)
class Conflicted:
    name: str  # SOURCE:NAME
    source: str
    path: str  # library path
    files: tuple[str, ...]  # item-relative paths written with markers


def conflicted_items(library: Library) -> dict[str, Conflicted]:
    """library path -> the recorded conflicted item (empty when none is)."""
    raw = read_regular(library.conflicts_path)
    if not raw:
        return {}
    try:
        document = json.loads(raw)
        return {path: Conflicted(entry["name"], entry["source"], path, tuple(entry["files"]))
                for path, entry in document["items"].items()}
    except (ValueError, KeyError, TypeError):
        return {}  # damaged local state: nothing is recorded (check still sees markers)


def _write(library: Library, items: Mapping[str, Conflicted]) -> None:
    refuse_linked_state(library.git_dir)
    path = library.conflicts_path
    if not items:
        path.unlink(missing_ok=True)
        return
    document = {"version": 1, "items": {
        p: {"name": c.name, "source": c.source, "files": list(c.files)}
        for p, c in sorted(items.items())}}
    library.state_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(document, indent=1, sort_keys=True).encode() + b"\n")


def record_conflicts(library: Library, items: Iterable[Conflicted]) -> None:
    new = {c.path: c for c in items}
    if not new:
        return  # the usual update: no state read or written
    current = conflicted_items(library)
    current.update(new)
    _write(library, current)


def forget_source(library: Library, source: str) -> None:
    """``source remove``: its items, conflicted or not, are gone with it."""
    current = conflicted_items(library)
    rest = {p: c for p, c in current.items() if c.source != source}
    if rest != current:
        _write(library, rest)


def refuse_unresolved(library: Library, sources: Sequence[str]) -> None:
    """An update of a source holding a conflicted item is refused (exit 3)."""
    waiting = [c for c in conflicted_items(library).values() if c.source in sources]
    if waiting:
        names = ", ".join(c.name for c in waiting)
        raise ConflictError(
            f"update refused: {names} {'is' if len(waiting) == 1 else 'are'} conflicted "
            "(markers in the work tree); nothing was changed",
            hint="edit the files between <<<<<<< local and >>>>>>> upstream, then "
            + "; ".join(f"`librarian resolve {c.name}`" for c in waiting))


def resolve(library: Library, name: str) -> Receipt:
    """End the conflict of ``name`` (``SOURCE:NAME`` or its library path) once no file of
    it holds markers. Nothing is committed."""
    from librarian.core.markers import has_markers
    from librarian.core.receipts import Receipt

    items = conflicted_items(library)
    wanted = name.rstrip("/")
    found = next((c for c in items.values() if wanted in (c.name, c.path)), None)
    if found is None:
        listed = ", ".join(sorted(c.name for c in items.values())) or "none"
        raise UsageError(f"{name} is not conflicted (conflicted items: {listed})",
                         hint="`librarian status` shows them")
    try:
        files = read_work_files(library.path_of(found.path))
    except FileNotFoundError:
        files = ()
    except NotRegularFile as exc:
        raise ConflictError(f"{found.name}: {exc.path.name} is not a regular file; "
                            "nothing was changed") from None
    marked = [f.path for f in files if has_markers(f.data)]
    if marked:
        raise ConflictError(
            f"{found.name} still holds conflict markers in {', '.join(marked)}; it stays "
            "conflicted", hint="keep what you want between <<<<<<< local and >>>>>>> "
            "upstream, delete the marker lines, then resolve again")
    rest = {p: c for p, c in items.items() if p != found.path}
    _write(library, rest)
    return Receipt(kind="resolved", name=found.name, path=found.path, digest=None,
                   commit=None, details={"files": list(found.files)},
                   note="no commit: what you kept is a local edit (`librarian diff "
                   f"{found.name}` shows it against upstream)")
