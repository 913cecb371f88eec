"""All git access, over dulwich. Nothing else in librarian imports dulwich.

History changes by writing objects straight into the object store and moving the branch
with compare-and-swap; only the trees on the path to a changed item are rewritten, so the
cost of a commit does not grow with the size of the library.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from dulwich.file import FileLocked
from dulwich.objects import Blob, Commit, ObjectID, ShaFile, Tree
from dulwich.refs import Ref
from dulwich.repo import Repo

from .digest import MODE_EXECUTABLE, MODE_FILE, MODE_TREE
from .errors import ConflictError, LibrarianError, UsageError
from .fsutil import fsync_dir
from .model import ItemFile

ObjectId = bytes  # hex SHA-1, as dulwich spells object ids

DEFAULT_BRANCH = b"refs/heads/main"
FALLBACK_IDENTITY = b"librarian <librarian@localhost>"
# Above this many new objects, one pack is cheaper than many loose files.
_PACK_THRESHOLD = 256


@dataclass(frozen=True)
class TreeEntry:
    mode: int
    sha: ObjectId


@dataclass(frozen=True)
class CommitInfo:
    id: ObjectId
    tree: ObjectId
    parents: tuple[ObjectId, ...]
    message: str
    author: str
    time: int
    tz_offset: int


class GitStore:
    """One open repository. Use as a context manager so dulwich's files are closed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        try:
            self._repo = Repo(str(root))
        except Exception as exc:  # dulwich raises NotGitRepository and OS errors
            raise UsageError(f"{root} is not a git repository: {exc}") from None
        # Objects made by this command, readable before they are written (flush).
        self._pending: dict[ObjectId, ShaFile] = {}
        self._trees: dict[ObjectId, Tree] = {}

    @classmethod
    def initialise(cls, root: Path) -> GitStore:
        repo = Repo.init(str(root), mkdir=False)
        repo.refs.set_symbolic_ref(Ref(b"HEAD"), Ref(DEFAULT_BRANCH))
        config = repo.get_config()
        # Foreground auto-gc would repack the whole store in pure Python (see
        # docs/design.md); librarian never needs it and git users can run gc themselves.
        config.set((b"gc",), b"auto", b"0")
        config.set((b"core",), b"autocrlf", b"false")
        config.write_to_path()
        repo.close()
        return cls(root)

    def __enter__(self) -> GitStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._repo.close()

    # -- refs -----------------------------------------------------------------------
    def branch(self) -> bytes:
        """The ref HEAD points at (``refs/heads/main`` for new libraries)."""
        names, _ = self._repo.refs.follow(Ref(b"HEAD"))
        if len(names) < 2:
            raise UsageError("HEAD is detached; check out a branch first")
        return bytes(names[-1])

    def head(self) -> ObjectId | None:
        _, sha = self._repo.refs.follow(Ref(b"HEAD"))
        return bytes(sha) if sha is not None else None

    def ref(self, name: bytes) -> ObjectId | None:
        try:
            return bytes(self._repo.refs[Ref(name)])
        except KeyError:
            return None

    def move_branch(self, old: ObjectId | None, new: ObjectId, message: bytes) -> None:
        """Compare-and-swap the current branch from ``old`` to ``new``."""
        self.set_ref(self.branch(), old, new, message)

    def set_ref(self, name: bytes, old: ObjectId | None, new: ObjectId, message: bytes) -> None:
        refs = self._repo.refs
        try:
            if old is None:
                moved = refs.add_if_new(Ref(name), ObjectID(new), message=message)
            else:
                moved = refs.set_if_equals(Ref(name), ObjectID(old), ObjectID(new), message=message)
        except FileLocked:
            raise ConflictError(
                f"{name.decode()} is locked by another git process", hint="retry in a moment"
            ) from None
        if not moved:
            raise ConflictError(
                f"{name.decode()} moved while this command ran; nothing was changed",
                hint="run the command again",
            )

    def delete_ref(self, name: bytes) -> None:
        self._repo.refs.remove_if_equals(Ref(name), None)

    def refs_under(self, prefix: bytes) -> dict[bytes, ObjectId]:
        return {prefix + k: bytes(v) for k, v in self._repo.refs.as_dict(Ref(prefix)).items()}

    # -- reading --------------------------------------------------------------------
    def commit(self, sha: ObjectId) -> CommitInfo:
        obj = self._get(sha)
        if not isinstance(obj, Commit):
            raise UsageError(f"{sha.decode()} is not a commit")
        return CommitInfo(
            id=sha,
            tree=bytes(obj.tree),
            parents=tuple(bytes(p) for p in obj.parents),
            message=obj.message.decode("utf-8", "replace"),
            author=obj.author.decode("utf-8", "replace"),
            time=obj.commit_time,
            tz_offset=obj.commit_timezone,
        )

    def resolve(self, revision: str) -> ObjectId:
        """A commit id from a full or abbreviated hex id, a branch, tag or HEAD."""
        from dulwich.objectspec import parse_commit

        try:
            return bytes(parse_commit(self._repo, revision.encode()).id)
        except (KeyError, ValueError) as exc:
            raise UsageError(f"unknown revision {revision!r}") from exc
        except LibrarianError:
            raise
        except Exception as exc:  # dulwich raises several ambiguity errors here
            raise UsageError(f"cannot resolve revision {revision!r}: {exc}") from None

    def tree_items(self, tree: ObjectId) -> dict[str, TreeEntry]:
        obj = self._get(tree)
        if not isinstance(obj, Tree):
            raise UsageError(f"{tree.decode()} is not a tree")
        return {
            bytes(e.path).decode("utf-8", "surrogateescape"): TreeEntry(e.mode, bytes(e.sha))
            for e in obj.iteritems()
        }

    def lookup(self, tree: ObjectId | None, path: str) -> TreeEntry | None:
        """The entry at ``path`` (posix, relative) inside ``tree``, or None."""
        if tree is None:
            return None
        entry = TreeEntry(MODE_TREE, tree)
        for part in path.split("/") if path else ():
            if not stat.S_ISDIR(entry.mode):
                return None
            obj = self._get(entry.sha)
            if not isinstance(obj, Tree):
                return None
            name = part.encode("utf-8", "surrogateescape")
            if name not in obj:
                return None
            mode, sha = obj[name]
            entry = TreeEntry(mode, bytes(sha))
        return entry

    def read_blob(self, sha: ObjectId) -> bytes:
        obj = self._get(sha)
        if not isinstance(obj, Blob):
            raise UsageError(f"{sha.decode()} is not a blob")
        return bytes(obj.data)

    def walk(self, tree: ObjectId, prefix: str = "") -> Iterator[tuple[str, TreeEntry]]:
        """Every non-tree entry below ``tree`` as (posix path, entry), in tree order."""
        for name, entry in self.tree_items(tree).items():
            path = f"{prefix}{name}"
            if stat.S_ISDIR(entry.mode):
                yield from self.walk(entry.sha, path + "/")
            else:
                yield path, entry

    def read_files(self, tree: ObjectId) -> tuple[ItemFile, ...]:
        """An item's files from a committed tree (symlinks and submodules are refused)."""
        files = []
        for path, entry in self.walk(tree):
            if entry.mode not in (MODE_FILE, MODE_EXECUTABLE):
                kind = "symlink" if stat.S_ISLNK(entry.mode) else "submodule or special entry"
                raise UsageError(f"{path} is a {kind}; items hold regular files only", path=path)
            files.append(ItemFile(path, entry.mode == MODE_EXECUTABLE, self.read_blob(entry.sha)))
        return tuple(sorted(files, key=lambda f: f.path))

    def walk_log(self, start: ObjectId | None) -> Iterator[CommitInfo]:
        """First-parent history from ``start``, newest first."""
        sha = start
        while sha is not None:
            info = self.commit(sha)
            yield info
            sha = info.parents[0] if info.parents else None

    # -- writing --------------------------------------------------------------------
    def _stage(self, obj: ShaFile) -> ObjectId:
        sha = bytes(obj.id)
        self._pending[sha] = obj
        return sha

    def _get(self, sha: ObjectId) -> ShaFile:
        pending = self._pending.get(sha)
        if pending is not None:
            return pending
        cached = self._trees.get(sha)
        if cached is not None:
            return cached
        obj = self._repo[ObjectID(sha)]
        if isinstance(obj, Tree):
            # A 10,000-entry tree costs ~8 ms to parse; one command looks into it often.
            self._trees[sha] = obj
        return obj

    def flush(self, tip: ObjectId) -> None:
        """Write the staged objects reachable from ``tip`` (intermediate trees of a
        multi-path change are dropped): loose and fsynced when few, one pack when many."""
        pending, self._pending = self._pending, {}
        store = self._repo.object_store
        fresh: list[ShaFile] = []
        stack, seen = [tip], set()
        while stack:
            sha = stack.pop()
            obj = pending.get(sha)
            if obj is None or sha in seen:
                continue  # already in the store (or shared)
            seen.add(sha)
            if isinstance(obj, Commit):
                stack.append(bytes(obj.tree))
            elif isinstance(obj, Tree):
                stack.extend(bytes(entry.sha) for entry in obj.iteritems())
            if not store.contains_loose(ObjectID(sha)) and not store.contains_packed(
                    ObjectID(sha)):
                fresh.append(obj)
        if len(fresh) > _PACK_THRESHOLD:
            store.add_objects([(o, None) for o in fresh])
            return
        objects_dir = Path(str(store.path))
        directories = set()
        for obj in fresh:
            store.add_object(obj)
            hexsha = obj.id.decode()
            path = objects_dir / hexsha[:2] / hexsha[2:]
            # dulwich does not fsync loose objects unless core.fsyncObjectFiles is set, a
            # setting git itself warns about; a ref must never name an object still in
            # the page cache only.
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            directories.add(path.parent)
        for directory in directories:
            fsync_dir(directory)

    def blob(self, data: bytes) -> ObjectId:
        return self._stage(Blob.from_string(data))

    def files_tree(self, files: Sequence[ItemFile]) -> ObjectId:
        """Stage blobs and nested trees for ``files``; returns the top tree id."""
        nested: dict[str, object] = {}
        for item_file in files:
            parts = item_file.path.split("/")
            node = nested
            for part in parts[:-1]:
                child = node.setdefault(part, {})
                if not isinstance(child, dict):
                    raise UsageError(f"{item_file.path} is both a file and a directory")
                node = child
            node[parts[-1]] = item_file
        return self._tree_of(nested)

    def _tree_of(self, node: dict[str, object]) -> ObjectId:
        tree = Tree()
        for name, child in node.items():
            if isinstance(child, ItemFile):
                mode = MODE_EXECUTABLE if child.executable else MODE_FILE
                tree.add(name.encode("utf-8"), mode, ObjectID(self.blob(child.data)))
            else:
                assert isinstance(child, dict)
                tree.add(name.encode("utf-8"), MODE_TREE, ObjectID(self._tree_of(child)))
        return self._stage(tree)

    def nested_tree(self, node: Mapping[str, object]) -> ObjectId:
        """Stage trees for ``node`` (name -> TreeEntry or a nested mapping)."""
        tree = Tree()
        for name, child in node.items():
            if isinstance(child, TreeEntry):
                tree.add(name.encode("utf-8", "surrogateescape"), child.mode, ObjectID(child.sha))
            else:
                assert isinstance(child, dict)
                tree.add(name.encode("utf-8", "surrogateescape"), MODE_TREE,
                         ObjectID(self.nested_tree(child)))
        return self._stage(tree)

    def with_path(self, root: ObjectId | None, path: str, entry: TreeEntry | None) -> ObjectId:
        """Stage a copy of ``root`` with ``path`` set to ``entry`` (None removes it);
        only the trees along ``path`` are rewritten. Empty trees collapse, as in git."""
        new = self._replace(root, path.split("/"), entry)
        return new if new is not None else self._stage(Tree())

    def _replace(
        self, tree: ObjectId | None, parts: list[str], entry: TreeEntry | None
    ) -> ObjectId | None:
        if tree is not None:
            obj = self._get(tree)
            assert isinstance(obj, Tree)
            copy = obj.copy()
        else:
            copy = Tree()
        assert isinstance(copy, Tree)
        name = parts[0].encode("utf-8")
        if len(parts) == 1:
            new_entry = entry
        else:
            existing = copy[name] if name in copy else None
            child_tree = existing[1] if existing and stat.S_ISDIR(existing[0]) else None
            child = self._replace(child_tree, parts[1:], entry)
            new_entry = TreeEntry(MODE_TREE, child) if child is not None else None
        if new_entry is None:
            if name in copy:
                del copy[name]
        else:
            copy.add(name, new_entry.mode, ObjectID(new_entry.sha))
        if not len(copy):
            return None
        return self._stage(copy)

    def make_commit(
        self, tree: ObjectId, parents: Sequence[ObjectId], message: str
    ) -> ObjectId:
        commit = Commit()
        commit.tree = tree
        commit.parents = [ObjectID(p) for p in parents]
        identity = self._identity()
        commit.author = commit.committer = identity
        now = int(time.time())
        offset = -time.altzone if time.localtime(now).tm_isdst > 0 else -time.timezone
        commit.author_time = commit.commit_time = now
        commit.author_timezone = commit.commit_timezone = offset
        commit.message = message.encode("utf-8")
        return self._stage(commit)

    def _identity(self) -> bytes:
        config = self._repo.get_config_stack()
        try:
            name = config.get((b"user",), b"name")
            email = config.get((b"user",), b"email")
        except KeyError:
            return FALLBACK_IDENTITY
        return bytes(name) + b" <" + bytes(email) + b">"


