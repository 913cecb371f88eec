"""Replaying local commits onto the upstream tip as events, not as text (spec §9.1).

A commit's effect is read from what it changed against its parent, in the units its
trailers speak of: an item directory (``skills/x``, ``recipes/x``, ``drafts/x``, a
source's collection ``sources/s``) set to a tree or removed, entries of ``library.yaml``'s
lists and sources, of ``tools.yaml`` and of ``librarian.lock`` set or removed. Each unit
is applied to the upstream tip where that still holds its parent's value (or already the
commit's); the generated files are merged by meaning (``formats/threeway.py``) and the
Claude Code manifests and skill lists made again. What cannot hold stops the replay with
exit 3, naming the local commit and the upstream commit it meets: a revise or retire of an
item upstream retired or changed, two different trees under one new name, an expose of a
recipe upstream retired (or a retire of one upstream exposed), a hide of a skill upstream
retired. A commit made by hand (no ``Librarian-Event``) is replayed by the same units.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from librarian.core.events import parse_message
from librarian.core.model import DRAFTS_DIR, KIND_DIRS, SOURCES_DIR
from librarian.errors import ConflictError, UsageError
from librarian.formats.claude_plugin import PLUGIN_DIR
from librarian.formats.config import (
    LIBRARY_FILE,
    LOCK_FILE,
    TOOLS_FILE,
    ToolEntry,
    load_library_config,
    load_tools,
)
from librarian.formats.threeway import ThreeWayConflict, merge_generated
from librarian.git import CommitInfo, GitStore, ObjectId, TreeEntry, copy_commit
from librarian.library import Library, skill_names

ITEM_TOPS = (*KIND_DIRS.values(), DRAFTS_DIR, SOURCES_DIR)
MERGED = (LIBRARY_FILE, TOOLS_FILE, LOCK_FILE)
Unit = tuple[TreeEntry | None, TreeEntry | None]


@dataclass(frozen=True, slots=True)
class Side:
    """One commit as a conflict names it."""

    commit: str
    subject: str
    author: str

    @classmethod
    def of(cls, info: CommitInfo) -> Side:
        return cls(info.id.decode(), info.message.split("\n", 1)[0], info.author)

    def __str__(self) -> str:
        return f"{self.commit[:12]} {self.subject!r} ({self.author})"


@dataclass(frozen=True, slots=True)
class Step:
    """One local commit and what its replay made."""

    commit: str
    subject: str
    event: str | None  # None: made by hand
    replayed_as: str | None  # None: upstream holds its effect already


def units(store: GitStore, old: ObjectId | None, new: ObjectId | None) -> dict[str, Unit]:
    """The units that differ between two root trees, each with its two entries: item
    directories under the item folders, other top-level entries whole; the manifests'
    folder is left out (it is made again)."""
    if old == new:
        return {}
    before = store.tree_items(old) if old else {}
    after = store.tree_items(new) if new else {}
    out: dict[str, Unit] = {}
    for name in sorted(before.keys() | after.keys()):
        was, now = before.get(name), after.get(name)
        if was == now or name == PLUGIN_DIR:
            continue
        if name in ITEM_TOPS and all(e is None or e.mode == 0o40000 for e in (was, now)):
            inner = units(store, was.sha if was else None, now.sha if now else None)
            out.update({f"{name}/{path}": unit for path, unit in inner.items()})
        else:
            out[name] = (was, now)
    return out


@dataclass
class Replay:
    """Local commits replayed one by one onto ``upstream`` (whose own commits since the
    common base, newest first, are ``theirs``)."""

    library: Library
    store: GitStore
    upstream: ObjectId
    theirs: list[CommitInfo]

    def run(self, mine: list[CommitInfo]) -> tuple[ObjectId, list[Step]]:
        tip, steps = self.upstream, []
        for info in mine:
            tree = self.apply(info, self.store.commit(tip).tree)
            parent_tree = self.store.tree_of(info.parents[0]) if info.parents else None
            event = parse_message(info.message)
            if tree == self.store.commit(tip).tree and parent_tree != info.tree:
                steps.append(Step(info.id.decode(), Side.of(info).subject,
                                  event.kind if event else None, None))
                continue  # its effect is upstream already (as a rebase drops it)
            tip = copy_commit(self.store, info.id, tree, tip)
            steps.append(Step(info.id.decode(), Side.of(info).subject,
                              event.kind if event else None, tip.decode()))
        return tip, steps

    # -- naming the other side -------------------------------------------------------------

    def there(self, probe: Callable[[ObjectId | None], object]) -> str:
        """The newest upstream commit that changed what ``probe`` reads."""
        for info in self.theirs:
            parent = self.store.tree_of(info.parents[0]) if info.parents else None
            if probe(info.tree) != probe(parent):
                return f"upstream {Side.of(info)}"
        return "upstream"

    def _there_entry(self, path: str) -> str:
        return self.there(lambda tree: self.store.lookup(tree, path))

    def _there_file(self, path: str) -> str:
        return self.there(lambda tree: self._read(tree, path))

    def _there_tool(self, tool: str) -> str:
        return self.there(lambda tree: self._tools(tree).get(tool))

    def _refuse(self, info: CommitInfo, what: str, there: str) -> ConflictError:
        return ConflictError(
            f"cannot replay {what}: here {Side.of(info)}; there {there}; nothing was changed",
            hint="settle it with the other side (e.g. restore or withdraw), or drop the local "
            "commit, then sync again")

    # -- one commit ------------------------------------------------------------------------

    def apply(self, info: CommitInfo, onto: ObjectId) -> ObjectId:
        store = self.store
        parent = store.tree_of(info.parents[0]) if info.parents else None
        tree, touched = onto, []
        for path, (was, now) in units(store, parent, info.tree).items():
            if path in MERGED:
                continue
            current = store.lookup(tree, path)
            if current == now:
                continue
            if current != was:
                raise self._refuse(info, self._unit_clash(path, was, now, current),
                                   self._there_entry(path))
            tree = store.with_path(tree, path, now)
            touched.append(path)
            if was is None and now is not None:
                self._one_name(info, tree, path)
        for path in MERGED:
            base, mine = self._read(parent, path), self._read(info.tree, path)
            if base == mine:
                continue
            try:
                merged = merge_generated(path, base, self._read(tree, path), mine)
            except ThreeWayConflict as exc:
                raise self._refuse(info, f"{path} ({'; '.join(exc.what)})",
                                   self._there_file(path)) from None
            entry = None if merged is None else TreeEntry(0o100644, store.blob(merged))
            tree = store.with_path(tree, path, entry)
            touched.append(path)
        self._judge(info, parent, tree, touched)
        return self._regenerate(tree, touched)

    def _one_name(self, info: CommitInfo, tree: ObjectId, path: str) -> None:
        """Skills, recipes and drafts share one name space: a new item may not take a name
        upstream gave an item of another kind meanwhile."""
        top, _, name = path.partition("/")
        if top not in (*KIND_DIRS.values(), DRAFTS_DIR) or "/" in name:
            return
        for other in (*KIND_DIRS.values(), DRAFTS_DIR):
            taken = f"{other}/{name}"
            if other != top and self.store.lookup(tree, taken) is not None:
                raise self._refuse(info, f"a new {path}: upstream holds {taken} under the "
                                   "same name", self._there_entry(taken))

    @staticmethod
    def _unit_clash(path: str, was: TreeEntry | None, now: TreeEntry | None,
                    current: TreeEntry | None) -> str:
        if was is not None and now is not None and current is None:
            return f"a change of {path}, which upstream removed (retired)"
        if was is None and current is not None:
            return f"a new {path}: upstream holds another one under the same name"
        if was is not None and now is None:
            return f"the removal of {path}, which upstream changed"
        return f"a change of {path}, which upstream changed differently"

    def _read(self, tree: ObjectId | None, path: str) -> bytes | None:
        entry = self.store.lookup(tree, path)
        return None if entry is None or entry.mode == 0o40000 else self.store.read_blob(entry.sha)

    def _tools(self, tree: ObjectId | None) -> dict[str, ToolEntry]:
        data = self._read(tree, TOOLS_FILE)
        try:
            return load_tools(data) if data is not None else {}
        except UsageError:
            return {}

    def _lists(self, tree: ObjectId | None) -> set[str]:
        data = self._read(tree, LIBRARY_FILE)
        try:
            config = load_library_config(data) if data is not None else None
        except UsageError:
            return set()
        return set(config.hidden) | set(config.resident) if config else set()

    def _judge(self, info: CommitInfo, parent: ObjectId | None, tree: ObjectId,
               touched: list[str]) -> None:
        """What must hold after the commit: every tool names a recipe that is there, every
        entry the commit added to the skill lists names a skill that is there."""
        store = self.store
        mine, before = self._tools(info.tree), self._tools(parent)
        for tool, entry in sorted(self._tools(tree).items()):
            if store.lookup(tree, entry.recipe) is not None:
                continue
            if mine.get(tool) != before.get(tool):
                raise self._refuse(info, f"tool {tool}: it exposes {entry.recipe}, which "
                                   "upstream retired",
                                   self._there_entry(entry.recipe))
            raise self._refuse(info, f"the removal of {entry.recipe}: upstream exposes it as "
                               f"tool {tool}",
                               self._there_tool(tool))
        added = self._lists(info.tree) - self._lists(parent)
        present = skill_names(store, tree, added)
        for name in sorted(added - present):
            path = f"{KIND_DIRS['skill']}/{name}"
            raise self._refuse(info, f"hide (or resident) of {name}, which upstream retired",
                               self._there_entry(path))

    def _regenerate(self, tree: ObjectId, touched: list[str]) -> ObjectId:
        for maker in self.library.generated:
            if not any(maker.watches(path) or path == LIBRARY_FILE for path in touched):
                continue
            for path, data in maker.expected(self.store, tree).items():
                entry = self.store.lookup(tree, path)
                blob = self.store.blob(data)
                if entry is None or entry.sha != blob:
                    tree = self.store.with_path(tree, path, TreeEntry(0o100644, blob))
        return tree


def first_parents(store: GitStore, tip: ObjectId | None,
                  stop: ObjectId | None) -> Iterator[CommitInfo]:
    """First-parent history from ``tip`` down to (not including) ``stop``, newest first."""
    sha = tip
    while sha is not None and sha != stop:
        info = store.commit(sha)
        yield info
        sha = info.parents[0] if info.parents else None
