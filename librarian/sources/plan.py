"""Planning an update: per item of a source, add, update, merge, remove, keep or conflict.

The plan compares three states of every item: *locked* (its tree in the base commit,
pinned by ``librarian.lock``), *upstream* (the fetched, filtered, validated tree,
``librarian.sources.upstream``) and *work* (the work tree, through the stat cache). Planning reads
only committed configuration: the sources and the policy come from the base commit's
``library.yaml``, never from the work tree, so an uncommitted edit can neither add nor
redirect a source. An item with a local edit that upstream also changed is merged file by
file (``librarian.sources.merging``): ``merge`` when every file merges, else ``conflict``.
Applying a plan is ``librarian.sources.update``'s.

A plan in which upstream changed nothing (every item kept, unchanged upstream, so the work
tree was not looked at) is remembered (``sources.plan_memo``); the next plan from the same
ids is that plan again without reading upstream or judging any item: the items are the
lock's, their trees one lookup each in the committed collection. When the plan of the
locked commit is remembered (an update remembers its own), a new upstream commit is read
only where it differs from the locked one (``sources.delta``). The lock is still read and
judged on every update; only the planning is spared.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from librarian.cache import WorkTreeCache
from librarian.content.worktree import ItemHash, NotRegularFile, hash_work_dir
from librarian.core.model import MANIFEST_FILES, ItemKind, Policy
from librarian.core.progress import counted
from librarian.formats.config import (
    LockedSource,
    SourceConfig,
)
from librarian.git import GitStore, ObjectId, TreeEntry, strip_credentials
from librarian.library import Library
from librarian.sources.delta import Delta, changed_since
from librarian.sources.plan_memo import PlanMemo, Remembered
from librarian.sources.plan_values import Action, KeptItems, PlannedItem, SourcePlan, item_name
from librarian.sources.upstream import (
    Collection,
    Skipped,
    collection_path,
    find_item_trees,
    read_collection,
)

if TYPE_CHECKING:
    from librarian.sources.merging import MergeOutcome

SOURCE_REF_PREFIX = "refs/librarian/sources/"


def source_ref(source: str) -> bytes:
    return (SOURCE_REF_PREFIX + source).encode()


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
    is the record of what an update installed; no tree walk: each item's folder is read
    once, and each item is one entry of it)."""
    out = {}
    folders: dict[str, dict[str, TreeEntry] | None] = {}
    for path in pins:
        folder, _, leaf = path.rpartition("/")
        if folder not in folders:
            entry = store.lookup(root_tree, collection_path(source, folder))
            folders[folder] = (store.tree_items(entry.sha) if entry is not None
                               and stat.S_ISDIR(entry.mode) else None)
        entries = folders[folder]
        item = entries.get(leaf) if entries is not None else None
        if item is not None and stat.S_ISDIR(item.mode):
            out[path] = item.sha
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
    memo = PlanMemo(store)
    remembered = memo.recall(base_tree, name, upstream_commit)
    if remembered is not None:
        plan = _kept_plan(store, base_tree, name, source, locked, upstream_commit,
                          remembered.skipped, remembered.filtered_out)
        if plan is not None:
            return plan
    since = memo.recall(base_tree, name, locked.commit.encode()) if locked else None
    delta = _since_locked(store, base_tree, name, source, locked, upstream_commit, policy, since)
    if delta is not None:
        installed, collection, filtered_out = delta.installed, delta.collection, \
            delta.filtered_out
    else:
        installed = _installed_from_lock(store, base_tree, name, pins)
        collection = read_collection(store, store.commit(upstream_commit).tree, source,
                                     policy, installed, pins)
        filtered_out = len(collection.filtered_out)
    paths, digests, trees, judged = [], [], [], []
    for path in counted(f"plan {name}", sorted(installed.keys() | collection.items.keys())):
        tree, pin, upstream = installed.get(path), pins.get(path), collection.items.get(path)
        if tree is not None and upstream is not None and upstream.tree == tree and (
                pin is None or upstream.digest == pin):
            # Upstream did not change it and the commit holds it as installed: kept
            # without looking at the work tree (cost follows the change, spec §6.6); an
            # uncommitted edit of it is simply kept, and `status` shows it. (An edit
            # committed with git shows in the commit's tree id, and is planned below.)
            paths.append(path)
            digests.append(upstream.digest)
            trees.append(tree)
        else:
            judged.append(path)
    if delta is not None and delta.kept:  # every item outside what changed upstream
        kept = sorted((*delta.kept, *zip(paths, digests, trees, strict=True)))
        paths, digests, trees = [k[0] for k in kept], [k[1] for k in kept], [k[2] for k in kept]
    work_cache = _work_cache(library, len(judged))
    planned = tuple(_plan_item(library, store, work_cache, name, path, installed.get(path),
                               pins.get(path), collection) for path in judged)
    if any(item.work is not None and item.action in ("keep", "conflict") for item in planned):
        # Only the items whose work tree an update leaves as it is are worth remembering:
        # the others are swapped out, so their entries would be stale (and rewriting the
        # whole stat cache costs as much as reading it: ~40 ms at 10,000 items).
        work_cache.save()
    plan = SourcePlan(
        source=name,
        url=strip_credentials(source.url),
        ref=source.ref,
        old_commit=locked.commit if locked else None,
        new_commit=upstream_commit.decode(),
        planned=planned,
        skipped=collection.skipped,
        filtered_out=filtered_out,
        warnings=collection.warnings,
        kept=KeptItems(tuple(paths), tuple(digests), tuple(trees)),
        exact_base=delta is not None and since is not None and since.exact,
    )
    if not plan.planned and plan == _kept_plan(
            store, base_tree, name, source, locked, upstream_commit, plan.skipped,
            plan.filtered_out):  # nothing changed upstream: remember it
        exact = plan.exact_base or memo.exact_collection(base_tree, name)
        memo.keep(base_tree, name, upstream_commit,
                  Remembered(plan.skipped, plan.filtered_out, exact))
    # What is read next is a few items' trees, not the two collections (upstream's and
    # the committed one, megabytes each at 10,000 items).
    store.forget_trees()
    return plan.named_apart()


