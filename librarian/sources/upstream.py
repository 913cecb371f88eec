"""Reading a source's upstream tree into the collection an update would install.

An upstream item is a directory holding ``SKILL.md`` or ``recipe.yaml``, anywhere in the
tree (``skills/pdf``, ``recipes/review``); it is not searched further. Items are filtered
by the source's ``include``/``exclude`` (gitignore patterns over the item's upstream path)
and every new or changed item is validated exactly like a retained one
(``content.validate_item``): bad ones are skipped with the reasons and never reach the work
tree. Items already installed with the same git tree id were validated when installed, so
an update reads only the items that changed upstream.
"""

from __future__ import annotations

import functools
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from librarian.content.sourcedir import IGNORE_FILE, IgnoreMatcher, ignore_spec
from librarian.content.validate import validate_item
from librarian.content.worktree import item_ids
from librarian.core.digest import MODE_EXECUTABLE, MODE_FILE
from librarian.core.gitpaths import segment_problem, visible
from librarian.core.model import MANIFEST_FILES, SOURCES_DIR, ItemFile, Policy
from librarian.errors import UsageError, ValidationError
from librarian.formats.config import SourceConfig
from librarian.store.gitstore import GitStore, ObjectId, TreeEntry
from librarian.store.library import remember_kind

MAX_DEPTH = 32
_MANIFESTS = tuple(MANIFEST_FILES.values())


@dataclass(frozen=True, slots=True)  # one per item upstream: 10,000 in a large source
class UpstreamItem:
    path: str  # upstream path, e.g. skills/pdf
    tree: ObjectId  # git (SHA-1) tree id, identical in the library's store
    digest: str  # sha256:… (spec §2)
    #: nonconformities it is admitted with (empty for an item known from the lock, which
    #: is not read again)
    warnings: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Skipped:
    path: str
    problems: tuple[str, ...]


@dataclass(frozen=True)
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


@functools.lru_cache(maxsize=4096)  # names repeat across items: SKILL.md, scripts, ...
def _unsafe_part(part: str) -> str | None:
    if part in ("", ".", ".."):
        return f"{part!r} is not a plain directory name"
    if "/" in part or "\\" in part or "\x00" in part:
        return f"{part!r} holds a path separator or NUL"
    if part.lower() == ".git":
        return "a .git directory cannot be stored"
    problem = segment_problem(part)  # git's own rules: git~1, .g\u200cit, CON, …
    if problem is not None:
        return f"{visible(part)!r} {problem}"
    try:
        part.encode("utf-8")
    except UnicodeEncodeError:
        return "a directory name is not valid UTF-8"
    return None


def find_item_trees(
    store: GitStore, tree: ObjectId | None, known: Mapping[str, ObjectId] | None = None
) -> Iterator[tuple[str, ObjectId, str | None]]:
    """(upstream path, tree id, problem with the path or None) of every directory holding
    a manifest, in path order; manifest directories are not searched further. ``known``
    (path -> tree id of installed items) spares reading trees already known to be items.
    Each directory's subdirectories are taken one at a time as the walk reaches them (no
    list of a 10,000-entry directory's children beside the tree itself)."""
    if tree is None:
        return
    known = known or {}
    stack: list[Iterator[tuple[str, ObjectId, int, str | None]]] = [iter([("", tree, 0, None)])]
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            continue
        prefix, sha, depth, problem = step
        if problem is None and known.get(prefix) == sha:
            yield prefix, sha, None
            continue
        if prefix and any(store.lookup(sha, m) is not None for m in _MANIFESTS):
            yield prefix, sha, problem
            continue
        if depth >= MAX_DEPTH:
            if any(stat.S_ISDIR(e.mode) for _, e in store.tree_children(sha)):
                yield prefix, sha, f"nested deeper than {MAX_DEPTH} directories"
            continue
        stack.append(_subdirectories(store, prefix, sha, depth, problem))


