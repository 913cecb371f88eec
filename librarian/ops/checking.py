"""``check``: validate the whole library, or what the git index is about to commit.

The pre-commit hook runs ``check --staged`` so commits made with plain git meet the same
rules as librarian's own: formats, names, bounds, no symlinks or special files, no secrets.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from librarian.content.secretscan import secret_problem
from librarian.content.validate import validate_item
from librarian.core.gitpaths import collisions, path_problem, visible
from librarian.core.model import (
    DRAFTS_DIR,
    KIND_DIRS,
    MANIFEST_FILES,
    SOURCES_DIR,
    ItemFile,
    Policy,
)
from librarian.core.names import name_problem
from librarian.core.progress import counted
from librarian.errors import LibrarianError
from librarian.formats.claude_plugin import MARKETPLACE_FILE, PLUGIN_FILE
from librarian.formats.config import (
    LIBRARY_FILE,
    LOCK_FILE,
    TOOLS_FILE,
    LockedSource,
    ToolEntry,
    load_library_config,
    load_lock,
    load_tools,
)
from librarian.git import GitStore, ObjectId, read_index, resolve
from librarian.library import GeneratedFiles, Library
from librarian.ops.agentchecks import agent_warnings

Loader = Callable[[], bytes]
#: (posix path in the library, git mode, content loader)
Entry = tuple[str, int, Loader]
_LINK = 0o120000


@dataclass(frozen=True, slots=True)
class CheckReport:
    scope: str  # "work tree" | "index"
    items: int
    problems: tuple[str, ...]
    #: nonconformities items were admitted with, and the lock's warnings (never a
    #: failure: strict makes them problems)
    warnings: tuple[str, ...] = ()
    #: how many of ``warnings`` concern items unchanged since HEAD: the text counts them
    #: rather than repeating them (`librarian inspect --verbose` lists them)
    other_warnings: int = 0
    #: the rest of ``warnings``, about what is being changed: what the text lists
    shown_warnings: tuple[str, ...] = field(default=(), metadata={"json": False})

    @property
    def ok(self) -> bool:
        return not self.problems


def _no_bytes() -> bytes:
    return b""


def _work_entries(root: Path) -> Iterable[Entry]:
    """The item folders' files and every top-level file (not following links); a link
    anywhere is yielded as one (mode 120000) so the checks name it."""
    with os.scandir(root) as listing:
        top = sorted((e.name, e.stat(follow_symlinks=False)) for e in listing if e.name != ".git")
    for name, st in top:
        if stat.S_ISLNK(st.st_mode):
            yield name, _LINK, _no_bytes
        elif stat.S_ISREG(st.st_mode):
            yield name, _file_mode(st), (root / name).read_bytes
        elif not stat.S_ISDIR(st.st_mode):
            yield name, stat.S_IFMT(st.st_mode), _no_bytes
    for directory in (*KIND_DIRS.values(), DRAFTS_DIR, SOURCES_DIR):
        base = root / directory
        if base.is_symlink() or not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            st = path.lstat()
            if stat.S_ISDIR(st.st_mode):
                continue
            mode = st.st_mode if not stat.S_ISREG(st.st_mode) else _file_mode(st)
            yield path.relative_to(root).as_posix(), mode, path.read_bytes
    for name in (PLUGIN_FILE, MARKETPLACE_FILE):  # the top-level files came first
        path = root / name
        if not path.parent.is_symlink() and path.is_file() and not path.is_symlink():
            yield name, 0o100644, path.read_bytes


def _file_mode(st: os.stat_result) -> int:
    return 0o100755 if st.st_mode & stat.S_IXUSR else 0o100644


def _file_problems(entry: Entry, allowed: frozenset[str]) -> list[str]:
    """A file outside every item: a link or special file, a path git refuses, a secret."""
    path, mode, load = entry
    if mode not in (0o100644, 0o100755):
        kind = "a symlink" if stat.S_ISLNK(mode) else "not a regular file"
        return [f"{visible(path)}: {kind}; a library holds regular files only"]
    problem = path_problem(path)
    if problem is not None:
        return [f"{visible(path)}: {problem}"]
    reason = secret_problem(path, load(), allowed)
    return [f"{path}: looks like a secret ({reason})"] if reason is not None else []


def _stray_problems(entries: Sequence[Entry], allowed: frozenset[str]) -> list[str]:
    """What git or another OS would trip on outside the items (those are judged whole by
    ``validate_item``): links, special files, paths git reads as .git, secrets, and names
    colliding by case or normalisation at the top two levels."""
    problems: list[str] = []
    item_dirs = (*KIND_DIRS.values(), DRAFTS_DIR, SOURCES_DIR)
    for path, mode, load in entries:
        parts = path.split("/")
        if len(parts) > 1 and parts[0] in item_dirs:
            if len(parts) > 2 and parts[0] == SOURCES_DIR:
                problem = path_problem("/".join(parts[:-1]))
                if problem is not None:
                    problems.append(f"{visible(path)}: {problem}")
            continue
        problems.extend(_file_problems((path, mode, load), allowed))
    for first, other in collisions(path for path, _, _ in entries):
        if other.count("/") < 2:
            problems.append(f"{visible(other)}: one name with {visible(first)} on macOS and "
                            "Windows (case or Unicode normalisation)")
    return problems


def _lock_warnings(locked: Mapping[str, LockedSource], digests: Mapping[str, str],
                   judged: Iterable[str]) -> list[str]:
    """Each locked item whose content is not what the lock pins (an item found invalid is
    reported already and has no digest). A warning, not a problem: a local edit of a
    managed item is the library's normal state (``update`` merges it three ways and leaves
    the merge as the edit), and so is one committed with plain git (``status`` names it);
    a digest no content can have is refused by the lock's own reader."""
    present = set(judged)
    found = []
    for source, entry in sorted(locked.items()):
        for upstream, digest in sorted(entry.items.items()):
            path = f"{SOURCES_DIR}/{source}/{upstream}"
            actual = digests.get(path)
            if actual is None and path in present:
                continue
            if actual is None:
                found.append(f"{LOCK_FILE}: {source} pins {upstream}, which is not installed")
            elif actual != digest:
                found.append(f"{LOCK_FILE}: {source} pins {upstream} at {digest}, but "
                             f"{path} holds {actual} (a local edit: `librarian diff` shows "
                             "it, `librarian update` keeps it)")
    return found


