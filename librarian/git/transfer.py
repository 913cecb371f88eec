"""Bringing a source's objects into the library: one pack, negotiated by dulwich.

Every fetch asks for the tip only (depth 1), so the first fetch of a source costs its
tip's tree, not its history, and a later one what changed since. A git server (git://,
http(s)://, ssh) negotiates with dulwich's client as ``git fetch --depth=1`` would,
offered the previously fetched commit and told it is a shallow boundary; a server without
shallow support is fetched in full. A repository on this machine is not negotiated with
(dulwich's local transport drops the haves of a shallow request and would resend the whole
tip): ``git.localfetch`` copies the objects the library lacks, each read and hashed once,
into a pack written straight into the quarantine.

A server's pack is received into an unnamed spool and indexed into a quarantine
(``git.quarantine``); either pack is judged there before anything in the library sees it: every
object must pass git's own fsck rules (``git.fsck``: no tree entry git would read as
``.git``, no ``..``, well-formed commits and tags…), and every object it holds must name
objects that are in the library or the pack (a commit's parents unless it is a new shallow
boundary). A pack that fails is refused whole (``RefusedPack``) and deleted with its
quarantine; one that passes is moved into ``objects/pack``, and only then are the shallow
boundary and, by the caller, the ref written. A fetch that fails for any reason removes
every file it created, so the object store is byte-identical to before.
"""

from __future__ import annotations

import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from tempfile import SpooledTemporaryFile
from typing import Any

from dulwich.errors import ObjectFormatException
from dulwich.object_store import ObjectStoreGraphWalker
from dulwich.objects import Commit, ObjectID, Tree, sha_to_hex
from dulwich.pack import Pack, UnpackedObjectIterator

from librarian.core.fsutil import atomic_write
from librarian.errors import UsageError
from librarian.git import fsck
from librarian.git.fsck import Finding, Judge
from librarian.git.localfetch import copy_local
from librarian.git.objectstore import BLOB_MEMO_BYTES, pack_added
from librarian.git.quarantine import Quarantine
from librarian.git.rawtree import entry_set
from librarian.git.repo import GitStore, ObjectId

DetermineWants = Callable[..., list[ObjectID]]
ProgressBytes = Callable[[bytes], None]
_SPOOL_BYTES = 32 * 1024 * 1024
_EMPTY_PACK = 32  # an empty pack is a 12-byte header and a 20-byte checksum
_GITLINK = 0o160000


@dataclass(frozen=True, slots=True)
class Transfer:
    refs: Mapping[bytes, bytes]  # every ref the source advertised
    fetched: bool  # whether any object was received


class IncompleteSource(UsageError):
    """The source's objects do not add up (an object it names was not sent)."""


class RefusedPack(UsageError):
    """The source sent an object git itself refuses (``git fsck --strict`` would report
    it): the whole fetch is refused and nothing it sent is kept."""

    def __init__(self, finding: Finding, label: str = "the source") -> None:
        super().__init__(
            f"{label}: upstream holds {finding.describe()}; nothing was fetched",
            hint="git refuses such a repository too (a clone with fsck checks, a checkout); "
            "fix it upstream, or pin the source's ref to a commit without it; the library "
            "is unchanged")
        self.finding = finding


def transfer(
    store: GitStore,
    client: Any,
    path: str,
    determine_wants: DetermineWants,
    have: ObjectId | None,
    progress: ProgressBytes | None,
) -> Transfer:
    """Fetch what ``determine_wants`` picks from ``client``/``path`` into ``store``."""
    repo = store.dulwich_repo
    if have is not None and ObjectID(have) not in repo.object_store:
        have = None
    objects_dir = Path(str(repo.object_store.path))
    before = _object_files(store)
    spool = SpooledTemporaryFile(max_size=_SPOOL_BYTES, prefix="incoming-",
                                 dir=str(objects_dir))
    try:
        with Quarantine(objects_dir, repo.object_store.object_format) as quarantine:
            refs, shallow, fetched = _receive(store, quarantine, client, path,
                                              determine_wants, have, spool, progress)
        if shallow:
            _add_shallow(store, shallow)
    except BaseException:
        _remove_new_files(store, before)
        raise
    finally:
        spool.close()
    return Transfer(refs, fetched)


def _receive(
    store: GitStore,
    quarantine: Quarantine,
    client: Any,
    path: str,
    determine_wants: DetermineWants,
    have: ObjectId | None,
    spool: Any,
    progress: ProgressBytes | None,
) -> tuple[dict[bytes, bytes], set[bytes], bool]:
    """The source's refs, its new shallow boundary and whether objects came; the pack is
    received into ``quarantine``, judged, and admitted only when it passes."""
    from dulwich.client import LocalGitClient

    objects = store.dulwich_repo.object_store
    old_tree = _tree_of(objects, have)
    if isinstance(client, LocalGitClient):
        return _receive_local(store, quarantine, path, determine_wants, old_tree, progress)
    refs, shallow = _remote_pack(store, client, path, determine_wants, have, spool, progress)
    if spool.tell() <= _EMPTY_PACK:
        return refs, shallow, False
    spool.seek(0)
    try:
        pack = quarantine.receive(spool.read)
    except KeyError as exc:  # a delta against an object the library lacks
        raise IncompleteSource(
            f"the source sent a delta against {_shown(exc)}, which the library "
            "does not hold", hint="try again; nothing was changed") from None
    except ObjectFormatException as exc:  # dulwich cannot even parse an object
        raise RefusedPack(Finding("badObject", "object", "", detail=_line(exc))) from None
    try:
        _judge(store, pack, shallow, old_tree)
    finally:
        pack.close()
    quarantine.admit()
    pack_added(store.dulwich_repo.object_store)
    return refs, shallow, True


