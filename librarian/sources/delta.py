"""The collection of a new upstream commit from what changed since the locked one.

An update of 10 items of 10,000 would otherwise walk the whole upstream tree to find them.
When the plan of the locked commit is remembered (``sources.plan_memo``: the locked
upstream commit planned against this very collection tree, lock and ``library.yaml``
kept every item, with these skipped items and this many filtered out), the
new commit's collection can differ from the lock's items only inside the directories where
the two upstream trees differ. ``changed_since`` walks both trees in step, going into a
directory only where its ids differ, and reads with ``read_collection``'s own rules only
there (the *regions*: a directory that is an item on either side, is on one side only, or
is as deep as the walk goes); outside them every item is the locked one, kept as
committed.

Items sharing a folder name are all admitted and named apart after planning
(``SourcePlan.named_apart``), so no verdict here depends on another item's name. Where
anything does not add up (an object missing, a locked item in neither a region nor an
unchanged directory), ``changed_since`` gives way to the full read (None).

Imports ``sources.upstream`` and the store.
"""

from __future__ import annotations

import bisect
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from librarian.core.model import Policy
from librarian.formats.config import SourceConfig
from librarian.git import GitStore, ObjectId, entry_set
from librarian.sources.upstream import (
    MAX_DEPTH,
    Collection,
    Found,
    Skipped,
    collection_path,
    compile_patterns,
    find_item_trees,
    holds_manifest,
    split_filtered,
    unsafe_part,
    verdicts,
)

#: Per folder compared, the (name, raw name) of its directories the same on both sides.
Unchanged = list[tuple[str, list[tuple[str, bytes]]]]


class Region(NamedTuple):
    """A directory read whole on both sides: its path, its tree before and now (None where
    it is missing), its depth and the problem of its path (as the full walk has them)."""

    path: str
    old: ObjectId | None
    new: ObjectId | None
    depth: int
    problem: str | None


@dataclass(frozen=True, slots=True)
class Delta:
    #: the regions' items now (skipped: the whole source's, in the full walk's order)
    collection: Collection
    filtered_out: int  # of the whole source
    #: upstream path -> committed tree of the locked items inside the regions
    installed: dict[str, ObjectId]
    #: (path, locked digest, committed tree) of every item outside the regions, path order
    kept: list[tuple[str, str, ObjectId]]


def changed_since(store: GitStore, base_tree: ObjectId | None, name: str,
                  config: SourceConfig, policy: Policy, pins: Mapping[str, str],
                  old_commit: ObjectId, new_commit: ObjectId,
                  skipped: Sequence[Skipped], filtered_out: int) -> Delta | None:
    """The collection of ``new_commit``, given that ``old_commit``'s was the locked items
    (``pins``) with ``skipped`` and ``filtered_out``; None: read it whole instead."""
    try:
        old_root, new_root = store.commit(old_commit).tree, store.commit(new_commit).tree
        regions: list[Region] = []
        unchanged: Unchanged = []
        if old_root != new_root:
            _in_step(store, Region("", old_root, new_root, 0, None), regions, unchanged)
        else:
            unchanged.append(("", [("", b"")]))
        committed = _Committed(store, base_tree, name)
        return _assemble(store, config, policy, pins, skipped, filtered_out, regions,
                         unchanged, committed)
    except KeyError:  # an object of either commit is not in the store: read whole
        return None


def _in_step(store: GitStore, at: Region, regions: list[Region],
             unchanged: Unchanged) -> None:
    """Compare the subdirectories of two differing directories that are items on neither
    side: the same id is unchanged, a difference is gone into or is a region."""
    assert at.old is not None and at.new is not None
    # As sets of raw entries, in C: at 10,000 entries a loop over every name, or a map of
    # decoded names, costs ~10 ms a side. A directory is any mode S_ISDIR holds, as the
    # full walk has it (git's fsck only reports a 040755).
    before, after = entry_set(store.raw_tree(at.old)), entry_set(store.raw_tree(at.new))
    same = before & after
    unchanged.append((at.path, [(name.decode("utf-8", "surrogateescape"), name)
                                for name, mode, _ in same if stat.S_ISDIR(mode)]))
    old_dirs = {name: sha for name, mode, sha in before - same if stat.S_ISDIR(mode)}
    new_dirs = {name: sha for name, mode, sha in after - same if stat.S_ISDIR(mode)}
    for raw_name in sorted(old_dirs.keys() | new_dirs.keys()):
        part = raw_name.decode("utf-8", "surrogateescape")
        old, new = old_dirs.get(raw_name), new_dirs.get(raw_name)
        path = f"{at.path}/{part}" if at.path else part
        child = Region(path, old, new, at.depth + 1, at.problem or unsafe_part(part))
        if (old is not None and new is not None and child.depth < MAX_DEPTH
                and not holds_manifest(store, old) and not holds_manifest(store, new)):
            _in_step(store, child, regions, unchanged)
        else:
            regions.append(child)