def _index_entries(
    library: Library, store: GitStore, index_file: Path | None
) -> Iterable[Entry]:
    # ``index_file``: the temporary index git hands a hook for ``commit -a`` or ``commit
    # PATHS``; relative to the repository's top. A conflicted path has no stage-0 entry.
    # A library in a folder of a project judges only the entries under that folder.
    folder = library.prefix + "/" if library.prefix else ""
    for record in read_index(library.repo_root / (index_file or Path(".git", "index"))):
        if record.stage == 0 and record.path.startswith(folder):
            yield (record.path[len(folder):], record.mode,
                   functools.partial(store.read_blob, record.sha))


def _group(entries: Iterable[Entry]) -> tuple[dict[str, list[Entry]], dict[str, Entry], list[str]]:
    """Split entries into item directories, top-level files and stray paths."""
    items: dict[str, list[Entry]] = {}
    top: dict[str, Entry] = {}
    problems: list[str] = []
    for entry in entries:
        path = entry[0]
        parts = path.split("/")
        if len(parts) == 1:
            top[path] = entry
        elif parts[0] in (*KIND_DIRS.values(), DRAFTS_DIR):
            if len(parts) == 2:
                problems.append(f"{path}: only item directories belong in {parts[0]}/")
            else:
                items.setdefault("/".join(parts[:2]), []).append(entry)
        elif parts[0] == SOURCES_DIR:
            items.setdefault(_managed_root(path), []).append(entry)
    return items, top, problems


def _managed_root(path: str) -> str:
    """sources/<source>/<upstream path>/<file>: the item is the directory holding the
    manifest; without knowing it yet, group by the file's parent chain (refined later)."""
    return path.rsplit("/", 1)[0]


