"""The journal of a transaction in flight: ``.git/librarian/journal.json``.

Written once, after the new commit and the staged work tree exist and before the branch
moves; read only by recovery. It is local state that anything with write access to
``.git`` can forge, so every field is checked before it is used: the transaction id names
a directory under ``stage/`` and ``trash/``, and each path must stay inside the work tree.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from librarian.core.fsutil import atomic_write
from librarian.errors import UsageError
from librarian.git import is_branch_ref
from librarian.library import Library

_TX = re.compile(r"[0-9a-f]{12}")
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class Journal:
    tx: str  # names stage/<tx>/ and trash/<tx>/
    branch: str  # refs/heads/…
    base: str | None  # the commit the branch held before
    new: str  # the commit the branch moves to
    paths: tuple[str, ...]  # work-tree paths swapped, in order (slot i = paths[i])
    #: (slot, tree) of each path whose work tree differs from the commit (a merged edit)
    work: tuple[tuple[int, str], ...] = ()
    #: the library's folder in its repository ("" at the top); ``paths`` are below it
    prefix: str = ""

    def work_of(self) -> dict[int, bytes]:
        return {number: tree.encode() for number, tree in self.work}

    def write(self, library: Library) -> None:
        document = {"tx": self.tx, "branch": self.branch, "base": self.base,
                    "new": self.new, "paths": list(self.paths),
                    "work": {str(n): tree for n, tree in self.work}, "prefix": self.prefix}
        atomic_write(library.journal_path, json.dumps(document, indent=1).encode())

    @classmethod
    def read(cls, library: Library) -> Journal | None:
        """The journal, or None when there is none (or it is not even JSON, which
        ``atomic_write`` never leaves: garbage is removed). A journal whose fields are not
        what librarian writes is refused (exit 2) rather than acted upon."""
        try:
            document = json.loads(library.journal_path.read_bytes())
        except FileNotFoundError:
            return None
        except ValueError:
            library.journal_path.unlink()
            return None
        try:
            return cls._parse(document)
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(
                f"{library.journal_path} was not written by librarian ({exc}); nothing was "
                "changed",
                hint="if no librarian command was interrupted, remove the file",
            ) from None

    @classmethod
    def _parse(cls, document: object) -> Journal:
        if not isinstance(document, dict):
            raise TypeError("not an object")
        tx, branch, base, new = (document[k] for k in ("tx", "branch", "base", "new"))
        paths = document["paths"]
        if not isinstance(tx, str) or not _TX.fullmatch(tx):
            raise ValueError("bad transaction id")
        if not isinstance(branch, str) or not is_branch_ref(branch):
            raise ValueError("bad branch")
        for commit in (base, new):
            if commit is not None and (not isinstance(commit, str)
                                       or not _COMMIT.fullmatch(commit)):
                raise ValueError("bad commit id")
        if new is None or not isinstance(paths, list) or not all(map(is_work_path, paths)):
            raise ValueError("bad paths")
        prefix = document.get("prefix", "")
        if not isinstance(prefix, str) or (prefix and not is_work_path(prefix)):
            raise ValueError("bad prefix")
        return cls(tx, branch, base, new, tuple(paths), _work(document.get("work"), len(paths)),
                   prefix)


def _work(value: object, count: int) -> tuple[tuple[int, str], ...]:
    """The journal's ``work`` (absent in journals of older versions): slot -> tree id."""
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise TypeError("bad work trees")
    out = []
    for key, tree in value.items():
        if not (isinstance(key, str) and key.isdigit() and int(key) < count
                and isinstance(tree, str) and _COMMIT.fullmatch(tree)):
            raise ValueError("bad work tree")
        out.append((int(key), tree))
    return tuple(sorted(out))




def is_work_path(path: object) -> bool:
    """A relative path inside the work tree and outside ``.git``, as librarian writes them."""
    if not isinstance(path, str) or not path or "\\" in path or "\x00" in path:
        return False
    parts = path.split("/")
    return all(p not in ("", ".", "..") for p in parts) and parts[0].lower() != ".git"
