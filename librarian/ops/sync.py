"""``sync``: publish and receive in one step (spec §9.1).

Under the library's lock: fetch the upstream branch, replay the local commits onto its tip
as events (``ops/replay.py``), judge every work-tree path the result changes against local
edits, push the new tip by compare-and-swap, then move the branch and the work tree to it
(one ``Transaction``). When the remote moved between the fetch and the push, nothing local
has changed: the lock is let go, and after a growing, jittered pause the whole step runs
again (a bounded number of tries). Commits made by hand are replayed by the same units,
then the result is checked whole. ``dry_run`` fetches and plans, and changes nothing else.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass

from librarian.core.digest import MODE_TREE
from librarian.core.events import parse_message
from librarian.errors import ConflictError, UsageError
from librarian.formats.claude_plugin import MARKETPLACE_FILE, PLUGIN_FILE
from librarian.git import (
    CommitInfo,
    GitStore,
    HungUp,
    ObjectId,
    RemoteMoved,
    fetch_branch,
    merge_base,
    push_branch,
    upstream_of,
)
from librarian.library import Library
from librarian.ops.checking import check_tree
from librarian.ops.replay import Replay, Step, first_parents, units
from librarian.txn import FileChange, Transaction, TreeChange

#: How many times a sync fetches, replays and pushes before it gives up on a busy remote:
#: with 16 clones publishing at once a try wins about one time in eight, and 40 tries
#: left one sync in 40 without a win (bench/sync.py); 100 leave about one in a million.
DEFAULT_TRIES = 100
TRIES_VARIABLE = "LIBRARIAN_SYNC_TRIES"


@dataclass(frozen=True, slots=True)
class SyncReport:
    upstream: str  # the remote's URL without credentials
    branch: str
    received: int  # upstream commits new to this library
    steps: tuple[Step, ...]  # the local commits, replayed (or found upstream)
    pushed: bool
    tip: str | None
    tries: int
    dry_run: bool = False

    @property
    def action(self) -> str:
        if not self.pushed and not self.received:
            return "up to date"
        return ("would " if self.dry_run else "") + ", ".join(
            part for part in (f"receive {self.received}" if self.received else "",
                              f"publish {len(self.steps)}" if self.pushed else "") if part)


def _tries() -> int:
    raw = os.environ.get(TRIES_VARIABLE, "")
    try:
        return max(1, int(raw)) if raw else DEFAULT_TRIES
    except ValueError:
        raise UsageError(f"{TRIES_VARIABLE}={raw!r} is not a whole number") from None


def _pause(attempt: int) -> None:
    """Exponential from 50 ms, capped at 1 s, with full jitter, so retrying clones spread
    out; the cap is low because a newcomer starts at 50 ms: a long pause would make the
    clones that lost most often lose again."""
    time.sleep(random.uniform(0.0, min(1.0, 0.05 * 2 ** min(attempt, 5))))


@dataclass(frozen=True, slots=True)
class _Plan:
    remote: ObjectId | None
    tip: ObjectId
    received: int
    steps: tuple[Step, ...]
    push: bool


def _plan(library: Library, store: GitStore, head: ObjectId,
          remote: ObjectId | None) -> _Plan:
    if remote is None:  # a new branch upstream: publish what is here
        mine = list(first_parents(store, head, None))
        return _Plan(None, head, 0, tuple(_as_steps(mine)), True)
    base = merge_base(store, head, remote)
    theirs = list(first_parents(store, remote, base))
    mine = list(first_parents(store, head, base))
    if not mine:
        return _Plan(remote, remote, len(theirs), (), False)
    if not theirs:
        return _Plan(remote, head, 0, tuple(_as_steps(mine)), True)
    mine.reverse()
    tip, steps = Replay(library, store, remote, theirs).run(mine)
    if any(step.event is None for step in steps):
        report = check_tree(store, store.commit(tip).tree, library.generated)
        if not report.ok:
            raise ConflictError(
                "a commit made by hand does not hold on the upstream tip: "
                + "; ".join(report.problems[:5]), hint="fix it, commit, then sync again")
    return _Plan(remote, tip, len(theirs), tuple(steps), tip != remote)


def _as_steps(mine: list[CommitInfo]) -> list[Step]:
    out = []
    for info in reversed(mine):
        event = parse_message(info.message)
        out.append(Step(info.id.decode(), info.message.split("\n", 1)[0],
                        event.kind if event else None, info.id.decode()))
    return out


def sync(library: Library, *, dry_run: bool = False) -> SyncReport:
    tries = _tries()
    for attempt in range(1, tries + 1):
        report = _attempt(library, dry_run, attempt, last=attempt == tries)
        if report is not None:
            return report
        _pause(attempt)  # the library's lock is not held while waiting
    raise AssertionError("unreachable: the last try raises")


def _attempt(library: Library, dry_run: bool, attempt: int, *,
             last: bool) -> SyncReport | None:
    """One fetch, replay and push under the lock; None when the remote moved meanwhile
    (or the server hung up: a busy daemon drops connections)."""
    with Transaction(library) as tx:
        store = tx.store
        upstream = upstream_of(store)
        head = tx.base.commit
        if head is None:
            raise UsageError("the library has no commit yet")
        try:
            remote = fetch_branch(store, upstream)
        except HungUp:
            if last:
                raise
            return None
        plan = _plan(library, store, head, remote)
        report = SyncReport(upstream.shown, upstream.branch.decode(), plan.received,
                            plan.steps, plan.push, plan.tip.decode(), attempt, dry_run)
        if dry_run or (plan.tip == head and not plan.push):
            return report
        _stage_work_tree(tx, store, head, plan.tip)
        if plan.push:
            store.flush(plan.tip)
            try:
                push_branch(store, upstream, plan.remote, plan.tip)
            except (RemoteMoved, HungUp):
                if last:
                    raise
                return None
        if plan.tip != head:
            tx.advance_to(plan.tip, f"sync with {upstream.shown}")
        return report


def _stage_work_tree(tx: Transaction, store: GitStore, head: ObjectId, tip: ObjectId) -> None:
    """The work-tree paths that move from ``head`` to ``tip``, each judged against local
    edits before anything is pushed (a local edit in the way: exit 3, nothing done)."""
    old, new = store.commit(head).tree, store.commit(tip).tree
    changes: list[FileChange | TreeChange] = []
    for path, (_, now) in units(store, old, new).items():
        if now is not None and now.mode != MODE_TREE:
            changes.append(FileChange(path, store.read_blob(now.sha)))
        else:
            changes.append(TreeChange(path, now.sha if now else None, None, None, True))
    for path in (PLUGIN_FILE, MARKETPLACE_FILE):
        was, now = store.lookup(old, path), store.lookup(new, path)
        if was != now:
            changes.append(FileChange(path, store.read_blob(now.sha) if now else None))
    for change in changes:
        tx.check_unmodified(change)
        tx.change(change)