def _check_item(path: str, entries: list[Entry], policy: Policy,
                warnings: list[str], digests: dict[str, str],
                sizes: dict[str, tuple[int, int]]) -> list[str]:
    files, problems = [], []
    for entry_path, mode, load in entries:
        relative = entry_path[len(path) + 1:]
        if mode not in (0o100644, 0o100755):
            kind = "a symlink" if stat.S_ISLNK(mode) else "not a regular file"
            problems.append(f"{entry_path}: {kind}; items hold regular files only")
            continue
        files.append(ItemFile(relative, mode == 0o100755, load()))
    sizes[path] = (len(files), sum(len(f.data) for f in files))  # read once, here
    name = path.rsplit("/", 1)[-1]
    directory = path.split("/", 1)[0]
    try:
        content = validate_item(tuple(sorted(files, key=lambda f: f.path)), policy,
                                expected_name=name, where=path)
    except LibrarianError as exc:
        found = getattr(exc, "problems", ()) or (exc.message,)
        # Every problem names its library path, so a long `check` report can be acted on:
        # "SKILL.md: description: …" in skills/x becomes "skills/x/SKILL.md: description: …".
        known = {f.path for f in files}
        problems.extend(_qualified(path, p, known) for p in found)
        return problems
    warnings.extend(_qualified(path, w, {f.path for f in files}) for w in content.warnings)
    digests[path] = content.digest
    if directory in KIND_DIRS.values() and KIND_DIRS[content.kind] != directory:
        problems.append(f"{path}: a {content.kind} (holds {MANIFEST_FILES[content.kind]}) "
                        f"does not belong in {directory}/")
    return problems


def _qualified(item_path: str, problem: str, files: set[str]) -> str:
    if problem.startswith(item_path):
        return problem
    head = problem.split(": ", 1)[0]
    return f"{item_path}/{problem}" if head in files else f"{item_path}: {problem}"


def _merge_managed(items: dict[str, list[Entry]], locked: Mapping[str, LockedSource]
                   ) -> tuple[dict[str, list[Entry]], list[Entry], list[str]]:
    """Managed items, each file under the outermost directory ``librarian.lock`` names as
    an installed item, else under the outermost one holding a manifest, as update found
    them (``upstream.find_item_trees`` searches no item's directory further: a SKILL.md
    deeper in an item is one of its files). Each path's ancestors are looked up, so the
    cost follows the paths, not paths x items. Also the files in no item (judged as stray
    files: links, git's path rules, secrets) and the manifest directories of a locked
    source that its lock does not name."""
    installed = {f"{SOURCES_DIR}/{source}/{path}" for source, entry in locked.items()
                 for path in entry.items}
    manifests = {p for p, entries in items.items() if p.startswith(SOURCES_DIR + "/")
                 and any(e[0].rsplit("/", 1)[-1] in MANIFEST_FILES.values() for e in entries)}
    merged: dict[str, list[Entry]] = {}
    loose: list[Entry] = []
    for path, entries in items.items():
        if not path.startswith(SOURCES_DIR + "/"):
            merged[path] = entries
            continue
        parts = path.split("/")
        # sources/<source>/<dir>: a collection's own root is never an item
        ancestors = ["/".join(parts[:depth]) for depth in range(3, len(parts) + 1)]
        owner = next((a for a in ancestors if a in installed), None) or next(
            (a for a in ancestors if a in manifests), None)
        if owner is not None:
            merged.setdefault(owner, []).extend(entries)
        else:
            loose.extend(entries)
    unnamed = [f"{path}: holds a manifest but {LOCK_FILE} names no such item of "
               f"{path.split('/')[1]} (sources/ holds what update installs)"
               for path in sorted(merged) if path.startswith(SOURCES_DIR + "/")
               and path not in installed and path.split("/")[1] in locked]
    return merged, loose, unnamed


def check_library(
    library: Library, *, staged: bool = False, index_file: Path | None = None
) -> CheckReport:
    with library.store() as store:
        entries = list(
            _index_entries(library, store, index_file) if staged else _work_entries(library.root)
        )
        expected = None if staged else store.tree_of(store.head())
        return _check(store, entries, library.generated, not staged, expected,
                      "index" if staged else "work tree", _Unchanged(library, store))


def check_tree(store: GitStore, tree: ObjectId | None,
               generated: Sequence[GeneratedFiles]) -> CheckReport:
    """``check`` of a committed tree (``check --commit``: a bare repository on a host)."""
    entries: list[Entry] = [(path, entry.mode, functools.partial(store.read_blob, entry.sha))
                            for path, entry in (store.walk(tree) if tree else ())]
    return _check(store, entries, generated, True, tree, "commit", None)


