"""All git access, over dulwich. Nothing else in librarian imports dulwich.

History changes by writing objects straight into the object store and moving the branch
with compare-and-swap; only the trees on the path to a changed item are rewritten, so the
cost of a commit does not grow with the size of the library.
"""

from __future__ import annotations

import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path

from dulwich.errors import NotGitRepository
from dulwich.file import FileLocked
from dulwich.objects import Blob, Commit, ObjectID, ShaFile, Tree
from dulwich.refs import Ref
from dulwich.repo import Repo

from librarian.core.digest import MODE_EXECUTABLE, MODE_FILE, MODE_TREE, PathClash, nest
from librarian.core.fsutil import fsync_dir, fsync_file
from librarian.core.model import ItemFile
from librarian.errors import ConflictError, UsageError
from librarian.git.ids import CommitInfo, ObjectId, TreeEntry
from librarian.git.objectstore import (
    BlobMemo,
    CheckedTrees,
    held,
    open_repository,
    write_objects,
)
from librarian.git.rawtree import SPLICED_BYTES, find_entry, splice_node
from librarian.git.rawtree import entries as parsed_entries
from librarian.git.settings import commit_identity, init_repository

__all__ = ["CommitInfo", "GitStore", "ObjectId", "TreeEntry"]

DEFAULT_BRANCH = b"refs/heads/main"
_TEXT = partial(bytes.decode, encoding="utf-8", errors="surrogateescape")


