"""The one way the library changes: a ``Transaction``, ending in one journaled commit.

    with Transaction(library) as tx:           # lock, recover, read the base snapshot
        ...                                    # check against tx.base, validate
        tx.put_dir("skills/pdf", files)        # fill it with changes
        result = tx.commit("retain skill pdf", trailers("retain", item="skills/pdf"))

Order of work in ``commit``, chosen so that a crash at any instant leaves the library
recoverable:

1. write the new objects and the commit into the object store (unreferenced until step 4);
   (a library in a folder of a project commits the project's tree at the base commit
   with that folder replaced: the index, and what the user staged elsewhere, is not read);
2. write the new work-tree content into ``.git/librarian/stage/<tx>/`` (of a directory
   changed in place, only the entries that differ: ``apply.slots``);
3. write the journal (base commit, new commit, paths), then make steps 1-3 durable with
   one sync of the file system (``fsutil.one_sync``: no fsync per file);
4. move the branch base -> new by compare-and-swap (a moved branch: exit 3, nothing done);
5. swap each path: old content to ``trash/<tx>/``, staged content into place (renames);
6. splice the changed entries into the git index, so plain ``git status`` stays clean,
   then make steps 5-6 durable with one more sync;
7. delete the journal, then the stage and trash.

A failure in steps 5-6 renames everything back and moves the branch back, so a failed
command changed nothing; only if that undo fails too does the journal stay, and
``recovery.recover`` (run when the next transaction opens) finishes the change.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping, Sequence
from types import TracebackType

from librarian.cache import StagedDir, TreeMemo, WorkTreeCache, statcache
from librarian.core.digest import MODE_FILE, MODE_TREE
from librarian.core.events import format_message
from librarian.core.faults import crash_point
from librarian.core.fsutil import one_sync
from librarian.core.model import ItemFile
from librarian.errors import LibrarianError, UsageError
from librarian.git import GitStore, ObjectId, TreeEntry, blob_sha1, consolidate_packs
from librarian.library import (
    GeneratedFiles,
    Library,
    Snapshot,
    refuse_committed_non_directory,
    refuse_linked_paths,
    refuse_unsafe_library,
)
from librarian.txn import apply, leftovers, staging
from librarian.txn.changes import (
    Change,
    CommitResult,
    DirChange,
    EntryChange,
    FileChange,
    TreeChange,
    work_trees,
)
from librarian.txn.journal import Journal
from librarian.txn.lock import library_lock
from librarian.txn.recovery import recover

Trailers = Sequence[tuple[str, str]]


class Transaction:
    """One change to one library: holds the mutation lock from ``__enter__`` to
    ``__exit__``, collects changes, and makes exactly one commit (or none)."""

    def __init__(self, library: Library, *, first: bool = False) -> None:
        """``first``: the root commit of a new library (``init``); every other transaction
        refuses an unborn branch."""
        self.library = library
        self._first = first
        self._changes: list[Change] = []
        self._lock = library_lock(library.lock_path)
        self._store: GitStore | None = None
        self._base: Snapshot | None = None
        self._committed = False

    def __enter__(self) -> Transaction:
        self._lock.__enter__()
        try:
            self._store = self.library.store()
            # Before recovery: a hostile library is refused before anything is written.
            library = self.library
            refuse_unsafe_library(library.root, self._first or self._store.head() is not None,
                                  library.repo, library.state_dir)
            recover(self.library, self._store)
            self._base = Snapshot.head(self.library, self._store)
        except BaseException:
            self._close()
            self._lock.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self._close()
        finally:
            self._base = None  # a snapshot over a closed store must not be read
            self._lock.__exit__(kind, exc, tb)

    def _close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    @property
    def store(self) -> GitStore:
        assert self._store is not None, "the transaction is not open"
        return self._store

    @property
    def base(self) -> Snapshot:
        """The library as committed when the transaction opened (under the lock)."""
        assert self._base is not None, "the transaction is not open"
        return self._base

    # -- filling it -----------------------------------------------------------------------

    def change(self, change: Change) -> None:
        self._changes.append(change)

    def put_dir(self, path: str, files: tuple[ItemFile, ...] | None) -> None:
        """Set the directory ``path`` to ``files`` (None removes it)."""
        self.change(DirChange(path, files))

    def adopt_dir(self, path: str, files: tuple[ItemFile, ...]) -> None:
        """Commit the untracked directory ``path`` as it stands; the commit checks the work
        tree holds exactly ``files`` there (and refuses anything else, exit 3)."""
        self.change(DirChange(path, files, adopt=True))

    def put_file(self, path: str, data: bytes | None) -> None:
        """Set the top-level file ``path`` to ``data`` (None removes it)."""
        self.change(FileChange(path, data))

    def put_tree(self, path: str, tree: ObjectId | None, digest: str | None = None, *,
                 work: ObjectId | None = None, work_is_base: bool = False) -> None:
        """Set ``path`` to a tree already stored; the staged copy must hash to ``digest``.
        ``work``: a stored tree the work tree gets instead (a merged local edit), shown as
        modified against the commit. ``work_is_base``: the caller checked that the work
        tree holds the base's tree there, so only the files that differ are rewritten."""
        self.change(TreeChange(path, tree, digest, work, work_is_base))

    def check_unmodified(self, change: Change) -> None:
        """Refuse (exit 3) when the work tree at ``change.path`` differs from the base."""
        apply.check_unmodified(self.library, self.store, self.base.tree, change)

    # -- committing -----------------------------------------------------------------------

    def commit(self, subject: str, trailers: Trailers, *,
               allow_empty: bool = False) -> CommitResult:
        """Commit the changes; refuses (exit 3) when one would clobber a local edit."""
        for change in self._changes:
            self.check_unmodified(change)
        return self._commit(self._tree_with_changes(), subject, trailers, allow_empty,
                            check_generated=True)

    def commit_over_local_edits(self, subject: str, trailers: Trailers, *,
                                allow_empty: bool = False) -> CommitResult:
        """Commit without the local-edit check: the caller judged every path (and backed
        up what it overwrites)."""
        return self._commit(self._tree_with_changes(), subject, trailers, allow_empty)

    def commit_tree(self, root_tree: ObjectId, subject: str, trailers: Trailers) -> CommitResult:
        """Commit ``root_tree`` as built by the caller (an update assembles the collection
        from fetched trees at once); the changes name the work-tree paths to swap, each
        must agree with it, and the caller judged them against the work tree."""
        for change in self._changes:
            if isinstance(change, TreeChange):
                entry = TreeEntry(MODE_TREE, change.tree) if change.tree else None
                if self.store.lookup(root_tree, change.path) != entry:
                    raise ValueError(f"{change.path}: the change disagrees with the given tree")
        return self._commit(root_tree, subject, trailers, allow_empty=True,
                            check_generated=True)

    def advance_to(self, commit: ObjectId, subject: str) -> CommitResult:
        """Move the branch to ``commit``, a descendant of the base made by the caller (a
        replay onto the upstream branch); the changes name the work-tree paths that differ
        and the caller judged them against the work tree (``check_unmodified``)."""
        tree = self.store.commit(commit).tree
        for change in self._changes:
            if isinstance(change, TreeChange):
                entry = TreeEntry(MODE_TREE, change.tree) if change.tree else None
                if self.store.lookup(tree, change.path) != entry:
                    raise ValueError(f"{change.path}: the change disagrees with the given tree")
        return self._commit(tree, subject, (), allow_empty=True, made=commit)

    def _tree_with_changes(self) -> ObjectId | None:
        store, tree = self.store, self.base.tree
        for change in self._changes:
            entry: TreeEntry | None
            if isinstance(change, DirChange):
                entry = TreeEntry(MODE_TREE, store.files_tree(change.files)) if change.files \
                    else None
            elif isinstance(change, TreeChange):
                entry = TreeEntry(MODE_TREE, change.tree) if change.tree else None
            elif isinstance(change, EntryChange):
                entry = change.entry
            else:
                entry = None if change.data is None else TreeEntry(MODE_FILE,
                                                                   store.blob(change.data))
            tree = store.with_path(tree, change.path, entry)
        return tree

    def _moves(self, maker: GeneratedFiles, change: Change) -> bool:
        """Whether ``change`` may change what ``maker`` generates (a walk of every committed
        item, ~40 ms on 10,000 skills): not when a tree becomes another of the same item."""
        if not maker.watches(change.path):
            return False
        if isinstance(change, TreeChange) and change.tree is not None:
            old = self.store.lookup(self.base.tree, change.path)
            return not (old is not None and old.mode == MODE_TREE
                        and maker.keeps(self.store, old.sha, change.tree))
        return True

    def _with_generated(self, tree: ObjectId, check: bool) -> ObjectId:
        """``tree`` with the generated files (``library/generated.py``) rewritten where the
        changes touch what their maker reads, added to the changes: one commit carries both.
        A branch moved since the base is left to the compare-and-swap to refuse, with its
        reason."""
        makers = [m for m in self.library.generated
                  if any(self._moves(m, c) for c in self._changes)]
        check = check and bool(makers) and self.store.head() == self.base.commit
        for maker in makers:  # none for e.g. expose, defer, discard, an update of content
            for path, data in maker.expected(self.store, tree).items():
                entry = self.store.lookup(tree, path)
                if entry is not None and entry.sha == blob_sha1(data):
                    continue
                # what the caller writes there is in ``tree``, so the maker's file holds it
                self._changes = [c for c in self._changes if c.path != path]
                change = FileChange(path, data)
                if check:
                    self.check_unmodified(change)
                tree = self.store.with_path(tree, path,
                                            TreeEntry(MODE_FILE, self.store.blob(data)))
                self._changes.append(change)
        return tree

    def _commit(self, new_tree: ObjectId | None, subject: str, trailers: Trailers,
                allow_empty: bool, *, check_generated: bool = False,
                made: ObjectId | None = None) -> CommitResult:
        if self._committed:
            raise RuntimeError("a transaction makes one commit")
        store, library, base = self.store, self.library, self.base.commit
        refuse_linked_paths(library.root, [change.path for change in self._changes])
        for folder in {p.rsplit("/", 1)[0] for m in library.generated for p in m.paths
                       if "/" in p}:  # where generated files go: a real directory
            entry = store.lookup(self.base.tree, folder)
            refuse_committed_non_directory(folder, entry.mode if entry else None)
        assert new_tree is not None
        if new_tree == self.base.tree and not allow_empty:
            raise UsageError("nothing to change: the library already holds exactly this content")
        if made is None:  # a commit made by the caller carries its generated files already
            new_tree = self._with_generated(new_tree, check_generated)
        # A directory changed in place swaps only the entries that differ (apply.slots);
        # those deeper paths must be real all the way down too.
        slots = apply.slots(store, self.base.tree, self._changes)
        refuse_linked_paths(library.root, [s.path for s in slots if isinstance(s, EntryChange)])
        # A library in a folder of a project: the project's tree at the base commit with
        # only the library's folder replaced (git/repo.py ``full_tree``). ``made``: a
        # commit sync already built and pushed (``advance_to``).
        new = made or store.make_commit(store.full_tree(base, new_tree), [base] if base else [],
                                        format_message(subject, trailers))
        branch = store.branch().decode("utf-8", "surrogateescape")
        journal = Journal(uuid.uuid4().hex[:12], branch, base.decode() if base else None,
                          new.decode(), tuple(s.path for s in slots), work_trees(slots),
                          library.prefix)
        held = False
        try:
            # Objects, stage and journal are written, then made durable by one sync
            # before the branch moves (batched durability, core/fsutil.py).
            with one_sync(library.git_dir):
                store.flush(new)
                crash_point("after-objects")
                staged = staging.stage_changes(library.stage_dir / journal.tx, slots, store)
                # Items staged whole from bytes the plan hashed seed the stat cache, judged
                # by the file system's clock now: after every staged write, before any of
                # it is visible (statcache.WorkTreeCache.seed).
                seeds = {journal.paths[number]: slot.seed for number, slot in staged.items()
                         if slot.seed is not None}
                stamp = statcache.racy_after_ns(library.cache_dir) if seeds else 0
                journal.write(library)
            crash_point("after-journal")
            # Git's index.lock is taken just before the branch moves (a held one: exit 3,
            # nothing changed) and kept until the new index is in place, so no plain git
            # command can commit from the old index in between; never while staging, so a
            # long install does not hold plain `git commit` off.
            leftovers.hold_index(library, journal.tx)
            held = True
            store.move_branch(base, new, message=subject.encode())
        except BaseException:
            # An interrupt can land after the ref file was replaced but before move_branch
            # returned: then the change is made and the journal must stay for recovery.
            if store.ref(store.branch()) != new:
                apply.discard(library, journal.tx)
                if held:
                    leftovers.release_index(library)
            raise
        self._committed = True
        crash_point("after-cas")
        # The base's parsed trees are not read again (a 10,000-entry one is megabytes);
        # the swap reads the new tree's few paths.
        store.forget_trees()
        done: list[tuple[str, int]] = []
        try:
            # The renames are made durable by one sync before the journal goes.
            with one_sync(library.git_dir):
                apply.swap_in(library, store, journal.tx, journal.paths, new_tree, done,
                              journal.work_of(), held=True, staged=staged)
        except (LibrarianError, OSError):
            # A failure after the branch moved (a vanished directory, a full disk): put
            # everything back so the command changed nothing. If even that fails, the
            # journal stays and the next command finishes the change.
            apply.undo(library, store, journal.tx, journal.paths, done, base, new)
            leftovers.release_index(library)
            raise
        crash_point("after-swap")
        apply.discard(library, journal.tx)
        if seeds:  # only a cache: nothing here can fail the change
            with contextlib.suppress(OSError, ValueError):
                _seed_work_cache(library, seeds, stamp)
        # Fetches and large commits add packs; past 50, a bounded step merges the smallest
        # (git/packs.py). The change is complete already, so a failure here is no failure.
        with contextlib.suppress(OSError):
            consolidate_packs(store)
        TreeMemo.save_all(store)
        return CommitResult(new.decode(), base.decode() if base else None)


def _seed_work_cache(library: Library, seeds: Mapping[str, StagedDir], stamp: int) -> None:
    cache = WorkTreeCache(library.cache_dir)
    for key, seed in seeds.items():
        cache.seed(key, seed, stamp)
    cache.save(partial=True)