def blob_sha1(data: bytes) -> ObjectId:
    """Hex SHA-1 blob id without touching any store (for the index and the stat cache)."""
    import hashlib

    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest().encode()


def is_git_dir(path: Path) -> bool:
    return (path / ".git").is_dir() or (path / "HEAD").is_file() and (path / "objects").is_dir()


def index_entries(root: Path, index_file: Path | None = None) -> list[tuple[str, int, ObjectId]]:
    """Stage-0 entries of the git index as (path, mode, hex blob id), for ``check --staged``
    (a full read is fine there: it runs once per plain-git commit, not per retention).
    ``index_file``: the temporary index git hands a hook for ``commit -a`` or ``commit
    PATHS``; relative paths are relative to ``root``."""
    from dulwich.index import Index

    index_path = root / (index_file or Path(".git", "index"))
    if not index_path.exists():
        return []
    index = Index(str(index_path))
    out = []
    for path, entry in index.iteritems():
        mode = getattr(entry, "mode", None)
        sha = getattr(entry, "sha", None)
        if mode is None or sha is None:  # a conflicted path: no single stage-0 entry
            continue
        out.append((bytes(path).decode("utf-8", "surrogateescape"), int(mode), bytes(sha)))
    return out


# -- sources: fetching upstream refs ---------------------------------------------------
# (librarian/upstream.py and librarian/update.py build on these; see docs/sources.md)