class _Committed:
    """Committed tree ids of the collection's items, each folder parsed once."""

    def __init__(self, store: GitStore, base_tree: ObjectId | None, name: str) -> None:
        self._store, self._base, self._name = store, base_tree, name
        self._folders: dict[str, dict[bytes, ObjectId]] = {}

    def folder(self, folder: str) -> dict[bytes, ObjectId]:
        """raw name -> id of each entry in the collection's ``folder``; KeyError: the
        committed collection has no such directory."""
        entries = self._folders.get(folder)
        if entries is None:
            entry = self._store.lookup(self._base, collection_path(self._name, folder))
            if entry is None:
                raise KeyError(folder)
            entries = self._folders[folder] = {
                name: sha for name, mode, sha in self._store.raw_entries(entry.sha)
                if stat.S_ISDIR(mode)}
        return entries

    def tree(self, path: str) -> ObjectId:
        """KeyError: the committed collection has no directory at ``path``."""
        folder, _, leaf = path.rpartition("/")
        return self.folder(folder)[leaf.encode("utf-8", "surrogateescape")]


def _assemble(store: GitStore, config: SourceConfig, policy: Policy, pins: Mapping[str, str],
              skipped: Sequence[Skipped], filtered_out: int, regions: Sequence[Region],
              unchanged: Unchanged, committed: _Committed) -> Delta | None:
    locked = sorted(pins)  # the lock's own order already: a pass
    kept = _kept(pins, locked, unchanged, committed)
    installed = {item: committed.tree(item) for region in regions
                 for item in _under(locked, region.path)}
    if len(kept) + len(installed) != len(pins):
        return None  # a locked item where the old tree has none: not as remembered
    include = compile_patterns(config.include, "include")
    exclude = compile_patterns(config.exclude, "exclude")
    found: list[Found] = []
    for region in regions:
        now, filtered = split_filtered(_walk(store, region.new, region, installed),
                                       include, exclude)
        found += now
        filtered_out += len(filtered)
        if include is not None or exclude is not None:
            _, before = split_filtered(_walk(store, region.old, region, {}), include, exclude)
            filtered_out -= len(before)
    inside = {region.path for region in regions}
    outside = [s for s in skipped if not _inside(s.path, inside)]
    # Only the trees found now are looked up (an item moved keeps its digest).
    wanted = {tree for _, tree, _ in found}
    known = {tree: pins[path] for path, tree in installed.items() if tree in wanted}
    known.update((tree, digest) for _, digest, tree in kept if tree in wanted)
    items, now_skipped = verdicts(store, found, known, policy)
    kept.sort()  # runs already in order, one per folder
    every_skipped = sorted((*outside, *now_skipped), key=lambda s: s.path.split("/"))
    return Delta(Collection(items, tuple(every_skipped), ()), filtered_out, installed, kept)


def _kept(pins: Mapping[str, str], locked: Sequence[str],
          unchanged: Unchanged, committed: _Committed) -> list[tuple[str, str, ObjectId]]:
    """(path, locked digest, committed tree) of the locked items in the unchanged
    directories. Most of them are such a directory themselves (an item of a folder of
    items): one look-up each, no search of the lock."""
    kept: list[tuple[str, str, ObjectId]] = []
    for folder, parts in unchanged:
        prefix = folder + "/" if folder else ""
        trees: dict[bytes, ObjectId] | None = None  # the folder's, parsed once if needed
        for part, raw_name in parts:
            path = prefix + part
            digest = pins.get(path)
            if digest is not None:
                if trees is None:
                    trees = committed.folder(folder)
                kept.append((path, digest, trees[raw_name]))
            else:  # a folder of items, or of none
                kept += [(item, pins[item], committed.tree(item))
                         for item in _under(locked, path)]
    return kept


def _walk(store: GitStore, tree: ObjectId | None, region: Region,
          installed: Mapping[str, ObjectId]) -> list[Found]:
    return list(find_item_trees(store, tree, installed,
                                start=(region.path, region.depth, region.problem)))


def _under(locked: Sequence[str], path: str) -> list[str]:
    """The locked paths at or below ``path`` ("" is the whole collection)."""
    if not path:
        return list(locked)
    # Below "a": from "a/" up to "a0" ("0" follows "/"); "a" itself sorts just before.
    start, end = bisect.bisect_left(locked, path + "/"), bisect.bisect_left(locked, path + "0")
    exact = bisect.bisect_left(locked, path)
    return ([path] if exact < len(locked) and locked[exact] == path else []) + \
        list(locked[start:end])


def _inside(path: str, regions: set[str]) -> bool:
    """Whether ``path`` is a region or lies below one."""
    at = path.find("/")
    while at != -1:
        if path[:at] in regions:
            return True
        at = path.find("/", at + 1)
    return path in regions