def _since_locked(store: GitStore, base_tree: ObjectId | None, name: str,
                  source: SourceConfig, locked: LockedSource | None,
                  upstream_commit: ObjectId, policy: Policy,
                  remembered: Remembered | None) -> Delta | None:
    """The new collection from what changed upstream since the locked commit, when the
    plan of the locked commit against this base is remembered (``sources.delta``)."""
    if locked is None or remembered is None or locked.commit == upstream_commit.decode():
        return None
    return changed_since(store, base_tree, name, source, policy, dict(locked.items),
                         locked.commit.encode(), upstream_commit, remembered.skipped,
                         remembered.filtered_out)


def _kept_plan(store: GitStore, base_tree: ObjectId | None, name: str, source: SourceConfig,
               locked: LockedSource | None, upstream_commit: ObjectId,
               skipped: Sequence[Skipped], filtered_out: int) -> SourcePlan | None:
    """The plan that keeps every locked item as committed, or None when an item the lock
    names is not in the committed collection."""
    pins = dict(locked.items) if locked else {}
    installed = _installed_from_lock(store, base_tree, name, pins)
    if len(installed) != len(pins):
        return None
    paths = tuple(sorted(pins))
    kept = KeptItems(paths, tuple(pins[p] for p in paths), tuple(installed[p] for p in paths))
    return SourcePlan(name, strip_credentials(source.url), source.ref,
                      locked.commit if locked else None, upstream_commit.decode(), (),
                      tuple(skipped), filtered_out, kept=kept)


class _LazyWorkCache:
    """The stat cache, read the first time an item's work tree is looked at: a plan that
    keeps every item unchanged upstream never reads it (at 10,000 items it is megabytes)."""

    def __init__(self, library: Library) -> None:
        self._library = library
        self._cache: WorkTreeCache | None = None

    def item_hash(self, key: str, directory: str) -> ItemHash | None:
        if self._cache is None:
            self._cache = WorkTreeCache(self._library.cache_dir)
        return self._cache.item_hash(key, directory)

    def save(self) -> None:
        if self._cache is not None:
            self._cache.save(partial=True)


class _DirectHash:
    """No stat cache: each work tree looked at is read and hashed. For a few items this
    is cheaper than the cache, whose whole file (megabytes at 10,000 items) and map of
    every item's key would be read for them."""

    def item_hash(self, key: str, directory: str) -> ItemHash | None:
        return hash_work_dir(Path(directory))

    def save(self) -> None:
        pass


#: Up to this many items whose work tree is looked at, they are hashed without the cache.
DIRECT_HASH_ITEMS = 64
_WorkCache = _LazyWorkCache | _DirectHash


def _work_cache(library: Library, looked_at: int) -> _WorkCache:
    return _DirectHash() if looked_at <= DIRECT_HASH_ITEMS else _LazyWorkCache(library)


def _work_hash(
    library: Library, cache: _WorkCache, library_path: str
) -> ItemHash | None | str:
    """The work tree's ids at ``library_path``: None when missing, "special" when it holds a
    link or special file (never equal to anything)."""
    target = library.path_of(library_path)
    try:
        mode = target.lstat().st_mode  # one stat: this runs for every managed item
    except (FileNotFoundError, NotADirectoryError):
        return None  # the item, or a directory above it, is gone
    except OSError:
        return "special"  # e.g. a symlink loop above it
    if not stat.S_ISDIR(mode):
        return "special"
    try:
        return cache.item_hash(library_path, str(target))
    except NotRegularFile:
        return "special"


def _plan_item(
    library: Library,
    store: GitStore,
    cache: _WorkCache,
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
    # A local edit is content that differs from what was installed: from the committed
    # tree (an uncommitted edit) or from the locked digest (an edit committed with git).
    local_edit = installed is not None and not missing and (
        work_tree != committed or (pin is not None and work_digest != pin))
    up_digest = upstream.digest if upstream else None

    def planned(action: Action, reason: str, edit: bool = local_edit,
                merge: MergeOutcome | None = None) -> PlannedItem:
        return PlannedItem(item_name(source, path), path, library_path, action,
                           pin, up_digest, work_digest, edit, reason,
                           upstream.tree.decode() if upstream else None, merge)

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
    unchanged_upstream = up_digest == pin if pin is not None else upstream.tree == committed
    if unchanged_upstream:
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
    assert committed is not None
    if work == "special":
        return planned("conflict", "local edit, changed upstream (a link or special file in "
                       "the work tree: no merge)")
    # Imported here for start-up cost: only a plan with a locally edited item upstream
    # changed needs the three-way merge (librarian.git.merge).
    from librarian.sources.merging import plan_merge

    outcome = plan_merge(library, store, library_path, committed, pin, upstream.tree)
    if outcome.clean:
        return planned("merge", outcome.summary(), merge=outcome)
    return planned("conflict", "local edit, changed upstream: " + outcome.summary(),
                   merge=outcome)


def skip_warnings(plans: Iterable[SourcePlan]) -> Iterable[str]:
    """The items skipped, with every reason, and the nonconformities of those admitted."""
    for plan in plans:
        for skipped in plan.skipped:
            yield f"{plan.source}: skipped {skipped.path}: " + "; ".join(skipped.problems)
        for warning in plan.warnings:
            yield f"{plan.source}: {warning}"