def strip_credentials(url: str) -> str:
    """``url`` without a ``user:password@`` part, for every message, receipt and lock."""
    import re

    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/@]*@", r"\1", url)


def url_has_password(url: str) -> bool:
    import re

    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/@:]*:[^/@]*@", url) is not None


@dataclass(frozen=True)
class FetchResult:
    commit: ObjectId  # the commit the ref names (annotated tags peeled)
    ref: bytes  # the full upstream ref name that matched
    fetched: bool  # whether any object was transferred


def _ref_candidates(ref: str) -> list[bytes]:
    raw = ref.encode("utf-8")
    if raw == b"HEAD" or raw.startswith(b"refs/"):
        return [raw]
    return [b"refs/heads/" + raw, b"refs/tags/" + raw, b"refs/" + raw]


class _Progress:
    """Adapts dulwich's progress bytes to a text callback (lines; \\r updates kept)."""

    def __init__(self, callback: Callable[[str], None] | None) -> None:
        self.callback = callback

    def __call__(self, data: bytes) -> None:
        if self.callback is not None and data:
            self.callback(data.decode("utf-8", "replace"))


def fetch_ref(
    store: GitStore,
    url: str,
    ref: str,
    *,
    into: bytes,
    have: ObjectId | None,
    progress: Callable[[str], None] | None = None,
) -> FetchResult:
    """Fetch ``ref`` of the repository at ``url`` into this object store and point the local
    ref ``into`` at it. Only ``have`` (the previously fetched upstream commit) is offered as
    common history, so the server walks just the difference, never the library's own
    history. Every dulwich/transport failure becomes a LibrarianError with the URL's
    credentials stripped: exit 2 for a bad URL, a missing repository or ref; exit 3 when the
    server cannot be reached."""
    from dulwich.client import HTTPProxyUnauthorized, HTTPUnauthorized
    from dulwich.errors import GitProtocolError, NotGitRepository

    shown = strip_credentials(url)
    found: dict[str, bytes] = {}

    def determine_wants(refs: Mapping[Ref, ObjectID], depth: int | None = None) -> list[ObjectID]:
        for candidate in _ref_candidates(ref):
            sha = refs.get(Ref(candidate))
            if sha is not None:
                found["ref"], found["sha"] = candidate, bytes(sha)
                return [] if ObjectID(sha) in store._repo.object_store else [ObjectID(sha)]
        return []

    try:
        result = _fetch_pack(store, url, determine_wants, have, _Progress(progress))
    except (NotGitRepository, HTTPUnauthorized, HTTPProxyUnauthorized) as exc:
        raise UsageError(f"cannot fetch {shown}: {_reason(exc)}",
                         hint="check the URL (and that the repository exists)") from None
    except GitProtocolError as exc:
        raise _protocol_error(shown, exc) from None
    except OSError as exc:
        raise ConflictError(f"cannot reach {shown}: {_reason(exc)}",
                            hint="check that the server is up and try again") from None
    except (ValueError, KeyError, TypeError, AssertionError) as exc:
        # dulwich raises these for URLs it cannot parse and for malformed replies
        raise UsageError(f"cannot fetch {shown}: {_reason(exc)}",
                         hint="a URL is a local path, file://, git://, http(s):// or ssh") from None
    if "sha" not in found:
        names = ", ".join(sorted(r.decode("utf-8", "replace") for r in result.refs))
        raise UsageError(f"{shown} has no ref {ref!r}",
                         hint=f"its refs: {names[:300] or '(none: an empty repository)'}")
    target = found["sha"]
    commit = _peel(store, target, shown, ref)
    old = store.ref(into)
    if old != commit:
        store.set_ref(into, old, commit, b"librarian: fetch " + shown.encode())
    return FetchResult(commit, found["ref"], result.fetched)