def _check(store: GitStore, entries: list[Entry], generated: Sequence[GeneratedFiles],
           compare: bool, expected_tree: ObjectId | None, scope: str,
           unchanged: _Unchanged | None) -> CheckReport:
    """The checks of ``check`` over ``entries``; the generated files are compared with
    what ``expected_tree`` implies when ``compare``. ``unchanged``: which items HEAD holds
    as they are (their warnings are counted, not listed); None: every warning is listed."""
    items, top, problems = _group(entries)
    policy = Policy()
    hidden: tuple[str, ...] = ()
    if LIBRARY_FILE not in top:
        problems.append(f"{LIBRARY_FILE}: missing")
    else:
        try:
            config = load_library_config(top[LIBRARY_FILE][2](), LIBRARY_FILE)
            policy, hidden = config.policy, config.hidden
        except LibrarianError as exc:
            problems.append(exc.message)
    problems.extend(_stray_problems(entries, frozenset(policy.allowed_secrets)))
    tools: dict[str, ToolEntry] = {}
    locked: dict[str, LockedSource] = {}
    try:
        if TOOLS_FILE in top:
            tools = load_tools(top[TOOLS_FILE][2](), TOOLS_FILE)
        if LOCK_FILE in top:
            locked = load_lock(top[LOCK_FILE][2](), LOCK_FILE)
    except LibrarianError as exc:
        problems.append(exc.message)
    items, loose, unnamed = _merge_managed(items, locked)
    problems.extend(unnamed)
    for entry in loose:
        problems.extend(_file_problems(entry, frozenset(policy.allowed_secrets)))
    skill_dirs = {p for p in items if p.split("/", 1)[0] in (KIND_DIRS["skill"], SOURCES_DIR)}
    for maker in generated:  # the files the library generates (library/generated.py)
        found_files = {e[0]: e[2]() for e in entries if e[0] in maker.paths}
        expected = maker.expected(store, expected_tree) if compare else None
        problems.extend(maker.problems(found_files, expected, skill_dirs))
    seen: dict[str, str] = {}
    warnings: list[str] = []
    shown: list[str] = []
    digests: dict[str, str] = {}
    sizes: dict[str, tuple[int, int]] = {}
    for path in counted("check", sorted(items)):
        found: list[str] = []
        problems.extend(_check_item(path, items[path], policy, found, digests, sizes))
        warnings.extend(found)
        if not (found and unchanged is not None and unchanged(path, digests.get(path))):
            shown.extend(found)  # what this change is about; the rest is counted
        if path.startswith(SOURCES_DIR + "/"):
            continue
        name = path.rsplit("/", 1)[-1]
        if name_problem(name) is None and name in seen:
            problems.append(f"{path}: the name {name!r} is already used by {seen[name]}")
        seen.setdefault(name, path)
    for tool_name, tool in sorted(tools.items()):
        if tool.recipe not in items:
            problems.append(f"{TOOLS_FILE}: tool {tool_name!r} names {tool.recipe}, "
                            "which is not in the library")
    lock_warnings = [*_lock_warnings(locked, digests, items),
                     *agent_warnings(items, hidden, sizes)]
    warnings.extend(lock_warnings)
    shown.extend(lock_warnings)
    if unchanged is not None:
        unchanged.save()
    return CheckReport(scope, len(items), tuple(problems), tuple(warnings),
                       len(warnings) - len(shown), tuple(shown))


def check_commit(git_dir: Path, revision: str, generated: Sequence[GeneratedFiles],
                 objects: Sequence[Path] = ()) -> CheckReport:
    """``check --commit REV``: the committed tree of ``revision`` in the repository at
    ``git_dir`` (bare or not); ``objects``: more object directories to read (the
    quarantine a ``pre-receive`` hook sees a push in)."""
    with GitStore(git_dir, alternates=objects) as store:
        commit = resolve(store, revision)
        return check_tree(store, store.commit(commit).tree, generated)


class _Unchanged:
    """Whether an item's content is HEAD's (judged by digest; HEAD's from the digest cache,
    by committed tree id, so a warm check reads no committed item)."""

    def __init__(self, library: Library, store: GitStore) -> None:
        from librarian.cache import DigestCache

        self._store = store
        self._tree = store.tree_of(store.head())
        self._digests = DigestCache(library.cache_dir)

    def __call__(self, path: str, digest: str | None) -> bool:
        entry = self._store.lookup(self._tree, path)
        return (digest is not None and entry is not None
                and self._digests.digest(self._store, entry.sha) == digest)

    def save(self) -> None:
        self._digests.save()
