"""Reading a source's upstream tree into the collection an update would install.

An upstream item is a directory holding ``SKILL.md`` or ``recipe.yaml``, anywhere in the
tree (``skills/pdf``, ``recipes/review``); it is not searched further. Items are filtered
by the source's ``include``/``exclude`` (gitignore patterns over the item's upstream path)
and every new or changed item is validated exactly like a retained one
(``content.validate_item``): bad ones are skipped with the reasons and never reach the work
tree. Items already installed with the same git tree id were validated when installed, so
an update reads only the items that changed upstream; judging one is ``sources.judging``'s.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from librarian.content.sourcedir import IgnoreMatcher
from librarian.core.model import MANIFEST_FILES, SOURCES_DIR, Policy
from librarian.errors import UsageError
from librarian.formats.config import SourceConfig
from librarian.git import GitStore, ObjectId
from librarian.sources.judging import (
    MAX_DEPTH,
    Skipped,
    UpstreamItem,
    judge_item,
    judge_items,
    unsafe_part,
)

__all__ = [
    "MAX_DEPTH", "Collection", "Found", "Skipped", "UpstreamItem", "WalkStart",
    "collection_path", "compile_patterns", "find_item_trees", "holds_manifest", "judge_item",
    "read_collection",
    "selected", "split_filtered", "unsafe_part", "verdicts",
]

_MANIFESTS = tuple(MANIFEST_FILES.values())
#: Where a walk starts: (upstream path, depth, problem with the path or None).
WalkStart = tuple[str, int, str | None]
#: One directory holding a manifest: (upstream path, tree id, problem with the path or None).
Found = tuple[str, ObjectId, str | None]


@dataclass(frozen=True, slots=True)
class Collection:
    """The items an update would install from one upstream commit."""

    items: Mapping[str, UpstreamItem]
    skipped: tuple[Skipped, ...]
    filtered_out: tuple[str, ...]

    @property
    def warnings(self) -> tuple[str, ...]:
        """``<upstream path>/<file>: nonconforming […]: …`` for every item read now."""
        return tuple(f"{path}/{w}" for path, item in self.items.items() for w in item.warnings)


def collection_path(source: str, upstream_path: str = "") -> str:
    """Library path of a source's collection, or of one of its items."""
    base = f"{SOURCES_DIR}/{source}"
    return f"{base}/{upstream_path}" if upstream_path else base


def compile_patterns(patterns: tuple[str, ...], what: str) -> IgnoreMatcher | None:
    if not patterns:
        return None
    try:
        import pathspec  # only sources with patterns pay for it (~30 ms)

        spec: IgnoreMatcher = pathspec.GitIgnoreSpec.from_lines(list(patterns))
        return spec
    except (ValueError, TypeError, re.error) as exc:  # '**/[z-a]' fails in re, not pathspec
        raise UsageError(f"invalid {what} pattern: {exc}",
                         hint="patterns use gitignore syntax") from None


def selected(path: str, include: IgnoreMatcher | None,
             exclude: IgnoreMatcher | None) -> bool:
    """Whether the item at upstream ``path`` passes the source's filters (directory match,
    so ``skills/`` and ``skills/*`` both select ``skills/pdf``)."""
    as_dir = path + "/"
    if include is not None and not include.match_file(as_dir):
        return False
    return exclude is None or not exclude.match_file(as_dir)


def find_item_trees(
    store: GitStore, tree: ObjectId | None, known: Mapping[str, ObjectId] | None = None,
    *, start: WalkStart = ("", 0, None),
) -> Iterator[tuple[str, ObjectId, str | None]]:
    """(upstream path, tree id, problem with the path or None) of every directory holding
    a manifest, in path order; manifest directories are not searched further. ``known``
    (path -> tree id of installed items) spares reading trees already known to be items.
    Each directory's subdirectories are taken one at a time as the walk reaches them (no
    list of a 10,000-entry directory's children beside the tree itself). ``start`` is where
    ``tree`` stands in the whole walk (path, depth, problem of the path): a part of the
    walk is walked as the whole walk would walk it (``sources.delta``)."""
    if tree is None:
        return
    known = known or {}
    at, depth, problem = start
    stack: list[Iterator[tuple[str, ObjectId, int, str | None]]] = [
        iter([(at, tree, depth, problem)])]
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            continue
        prefix, sha, depth, problem = step
        if problem is None and known.get(prefix) == sha:
            yield prefix, sha, None
            continue
        if prefix and holds_manifest(store, sha):
            yield prefix, sha, problem
            continue
        if depth >= MAX_DEPTH:
            if any(stat.S_ISDIR(e.mode) for _, e in store.tree_children(sha)):
                yield prefix, sha, f"nested deeper than {MAX_DEPTH} directories"
            continue
        stack.append(_subdirectories(store, prefix, sha, depth, problem))


