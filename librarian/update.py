"""``outdated`` and ``update``: fetch, plan, back up, stage, swap, lock, commit once.

1. Fetch each source's ref into ``refs/librarian/sources/<name>`` (only the previously
   fetched commit is offered as common history).
2. Plan per item from three digests (locked, upstream, work tree): add, update, remove,
   keep (a local edit to an item upstream did not change is kept), conflict.
3. Conflicts refuse the update (exit 3) unless ``--force``, which first backs up every
   local edit it overwrites (``librarian.backups``).
4. One journaled transaction (``txn.commit_changes``): the new collection tree is built
   from the fetched tree objects (unchanged items are reused by id), changed items are
   staged and verified against the plan, swapped in with renames, ``librarian.lock`` is
   rewritten, and the branch moves once. Recovery is the transaction's (docs/sources.md).
"""

from __future__ import annotations

import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from .backups import Backup, back_up
from .config import (
    LOCK_FILE,
    TOOLS_FILE,
    LockedSource,
    SourceConfig,
    dump_lock,
    load_lock,
    load_tools,
)
from .digest import MODE_FILE, MODE_TREE
from .errors import ConflictError, UsageError
from .gitremote import fetch_ref, strip_credentials
from .gitstore import GitStore, ObjectId, TreeEntry, make_tree
from .library import Library
from .model import MANIFEST_FILES, ItemKind, Policy
from .statcache import SpecialFileError, WorkTreeCache
from .txn import FileChange, TreeChange, check_unmodified, commit_changes, crash_point, mutation
from .upstream import Collection, Skipped, collection_path, find_item_trees, read_collection
from .worktree import ItemHash

SOURCE_REF_PREFIX = "refs/librarian/sources/"
Action = Literal["add", "update", "remove", "keep", "conflict"]
Progress = Callable[[str], None]


@dataclass(frozen=True)
class PlannedItem:
    name: str  # SOURCE:NAME
    path: str  # upstream path
    library_path: str  # sources/<source>/<upstream path>
    action: Action
    locked: str | None  # digest in librarian.lock
    upstream: str | None  # digest upstream (None: gone or skipped upstream)
    work: str | None  # digest of the work tree (None: missing)
    local_edit: bool
    reason: str


@dataclass(frozen=True)
class SourcePlan:
    source: str
    url: str  # credentials stripped
    ref: str
    old_commit: str | None
    new_commit: str
    items: tuple[PlannedItem, ...]
    skipped: tuple[Skipped, ...]
    filtered_out: int

    @property
    def changes(self) -> tuple[PlannedItem, ...]:
        return tuple(i for i in self.items if i.action in ("add", "update", "remove"))

    @property
    def conflicts(self) -> tuple[PlannedItem, ...]:
        return tuple(i for i in self.items if i.action == "conflict")

    @property
    def kept_edits(self) -> tuple[PlannedItem, ...]:
        return tuple(i for i in self.items if i.action == "keep" and i.local_edit)

    def counts(self) -> dict[str, int]:
        out = {a: 0 for a in ("add", "update", "remove", "keep", "conflict")}
        for item in self.items:
            out[item.action] += 1
        return out


@dataclass(frozen=True)
class UpdateReport:
    kind: str  # "update" or "outdated"
    plans: tuple[SourcePlan, ...]
    commit: str | None
    dry_run: bool = False
    forced: bool = False
    up_to_date: bool = False
    backups: tuple[Backup, ...] = ()
    stale_tools: tuple[str, ...] = ()
    warnings: tuple[str, ...] = field(default=())


class UpdateConflict(ConflictError):
    """Local edits stand in the way; ``plans`` holds the full plan for the report."""

    def __init__(self, message: str, plans: tuple[SourcePlan, ...]) -> None:
        super().__init__(
            message,
            hint="keep your edit elsewhere (`librarian retain` a copy under a new name) or "
            "rerun with --force: local edits are backed up first and can be restored",
        )
        self.plans = plans


def source_ref(source: str) -> bytes:
    return (SOURCE_REF_PREFIX + source).encode()