@dataclass(frozen=True)
class _PackResult:
    refs: Mapping[bytes, bytes]
    fetched: bool


def _fetch_pack(
    store: GitStore,
    url: str,
    determine_wants: Callable[..., list[ObjectID]],
    have: ObjectId | None,
    progress: _Progress,
) -> _PackResult:
    from tempfile import SpooledTemporaryFile

    from dulwich.client import LocalGitClient, get_transport_and_path
    from dulwich.object_store import ObjectStoreGraphWalker

    client, path = get_transport_and_path(url, quiet=progress.callback is None)
    object_store = store._repo.object_store
    heads = [ObjectID(have)] if have is not None and ObjectID(have) in object_store else []
    packs_before = _pack_files(store)
    if isinstance(client, LocalGitClient):
        local = _fetch_local(store, path, determine_wants)
        _fsync_new_packs(store, packs_before)
        return local

    def parents(sha: ObjectID) -> list[ObjectID]:
        obj = object_store[sha]
        return list(obj.parents) if isinstance(obj, Commit) else []

    walker = ObjectStoreGraphWalker(heads, parents)
    spool = SpooledTemporaryFile(max_size=32 * 1024 * 1024, prefix="incoming-",
                                 dir=str(object_store.path))
    try:
        def write(data: bytes) -> int:
            return spool.write(data)

        result = client.fetch_pack(path, determine_wants, walker, write, progress=progress)
        fetched = spool.tell() > 32  # an empty pack is a 12-byte header and a checksum
        if fetched:
            spool.seek(0)
            object_store.add_thin_pack(spool.read, None)
            _fsync_new_packs(store, packs_before)
    finally:
        spool.close()
    refs = {bytes(k): bytes(v) for k, v in (result.refs or {}).items() if v is not None}
    return _PackResult(refs, fetched)


