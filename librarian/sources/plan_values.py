"""The values of an update's plan: ``PlannedItem``, ``KeptItems`` and ``SourcePlan``.

``librarian.sources.plan`` makes them, ``librarian.sources.update`` applies them. An item
upstream did not change, that the commit holds as installed, is not planned one by one: it
is one position in ``KeptItems`` (its path, its digest and its tree, each the object the
lock and the tree already hold), so that an update of 10 items of 10,000 holds 10
``PlannedItem`` and three tuples, not 10,000 objects with their strings (spec §6.6: the
cost follows the change). ``SourcePlan.items`` still gives every item, kept ones included,
for what shows a whole plan (``--json``, ``--dry-run``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import TYPE_CHECKING, Literal

from librarian.core.names import qualified_names
from librarian.formats.config import LockedSource
from librarian.sources.upstream import Skipped, collection_path

if TYPE_CHECKING:
    from librarian.git import ObjectId
    from librarian.sources.merging import MergeOutcome

Action = Literal["add", "update", "merge", "remove", "keep", "conflict"]
ACTIONS: tuple[Action, ...] = ("add", "update", "merge", "remove", "keep", "conflict")
#: the reason of an item kept without looking at the work tree
UNCHANGED_UPSTREAM = "unchanged upstream"


@dataclass(frozen=True, slots=True)
class PlannedItem:
    name: str  # SOURCE:NAME
    path: str  # upstream path
    library_path: str  # sources/<source>/<upstream path>
    action: Action
    locked: str | None  # digest in librarian.lock
    upstream: str | None  # digest upstream (None: gone or skipped upstream)
    work: str | None  # digest of the work tree (None: missing, or not looked at: keep)
    local_edit: bool
    reason: str
    #: the admitted upstream tree (hex): the upstream item without what retain would ignore
    upstream_tree: str | None = None
    #: the three-way merge of a locally edited item upstream changed (merge or conflict)
    merge: MergeOutcome | None = None


def item_name(source: str, path: str) -> str:
    return f"{source}:{path.rsplit('/', 1)[-1]}"


@dataclass(frozen=True, slots=True)
class KeptItems:
    """Items kept unchanged upstream, as installed: parallel tuples in path order, whose
    digest is the locked one and whose tree is the committed one."""

    paths: tuple[str, ...] = ()
    digests: tuple[str, ...] = ()
    trees: tuple[ObjectId, ...] = ()

    def __len__(self) -> int:
        return len(self.paths)

    def planned(self, source: str,
                names: Mapping[str, str] | None = None) -> Iterator[PlannedItem]:
        """Each as the PlannedItem a plan of one item gives (built when asked for);
        ``names``: upstream path -> name, for items named apart."""
        for path, digest, tree in zip(self.paths, self.digests, self.trees, strict=True):
            name = (f"{source}:{names[path]}" if names is not None and path in names
                    else item_name(source, path))
            yield PlannedItem(name, path, collection_path(source, path),
                              "keep", digest, digest, None, False, UNCHANGED_UPSTREAM,
                              tree.decode())


@dataclass(frozen=True, slots=True)
class SourcePlan:
    source: str
    url: str  # credentials stripped
    ref: str
    old_commit: str | None
    new_commit: str
    #: the items judged one by one (every item but those in ``kept``), in path order
    planned: tuple[PlannedItem, ...]
    skipped: tuple[Skipped, ...]
    filtered_out: int
    #: nonconformities of the items read from upstream this time (spec §2)
    warnings: tuple[str, ...] = ()
    kept: KeptItems = KeptItems()
    #: The committed collection holds exactly the locked items, as an update made it (a
    #: remembered state, ``sources.delta``): the new one is that tree with the planned items
    #: put in, not a tree of every item built again. Not part of what the plan says.
    exact_base: bool = field(default=False, compare=False)

    @property
    def items(self) -> tuple[PlannedItem, ...]:
        """Every item of the plan in path order, the kept ones built now (for a whole
        plan shown; the update itself reads ``planned`` and ``kept``)."""
        if not self.kept:
            return self.planned
        names = qualified_names([*self.kept.paths, *(i.path for i in self.planned)])
        return tuple(sorted((*self.planned, *self.kept.planned(self.source, names)),
                            key=lambda item: item.path))

    def named_apart(self) -> SourcePlan:
        """The plan with items that share a folder name named apart, as the library
        names them once installed (``core.names.qualified_names``)."""
        names = qualified_names([*self.kept.paths, *(i.path for i in self.planned)])
        planned = tuple(replace(i, name=f"{self.source}:{names[i.path]}")
                        if f"{self.source}:{names[i.path]}" != i.name else i
                        for i in self.planned)
        return replace(self, planned=planned) if planned != self.planned else self

    @property
    def changes(self) -> tuple[PlannedItem, ...]:
        return tuple(i for i in self.planned if i.action in ("add", "update", "merge", "remove"))

    @property
    def conflicts(self) -> tuple[PlannedItem, ...]:
        return tuple(i for i in self.planned if i.action == "conflict")

    @property
    def merges(self) -> tuple[PlannedItem, ...]:
        return tuple(i for i in self.planned if i.action == "merge")

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {a: 0 for a in ACTIONS}
        for item in self.planned:
            out[item.action] += 1
        out["keep"] += len(self.kept)
        return out

    def installs(self) -> Iterator[tuple[str, str, ObjectId]]:
        """(upstream path, digest, admitted tree id) of every item the new collection
        holds, in path order."""
        def planned() -> Iterator[tuple[str, str, ObjectId]]:
            for item in self.planned:
                if item.action != "remove" and item.upstream is not None:
                    assert item.upstream_tree is not None
                    yield item.path, item.upstream, item.upstream_tree.encode()

        kept = zip(self.kept.paths, self.kept.digests, self.kept.trees, strict=True)
        # Two sorted runs, the planned first on a tie (as a merge has it): a stable sort
        # finds the runs in C, where a merge in Python steps through 10,000 kept items.
        return iter(sorted([*planned(), *kept], key=itemgetter(0)))


def plan_fields(plan: SourcePlan) -> dict[str, object]:
    """The plan as its fields would read with every item in ``items`` (the plan an error's
    ``--json`` document carries): the keys of a plan in ``update --json``, one shape for
    one field name."""
    return {"source": plan.source, "url": plan.url, "ref": plan.ref,
            "old_commit": plan.old_commit, "new_commit": plan.new_commit,
            "counts": plan.counts(), "items": plan.items, "skipped": plan.skipped,
            "filtered_out": plan.filtered_out}


def lock_entry(plan: SourcePlan) -> LockedSource:
    items = {path: digest for path, digest, _ in plan.installs()}
    return LockedSource(url=plan.url, ref=plan.ref, commit=plan.new_commit, items=items)
