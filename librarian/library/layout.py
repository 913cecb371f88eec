"""Finding a library and the items its committed tree holds."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cache, partial
from pathlib import Path
from urllib.parse import quote

from librarian.cache import LastValueMemo, ShortMemo
from librarian.core.model import DRAFTS_DIR, KIND_DIRS, MANIFEST_FILES, SOURCES_DIR, ItemKind
from librarian.core.names import qualified_names
from librarian.errors import UsageError
from librarian.formats.config import (
    LIBRARY_FILE,
)
from librarian.git import GitStore, ObjectId, TreeEntry
from librarian.library.generated import GeneratedFiles
from librarian.library.guard import READ_FOLDERS, refuse_linked_state

STATE_DIR = "librarian"  # inside .git/
#: Below STATE_DIR: the state of each library kept in a folder of a repository.
IN_FOLDER = "in"


@dataclass(frozen=True, slots=True)
class Library:
    """Paths of one library. Cheap to create; opens nothing. ``generated``: the makers of
    the files its commits generate (``library/generated.py``), handed over by whoever opens
    it; they are not part of its identity. ``repo``: the work tree of the repository it is
    committed in when that is not ``root`` itself (a project library: ``<project>/.agents``
    inside the project's repository); its commits then touch only ``prefix``."""

    root: Path
    generated: tuple[GeneratedFiles, ...] = field(default=(), compare=False, repr=False)
    repo: Path | None = None

    @property
    def repo_root(self) -> Path:
        """The work tree holding ``.git``: ``root`` for a library with its own repository."""
        return self.repo if self.repo is not None else self.root

    @property
    def prefix(self) -> str:
        """The library's folder inside its repository (posix), "" when it is the top."""
        return "" if self.repo is None else self.root.relative_to(self.repo).as_posix()

    @property
    def git_dir(self) -> Path:
        return self.repo_root / ".git"

    @property
    def state_dir(self) -> Path:
        """``.git/librarian``; a library in a folder has its own below it
        (``.git/librarian/in/<folder, quoted>``): lock, journal, stage and caches are per
        library, the repository's objects, refs and index are shared."""
        own = self.git_dir / STATE_DIR
        return own if self.repo is None else own / IN_FOLDER / quote(self.prefix, safe="")

    @property
    def lock_path(self) -> Path:
        return self.state_dir / "lock"

    @property
    def journal_path(self) -> Path:
        return self.state_dir / "journal.json"

    @property
    def conflicts_path(self) -> Path:
        """Items ``update --merge-conflicts`` left conflicted (``sources.conflicted``)."""
        return self.state_dir / "conflicts.json"

    @property
    def stage_dir(self) -> Path:
        return self.state_dir / "stage"

    @property
    def trash_dir(self) -> Path:
        return self.state_dir / "trash"

    @property
    def cache_dir(self) -> Path:
        return self.state_dir / "cache"

    @property
    def index_path(self) -> Path:
        return self.git_dir / "index"

    def path_of(self, library_path: str) -> Path:
        return self.root.joinpath(*library_path.split("/"))

    def repo_path(self, library_path: str) -> str:
        """``library_path`` as a path of the repository (what git's index and trees name)."""
        return f"{self.prefix}/{library_path}" if self.repo is not None else library_path

    def store(self) -> GitStore:
        return GitStore(self.repo_root, self.prefix)


#: The folder of a project's library in its repository, found from the project's top
#: (Codex reads ``<repo>/.agents/skills``; docs/agents.md).
PROJECT_FOLDER = ".agents"


def enclosing_repo(path: Path) -> Path | None:
    """The nearest parent of ``path`` holding a ``.git`` directory (git's discovery of the
    work tree, without ``GIT_DIR``); None when there is none, or when the nearest ``.git``
    is a file (a linked work tree or a submodule: not supported)."""
    for parent in path.parents:
        git = parent / ".git"
        if git.is_dir() and not git.is_symlink():
            return parent
        if git.exists() or git.is_symlink():
            return None
    return None


def open_library(path: Path, generated: tuple[GeneratedFiles, ...] = (),
                 repo: Path | None = None) -> Library | None:
    """The library whose folder is ``path``, or None: library.yaml (or a journal: a change
    killed between the two renames that swap library.yaml leaves none, and recovery must
    run) in a git work tree of its own, else in a folder of the enclosing repository
    (``repo``, when the caller found it already)."""
    git = path / ".git"
    if git.is_dir():
        library = Library(path, generated)
    elif git.exists() or git.is_symlink():
        return None
    else:
        top = repo if repo is not None and repo in path.parents else enclosing_repo(path)
        if top is None:
            return None
        library = Library(path, generated, top)
    if (path / LIBRARY_FILE).is_file() or library.journal_path.is_file():
        return library
    return None


def is_library(path: Path) -> bool:
    """Whether ``path`` is a library's folder (``open_library``)."""
    return open_library(path) is not None


def find_library(explicit: Path | None = None, cwd: Path | None = None,
                 generated: tuple[GeneratedFiles, ...] = ()) -> Library:
    """``--library``, else ``$LIBRARIAN_LIBRARY``, else the nearest parent holding
    library.yaml (spec §3.1) or a repository's top holding ``.agents/library.yaml``, else
    the default library of the user config file; opened with the makers of its
    ``generated`` files."""
    chosen = explicit or (Path(os.environ["LIBRARIAN_LIBRARY"]) if os.environ.get(
        "LIBRARIAN_LIBRARY") else None)
    if chosen is not None:
        root = chosen.expanduser().absolute()
        library = open_library(root, generated)
        if library is None:
            raise UsageError(
                f"{root} is not a library (no library.yaml in a git work tree)",
                hint="create one with `librarian init PATH`",
            )
        refuse_linked_state(library.git_dir, library.state_dir, folders=READ_FOLDERS)
        return library
    start = (cwd or Path.cwd()).absolute()
    found = nearest_library(start, generated)
    if found is not None:
        refuse_linked_state(found.git_dir, found.state_dir, folders=READ_FOLDERS)
        return found
    # Imported here: a command run in (or naming) its library never reads the user config.
    from librarian.formats.userconfig import config_path, load_user_config

    default = load_user_config().library
    if default is not None:
        root = default.absolute()
        library = open_library(root, generated)
        if library is None:
            raise UsageError(
                f"{root}, the default library in {config_path()}, is not a library",
                hint="fix 'library:' there, or create it with `librarian init PATH`")
        return library
    raise UsageError(
        f"{start} is not inside a library",
        hint="pass --library PATH, set LIBRARIAN_LIBRARY, put 'library: PATH' in "
        f"{config_path()}, or run `librarian init`",
    )


def nearest_library(start: Path, generated: tuple[GeneratedFiles, ...] = ()) -> Library | None:
    """The nearest parent of ``start`` (or itself) that is a library; at the top of a
    repository (a folder holding ``.git``), its ``.agents`` folder when that is one."""
    repo = enclosing_repo(start / "_")  # the nearest work tree holding ``start``
    for candidate in (start, *start.parents):
        if repo is not None and candidate == repo:
            library = open_library(candidate, generated)
            nested = None if library is not None else open_library(
                candidate / PROJECT_FOLDER, generated, candidate)
            if library is not None or nested is not None:
                return library or nested
            repo = enclosing_repo(candidate)
            continue
        library = open_library(candidate, generated, repo)
        if library is not None:
            return library
    return None


# -- items in a committed tree --------------------------------------------------------

ItemState = str  # "retained" | "draft" | "managed"


@dataclass(frozen=True, slots=True)  # one per item: 10,000 in a large library
class Item:
    """One item as committed: ``name`` is ``SOURCE:NAME`` for managed items."""

    name: str
    kind: ItemKind
    state: ItemState
    path: str  # library path, e.g. skills/pdf
    tree: ObjectId

    @property
    def bare_name(self) -> str:
        """The directory name: ``pdf`` for ``team:pdf``, ``access`` for
        ``team:imessage:access``."""
        return self.name.rsplit(":", 1)[-1]


def item_kind(store: GitStore, tree: ObjectId) -> ItemKind | None:
    """The kind of the item whose tree is ``tree`` (None: not an item), remembered by tree
    id: listing 10,000 items then reads no item's tree again (cache/memo.py)."""
    memo = ShortMemo.of(store, "kinds")
    key = tree.decode()
    known = memo.get(key)
    if known is not None:  # "" when not an item
        return next((k for k in MANIFEST_FILES if k == known), None)
    entries = store.tree_items(tree)
    found = [k for k, manifest in MANIFEST_FILES.items() if manifest in entries]
    kind: ItemKind | None = found[0] if len(found) == 1 else None
    memo.put(key, kind or "")
    return kind


def remember_kind(store: GitStore, tree: ObjectId, paths: Iterable[str]) -> None:
    """The kind of the item whose tree ``tree`` holds files at ``paths``, as ``item_kind``
    would read it from the tree (its top entries: files and directories alike), so that
    listings need not read it (an install's commit lists all its items right away, for the
    plugin manifests). What validation calls the item does not enter: a skill holding a
    directory named like the other manifest is a skill to validation and no item here."""
    top = {path.split("/", 1)[0] for path in paths}
    found = [k for k, manifest in MANIFEST_FILES.items() if manifest in top]
    ShortMemo.of(store, "kinds").put(tree.decode(), found[0] if len(found) == 1 else "")


def committed_items(store: GitStore, root_tree: ObjectId | None) -> Iterator[Item]:
    """Retained items, drafts and managed items of ``root_tree``, in path order.

    Directories under skills/, recipes/ and drafts/ are items by position; their kind comes
    from the manifest they hold (a draft's kind is its content's). A long list is
    remembered by its top directory's tree id (``_remembered``)."""
    if root_tree is None:
        return
    top = store.tree_items(root_tree)
    for kind, directory in KIND_DIRS.items():
        yield from _remembered(store, top.get(directory), directory,
                               partial(_items_in, store, top, directory, "retained", kind))
    yield from _remembered(store, top.get(DRAFTS_DIR), DRAFTS_DIR,
                           partial(_items_in, store, top, DRAFTS_DIR, "draft", None))
    yield from _remembered(store, top.get(SOURCES_DIR), SOURCES_DIR,
                           partial(managed_items, store, top.get(SOURCES_DIR)))


#: Lists shorter than this are listed again each time: reading a file would cost more.
REMEMBERED_ITEMS = 64
_STATES = {"retained": b"r", "draft": b"d", "managed": b"m"}
_KINDS: dict[ItemKind, bytes] = {kind: kind[0].encode("ascii") for kind in MANIFEST_FILES}
_KIND_OF: dict[int, ItemKind] = {code[0]: kind for kind, code in _KINDS.items()}
_STATE_IN: dict[str, ItemState] = {
    **{directory: "retained" for directory in KIND_DIRS.values()},
    DRAFTS_DIR: "draft", SOURCES_DIR: "managed"}


def _remembered(store: GitStore, entry: TreeEntry | None, directory: str,
                listing: Callable[[], Iterator[Item]]) -> Iterator[Item]:
    """The items under one top directory: decoded from the list remembered for its tree
    id (``cache/list-<directory>.bin``), else listed, and remembered when long. Listing
    10,000 items reads 10,000 kinds and builds 30,000 strings; decoding reads one buffer."""
    if entry is None or not stat.S_ISDIR(entry.mode):
        return
    memo = LastValueMemo.of(store, f"list-{directory}")
    key = entry.sha.decode()
    known = memo.get(key)
    if known is not None:
        decoded = _decode_items(known, directory)
        if decoded is not None:
            yield from decoded
            return
    items: list[Item] = []
    for item in listing():  # streamed: a caller that stops early reads no further tree
        items.append(item)
        yield item
    # only a whole list is remembered, and only one that decodes back the same (a name
    # holding "/" in a tree made by hand would not)
    if len(items) >= REMEMBERED_ITEMS and all(map(_named_by_path, items)):
        memo.put(key, _encode_items(items))


def _name_of(path: str, managed: bool) -> str:
    """An item's name as its path gives it: ``pdf``, or ``team:pdf`` for a managed one."""
    name = path.rsplit("/", 1)[-1]
    return f"{path.split('/', 2)[1]}:{name}" if managed else name


def _named_by_path(item: Item) -> bool:
    return item.name == _name_of(item.path, item.state == "managed")


def _encode_items(items: Iterable[Item]) -> bytes:
    return b"\0".join(_STATES[item.state] + _KINDS[item.kind] + item.tree
                      + item.path.encode("utf-8", "surrogateescape") for item in items)


#: One component of a path: not empty, "." or ".." (nor holding "/" or NUL)
_COMPONENT = rb"(?!\.\.?(?:/|\x00|\Z))[^\x00/]+"


@cache
def _list_shape(directory: str) -> re.Pattern[bytes]:
    """A whole remembered list of ``directory``: records of its items' state, a kind, 40
    hex digits and a path under it; matched in one pass, not a check per record."""
    state = re.escape(_STATES[_STATE_IN[directory]])
    kinds = b"".join(re.escape(code) for code in _KINDS.values())
    record = (state + b"[" + kinds + b"][0-9a-f]{40}" + re.escape(directory.encode())
              + b"(?:/" + _COMPONENT + b")+")
    return re.compile(record + b"(?:\x00" + record + b")*")


def _decode_items(data: bytes, directory: str) -> list[Item] | None:
    """The items of a remembered list, or None if it is not one (then listed again), so
    that a forged list can neither crash a command nor name a path elsewhere. Each
    record: state, kind, 40 hex digits of the tree id, the library path."""
    if _list_shape(directory).fullmatch(data) is None:
        return None
    items: list[Item] = []
    append = items.append
    state = _STATE_IN[directory]
    managed = state == "managed"
    for record in data.split(b"\0"):
        path = record[42:].decode("utf-8", "surrogateescape")
        append(Item(_name_of(path, managed), _KIND_OF[record[1]], state, path, record[2:42]))
    return items


def _items_in(
    store: GitStore,
    top: Mapping[str, TreeEntry],
    directory: str,
    state: str,
    kind: ItemKind | None,
) -> Iterator[Item]:
    entry = top.get(directory)
    if entry is None or not stat.S_ISDIR(entry.mode):
        return
    for name, child in store.tree_children(entry.sha):
        if not stat.S_ISDIR(child.mode):
            continue
        found = kind or item_kind(store, child.sha) or "skill"
        yield Item(name, found, state, f"{directory}/{name}", child.sha)


def managed_items(store: GitStore, sources_entry: TreeEntry | None) -> Iterator[Item]:
    """Items under ``sources/<source>/<upstream path>``: any directory holding exactly one
    manifest is an item (its upstream path may be nested, e.g. skills/pdf)."""
    if sources_entry is None or not stat.S_ISDIR(sources_entry.mode):
        return
    for source, source_entry in sorted(store.tree_items(sources_entry.sha).items()):
        if stat.S_ISDIR(source_entry.mode):
            yield from _source_items(store, source, source_entry.sha)


def _source_items(store: GitStore, source: str, tree: ObjectId) -> Iterator[Item]:
    """One source's items. Items sharing a folder name are named apart
    (``core.names.qualified_names``), which takes the whole collection; whether a
    collection's names are all unique is remembered by its tree id, so a lookup that
    stops at its item walks no further in the usual case."""
    root = f"{SOURCES_DIR}/{source}"
    memo = ShortMemo.of(store, "names")
    key = tree.decode()
    if memo.get(key) == "unique":
        yield from _managed_walk(store, source, tree, root)
        return
    items = list(_managed_walk(store, source, tree, root))
    names = qualified_names(i.path[len(root) + 1:] for i in items)
    named = [item if (name := f"{source}:{names[item.path[len(root) + 1:]]}") == item.name
             else replace(item, name=name) for item in items]
    memo.put(key, "unique" if named == items else "apart")
    yield from named


def _managed_walk(store: GitStore, source: str, tree: ObjectId, path: str) -> Iterator[Item]:
    kind = item_kind(store, tree)
    if kind is not None:
        yield Item(f"{source}:{path.rsplit('/', 1)[-1]}", kind, "managed", path, tree)
        return
    for name, child in store.tree_children(tree):
        if stat.S_ISDIR(child.mode):
            yield from _managed_walk(store, source, child.sha, f"{path}/{name}")