def _receive_local(
    store: GitStore,
    quarantine: Quarantine,
    path: str,
    determine_wants: DetermineWants,
    old_tree: ObjectID | None,
    progress: ProgressBytes | None,
) -> tuple[dict[bytes, bytes], set[bytes], bool]:
    """From a repository on this machine: its objects copied into a pack in the quarantine
    (``git.localfetch``), judged as a received pack is, admitted only when it passes."""
    objects = store.dulwich_repo.object_store

    def unchanged(new_tree: ObjectID, source: Any) -> set[bytes]:
        return _unchanged_entries(new_tree, old_tree, source, objects)

    try:
        found = copy_local(path, determine_wants, objects, quarantine.path / "pack",
                           unchanged, progress, keep=BLOB_MEMO_BYTES)
    except KeyError as exc:
        raise IncompleteSource(
            f"the repository at {path} lacks object {_shown(exc)}, which it names",
            hint="the upstream repository is damaged or incomplete; nothing was "
            "changed") from None
    except ObjectFormatException as exc:
        raise RefusedPack(Finding("badObject", "object", "", detail=_line(exc))) from None
    if found.written is None:
        return found.refs, found.shallow, False
    written = found.written
    try:
        _judge(store, written.pack, found.shallow, old_tree, found.known, written.judge,
               written.ids)
    finally:
        written.pack.close()
    quarantine.admit()
    pack_added(store.dulwich_repo.object_store)
    for sha, data in written.blobs.items():  # admitted: planning reads them next
        store.blobs.keep(sha, fsck.BLOB, data)
    store.known_trees(written.trees)  # each checked against its id as it was copied
    return found.refs, found.shallow, True


def _remote_pack(
    store: GitStore,
    client: Any,
    path: str,
    determine_wants: DetermineWants,
    have: ObjectId | None,
    spool: Any,
    progress: ProgressBytes | None,
) -> tuple[dict[bytes, bytes], set[bytes]]:
    """Depth 1 from a git server, offering ``have`` (and telling the server it is a shallow
    boundary when it is one); in full when the server cannot do shallow fetches."""
    from dulwich.errors import GitProtocolError

    repo = store.dulwich_repo
    boundary = repo.get_shallow()
    heads = [ObjectID(have)] if have is not None else []

    def parents(sha: ObjectID) -> list[ObjectID]:
        if sha in boundary:
            return []
        obj = repo.object_store[sha]
        if not isinstance(obj, Commit):
            return []
        return [p for p in obj.parents if p in repo.object_store]

    def walker() -> ObjectStoreGraphWalker:
        return ObjectStoreGraphWalker(heads, parents,
                                      shallow={h for h in heads if h in boundary})

    try:
        result = client.fetch_pack(path, determine_wants, walker(), spool.write,
                                   progress=progress, depth=1)
    except GitProtocolError as exc:
        if "shallow" not in str(exc) or spool.tell() or any(h in boundary for h in heads):
            raise
        result = client.fetch_pack(path, determine_wants, walker(), spool.write,
                                   progress=progress)
    refs = {bytes(k): bytes(v) for k, v in (result.refs or {}).items() if v is not None}
    return refs, {bytes(s) for s in (result.new_shallow or ())}


def _add_shallow(store: GitStore, shallow: set[bytes]) -> None:
    """Add the new shallow boundary to ``.git/shallow``, replaced atomically through a
    ``.shallow.*.tmp`` that recovery sweeps (dulwich's ``update_shallow`` writes through
    git's own ``shallow.lock``, which a kill would leave for every later fetch to trip on)."""
    repo = store.dulwich_repo
    known = {bytes(s) for s in repo.get_shallow()} | shallow
    atomic_write(Path(repo.controldir()) / "shallow", b"".join(s + b"\n" for s in sorted(known)))


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def _shown(exc: KeyError) -> str:
    key = exc.args[0] if exc.args else b"?"
    return key.decode("ascii", "replace") if isinstance(key, bytes) else str(key)