def outdated(library: Library, names: Sequence[str] = (), *,
             progress: Progress | None = None) -> UpdateReport:
    """Fetch and plan; changes nothing in the work tree or on the branch."""
    report = update(library, names, dry_run=True, progress=progress)
    return UpdateReport("outdated", report.plans, None, dry_run=True,
                        up_to_date=report.up_to_date, warnings=report.warnings)


def update(
    library: Library,
    names: Sequence[str] = (),
    *,
    dry_run: bool = False,
    force: bool = False,
    progress: Progress | None = None,
) -> UpdateReport:
    config = library.config()
    if not config.sources and not names:
        return UpdateReport("update", (), None, dry_run=dry_run, up_to_date=True)
    chosen = _choose(config.sources, names)
    with mutation(library) as store:
        fetched = {}
        for name, source in chosen.items():
            if progress is not None:
                progress(f"fetching {name} from {strip_credentials(source.url)}\n")
            fetched[name] = fetch_ref(store, source.url, source.ref, into=source_ref(name),
                                      have=store.ref(source_ref(name)), progress=progress)
        crash_point("update-after-fetch")
        base = store.head()
        base_tree = store.commit(base).tree if base is not None else None
        locked = _committed_lock(store, base_tree)
        plans = tuple(
            plan_source(library, store, base_tree, name, source, locked.get(name),
                        fetched[name].commit, config.policy)
            for name, source in chosen.items()
        )
        warnings = tuple(_skip_warnings(plans))
        conflicts = [c for p in plans for c in p.conflicts]
        unchanged = all(
            not p.changes and not p.conflicts and _lock_entry(p) == locked.get(p.source)
            for p in plans
        )
        if dry_run or unchanged:
            return UpdateReport("update", plans, None, dry_run=dry_run, up_to_date=unchanged,
                                warnings=warnings)
        if conflicts and not force:
            listed = ", ".join(f"{c.name} ({c.reason})" for c in conflicts)
            raise UpdateConflict(
                f"update refused: {len(conflicts)} conflict(s) with local edits; nothing was "
                f"changed: {listed}", plans)
        check_unmodified(library, store, base_tree, FileChange(LOCK_FILE, None))
        backups = _back_up_conflicts(library, store, base, plans) if conflicts else ()
        crash_point("update-after-backup")
        resolved = tuple(_resolve_conflicts(p) for p in plans)
        commit = _commit(library, store, base, base_tree, resolved, locked, backups)
        stale = _stale_tools(store, base_tree, resolved)
    return UpdateReport("update", resolved, commit, forced=force, backups=backups,
                        stale_tools=stale, warnings=warnings)


def _choose(
    sources: Mapping[str, SourceConfig], names: Sequence[str]
) -> dict[str, SourceConfig]:
    if not names:
        return dict(sorted(sources.items()))
    unknown = [n for n in names if n not in sources]
    if unknown:
        raise UsageError(f"no source named {unknown[0]!r}", hint="`librarian source list`")
    return {n: sources[n] for n in dict.fromkeys(names)}


def _committed_lock(store: GitStore, tree: ObjectId | None) -> dict[str, LockedSource]:
    entry = store.lookup(tree, LOCK_FILE)
    return load_lock(store.read_blob(entry.sha)) if entry is not None else {}


def installed_items(store: GitStore, root_tree: ObjectId | None,
                    source: str) -> dict[str, tuple[ObjectId, ItemKind]]:
    """upstream path -> (tree id, kind) of the items of ``source`` in ``root_tree``."""
    entry = store.lookup(root_tree, collection_path(source))
    if entry is None or not stat.S_ISDIR(entry.mode):
        return {}
    out: dict[str, tuple[ObjectId, ItemKind]] = {}
    for path, tree, _ in find_item_trees(store, entry.sha):
        entries = store.tree_items(tree)
        kind: ItemKind = "skill" if MANIFEST_FILES["skill"] in entries else "recipe"
        out[path] = (tree, kind)
    return out


