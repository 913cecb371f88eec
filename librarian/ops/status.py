"""``status``: what in the work tree differs from the committed library.

Compares SHA-1 tree ids (read from HEAD in one pass) with the work tree's ids (from the stat
cache, re-reading only directories whose files changed), so a clean library of 10,000
items is checked without reading a single file's content; on two processors a forked
child looks at half of the items (``WorkTreeCache.look_ahead``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from librarian.cache import DigestCache, TreeMemo, WorkTreeCache
from librarian.content.worktree import NotRegularFile, hash_work_dir
from librarian.core.digest import MODE_TREE
from librarian.core.model import DRAFTS_DIR, KIND_DIRS, SOURCES_DIR
from librarian.errors import UsageError
from librarian.formats.config import LIBRARY_FILE, LOCK_FILE, TOOLS_FILE, LockedSource
from librarian.git import GitIgnores, GitStore, ObjectId, TreeEntry, blob_sha1
from librarian.library import Item, Library, Snapshot

State = Literal["clean", "modified", "missing", "untracked", "conflicted"]
TOP_FILES = (LIBRARY_FILE, TOOLS_FILE, LOCK_FILE)
RECOVER_HINT = ("an interrupted change is pending (a command was killed mid-way): run "
                "`librarian recover` to finish or roll it back (the next changing command "
                "does it too)")
ITEM_TOPS = frozenset((*KIND_DIRS.values(), DRAFTS_DIR, SOURCES_DIR))
CONFIG_HINT = (f"{LIBRARY_FILE} has uncommitted changes: every command follows the committed "
               f"{LIBRARY_FILE}; commit the edit for it to take effect "
               f"(`git commit {LIBRARY_FILE}`)")


@dataclass(frozen=True, slots=True)  # one per item: 10,000 in a large library
class ItemStatus:
    name: str
    kind: str
    state: str  # retained | draft | managed | untracked
    path: str
    status: State
    digest: str | None  # what the work tree holds now
    committed: str | None  # what the last commit holds
    locked: str | None = None  # a managed item: the digest librarian.lock pins


@dataclass(frozen=True, slots=True)
class ToolStatus:
    name: str
    recipe: str
    pinned: str
    status: Literal["ok", "stale"]
    reason: str | None = None
    #: whether this machine enforces the recipe's declared effects (None: stale tool)
    enforceable: bool | None = None
    not_enforceable: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FileStatus:
    path: str
    status: State


@dataclass(frozen=True, slots=True)
class StatusReport:
    items: tuple[ItemStatus, ...]
    tools: tuple[ToolStatus, ...]
    files: tuple[FileStatus, ...]
    hints: tuple[str, ...] = ()  # what to do about what is listed
    interrupted: bool = False  # a change's journal is pending: `librarian recover`
    #: what `check` rejects in the generated files (asked for by `status --check` only)
    generated: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        return (
            not self.interrupted and not self.generated
            and all(i.status == "clean" for i in self.items)
            and all(t.status == "ok" for t in self.tools)
            and all(f.status == "clean" for f in self.files)
        )

    def changed(self) -> tuple[ItemStatus, ...]:
        return tuple(i for i in self.items if i.status != "clean")


def _work_entries(library: Library) -> tuple[set[str], list[str]]:
    """Library paths under skills/, recipes/ and drafts/: the directories (items) and
    anything else (strays). One scandir each, no stat."""
    dirs: set[str] = set()
    strays: list[str] = []
    for top in (*KIND_DIRS.values(), DRAFTS_DIR):
        try:
            with os.scandir(library.root / top) as entries:
                for entry in entries:
                    path = f"{top}/{entry.name}"
                    if entry.is_dir(follow_symlinks=False):
                        dirs.add(path)
                    else:
                        strays.append(path)
        except (FileNotFoundError, NotADirectoryError):
            continue
    return dirs, sorted(strays)


def _exists(library: Library, path: str) -> bool:
    target = library.path_of(path)
    return target.exists() or target.is_symlink()


def generated_problems(library: Library, store: GitStore, snapshot: Snapshot,
                       items: Iterable[Item]) -> tuple[str, ...]:
    """What ``check`` says of the generated files in the work tree, against HEAD."""
    skills = {item.path for item in items if item.state != "draft" and (
        item.kind == "skill" or item.state == "managed")}
    out: list[str] = []
    for maker in library.generated:
        found: dict[str, bytes | None] = {}
        for path in maker.paths:
            target = library.path_of(path)
            found[path] = (target.read_bytes() if target.is_file() and not target.is_symlink()
                           else None)
        out += maker.problems(found, maker.expected(store, snapshot.tree), skills)
    return tuple(dict.fromkeys(out))


def library_status(library: Library, *, judge_generated: bool = False) -> StatusReport:
    """``judge_generated``: also what ``check`` rejects in the generated files (a walk of
    the committed items: ``status --check`` only)."""
    with library.store() as store:
        snapshot = Snapshot.head(library, store)
        work_cache = WorkTreeCache(library.cache_dir)
        digests = DigestCache(library.cache_dir)
        present, strays = _work_entries(library)
        # A file where only item directories belong, which no commit holds, is untracked
        # (`check` says why it does not belong).
        untracked = tuple(FileStatus(path, "untracked") for path in strays
                          if snapshot.lookup(path) is None)
        files = (*_file_statuses(snapshot), *untracked)
        pins = _Pins(snapshot)
        interrupted = library.journal_path.exists()
        items = tuple(snapshot.items())
        root = str(library.root)
        # every item directory's stat looked at up front, on two processors where it pays
        work_cache.look_ahead(root, [item.path for item in items
                                     if item.path in present or item.state == "managed"])
        item_statuses = _conflicted(library, tuple(_item_statuses(
            library, store, items, present, work_cache, digests, pins)))
        report = StatusReport(
            items=item_statuses,
            tools=tuple(_tool_statuses(snapshot, digests)),
            files=files,
            hints=(*(CONFIG_HINT for f in files
                     if f.path == LIBRARY_FILE and f.status == "modified"),
                   *_lock_hints(item_statuses),
                   *(f"{i.name} is conflicted: edit the files between <<<<<<< local and "
                     f">>>>>>> upstream, then `librarian resolve {i.name}`"
                     for i in item_statuses if i.status == "conflicted"),
                   *((RECOVER_HINT,) if interrupted else ())),
            interrupted=interrupted,
            generated=generated_problems(library, store, snapshot, items)
            if judge_generated else (),
        )
        work_cache.save()
        digests.save()
        TreeMemo.save_all(store)
    return report


def _item_statuses(
    library: Library,
    store: GitStore,
    items: Iterable[Item],
    present: set[str],
    work_cache: WorkTreeCache,
    digests: DigestCache,
    pins: _Pins,
) -> Iterable[ItemStatus]:
    uncommitted = set(present)  # item directories no commit holds: untracked
    root = str(library.root)
    for item in items:
        uncommitted.discard(item.path)
        # An item directory under sources/ is not listed up front: the cache's first lstat
        # finds it (a symlink, a file or nothing there is never a clean item).
        try:
            work = work_cache.item_hash(item.path, f"{root}/{item.path}") if (
                item.path in present or item.state == "managed") else None
        except (NotRegularFile, FileNotFoundError, NotADirectoryError):
            work = None
        pin = pins.of(item.path) if item.state == "managed" else None
        if work is not None and work.tree_sha1 == item.tree:
            digests.remember(item.tree, work.digest)
            if pin is not None and work.digest != pin:  # committed around librarian
                yield ItemStatus(item.name, item.kind, item.state, item.path, "modified",
                                 work.digest, work.digest, pin)
                continue
            digest = pin if pin is not None else work.digest  # one string, not two equal
            yield ItemStatus(item.name, item.kind, item.state, item.path, "clean", digest,
                             digest)
            continue
        status: State = "modified" if _exists(library, item.path) else "missing"
        committed = _committed_digest(store, digests, item.tree)
        yield ItemStatus(item.name, item.kind, item.state, item.path, status,
                         work.digest if work else None, committed, pin)
    for path in sorted(uncommitted):
        try:
            work = work_cache.item_hash(path, f"{root}/{path}")
        except NotRegularFile:
            work = None
        kind = "recipe" if (library.path_of(path) / "recipe.yaml").is_file() else "skill"
        yield ItemStatus(path.rsplit("/", 1)[1], kind, "untracked", path, "untracked",
                         work.digest if work else None, None)


def _conflicted(library: Library, items: tuple[ItemStatus, ...]) -> tuple[ItemStatus, ...]:
    """A managed item ``update --merge-conflicts`` left with markers, not yet resolved,
    is ``conflicted`` (while its work tree differs from the commit)."""
    if not os.path.lexists(library.conflicts_path):
        return items  # the usual case: the sources package is not even imported
    from librarian.sources.conflicted import conflicted_items

    waiting = conflicted_items(library)
    if not waiting:
        return items
    return tuple(replace(i, status="conflicted") if i.path in waiting
                 and i.status == "modified" else i for i in items)


class _Pins:
    """The digest librarian.lock pins for a managed item's library path, looked up in the
    lock itself (no second map of every pin)."""

    def __init__(self, snapshot: Snapshot) -> None:
        try:
            self._lock: Mapping[str, LockedSource] = snapshot.lock
        except UsageError:  # a broken lock: `check` says what is wrong with it
            self._lock = {}

    def of(self, path: str) -> str | None:
        top, source, rest = (path.split("/", 2) + ["", ""])[:3]
        locked = self._lock.get(source) if top == SOURCES_DIR else None
        return locked.items.get(rest) if locked is not None else None


def _lock_hints(items: Iterable[ItemStatus]) -> Iterable[str]:
    for item in items:
        if item.locked is not None and item.committed != item.locked and (
                item.status == "modified"):
            source = item.name.split(":", 1)[0]
            yield (f"{item.path} differs from the digest {LOCK_FILE} pins (an edit committed "
                   f"around librarian): `librarian update` treats it as a local edit; "
                   f"`librarian update --force {source}` takes upstream's, saving yours")


def _committed_digest(store: GitStore, digests: DigestCache, tree: ObjectId) -> str | None:
    try:
        return digests.digest(store, tree)
    except UsageError:  # a symlink committed by plain git: `check` reports it
        return None


def _tool_statuses(snapshot: Snapshot, digests: DigestCache) -> Iterable[ToolStatus]:
    if not snapshot.tools:
        return
    # Imported here: a library without tools does not pay for the gate's module at start-up.
    from librarian.gate.enforcement import enforces_everything, summary_enforceability
    from librarian.gate.tools import recipe_item, tool_state

    everything = enforces_everything()
    for name, tool in sorted(snapshot.tools.items()):
        state = tool_state(snapshot, tool, digests)
        enforceable: bool | None = None
        missing: tuple[str, ...] = ()
        if state.status == "ok" and everything:
            enforceable = True  # whatever the recipe declares (no manifest is read)
        elif state.status == "ok" and state.recipe_tree is not None:
            from librarian.library import summarize

            enforceable, missing = summary_enforceability(
                summarize(snapshot.store, recipe_item(tool.recipe, state.recipe_tree)))
        yield ToolStatus(name, tool.recipe, tool.digest, state.status, state.reason,
                         enforceable, missing)


def _file_statuses(snapshot: Snapshot) -> Iterable[FileStatus]:
    """Everything at the top of the library outside the item directories, as git sees it:
    committed files and directories (README.md, .gitattributes, …) clean, modified or
    missing; anything else not ignored by git untracked."""
    library, store, tree = snapshot.library, snapshot.store, snapshot.tree
    committed = store.tree_items(tree) if tree is not None else {}
    for name, entry in sorted(committed.items()):
        if name in ITEM_TOPS:
            continue
        path = library.root / name
        yield FileStatus(name, _top_state(path, entry))
    ignores = GitIgnores(store)
    try:
        listing = sorted(os.scandir(library.root), key=lambda e: e.name)
    except OSError:
        listing = []
    for dirent in listing:
        if dirent.name in committed or dirent.name in ITEM_TOPS or dirent.name == ".git":
            continue
        is_dir = dirent.is_dir(follow_symlinks=False)
        if is_dir and not _has_files(Path(dirent.path)):
            continue  # git does not see empty directories
        if not ignores.ignored(dirent.name, directory=is_dir):
            yield FileStatus(dirent.name + ("/" if is_dir else ""), "untracked")


def _top_state(path: Path, entry: TreeEntry) -> State:
    try:
        mode = path.lstat().st_mode
    except OSError:
        return "missing"
    if entry.mode == MODE_TREE:
        if not stat.S_ISDIR(mode):
            return "modified"
        try:
            work = hash_work_dir(path)
        except NotRegularFile:
            return "modified"
        return "clean" if work is not None and work.tree_sha1 == entry.sha else "modified"
    if not stat.S_ISREG(mode):
        return "modified"
    return "clean" if blob_sha1(path.read_bytes()) == entry.sha else "modified"


def _has_files(directory: Path) -> bool:
    return any(p.is_file() or p.is_symlink() for p in directory.rglob("*"))
