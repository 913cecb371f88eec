"""Plans remembered across updates (``cache.memo``, ``up-to-date``): per source, one plan
that kept every locked item, keyed by every input of a plan that is not the work tree.

A plan is remembered in two ways. Planning remembers a plan in which upstream changed
nothing (``sources.plan``): the next plan from the same ids is that plan again, without
reading upstream. An update remembers the plan of each source's new commit against the
tree it committed (``remember_installed``): that plan keeps every item by construction (the
collection and the lock are what it installed), so the next update reads only what
changed upstream after it (``sources.delta``). Only the second kind knows that the
committed collection holds exactly the locked items (``Remembered.exact``): a hand commit
may have put anything else beside them, and a plan alone does not look; a plan made
later against the same collection and lock (another upstream commit, an edited
``library.yaml``) keeps what the update knew.

The key (``_state``) is the upstream commit, the committed collection tree, the
committed ``librarian.lock`` and ``library.yaml`` blobs, and ``PLAN_RULES``. A memo entry
in any other shape is no entry: damaged, foreign or stale, it only costs a full read. One
forged with the right ids by someone who can write ``.git`` is believed, as every cache
here would be (docs/decisions.md).

Imports the store, ``formats.config`` and ``sources.upstream``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from librarian.cache import TreeMemo
from librarian.formats.config import LIBRARY_FILE, LOCK_FILE
from librarian.git import GitStore, ObjectId
from librarian.sources.upstream import Skipped, collection_path

if TYPE_CHECKING:
    from librarian.sources.plan_values import SourcePlan

__all__ = ["PLAN_RULES", "UP_TO_DATE_MEMO", "PlanMemo", "Remembered", "remember_installed"]

#: The memo of remembered plans.
UP_TO_DATE_MEMO = "up-to-date"
#: Part of every remembered plan's key: raise it with any change to planning, filtering
#: or validation that could plan the same ids differently (remembered plans then lapse).
PLAN_RULES = "2"


class Remembered(NamedTuple):
    """A plan that kept every locked item: its skipped items, how many items the filters
    left out, and whether the committed collection holds exactly the locked items (an
    update made it so)."""

    skipped: tuple[Skipped, ...]
    filtered_out: int
    exact: bool


class PlanMemo:
    """The remembered plans of one open store."""

    def __init__(self, store: GitStore) -> None:
        self._store = store
        self._memo = TreeMemo.of(store, UP_TO_DATE_MEMO)

    def recall(self, root_tree: ObjectId | None, source: str,
               upstream_commit: ObjectId) -> Remembered | None:
        """The plan remembered for ``upstream_commit`` against ``root_tree`` (None: none,
        or an entry in another shape)."""
        value = self._memo.get(source)
        if not isinstance(value, dict) or \
                value.get("state") != self._state(root_tree, source, upstream_commit):
            return None
        skipped, filtered_out = value.get("skipped"), value.get("filtered_out")
        if not isinstance(filtered_out, int) or not isinstance(skipped, list) or not all(
                isinstance(s, list) and len(s) == 2 and isinstance(s[0], str)
                and isinstance(s[1], list) and all(isinstance(p, str) for p in s[1])
                for s in skipped):
            return None
        return Remembered(tuple(Skipped(s[0], tuple(s[1])) for s in skipped), filtered_out,
                          value.get("exact") is True)

    def exact_collection(self, root_tree: ObjectId | None, source: str) -> bool:
        """Whether what is remembered for ``source``, of whichever upstream commit and
        configuration, says the committed collection holds exactly the locked items, and
        the collection and the lock are still the ones it was said of (an edit of
        ``library.yaml`` alone leaves that as it was)."""
        value = self._memo.get(source)
        if not isinstance(value, dict) or value.get("exact") is not True:
            return False
        state = value.get("state")
        collection_and_lock = self._ids(root_tree, source)[:2]
        return isinstance(state, str) and state.split(" ")[2:4] == collection_and_lock

    def keep(self, root_tree: ObjectId | None, source: str, upstream_commit: ObjectId,
             remembered: Remembered) -> None:
        """Remember ``remembered`` as the plan of ``upstream_commit`` against ``root_tree``
        (in place of whatever ``source`` had)."""
        self._memo.put(source, {
            "state": self._state(root_tree, source, upstream_commit),
            "filtered_out": remembered.filtered_out, "exact": remembered.exact,
            "skipped": [[s.path, list(s.problems)] for s in remembered.skipped]})

    def _state(self, root_tree: ObjectId | None, source: str,
               upstream_commit: ObjectId) -> str:
        """Every input of a plan that is not the work tree, as immutable ids."""
        return " ".join([PLAN_RULES, upstream_commit.decode(), *self._ids(root_tree, source)])

    def _ids(self, root_tree: ObjectId | None, source: str) -> list[str]:
        """The ids of the committed collection, lock and ``library.yaml`` ("-": none)."""
        entries = [self._store.lookup(root_tree, path)
                   for path in (collection_path(source), LOCK_FILE, LIBRARY_FILE)]
        return [entry.sha.decode() if entry is not None else "-" for entry in entries]


def remember_installed(store: GitStore, root_tree: ObjectId,
                       plans: Iterable[SourcePlan]) -> None:
    """After an update committed ``root_tree``: each plan, as the plan of its new commit
    against that tree (it keeps every item, and the collection holds exactly them).

    Not a plan that warned: the full read judges again, on every update, an item retain
    would leave files out of (its admitted tree is not upstream's), and warns again where
    it is nonconforming; a remembered plan reads no item, so it would warn of nothing."""
    memo = PlanMemo(store)
    for plan in plans:
        if not plan.warnings:
            memo.keep(root_tree, plan.source, plan.new_commit.encode(),
                      Remembered(plan.skipped, plan.filtered_out, exact=True))