def _fetch_local(
    store: GitStore, path: str, determine_wants: Callable[..., list[ObjectID]]
) -> _PackResult:
    """Fetch from a repository on this machine by diffing trees: only the objects of the
    commits after ``have`` that are not already here are read and copied, so the cost
    follows the upstream change, not the size of the upstream repository (dulwich's own
    local fetch unpacks every object of the source pack to pick a subset). The commits
    already here (the previous fetch) bound the walk."""
    from dulwich.errors import NotGitRepository
    from dulwich.objects import Tag

    try:
        source = Repo(path)
    except (NotGitRepository, FileNotFoundError, NotADirectoryError):
        raise NotGitRepository(f"No git repository was found at {path}") from None
    with source:
        refs = {bytes(k): bytes(v) for k, v in source.get_refs().items()}
        wants = determine_wants({Ref(k): ObjectID(v) for k, v in refs.items()})
        target = store._repo.object_store
        copied: dict[bytes, ShaFile] = {}

        def present(sha: bytes) -> bool:
            return sha in copied or ObjectID(sha) in target

        def copy_tree(new: bytes, old: bytes | None) -> None:
            if present(new):
                return
            tree = source[ObjectID(new)]
            assert isinstance(tree, Tree)
            copied[new] = tree
            old_tree = source[ObjectID(old)] if old is not None else None
            previous = ({bytes(e.path): (e.mode, bytes(e.sha)) for e in old_tree.iteritems()}
                        if isinstance(old_tree, Tree) else {})
            for entry in tree.iteritems():
                sha, mode = bytes(entry.sha), entry.mode
                before = previous.get(bytes(entry.path))
                if before is not None and before[1] == sha:
                    continue
                if stat.S_ISDIR(mode):
                    base = before[1] if before and stat.S_ISDIR(before[0]) else None
                    copy_tree(sha, base)
                elif mode != 0o160000 and not present(sha):  # a submodule's commit is not here
                    copied[sha] = source[ObjectID(sha)]

        stack = [bytes(w) for w in wants]
        while stack:
            sha = stack.pop()
            if present(sha):
                continue
            obj = source[ObjectID(sha)]
            copied[sha] = obj
            if isinstance(obj, Tag):
                stack.append(bytes(obj.object[1]))
            elif isinstance(obj, Commit):
                parents = [bytes(p) for p in obj.parents]
                parent = source[ObjectID(parents[0])] if parents else None
                base = bytes(parent.tree) if isinstance(parent, Commit) else None
                # entries equal to the parent's are here already, or come with the parent
                copy_tree(bytes(obj.tree), base)
                stack.extend(parents)
        if copied:
            target.add_objects([(obj, None) for obj in copied.values()])
    return _PackResult(refs, bool(copied))