def _subdirectories(store: GitStore, prefix: str, tree: ObjectId, depth: int,
                    problem: str | None) -> Iterator[tuple[str, ObjectId, int, str | None]]:
    """The directories in ``tree`` in path order, as ``find_item_trees`` walks them."""
    for name, entry in store.tree_children(tree, text=True):
        if stat.S_ISDIR(entry.mode):
            path = f"{prefix}/{name}" if prefix else name
            yield path, entry.sha, depth + 1, problem or _unsafe_part(name)


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
    known = {tree: pins[path] for path, tree in installed.items()}
    known_paths = installed
    include = compile_patterns(config.include, "include")
    exclude = compile_patterns(config.exclude, "exclude")
    items: dict[str, UpstreamItem] = {}
    skipped: list[Skipped] = []
    filtered: list[str] = []
    names: dict[str, str] = {}
    for path, tree, problem in find_item_trees(store, upstream_tree, known_paths):
        if problem is not None:
            skipped.append(Skipped(path, (problem,)))
            continue
        if not selected(path, include, exclude):
            filtered.append(path)
            continue
        name = path.rsplit("/", 1)[-1]
        if name in names:
            skipped.append(Skipped(path, (f"another item of this source, {names[name]}, "
                                          f"is named {name!r}",)))
            continue
        cached = known.get(tree)
        if cached is not None:
            item = UpstreamItem(path, tree, cached)
        else:
            judged = judge_item(store, path, tree, policy)
            if isinstance(judged, Skipped):
                skipped.append(judged)
                continue
            item = judged
        names[name] = path
        items[path] = item
    return Collection(items, tuple(skipped), tuple(filtered))


def judge_item(
    store: GitStore, path: str, tree: ObjectId, policy: Policy
) -> UpstreamItem | Skipped:
    """Validate one upstream item from its git tree; a Skipped lists every reason. What
    retain would ignore (the default ignores and the item's ``.librarianignore``) is left
    out, and the item then gets a tree of its own."""
    problems: list[str] = []
    files: list[ItemFile] = []
    total = 0
    ignored = _ignores(store, tree, problems)
    left_out = 0
    for rel, entry in _entries(store, tree, problems):
        if ignored.match_file(rel):
            left_out += 1
        elif entry.mode == 0o120000:
            problems.append(f"{rel}: is a symbolic link (links are never admitted)")
        elif entry.mode == 0o160000:
            problems.append(f"{rel}: is a submodule (items hold regular files only)")
        elif entry.mode not in (MODE_FILE, MODE_EXECUTABLE):
            problems.append(f"{rel}: has an unsupported mode {entry.mode:o}")
        elif len(files) >= policy.max_item_files or total > policy.max_item_bytes:
            problems.append(f"holds more than {policy.max_item_files} files or "
                            f"{policy.max_item_bytes} bytes")
            break
        else:
            data = store.read_blob(entry.sha)
            total += len(data)
            files.append(ItemFile(rel, entry.mode == MODE_EXECUTABLE, data))
    if not problems:
        try:
            content = validate_item(files, policy, expected_name=path.rsplit("/", 1)[-1],
                                    where=path)
        except ValidationError as exc:
            problems.extend(exc.problems or (exc.message,))
        else:
            canonical, blobs, digest = item_ids(content.files)
            if left_out:
                admitted = store.files_tree(content.files)
                store.checked.digests[admitted] = digest  # staging reads and checks it
                remember_kind(store, admitted, (f.path for f in content.files))
                return UpstreamItem(path, admitted, digest, content.warnings)
            if canonical != tree:
                problems.append("its git tree is not in canonical form (empty directories, "
                                "unusual modes or entry order)")
            else:
                store.checked.keep(tree, content.files, blobs, digest)  # staged from these bytes
                remember_kind(store, tree, (f.path for f in content.files))
                return UpstreamItem(path, tree, digest, content.warnings)
    return Skipped(path, tuple(dict.fromkeys(problems)))


def _ignores(store: GitStore, tree: ObjectId, problems: list[str]) -> IgnoreMatcher:
    """The default ignores plus the item's own ``.librarianignore``, as retain reads them."""
    entry = store.lookup(tree, IGNORE_FILE)
    if entry is None or entry.mode not in (MODE_FILE, MODE_EXECUTABLE):
        return ignore_spec()
    try:
        return ignore_spec(store.read_blob(entry.sha).decode("utf-8").splitlines())
    except UnicodeDecodeError:
        problems.append(f"{IGNORE_FILE}: is not valid UTF-8")
        return ignore_spec()


def _entries(store: GitStore, tree: ObjectId, problems: list[str],
             prefix: str = "", depth: int = 0) -> Iterator[tuple[str, TreeEntry]]:
    for name, entry in store.tree_items(tree).items():
        rel = prefix + name
        bad = _unsafe_part(name)
        if bad is not None:
            problems.append(f"{rel!r}: {bad}")
            continue
        if stat.S_ISDIR(entry.mode):
            if depth >= MAX_DEPTH:
                problems.append(f"{rel}: nested deeper than {MAX_DEPTH} directories")
                continue
            yield from _entries(store, entry.sha, problems, rel + "/", depth + 1)
        else:
            yield rel, entry