def _judge(store: GitStore, pack: Pack, shallow: set[bytes],
           old_tree: ObjectID | None = None, known: set[bytes] | None = None,
           judge: Judge | None = None, in_pack: set[bytes] | None = None) -> None:
    """Every object of the quarantined pack by git's fsck rules, each read once (raw, as
    git reads it): a RefusedPack for the first that fails; then closure, an
    IncompleteSource when an object names one neither the pack nor the library holds (a
    commit's parents are not asked for when it is a new shallow boundary). The library
    held whole trees before (every earlier fetch was checked so), so checking what the
    pack names is checking the fetched tip; and what a tree of the pack names that the
    tree at its path in the previously fetched tip (``old_tree``) names too was held
    before, so only what changed is looked up (an item changed of 1,000 is not 1,000
    lookups). ``known``: those ids, when the local copy has compared the same trees;
    ``judge`` and ``in_pack``: the judge fed and the (hex) ids written, when the pack was
    written here (``git.localfetch``), so that it is not read again."""
    if judge is None:
        judge = Judge()
        for unpacked in UnpackedObjectIterator.for_pack_data(pack.data):
            kind = unpacked.obj_type_num
            if kind in (fsck.TREE, fsck.COMMIT, fsck.TAG) and unpacked.obj_chunks is not None:
                judge.add(kind, sha_to_hex(unpacked.sha()), b"".join(unpacked.obj_chunks))
    objects = store.dulwich_repo.object_store

    def read(sha: bytes) -> tuple[int, bytes] | None:
        for where in (pack, objects):
            try:
                return where.get_raw(ObjectID(sha))
            except KeyError:
                continue
        return None

    judge.finish(read)
    finding = judge.first()
    if finding is not None:
        raise RefusedPack(finding)
    if in_pack is None:
        in_pack = {bytes(sha) for sha in pack}
    held: set[bytes] = known if known is not None else set()
    if old_tree is not None and known is None:
        for commit in judge.commit_trees():
            if len(held) < _MAX_HELD:
                held |= _unchanged_entries(ObjectID(commit), old_tree, pack, objects)
    for source, what, named, parent in judge.links:
        if parent and source in shallow:
            continue
        asked = set(named).difference(in_pack, held)  # in C: a tree's 10,000 entries
        missing = next((sha for sha in named if sha in asked and ObjectID(sha) not in objects),
                       None) if asked else None
        if missing is not None:
            raise IncompleteSource(
                f"the source sent {what} {source.decode()} without {missing.decode()}, which it "
                "names", hint="the upstream repository is damaged or incomplete; nothing was "
                "changed")


#: Past this many entries known held, no further commit of a pack is compared (a fetch of
#: long history falls back to asking the object store).
_MAX_HELD = 1_000_000


def _tree_of(objects: Any, commit: ObjectId | None) -> ObjectID | None:
    if commit is None:
        return None
    try:
        obj = objects[ObjectID(commit)]
    except KeyError:
        return None
    return obj.tree if isinstance(obj, Commit) else None


def _unchanged_entries(new_tree: ObjectID, old_tree: ObjectID | None, new_objects: Any,
                       held_objects: Any) -> set[bytes]:
    """Ids that the trees below ``new_tree`` name where the tree at the same path below
    ``old_tree`` (held by ``held_objects``) names the same: held, with their closure. Only
    the trees that differ are read, so the cost follows the change."""
    found: set[bytes] = set()
    stack = [(new_tree, old_tree)]
    while stack:
        new, old = stack.pop()
        if old is None or new == old:
            continue
        after, before = _entries(new_objects, new), _entries(held_objects, old)
        if after is None or before is None:
            continue
        # The two parsed trees compared as sets of (name, mode, id), in C: a 10,000-entry
        # tree with ten entries changed is a few milliseconds, not a loop over every entry.
        same = after & before
        found.update(sha for _, _, sha in same)
        previous = {name: (mode, sha) for name, mode, sha in before - same}
        for name, mode, sha in after - same:
            if name not in previous:
                continue
            if previous[name][1] == sha:  # only the mode changed: held all the same
                found.add(sha)
            elif stat.S_ISDIR(mode):
                stack.append((ObjectID(sha), ObjectID(previous[name][1])))
    return found


def _entries(objects: Any, tree: ObjectID) -> frozenset[tuple[bytes, int, bytes]] | None:
    """The (name, mode, hex id) entries of ``tree``; None when it is missing or no tree
    that parses (what the walk and the judge make of it is theirs to say)."""
    try:
        kind, raw = objects.get_raw(tree)
        if kind != Tree.type_num:
            return None
        return entry_set(raw)
    except (KeyError, ValueError, ObjectFormatException):
        return None


def _object_files(store: GitStore) -> set[str]:
    """Every file directly in ``objects/`` (a ``tmp_pack_*`` while a pack is written) and in
    ``objects/pack``."""
    root = Path(str(store.dulwich_repo.object_store.path))
    found: set[str] = set()
    for directory in (root, root / "pack"):
        try:
            found.update(str(p) for p in directory.iterdir() if not p.is_dir())
        except FileNotFoundError:
            pass
    return found


def _remove_new_files(store: GitStore, before: set[str]) -> None:
    for name in sorted(_object_files(store) - before):
        Path(name).unlink(missing_ok=True)