def _pack_files(store: GitStore) -> set[str]:
    pack_dir = Path(str(store._repo.object_store.path)) / "pack"
    try:
        return {p.name for p in pack_dir.iterdir()}
    except FileNotFoundError:
        return set()


def _fsync_new_packs(store: GitStore, before: set[str]) -> None:
    """Fetched packs must be on disk before a ref names what they hold."""
    pack_dir = Path(str(store._repo.object_store.path)) / "pack"
    for name in sorted(_pack_files(store) - before):
        fd = os.open(pack_dir / name, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    fsync_dir(pack_dir)


def _peel(store: GitStore, sha: bytes, shown: str, ref: str) -> ObjectId:
    from dulwich.objects import Tag

    for _ in range(8):
        try:
            obj = store._repo[ObjectID(sha)]
        except KeyError:
            raise UsageError(f"{shown}: {ref!r} names {sha.decode()}, which was not sent") from None
        if isinstance(obj, Tag):
            sha = bytes(obj.object[1])
            continue
        if isinstance(obj, Commit):
            return sha
        break
    raise UsageError(f"{shown}: {ref!r} does not name a commit")


def _reason(exc: BaseException) -> str:
    import re

    text = str(exc) or type(exc).__name__
    text = re.sub(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]*@", r"\1", text)  # anywhere in it
    return " ".join(text.split())[:300]


def _protocol_error(shown: str, exc: BaseException) -> LibrarianError:
    text = _reason(exc)
    lowered = text.lower()
    if any(word in lowered for word in ("not found", "does not exist", "not exported",
                                        "no such", "access denied", "not a git")):
        return UsageError(f"cannot fetch {shown}: the repository is missing or not exported "
                          f"({text})", hint="check the URL")
    return ConflictError(f"cannot fetch {shown}: {text}",
                         hint="the server hung up or spoke an unexpected protocol; try again")


def make_tree(store: GitStore, entries: Mapping[str, TreeEntry]) -> ObjectId | None:
    """Stage the nested trees holding ``entries`` (posix path -> existing tree or blob),
    reusing every entry's object by id; None when ``entries`` is empty."""
    nested: dict[str, object] = {}
    for path, entry in entries.items():
        parts = path.split("/")
        node = nested
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise UsageError(f"{path} is nested inside another item")
            node = child
        if parts[-1] in node:
            raise UsageError(f"{path} holds another item")
        node[parts[-1]] = entry
    return store.nested_tree(nested) if nested else None
