"""``init``: a new library from the template, with its first commit."""

from __future__ import annotations

import errno
import os
import re
import shutil
from dataclasses import replace
from pathlib import Path

from librarian.core.events import trailers
from librarian.core.model import DRAFTS_DIR, KIND_DIRS, SOURCES_DIR
from librarian.core.names import check_name, is_valid_name
from librarian.core.receipts import Receipt
from librarian.core.resources import template_dir
from librarian.errors import ConflictError, UsageError
from librarian.formats.config import LIBRARY_FILE, dump_library_config, load_library_config
from librarian.git import GitStore
from librarian.library import (
    GeneratedFiles,
    Library,
    enclosing_repo,
    is_library,
)
from librarian.txn import FileChange, Transaction

#: Template entries that are material for demos and tests, not part of a new library.
_NOT_COPIED = {"examples"}


#: Why a directory cannot hold a library: a parent that is a file or missing on a virtual
#: file system (/proc), no permission, a read-only file system. Bad input, not a bug.
_NOT_WRITABLE = frozenset({errno.ENOTDIR, errno.ENOENT, errno.EACCES, errno.EPERM,
                           errno.EROFS, errno.EEXIST, errno.EISDIR})


def _cannot_write(root: Path, exc: OSError) -> UsageError:
    """The one line for a directory a library cannot be created in."""
    where = os.fsdecode(exc.filename) if exc.filename else str(root)
    detail = f" ({where})" if where != str(root) else ""
    return UsageError(f"cannot create a library at {root}: {exc.strerror or exc}{detail}",
                      hint="choose a directory you can write to", path=str(root))


def default_name(path: Path) -> str:
    candidate = re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9-]", "-", path.name.lower())).strip("-")
    return candidate[:64].strip("-") if is_valid_name(candidate[:64].strip("-")) else "library"


def _template_files(name: str) -> list[FileChange]:
    root = template_dir()
    changes = []
    for path in sorted(root.iterdir()):
        if path.name in _NOT_COPIED or path.name == "__pycache__" or not path.is_file():
            continue
        data = path.read_bytes()
        if path.name == LIBRARY_FILE:
            config = load_library_config(data, str(path))
            data = dump_library_config(replace(config, name=name))
        changes.append(FileChange(path.name, data))
    return changes


def init_library(path: Path, name: str | None = None,
                 generated: tuple[GeneratedFiles, ...] = (), *,
                 own_repo: bool = False) -> Receipt:
    """A new library at ``path``, whose first commit holds the template (and the
    ``generated`` files its makers derive from it). Inside a git work tree it is a folder
    of that repository, committed with the project (its first commit touches only that
    folder), unless ``own_repo``; elsewhere, or with ``own_repo``, a repository of its own."""
    root = path.expanduser().absolute()
    if is_library(root):
        raise ConflictError(f"{root} is already a library")
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} exists and is not a directory")
    if root.is_dir() and any(root.iterdir()):
        raise UsageError(f"{root} is not empty", hint="choose a new or empty directory")
    library_name = check_name(name, "library name") if name is not None else default_name(root)
    changes = _template_files(library_name)
    repo = None if own_repo else enclosing_repo(root)
    created = [p for p in (root, *root.parents) if not p.exists()]
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _cannot_write(root, exc) from None
    try:
        if repo is None:
            GitStore.initialise(root).close()
        library = Library(root, generated, repo)
        with Transaction(library, first=True) as tx:
            for change in changes:
                tx.change(change)
            result = tx.commit(f"init library {library_name}",
                               trailers("init", library=library_name))
        for directory in (*KIND_DIRS.values(), DRAFTS_DIR, SOURCES_DIR):
            (root / directory).mkdir(exist_ok=True)
    except BaseException as exc:
        # Nothing half-made stays behind: the directory was new or empty.
        if created:
            shutil.rmtree(created[-1], ignore_errors=True)
        else:
            for child in root.iterdir():
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        if isinstance(exc, OSError) and exc.errno in _NOT_WRITABLE:
            raise _cannot_write(root, exc) from None
        raise
    details: dict[str, object] = {"own_repository": repo is None}
    note = None
    if repo is not None:
        details.update(repository=str(repo), prefix=library.prefix)
        note = (f"a folder of the repository at {repo}, committed with it (no repository of "
                "its own; --own-repo makes one)")
    return Receipt(
        kind="library",
        name=library_name,
        path=str(root),
        digest=None,
        commit=result.commit,
        details=details,
        note=note,
    )
