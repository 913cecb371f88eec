"""Judging upstream items: each one validated from its git tree.

``judge_item`` is one item's verdict, in two steps: ``examine`` reads and validates its
files and computes its ids (it only reads), ``admit`` acts on the result (the files kept
for staging, the kind remembered, a tree of its own when files were left out). An install
judges every item of a collection (``judge_items``).

Imports ``core``, ``content`` and ``store``; ``sources.upstream`` builds on it.
"""

from __future__ import annotations

import functools
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from librarian.content.sourcedir import IGNORE_FILE, IgnoreMatcher, ignore_spec
from librarian.content.validate import validate_item
from librarian.content.worktree import item_ids
from librarian.core.digest import MODE_EXECUTABLE, MODE_FILE
from librarian.core.gitpaths import segment_problem, visible
from librarian.core.model import ItemFile, Policy
from librarian.errors import ValidationError
from librarian.git import GitStore, ObjectId, TreeEntry
from librarian.library import remember_kind

MAX_DEPTH = 32


@dataclass(frozen=True, slots=True)  # one per item upstream: 10,000 in a large source
class UpstreamItem:
    path: str  # upstream path, e.g. skills/pdf
    tree: ObjectId  # git (SHA-1) tree id, identical in the library's store
    digest: str  # sha256:… (spec §2)
    #: nonconformities it is admitted with (empty for an item known from the lock, which
    #: is not read again)
    warnings: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class Skipped:
    path: str
    problems: tuple[str, ...]


class Examined(NamedTuple):
    """What ``examine`` found in a valid item: its files (sorted), their blob ids, the git
    tree id they make, their digest, the nonconformities, and whether files were left out
    (the default ignores, the item's ``.librarianignore``)."""

    files: tuple[ItemFile, ...]
    blobs: list[bytes]
    canonical: bytes
    digest: str
    warnings: tuple[str, ...]
    left_out: bool


Verdict = Examined | tuple[str, ...]  # the problems of an item that is skipped


@functools.lru_cache(maxsize=4096)  # names repeat across items: SKILL.md, scripts, ...
def unsafe_part(part: str) -> str | None:
    if part in ("", ".", ".."):
        return f"{part!r} is not a plain directory name"
    if "/" in part or "\\" in part or "\x00" in part:
        return f"{part!r} holds a path separator or NUL"
    if part.lower() == ".git":
        return "a .git directory cannot be stored"
    problem = segment_problem(part)  # git's own rules: git~1, .g\u200cit, CON, …
    if problem is not None:
        return f"{visible(part)!r} {problem}"
    try:
        part.encode("utf-8")
    except UnicodeEncodeError:
        return "a directory name is not valid UTF-8"
    return None


def judge_item(
    store: GitStore, path: str, tree: ObjectId, policy: Policy
) -> UpstreamItem | Skipped:
    """Validate one upstream item from its git tree; a Skipped lists every reason. What
    retain would ignore (the default ignores and the item's ``.librarianignore``) is left
    out, and the item then gets a tree of its own."""
    return admit(store, path, tree, examine(store, path, tree, policy))


def judge_items(store: GitStore, wanted: Sequence[tuple[str, ObjectId]],
                policy: Policy) -> list[UpstreamItem | Skipped]:
    """``judge_item`` of each (path, tree id) of ``wanted``, in order."""
    return [judge_item(store, path, tree, policy) for path, tree in wanted]


def examine(store: GitStore, path: str, tree: ObjectId, policy: Policy) -> Verdict:
    """The files of the item at ``tree``, validated and hashed; or its problems. Reads
    only."""
    problems: list[str] = []
    files: list[ItemFile] = []
    total = 0
    ignored = _ignores(store, tree, problems)
    left_out = 0
    for rel, entry in _entries(store, tree, problems):
        if ignored.match_file(rel):
            left_out += 1
        elif entry.mode == 0o120000:
            problems.append(f"{rel}: is a symbolic link (links are never admitted)")
        elif entry.mode == 0o160000:
            problems.append(f"{rel}: is a submodule (items hold regular files only)")
        elif entry.mode not in (MODE_FILE, MODE_EXECUTABLE):
            problems.append(f"{rel}: has an unsupported mode {entry.mode:o}")
        elif len(files) >= policy.max_item_files or total > policy.max_item_bytes:
            problems.append(f"holds more than {policy.max_item_files} files or "
                            f"{policy.max_item_bytes} bytes")
            break
        else:
            data = store.read_blob(entry.sha)
            total += len(data)
            files.append(ItemFile(rel, entry.mode == MODE_EXECUTABLE, data))
    if not problems:
        try:
            content = validate_item(files, policy, expected_name=path.rsplit("/", 1)[-1],
                                    where=path)
        except ValidationError as exc:
            problems.extend(exc.problems or (exc.message,))
        else:
            canonical, blobs, digest = item_ids(content.files)
            if left_out or canonical == tree:
                return Examined(content.files, blobs, canonical, digest, content.warnings,
                                bool(left_out))
            problems.append("its git tree is not in canonical form (empty directories, "
                            "unusual modes or entry order)")
    return tuple(dict.fromkeys(problems))


def admit(store: GitStore, path: str, tree: ObjectId, found: Verdict) -> UpstreamItem | Skipped:
    """The verdict on what ``examine`` found, with its effects on ``store``: the files kept
    for staging (staged from these bytes), the item's kind remembered, and the tree of its
    admitted files made where some were left out."""
    if not isinstance(found, Examined):
        return Skipped(path, found)
    if found.left_out:
        admitted = store.files_tree(found.files)
        store.checked.digests[admitted] = found.digest  # staging reads and checks it
        remember_kind(store, admitted, (f.path for f in found.files))
        return UpstreamItem(path, admitted, found.digest, found.warnings)
    store.checked.keep(tree, found.files, found.blobs, found.digest)
    remember_kind(store, tree, (f.path for f in found.files))
    return UpstreamItem(path, tree, found.digest, found.warnings)


def _ignores(store: GitStore, tree: ObjectId, problems: list[str]) -> IgnoreMatcher:
    """The default ignores plus the item's own ``.librarianignore``, as retain reads them."""
    entry = store.lookup(tree, IGNORE_FILE)
    if entry is None or entry.mode not in (MODE_FILE, MODE_EXECUTABLE):
        return ignore_spec()
    try:
        return ignore_spec(store.read_blob(entry.sha).decode("utf-8").splitlines())
    except UnicodeDecodeError:
        problems.append(f"{IGNORE_FILE}: is not valid UTF-8")
        return ignore_spec()


def _entries(store: GitStore, tree: ObjectId, problems: list[str],
             prefix: str = "", depth: int = 0) -> Iterator[tuple[str, TreeEntry]]:
    for name, entry in store.tree_items(tree).items():
        rel = prefix + name
        bad = unsafe_part(name)
        if bad is not None:
            problems.append(f"{rel!r}: {bad}")
            continue
        if stat.S_ISDIR(entry.mode):
            if depth >= MAX_DEPTH:
                problems.append(f"{rel}: nested deeper than {MAX_DEPTH} directories")
                continue
            yield from _entries(store, entry.sha, problems, rel + "/", depth + 1)
        else:
            yield rel, entry