class GitStore:
    """One open repository. Use as a context manager so dulwich's files are closed.
    ``prefix``: the folder its reader works in ("" the top): ``tree_of`` reads the tree
    there, ``full_tree`` puts one back; ``commit(...).tree`` is always the root tree."""

    def __init__(self, root: Path, prefix: str = "",
                 alternates: Sequence[Path] = ()) -> None:
        """``prefix``: the library's folder in the repository ("" for its top);
        ``alternates``: more object directories to read (a push's quarantine)."""
        self.root = root
        self.prefix = prefix
        try:
            self._repo = open_repository(str(root), [str(p) for p in alternates])
        except (NotGitRepository, OSError) as exc:
            raise UsageError(f"{root} is not a git repository: {exc}") from None
        # Objects made by this command, readable before they are written (flush).
        self._pending: dict[ObjectId, ShaFile] = {}
        self._trees: dict[ObjectId, Tree] = {}
        self._raw_trees: dict[bytes, bytes] = {}  # trees a local fetch just read, large ones
        self.blobs = BlobMemo()  # an install validates each item, then stages it
        self.checked = CheckedTrees()  # and the files of the items it validated

    @classmethod
    def initialise(cls, root: Path) -> GitStore:
        init_repository(root, DEFAULT_BRANCH)
        return cls(root)

    @property
    def dulwich_repo(self) -> Repo:
        """For the git layer's own modules only (``gitremote``, ``revparse``, …)."""
        return self._repo

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
            lock = f".git/{name.decode()}.lock"
            raise ConflictError(
                f"{name.decode()} is locked by another git process ({lock} exists)",
                hint=f"retry in a moment; if no git command is running, remove {lock}",
            ) from None
        if not moved:
            raise ConflictError(
                f"{name.decode()} moved while this command ran; nothing was changed",
                hint="run the command again",
            )
        self._sync_ref(name)

    def _sync_ref(self, name: bytes) -> None:
        """dulwich fsyncs the ref file itself; the rename into its directory and the reflog
        line it appended are made durable here (or with the transaction's batch)."""
        git_dir = Path(self._repo.controldir())
        relative = name.decode("utf-8", "surrogateescape")
        directory = (git_dir / relative).parent
        if directory.is_dir():
            fsync_dir(directory)
        log = git_dir / "logs" / relative
        if log.is_file():
            fsync_file(log)

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

    def tree_of(self, commit: ObjectId | None) -> ObjectId | None:
        """The tree of ``commit`` at ``prefix``; None for no commit or no tree there."""
        tree = self.commit(commit).tree if commit is not None else None
        if not self.prefix or tree is None:
            return tree
        entry = self.lookup(tree, self.prefix)
        return entry.sha if entry is not None and stat.S_ISDIR(entry.mode) else None

    def full_tree(self, base: ObjectId | None, tree: ObjectId) -> ObjectId:
        """The root tree holding ``tree`` at ``prefix`` and commit ``base``'s other paths
        (never the index: what is staged elsewhere stays staged, and uncommitted)."""
        root = self.commit(base).tree if base is not None and self.prefix else None
        return self.with_path(root, self.prefix, TreeEntry(MODE_TREE, tree)) \
            if self.prefix else tree

    def tree_items(self, tree: ObjectId) -> dict[str, TreeEntry]:
        return {name.decode("utf-8", "surrogateescape"): TreeEntry(mode, sha)
                for name, mode, sha in parsed_entries(self.raw_tree(tree))}

    def raw_entries(self, tree: ObjectId) -> list[tuple[bytes, int, ObjectId]]:
        """(name, mode, hex id) of every entry of ``tree``, from one C-level parse of its
        bytes (kept for a large tree: ``rawtree.entries``) and no ``Tree`` built."""
        return list(parsed_entries(self.raw_tree(tree)))  # a copy, the caller's own

    def raw_tree(self, tree: ObjectId) -> bytes:
        """The content of ``tree`` as stored (a UsageError if it is no tree)."""
        obj = self._pending[tree] if tree in self._pending else self._trees.get(tree)
        raw = obj.as_raw_string() if isinstance(obj, Tree) else self._raw_trees.get(tree)
        if raw is None:
            kind, raw = (obj.type_num, b"") if obj is not None else \
                self._repo.object_store.get_raw(ObjectID(tree))
            if kind != Tree.type_num:
                raise UsageError(f"{tree.decode()} is not a tree")
            if len(raw) >= SPLICED_BYTES:  # looked into again: kept, as fetched trees are
                self._raw_trees[tree] = raw
        return raw

    def tree_children(self, tree: ObjectId, text: bool = False) -> Iterator[tuple[str, TreeEntry]]:
        """The entries of ``tree`` one at a time, by name (``text``: decoded, not as bytes)."""
        obj = self._get(tree)
        if not isinstance(obj, Tree):
            raise UsageError(f"{tree.decode()} is not a tree")
        # dulwich's names, no second map of the tree; as text they sort as bytes if all ASCII
        for name in sorted(obj, key=_TEXT if text and not all(map(bytes.isascii, obj)) else None):
            mode, sha = obj[name]
            yield name.decode("utf-8", "surrogateescape"), TreeEntry(mode, bytes(sha))

    def lookup(self, tree: ObjectId | None, path: str) -> TreeEntry | None:
        """The entry at ``path`` (posix, relative) inside ``tree``, or None."""
        if tree is None:
            return None
        entry = TreeEntry(MODE_TREE, tree)
        for part in path.split("/") if path else ():
            if not stat.S_ISDIR(entry.mode):
                return None
            found = self._child(entry.sha, part.encode("utf-8", "surrogateescape"))
            if found is None:
                return None
            entry = TreeEntry(found[0], bytes(found[1]))
        return entry

    def _child(self, tree: ObjectId, name: bytes) -> tuple[int, bytes] | None:
        """(mode, id) of ``name`` in ``tree``: a large tree not parsed into a ``Tree`` yet
        is searched in its raw entries (~8 ms a parse spared); None if absent or no tree."""
        obj = self._pending[tree] if tree in self._pending else self._trees.get(tree)
        if obj is None:
            try:
                raw = self.raw_tree(tree)
            except UsageError:  # not a tree
                return None
            if len(raw) >= SPLICED_BYTES:
                return find_entry(parsed_entries(raw), name)
            obj = Tree.from_raw_string(Tree.type_num, raw, ObjectID(tree))  # small: a Tree
            self._trees[tree] = obj  # type: ignore[assignment]  # a tree, as raw_tree said
        return obj[name] if isinstance(obj, Tree) and name in obj else None

    def forget_trees(self) -> None:  # the parsed trees, megabytes at 10,000 entries
        self._trees.clear()
        self._raw_trees = {}

    def known_trees(self, raw: Mapping[bytes, bytes]) -> None:
        """Trees by hex id, their content verified against their ids: read from here,
        not the pack, until ``forget_trees`` (planning an install reads every one)."""
        self._raw_trees = dict(raw)

    def read_blob(self, sha: ObjectId) -> bytes:
        if (data := self.blobs.get(sha)) is not None:
            return data
        pending = self._pending.get(sha)
        raw = (pending.type_num, pending.as_raw_string()) if pending is not None \
            else self._repo.object_store.get_raw(ObjectID(sha))  # no object parsed
        return self.blobs.keep(sha, *raw)

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
        raw = self._raw_trees.get(sha)
        obj = self._repo[ObjectID(sha)] if raw is None else \
            Tree.from_raw_string(Tree.type_num, raw, ObjectID(sha))
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
            if isinstance(obj, Commit):  # and its pending parents: a replayed chain
                stack.extend([bytes(obj.tree), *(bytes(p) for p in obj.parents)])
            elif isinstance(obj, Tree):  # its pending children only, from one C parse
                stack.extend(child for _, _, child in parsed_entries(obj.as_raw_string())
                             if child in pending)
            if not held(store, ObjectID(sha)):
                fresh.append(obj)
        write_objects(store, fresh)

    def blob(self, data: bytes) -> ObjectId:
        return self._stage(Blob.from_string(data))

    def files_tree(self, files: Sequence[ItemFile]) -> ObjectId:
        """Stage blobs and nested trees for ``files``; returns the top tree id."""
        leaves = []
        for item_file in files:
            mode = MODE_EXECUTABLE if item_file.executable else MODE_FILE
            leaves.append((item_file.path, TreeEntry(mode, self.blob(item_file.data))))
        try:
            return self.nested_tree(nest(leaves))
        except PathClash as exc:
            raise UsageError(str(exc)) from None

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
        """Stage a copy of ``root`` with ``path`` set to ``entry`` (None removes it)."""
        return self.with_paths(root, {path: entry})

    def with_paths(self, root: ObjectId | None,
                   changes: Mapping[str, TreeEntry | None]) -> ObjectId:
        """Stage a copy of ``root`` with each path set to its entry (None removes it, no path
        inside another); only the trees along the paths are rewritten, each once however
        many of its entries change. Empty trees collapse, as in git."""
        try:
            node = nest(changes.items())
        except PathClash as exc:
            raise UsageError(f"overlapping changes: {exc}") from None
        new = self._replace(root, node)
        return new if new is not None else self._stage(Tree())

    def _replace(self, tree: ObjectId | None, node: Mapping[str, object]) -> ObjectId | None:
        spliced = splice_node(self.raw_tree(tree), node) if tree is not None else None
        if spliced is not None:  # a large tree, only entries of its own changed
            return self._stage(Tree.from_raw_string(Tree.type_num, spliced)) if spliced else None
        if tree is not None:
            obj = self._get(tree)
            assert isinstance(obj, Tree)
            copy = obj.copy()
        else:
            copy = Tree()
        assert isinstance(copy, Tree)
        for part, change in node.items():
            name = part.encode("utf-8", "surrogateescape")
            if isinstance(change, dict):
                existing = copy[name] if name in copy else None
                child_tree = existing[1] if existing and stat.S_ISDIR(existing[0]) else None
                child = self._replace(child_tree, change)
                new_entry = TreeEntry(MODE_TREE, child) if child is not None else None
            else:
                assert change is None or isinstance(change, TreeEntry)
                new_entry = change
            if new_entry is None:
                if name in copy:
                    del copy[name]
            else:
                copy.add(name, new_entry.mode, ObjectID(new_entry.sha))
        if not len(copy):
            return None
        return self._stage(copy)

    def make_commit(self, tree: ObjectId, parents: Sequence[ObjectId], message: str) -> ObjectId:
        commit = Commit()
        commit.tree = tree
        commit.parents = [ObjectID(p) for p in parents]
        commit.author = commit.committer = commit_identity(self._repo.get_config_stack())
        now = int(time.time())
        offset = -time.altzone if time.localtime(now).tm_isdst > 0 else -time.timezone
        commit.author_time = commit.commit_time = now
        commit.author_timezone = commit.commit_timezone = offset
        commit.message = message.encode("utf-8")
        return self._stage(commit)
