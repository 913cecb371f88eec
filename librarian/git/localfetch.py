"""Fetching from a repository on this machine: its objects copied into a quarantined pack.

A source given as a path (or ``file://``) is read directly: both object stores are here,
so no pack is negotiated, generated and parsed again. The wanted tips (depth 1: a commit's
parents are not sent) and every object of their trees that the library does not hold are
read raw from the source, each once, and

- checked against its name (SHA-1 of git's object header and content), so that a damaged or
  hostile store cannot plant an object under another object's id;
- fed to the fsck ``Judge`` (trees, commits, tags), whose verdict the caller acts on;
- appended, whole and compressed, to a pack written straight into the quarantine, its
  index written last: the pack ``transfer`` judges and admits, or deletes.

This is ``git clone --no-local``'s outcome (one pack of exactly the objects needed) without
its cost: no delta search, each object read, hashed and compressed once, the pack never
parsed again to be indexed. The library never shares a file with the source (git's local
clone hard-links the source's objects; a library owns every byte it holds). A missing
object is a ``KeyError`` (the caller: the source is incomplete); one whose content does not
hash to its name is an ``ObjectFormatException`` (the caller: refused, as git's fsck would).
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dulwich.errors import ObjectFormatException
from dulwich.objects import Commit, ObjectID, Tag
from dulwich.pack import Pack, pack_object_header, write_pack_index
from dulwich.refs import Ref

from librarian.git.fsck import BLOB, COMMIT, TAG, TREE, Judge
from librarian.git.fsckheaders import commit_problem
from librarian.git.objectstore import held, open_repository
from librarian.git.rawtree import Entry
from librarian.git.rawtree import entries as parsed_entries

_TYPE_NAMES = {COMMIT: b"commit", TREE: b"tree", BLOB: b"blob", TAG: b"tag"}
_FORMAT, _DIR, _GITLINK = 0o170000, 0o040000, 0o160000
#: zlib's fastest level: the pack lives in the library until packs are consolidated, and
#: small text objects compress almost as well (git's own default is level 6... -1).
_LEVEL = 1
_PROGRESS_EVERY = 5000


@dataclass(frozen=True, slots=True)
class LocalPack:
    """What ``copy_local`` wrote into the quarantine: the pack (open; the caller closes it),
    the ids it holds (binary ids are not kept: hex, as ``Judge.links`` names them), and the
    judge fed with its trees, commits and tags."""

    pack: Pack
    ids: set[bytes]
    judge: Judge
    blobs: dict[bytes, bytes]  # hex id -> content of the first blobs copied (``keep``)
    trees: dict[bytes, bytes]  # and of the first trees, within the same ``keep`` bytes


@dataclass(frozen=True, slots=True)
class LocalFetch:
    refs: dict[bytes, bytes]  # every ref the source holds
    shallow: set[bytes]  # the new shallow boundary: fetched tips that have parents
    known: set[bytes]  # ids the tip names where the previous tip named the same: held
    written: LocalPack | None  # None when the library held every object


def copy_local(
    path: str,
    determine_wants: Callable[..., list[ObjectID]],
    target: Any,
    pack_dir: Path,
    unchanged: Callable[[ObjectID, Any], set[bytes]],
    progress: Callable[[bytes], None] | None = None,
    keep: int = 0,
) -> LocalFetch:
    """Depth 1 from the repository at ``path`` into a pack in ``pack_dir`` (a quarantine):
    the wanted tips and the objects of their trees that ``target`` (the library's object
    store) does not hold. The walk stops at the first object the library has (its closure
    is held: every fetched pack was checked closed), and ``unchanged(tree, source)`` names
    the entries known held without asking (those of the previously fetched tree). Up to
    ``keep`` bytes of the blobs copied are returned with the pack (planning reads them next)."""
    from dulwich.errors import NotGitRepository

    try:
        source = open_repository(path)
    except (NotGitRepository, FileNotFoundError, NotADirectoryError):
        raise NotGitRepository(f"No git repository was found at {path}") from None
    with closing(source):
        refs = {bytes(k): bytes(v) for k, v in source.get_refs().items()}
        wants = determine_wants({Ref(k): ObjectID(v) for k, v in refs.items()}, 1)
        if not wants:
            return LocalFetch(refs, set(), set(), None)
        objects = source.object_store
        roots, tips = _roots(objects, wants)
        known: set[bytes] = set()
        for tip in tips:
            known |= unchanged(_commit(objects, tip).tree, objects)
        judge = Judge()
        blobs: dict[bytes, bytes] = {}
        trees: dict[bytes, bytes] = {}
        walk = _kept(_walk(objects, roots, _Seen(known, target), judge), blobs, trees, keep)
        written = _write_pack(pack_dir, walk, source.object_format, progress)
        shallow = {bytes(t) for t in tips if _commit(objects, t).parents}
    if written is None:
        return LocalFetch(refs, shallow, known, None)
    pack, ids = written
    return LocalFetch(refs, shallow, known, LocalPack(pack, ids, judge, blobs, trees))


def _kept(objects: Iterator[tuple[int, bytes, bytes]], blobs: dict[bytes, bytes],
          trees: dict[bytes, bytes], room: int) -> Iterator[tuple[int, bytes, bytes]]:
    """``objects`` passed on, the content of blobs and trees kept in ``blobs`` and
    ``trees`` up to ``room`` bytes in all (planning reads every new item's next)."""
    for kind, sha, raw in objects:
        if kind in (BLOB, TREE) and len(raw) <= room:
            (blobs if kind == BLOB else trees)[sha] = raw
            room -= len(raw)
        yield kind, sha, raw


def _roots(objects: Any, wants: list[ObjectID]) -> tuple[list[bytes], list[ObjectID]]:
    """The objects to start from (the wanted ones and what their tags name) and the
    commits among them (the tips)."""
    roots: list[bytes] = []
    tips: list[ObjectID] = []
    for want in wants:
        obj = objects[want]
        roots.append(bytes(want))
        for _ in range(8):
            if not isinstance(obj, Tag):
                break
            roots.append(bytes(obj.object[1]))
            obj = objects[obj.object[1]]
        if isinstance(obj, Commit):
            tips.append(obj.id)
    return roots, tips


class _Seen:
    """Objects not to copy: those copied already, those known held, and every object the
    library holds (``objectstore.held``: its open packs, then one stat of a loose path,
    without dulwich's listing of the pack directory on every miss)."""

    def __init__(self, known: set[bytes], target: Any) -> None:
        self.done: set[bytes] = set()
        self._known = known
        self._target = target

    def unknown(self, entries: Sequence[Entry]) -> list[tuple[bytes, int]]:
        """(id, expected type) of the children of a tree, in order, but for those known
        held and gitlinks (another repository's commits): one pass in a comprehension, as
        a 10,000-entry tree with ten changed entries is the common case."""
        known = self._known
        return [(child, TREE if mode & _FORMAT == _DIR else BLOB)
                for _, mode, child in entries if mode != _GITLINK and child not in known]

    def skip(self, sha: bytes) -> bool:
        if sha in self.done or sha in self._known:
            return True
        self.done.add(sha)
        return held(self._target, ObjectID(sha))


def _walk(objects: Any, roots: list[bytes], seen: _Seen,
          judge: Judge) -> Iterator[tuple[int, bytes, bytes]]:
    """(type, hex id, raw content) of every object to copy, each read once and checked
    against its id; trees, commits and tags fed to ``judge``. A commit's parents are not
    followed (depth 1), nor a gitlink (another repository's commit)."""
    stack: list[tuple[bytes, int | None]] = [(sha, None) for sha in reversed(roots)]
    while stack:
        sha, expected = stack.pop()
        if seen.skip(sha):
            continue
        kind, raw = objects.get_raw(ObjectID(sha))
        if expected is not None and kind != expected:
            raise ObjectFormatException(f"object {sha.decode()} is a {_name(kind)} where "
                                        f"its tree names a {_name(expected)}")
        _check_id(kind, sha, raw)
        if kind == TREE:
            judge.add(kind, sha, raw)
            try:  # dulwich's C parser: the children to copy (the judge has the last word)
                entries = parsed_entries(raw)
            except (ValueError, ObjectFormatException):
                entries = ()  # the judge refuses it (badTree)
            stack.extend(reversed(seen.unknown(entries)))
        elif kind == COMMIT:
            judge.add(kind, sha, raw)
            if commit_problem(raw) is None:  # else the judge refuses it
                stack.append((raw[5:45].lower(), TREE))
        elif kind == TAG:
            judge.add(kind, sha, raw)
        yield kind, sha, raw


def _check_id(kind: int, sha: bytes, raw: bytes) -> None:
    name = _TYPE_NAMES.get(kind)
    if name is None:
        raise ObjectFormatException(f"object {sha.decode()} has an unknown type {kind}")
    digest = hashlib.sha1(b"%s %d\0" % (name, len(raw)))
    digest.update(raw)
    if digest.hexdigest().encode() != sha:
        raise ObjectFormatException(f"object {sha.decode()} does not hash to its name "
                                    f"({digest.hexdigest()})")


def _name(kind: int) -> str:
    return _TYPE_NAMES.get(kind, b"?").decode()


def _write_pack(pack_dir: Path, objects: Iterator[tuple[int, bytes, bytes]],
                object_format: Any,
                progress: Callable[[bytes], None] | None) -> tuple[Pack, set[bytes]] | None:
    """A version 2 pack of whole objects in ``pack_dir``, then its index (named as dulwich
    names a pack: by its object ids); None when there is no object."""
    temporary = pack_dir / "tmp_pack_local"
    entries: list[tuple[bytes, int, int]] = []
    ids: set[bytes] = set()
    with temporary.open("w+b") as out:
        out.write(b"PACK\0\0\0\2\0\0\0\0")  # the count is filled in at the end
        offset = 12
        for kind, sha, raw in objects:
            entry = bytes(pack_object_header(kind, None, len(raw), object_format)) \
                + zlib.compress(raw, _LEVEL)
            out.write(entry)
            entries.append((bytes.fromhex(sha.decode()), offset, zlib.crc32(entry)))
            ids.add(sha)
            offset += len(entry)
            if progress is not None and len(entries) % _PROGRESS_EVERY == 0:
                progress(b"Copying objects: %d\r" % len(entries))
        if not entries:
            out.close()
            temporary.unlink()
            return None
        out.seek(8)
        out.write(len(entries).to_bytes(4, "big"))
        out.seek(0)
        checksum = hashlib.sha1()
        while chunk := out.read(1 << 20):
            checksum.update(chunk)
        pack_sha = checksum.digest()
        out.write(pack_sha)
    if progress is not None:
        progress(b"Copying objects: %d, done.\n" % len(entries))
    entries.sort()
    names = hashlib.sha1()
    for binary, _, _ in entries:
        names.update(binary.hex().encode())
    base = pack_dir / f"pack-{names.hexdigest()}"
    temporary.replace(base.with_suffix(".pack"))
    with base.with_suffix(".idx").open("wb") as index:
        write_pack_index(index, entries, pack_sha, version=2)
    return Pack(str(base), object_format=object_format), ids


def _commit(objects: Any, sha: ObjectID) -> Commit:
    obj = objects[sha]
    assert isinstance(obj, Commit)
    return obj