def holds_manifest(store: GitStore, tree: ObjectId) -> bool:
    """Whether ``tree`` holds a manifest at its top: an item's directory."""
    return any(store.lookup(tree, manifest) is not None for manifest in _MANIFESTS)


def _subdirectories(store: GitStore, prefix: str, tree: ObjectId, depth: int,
                    problem: str | None) -> Iterator[tuple[str, ObjectId, int, str | None]]:
    """The directories in ``tree`` in path order, as ``find_item_trees`` walks them."""
    for name, entry in store.tree_children(tree, text=True):
        if stat.S_ISDIR(entry.mode):
            path = f"{prefix}/{name}" if prefix else name
            yield path, entry.sha, depth + 1, problem or unsafe_part(name)


def read_collection(
    store: GitStore,
    upstream_tree: ObjectId,
    config: SourceConfig,
    policy: Policy,
    installed: Mapping[str, ObjectId],
    pins: Mapping[str, str],
) -> Collection:
    """The filtered, validated items of ``upstream_tree``. ``installed`` maps the paths of
    installed items to their tree ids, ``pins`` to their digests: content with those ids
    was validated when it was installed and is not read again."""
    include = compile_patterns(config.include, "include")
    exclude = compile_patterns(config.exclude, "exclude")
    found, filtered = split_filtered(find_item_trees(store, upstream_tree, installed),
                                     include, exclude)
    known = {tree: pins[path] for path, tree in installed.items()}
    items, skipped = verdicts(store, found, known, policy)
    return Collection(items, skipped, tuple(filtered))


def split_filtered(walk: Iterable[Found], include: IgnoreMatcher | None,
                   exclude: IgnoreMatcher | None) -> tuple[list[Found], list[str]]:
    """The walk's items the source's filters select, and the paths of those they leave out
    (an item whose path has a problem is never left out: it is skipped, with it)."""
    found: list[Found] = []
    filtered: list[str] = []
    for path, tree, problem in walk:
        if problem is None and not selected(path, include, exclude):
            filtered.append(path)
        else:
            found.append((path, tree, problem))
    return found, filtered


def verdicts(store: GitStore, found: Sequence[Found], known: Mapping[ObjectId, str],
             policy: Policy) -> tuple[dict[str, UpstreamItem], tuple[Skipped, ...]]:
    """The admitted items and the skipped ones among ``found`` (in path order); ``known``
    maps the tree ids of installed items to their digests (not read again)."""
    # The walk first, every item's verdict after it: the items to read are judged together
    # (an install's, over two processors: sources.judging), then taken in path order.
    wanted = [(path, tree) for path, tree, problem in found
              if problem is None and tree not in known]
    judged = iter(judge_items(store, wanted, policy))
    items: dict[str, UpstreamItem] = {}
    skipped: list[Skipped] = []
    for path, tree, problem in found:
        if problem is not None:
            skipped.append(Skipped(path, (problem,)))
            continue
        cached = known.get(tree)
        # In the order of ``wanted``: every item without a known tree has its verdict.
        verdict = UpstreamItem(path, tree, cached) if cached is not None else next(judged)
        # Two items sharing a folder name are both admitted: they are named apart
        # (core.names.qualified_names), as Claude Code names a plugin's skills.
        if isinstance(verdict, Skipped):
            skipped.append(verdict)
        else:
            items[path] = verdict
    return items, tuple(skipped)