def _installed_from_lock(
    store: GitStore, root_tree: ObjectId | None, source: str, pins: Mapping[str, str]
) -> dict[str, ObjectId]:
    """upstream path -> committed tree id of each item the lock says is installed (the lock
    is the record of what an update installed; one lookup per item, no tree walk)."""
    out = {}
    for path in pins:
        entry = store.lookup(root_tree, collection_path(source, path))
        if entry is not None and stat.S_ISDIR(entry.mode):
            out[path] = entry.sha
    return out


def plan_source(
    library: Library,
    store: GitStore,
    base_tree: ObjectId | None,
    name: str,
    source: SourceConfig,
    locked: LockedSource | None,
    upstream_commit: ObjectId,
    policy: Policy,
) -> SourcePlan:
    pins = dict(locked.items) if locked else {}
    installed = _installed_from_lock(store, base_tree, name, pins)
    collection = read_collection(store, store.commit(upstream_commit).tree, source, policy,
                                 {p: (t, pins[p]) for p, t in installed.items()})
    work_cache = WorkTreeCache(library.cache_dir)
    items = [
        _plan_item(library, work_cache, name, path, installed.get(path), pins.get(path),
                   collection)
        for path in sorted(set(installed) | set(collection.items))
    ]
    work_cache.save(partial=True)
    return SourcePlan(
        source=name,
        url=strip_credentials(source.url),
        ref=source.ref,
        old_commit=locked.commit if locked else None,
        new_commit=upstream_commit.decode(),
        items=tuple(items),
        skipped=collection.skipped,
        filtered_out=len(collection.filtered_out),
    )


def _work_hash(
    library: Library, cache: WorkTreeCache, library_path: str
) -> ItemHash | None | str:
    """The work tree's ids at ``library_path``: None when missing, "special" when it holds a
    link or special file (never equal to anything)."""
    target = library.path_of(library_path)
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        return "special"
    if not target.exists():
        return None
    try:
        return cache.item_hash(library_path, str(target))
    except SpecialFileError:
        return "special"


def _plan_item(
    library: Library,
    cache: WorkTreeCache,
    source: str,
    path: str,
    installed: ObjectId | None,
    pin: str | None,
    collection: Collection,
) -> PlannedItem:
    library_path = collection_path(source, path)
    upstream = collection.items.get(path)
    work = _work_hash(library, cache, library_path)
    work_tree = work.tree_sha1 if isinstance(work, ItemHash) else None
    work_digest = work.digest if isinstance(work, ItemHash) else None
    missing = work is None
    committed = installed
    local_edit = installed is not None and not missing and work_tree != committed
    up_digest = upstream.digest if upstream else None

    def planned(action: Action, reason: str, edit: bool = local_edit) -> PlannedItem:
        return PlannedItem(f"{source}:{path.rsplit('/', 1)[-1]}", path, library_path, action,
                           pin, up_digest, work_digest, edit, reason)

    if installed is None:
        assert upstream is not None
        if missing:
            return planned("add", "new upstream", False)
        if work_tree == upstream.tree:
            return planned("add", "new upstream (the work tree already holds it)", False)
        return planned("conflict", "untracked content in the way of a new upstream item", True)
    if upstream is None:
        gone = "skipped upstream (invalid)" if any(
            s.path == path for s in collection.skipped) else "removed upstream"
        if not local_edit:
            return planned("remove", gone)
        return planned("conflict", f"local edit, {gone}")
    if upstream.tree == committed:
        if local_edit:
            return planned("keep", "local edit kept (upstream unchanged)")
        if missing:
            return planned("keep", "missing locally (upstream unchanged)")
        return planned("keep", "unchanged")
    if not local_edit:
        return planned("update", "changed upstream" + (" (restores the missing item)"
                                                       if missing else ""))
    if work_tree == upstream.tree:
        return planned("update", "changed upstream (the local edit already matches)", False)
    return planned("conflict", "local edit, changed upstream")


def _skip_warnings(plans: Iterable[SourcePlan]) -> Iterable[str]:
    for plan in plans:
        for skipped in plan.skipped:
            yield f"{plan.source}: skipped {skipped.path}: " + "; ".join(skipped.problems)


def _lock_entry(plan: SourcePlan) -> LockedSource:
    items = {i.path: i.upstream for i in plan.items
             if i.action != "remove" and i.upstream is not None}
    return LockedSource(url=plan.url, ref=plan.ref, commit=plan.new_commit, items=items)


