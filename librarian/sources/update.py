"""``outdated`` and ``update``: fetch, plan, back up, stage, swap, lock, commit once.

1. Read the sources and the policy from the base commit's ``library.yaml`` (never the work
   tree's).
2. Fetch each source's ref into ``refs/librarian/sources/<name>`` (only the previously
   fetched commit is offered as common history); a signed source (``trust:``) is fetched
   at its newest release tag and verified, and after planning the plan is checked against
   the release's statement (``librarian.sources.releases``; a refusal is exit 4). Each
   source is judged on its own (``librarian.sources.fetching``): a refused one is left
   out, as it was, and the others go on.
3. Plan per item from three digests (locked, upstream, work tree): add, update, remove,
   keep (a local edit to an item upstream did not change is kept), merge (a local edit to
   an item upstream changed, merged file by file), conflict (``librarian.sources.plan``).
4. Conflicts refuse the update (exit 3) unless ``--force``, or ``--merge-conflicts``
   (upstream installed, git-style markers written into the work tree, the item recorded
   as conflicted: ``librarian.sources.conflicted``); every local edit the update
   overwrites (``--force``) or rewrites (a merge) is backed up first
   (``librarian.sources.backups``).
5. One journaled transaction (``Transaction.commit_tree``): the new collection tree is built
   from the fetched tree objects (unchanged items are reused by id), changed items are
   staged and verified against the plan, swapped in with renames, ``librarian.lock`` is
   rewritten, and the branch moves once. Recovery is the transaction's (docs/sources.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from librarian.cache import TreeMemo
from librarian.core.digest import MODE_FILE, MODE_TREE
from librarian.core.events import trailers
from librarian.core.faults import crash_point
from librarian.errors import ConflictError, UsageError
from librarian.formats.config import (
    LIBRARY_FILE,
    LOCK_FILE,
    SourceConfig,
    dump_lock,
)
from librarian.git import GitStore, ObjectId, TreeEntry, make_tree
from librarian.library import Library, Snapshot
from librarian.sources.conflicted import Conflicted, record_conflicts, refuse_unresolved
from librarian.sources.fetching import RefusedSource, fetch_and_plan, restore_refs
from librarian.sources.plan import (
    SOURCE_REF_PREFIX,
    installed_items,
    skip_warnings,
    source_ref,
)
from librarian.sources.plan_memo import remember_installed
from librarian.sources.plan_values import Action, PlannedItem, SourcePlan, lock_entry, plan_fields
from librarian.sources.releases import (
    ReleaseInfo,
    keep_release_tags,
    release_info,
    release_ref,
    signed_entry,
)
from librarian.sources.upstream import collection_path
from librarian.txn import FileChange, Transaction

if TYPE_CHECKING:
    from librarian.sources.backups import Backup
    from librarian.trust.policy import VerifiedRelease

__all__ = [
    "SOURCE_REF_PREFIX", "PlannedItem", "RefusedSource", "SourcePlan", "UpdateConflict",
    "UpdateReport",
    "installed_items", "outdated", "source_ref", "update",
]

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
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
    releases: tuple[ReleaseInfo, ...] = ()  # how each planned source is signed
    #: sources refused on their own (a signed release that failed), not planned: the
    #: others are; the command exits 4 when there is any
    refused: tuple[RefusedSource, ...] = ()


class UpdateConflict(ConflictError):
    """Local edits stand in the way. The message lists every conflict (it is the one line
    ``cli.main`` prints); ``plans`` holds the full plan for callers that show it."""

    def __init__(self, plans: tuple[SourcePlan, ...]) -> None:
        conflicts = [c for p in plans for c in p.conflicts]
        listed = "; ".join(f"{c.name} at {c.library_path} ({c.reason})" for c in conflicts)
        # An item gone upstream has no lines to agree with: only the other two ways out.
        gone = all(c.upstream is None for c in conflicts)
        super().__init__(
            f"update refused: {len(conflicts)} conflict(s) with local edits, nothing was "
            f"changed: {listed}",
            hint=("upstream no longer offers the item (removed, or now invalid): " if gone
                  else "make the listed lines of your edit agree with upstream (or undo "
                  "them) and update again, ")
            + "keep your edit elsewhere (`librarian retain` a copy under a new name), or "
            "rerun with --force: local edits are backed up first and can be restored; "
            "`librarian update --dry-run` shows the whole plan",
            details={"plans": tuple(plan_fields(p) for p in plans)},
        )
        self.plans = plans


def outdated(library: Library, names: Sequence[str] = (), *,
             progress: Progress | None = None) -> UpdateReport:
    """Fetch and plan; changes nothing in the work tree or on the branch."""
    report = update(library, names, dry_run=True, progress=progress)
    return UpdateReport("outdated", report.plans, None, dry_run=True,
                        up_to_date=report.up_to_date, warnings=report.warnings,
                        releases=report.releases, refused=report.refused)


def update(
    library: Library,
    names: Sequence[str] = (),
    *,
    dry_run: bool = False,
    force: bool = False,
    merge_conflicts: bool = False,
    progress: Progress | None = None,
) -> UpdateReport:
    with Transaction(library) as tx:
        store = tx.store
        # The committed library.yaml, never the work tree's: an uncommitted edit can
        # neither add a source nor redirect one (nor loosen the policy).
        config = tx.base.config
        notes = _uncommitted_config_note(tx.base)
        if not config.sources and not names:
            return UpdateReport("update", (), None, dry_run=dry_run, up_to_date=True,
                                warnings=notes)
        chosen = _choose(config.sources, names)
        if not dry_run:
            refuse_unresolved(library, list(chosen))
        previous = {ref: store.ref(ref) for name in chosen
                    for ref in (source_ref(name), release_ref(name))}
        try:
            return _fetch_plan_apply(tx, chosen, notes, dry_run=dry_run, force=force,
                                     merge_conflicts=merge_conflicts, progress=progress)
        except BaseException:
            # A refused or failed update changes nothing, the fetch refs included (a
            # successful `outdated` or `--dry-run` keeps them, as `git fetch` would).
            restore_refs(store, previous)
            raise


def _fetch_plan_apply(
    tx: Transaction,
    chosen: Mapping[str, SourceConfig],
    notes: tuple[str, ...],
    *,
    dry_run: bool,
    force: bool,
    merge_conflicts: bool = False,
    progress: Progress | None,
) -> UpdateReport:
    library, store = tx.library, tx.store
    fetched = fetch_and_plan(tx, chosen, progress)
    plans, releases, locked = fetched.plans, fetched.releases, tx.base.lock
    refused = fetched.refused
    chosen = {n: s for n, s in chosen.items() if n not in refused}
    signing = tuple(release_info(n, s, releases.get(n)) for n, s in chosen.items())
    refusals = fetched.refusals()
    warnings = notes + tuple(skip_warnings(plans))
    if merge_conflicts and not force:
        plans = tuple(_with_markers(p) for p in plans)
    conflicts = [c for p in plans for c in p.conflicts]
    unchanged = all(
        not p.changes and not p.conflicts
        and signed_entry(lock_entry(p), releases.get(p.source)) == locked.get(p.source)
        for p in plans
    )
    if dry_run or unchanged:
        TreeMemo.save_all(store)  # what planning learned (sources/plan.py)
        return UpdateReport("update", plans, None, dry_run=dry_run, up_to_date=unchanged,
                            warnings=warnings, releases=signing, refused=refusals)
    if conflicts and not force:
        raise UpdateConflict(plans)
    tx.check_unmodified(FileChange(LOCK_FILE, None))
    # Every edit the work tree is about to lose (a --force overwrite) or see rewritten (a
    # merge) is saved first, so the original edit survives any crash from here on.
    backups = _back_up_edits(library, store, tx.base.commit, plans)
    crash_point("update-after-backup")
    resolved = tuple(_resolve_conflicts(p) for p in plans)
    keep_release_tags(store, releases)
    commit = _commit(tx, resolved, backups, releases)
    record_conflicts(library, (
        Conflicted(i.name, p.source, i.library_path, tuple(c.path for c in i.merge.conflicts))
        for p in resolved for i in p.merges if i.merge is not None and i.merge.markers))
    stale = _stale_tools(tx.base, resolved)
    return UpdateReport("update", resolved, commit, forced=force, backups=backups,
                        stale_tools=stale, warnings=warnings, releases=signing,
                        refused=refusals)


def _choose(
    sources: Mapping[str, SourceConfig], names: Sequence[str]
) -> dict[str, SourceConfig]:
    if not names:
        return dict(sorted(sources.items()))
    unknown = [n for n in names if n not in sources]
    if unknown:
        raise UsageError(f"no source named {unknown[0]!r} in the committed {LIBRARY_FILE}",
                         hint="`librarian source list`; a source is added with "
                         "`librarian source add` (a hand edit must be committed)")
    return {n: sources[n] for n in dict.fromkeys(names)}


def _uncommitted_config_note(snapshot: Snapshot) -> tuple[str, ...]:
    try:
        work = snapshot.library.path_of(LIBRARY_FILE).read_bytes()
    except OSError:
        work = None
    if work == snapshot.library_yaml:
        return ()
    return (f"{LIBRARY_FILE} has uncommitted changes: update follows the committed sources "
            "and policy; commit the edit for it to take effect",)


def _back_up_edits(
    library: Library, store: GitStore, base: ObjectId | None, plans: Sequence[SourcePlan]
) -> tuple[Backup, ...]:
    backups: list[Backup] = []
    for plan in plans:
        paths = [c.library_path for c in (*plan.conflicts, *plan.merges)]
        if paths:
            # Imported here for start-up cost: only an update that merges or overwrites
            # local edits (--force) writes backups.
            from librarian.sources.backups import back_up

            backup = back_up(library, store, base, plan.source, paths, f"update {plan.source}")
            if backup is not None:
                backups.append(backup)
    return tuple(backups)


def _with_markers(plan: SourcePlan) -> SourcePlan:
    """``--merge-conflicts``: each conflict a file can show becomes a merge whose work
    tree holds git-style markers (upstream's version is what is committed and locked);
    the others stay conflicts."""
    items = []
    for item in plan.planned:
        if item.action == "conflict" and item.merge is not None \
                and item.merge.marked is not None:
            files = ", ".join(c.path for c in item.merge.conflicts)
            item = replace(item, action="merge", merge=item.merge.with_markers(),
                           reason=f"local edit, changed upstream: conflict markers written "
                           f"into {files}; edit them, then `librarian resolve {item.name}`")
        items.append(item)
    return replace(plan, planned=tuple(items))


def _resolve_conflicts(plan: SourcePlan) -> SourcePlan:
    """After backups: a conflict becomes the upstream side (update, add or remove)."""
    items = []
    for item in plan.planned:  # the kept ones never conflict
        if item.action == "conflict":
            action: Action = "remove" if item.upstream is None else (
                "update" if item.locked is not None else "add")
            item = replace(item, action=action, local_edit=True,
                           reason=item.reason + "; overwritten after a backup (--force)")
        items.append(item)
    return replace(plan, planned=tuple(items))


def _commit(tx: Transaction, plans: Sequence[SourcePlan], backups: Sequence[Backup],
            releases: Mapping[str, VerifiedRelease]) -> str:
    store = tx.store
    _refuse_nested_changes(plans)
    merged = _write_merged(store, plans)  # first: flush drops whatever else is staged
    crash_point("update-after-merge")
    new_locked = dict(tx.base.lock)
    root = tx.base.tree
    pairs: list[tuple[str, str]] = []
    summaries = []
    for plan in plans:
        root = _new_collection(store, root, plan)
        new_locked[plan.source] = signed_entry(lock_entry(plan), releases.get(plan.source))
        if not plan.changes and new_locked[plan.source] == tx.base.lock.get(plan.source):
            continue  # the commit names only the sources it changes
        pairs += [("Source", plan.source), ("Upstream", plan.new_commit)]
        for item in plan.changes:
            tree = (item.upstream_tree.encode() if item.upstream_tree is not None
                    and item.action != "remove" and item.upstream is not None else None)
            # The planner found the work tree holding the installed version: only the
            # files upstream changed are rewritten.
            tx.put_tree(item.library_path, tree, item.upstream if tree is not None else None,
                        work=merged.get(item.library_path),
                        work_is_base=item.action == "update" and not item.local_edit
                        and item.work is not None and item.work == item.locked)
            pairs.append(("Item", item.library_path))
        counts = plan.counts()
        summaries.append(f"{plan.source} ({counts['add']} added, {counts['update']} updated, "
                         + (f"{counts['merge']} merged, " if counts["merge"] else "")
                         + f"{counts['remove']} removed)")
    lock_data = dump_lock(new_locked)
    root = store.with_path(root, LOCK_FILE, TreeEntry(MODE_FILE, store.blob(lock_data)))
    tx.put_file(LOCK_FILE, lock_data)
    assert root is not None
    result = tx.commit_tree(root, "update " + ", ".join(summaries), trailers(
        "update", *pairs, backup=[b.ref for b in backups]))
    # The next update reads only what changes upstream after this commit (sources.delta);
    # the committed tree, as the transaction may have added the plugin's manifests to it.
    committed = store.tree_of(result.commit.encode())
    if committed is not None:
        remember_installed(store, committed, plans)
    TreeMemo.save_all(store)
    return result.commit


def _new_collection(store: GitStore, root: ObjectId | None, plan: SourcePlan) -> ObjectId | None:
    """``root`` with the plan's collection: the admitted tree of every item (upstream's own,
    unless something retain would ignore was left out)."""
    if plan.exact_base:
        # Only the planned items' entries change; the trees along their paths are
        # rewritten, each once (an update of 10 of 10,000 rewrites a few trees).
        return store.with_paths(root, {
            collection_path(plan.source, item.path):
                TreeEntry(MODE_TREE, item.upstream_tree.encode())
                if item.action != "remove" and item.upstream is not None
                and item.upstream_tree is not None else None
            for item in plan.planned})
    # One item at a time: no map of 10,000 paths beside the tree.
    collection = make_tree(store, ((path, TreeEntry(MODE_TREE, tree))
                                   for path, _, tree in plan.installs()))
    return store.with_path(root, collection_path(plan.source),
                           TreeEntry(MODE_TREE, collection) if collection else None)


def _refuse_nested_changes(plans: Sequence[SourcePlan]) -> None:
    """An item whose directory upstream made part of another item (``a`` lost its
    manifest and ``a/b`` is the item now) is two changes on nested paths, which one swap
    cannot make: refused (exit 3) before anything is written, not a crash."""
    for plan in plans:
        # By path + "/": a path's descendants sort right after it ("a-b" sorts between
        # "a" and "a/b", "a-b/" does not come between "a/" and "a/b/").
        paths = sorted(item.library_path + "/" for item in plan.changes)
        for outer, inner in zip(paths, paths[1:], strict=False):
            if inner.startswith(outer):
                raise ConflictError(
                    f"update refused: upstream made {outer[:-1]} and {inner[:-1]} one inside the "
                    "other (an item's directory now holds another item, or no longer is "
                    "one); nothing was changed",
                    hint=f"remove the source (`librarian source remove {plan.source}`) and "
                    "add it again to install the new layout; `librarian retain` a copy of "
                    "any local edit of those items first")


def _write_merged(store: GitStore, plans: Sequence[SourcePlan]) -> dict[str, ObjectId]:
    """library path -> tree of the merged work-tree content of every merged item, written
    and fsynced before the commit: the journal names them, so that a roll-forward after a
    crash rebuilds the merge, never the bare upstream version."""
    out = {}
    for plan in plans:
        for item in plan.merges:
            assert item.merge is not None and item.merge.merged is not None
            tree = store.files_tree(item.merge.merged)
            store.flush(tree)
            out[item.library_path] = tree
    return out


def _stale_tools(snapshot: Snapshot, plans: Sequence[SourcePlan]) -> tuple[str, ...]:
    """Exposed tools whose managed recipe this update changed or removed: they are stale
    (re-review before use), never silently re-pointed."""
    changed = {i.library_path for p in plans for i in p.changes}
    return tuple(sorted(name for name, tool in snapshot.tools.items()
                        if tool.recipe in changed))