def _back_up_conflicts(
    library: Library, store: GitStore, base: ObjectId | None, plans: Sequence[SourcePlan]
) -> tuple[Backup, ...]:
    backups = []
    for plan in plans:
        paths = [c.library_path for c in plan.conflicts]
        if paths:
            backup = back_up(library, store, base, plan.source, paths, f"update {plan.source}")
            if backup is not None:
                backups.append(backup)
    return tuple(backups)


def _resolve_conflicts(plan: SourcePlan) -> SourcePlan:
    """After backups: a conflict becomes the upstream side (update, add or remove)."""
    items = []
    for item in plan.items:
        if item.action == "conflict":
            action: Action = "remove" if item.upstream is None else (
                "update" if item.locked is not None else "add")
            item = PlannedItem(item.name, item.path, item.library_path, action, item.locked,
                               item.upstream, item.work, True,
                               item.reason + "; overwritten after a backup (--force)")
        items.append(item)
    return SourcePlan(plan.source, plan.url, plan.ref, plan.old_commit, plan.new_commit,
                      tuple(items), plan.skipped, plan.filtered_out)


def _commit(
    library: Library,
    store: GitStore,
    base: ObjectId | None,
    base_tree: ObjectId | None,
    plans: Sequence[SourcePlan],
    locked: Mapping[str, LockedSource],
    backups: Sequence[Backup],
) -> str:
    new_locked = dict(locked)
    root = base_tree
    changes: list[TreeChange | FileChange] = []
    trailers: list[tuple[str, str]] = [("Librarian-Event", "update")]
    summaries = []
    for plan in plans:
        upstream_trees = _collection_trees(store, plan)
        collection = make_tree(store, {p: TreeEntry(MODE_TREE, t)
                                       for p, t in upstream_trees.items()})
        root = store.with_path(root, collection_path(plan.source),
                               TreeEntry(MODE_TREE, collection) if collection else None)
        new_locked[plan.source] = _lock_entry(plan)
        trailers += [("Librarian-Source", plan.source), ("Librarian-Upstream", plan.new_commit)]
        for item in plan.changes:
            tree = upstream_trees.get(item.path)
            changes.append(TreeChange(item.library_path, tree,
                                      item.upstream if tree is not None else None))
            trailers.append(("Librarian-Item", item.library_path))
        counts = plan.counts()
        summaries.append(f"{plan.source} ({counts['add']} added, {counts['update']} updated, "
                         f"{counts['remove']} removed)")
    trailers += [("Librarian-Backup", b.ref) for b in backups]
    lock_data = dump_lock(new_locked)
    root = store.with_path(root, LOCK_FILE, TreeEntry(MODE_FILE, store.blob(lock_data)))
    changes.append(FileChange(LOCK_FILE, lock_data))
    result = commit_changes(
        library, store, base=base, subject="update " + ", ".join(summaries),
        trailers=trailers, changes=changes, overwrite_local=True, root_tree=root,
        allow_empty=True,
    )
    return result.commit


def _collection_trees(store: GitStore, plan: SourcePlan) -> dict[str, ObjectId]:
    """upstream path -> tree id of every item the new collection holds."""
    upstream_root = store.commit(plan.new_commit.encode()).tree
    out = {}
    for item in plan.items:
        if item.action == "remove" or item.upstream is None:
            continue
        entry = store.lookup(upstream_root, item.path)
        assert entry is not None and stat.S_ISDIR(entry.mode)
        out[item.path] = entry.sha
    return out


def _stale_tools(store: GitStore, base_tree: ObjectId | None,
                 plans: Sequence[SourcePlan]) -> tuple[str, ...]:
    """Exposed tools whose managed recipe this update changed or removed: they are stale
    (re-review before use), never silently re-pointed."""
    entry = store.lookup(base_tree, TOOLS_FILE)
    if entry is None:
        return ()
    changed = {i.library_path for p in plans for i in p.changes}
    tools = load_tools(store.read_blob(entry.sha))
    return tuple(sorted(name for name, tool in tools.items() if tool.recipe in changed))
