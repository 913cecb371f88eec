"""Per-item digests: the id of the item directory's git tree (spec §2).

The same function yields the SHA-256 digest users see (``sha256:<hex>``) and the SHA-1
tree id the library's own git repository stores, so drift can be found by comparing tree
ids without reading file contents twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal, NamedTuple

HashName = Literal["sha1", "sha256"]

MODE_FILE = 0o100644
MODE_EXECUTABLE = 0o100755
MODE_TREE = 0o040000


#: hashlib's named constructors: ``hashlib.new(name)`` looks the name up on every call.
_HASHES = {"sha1": hashlib.sha1, "sha256": hashlib.sha256}


def blob_id(data: bytes, algorithm: HashName = "sha256") -> bytes:
    """Raw id of a git blob holding ``data``."""
    hasher = _HASHES[algorithm](b"blob %d\x00" % len(data))
    hasher.update(data)
    return hasher.digest()


class TreeLeaf(NamedTuple):
    """One file of an item: posix path relative to the item, mode, raw blob id."""

    path: str
    executable: bool
    blob: bytes


def _tree_sort_key(entry: tuple[bytes, int, bytes]) -> bytes:
    name, mode, _ = entry
    return name + b"/" if mode == MODE_TREE else name


class PathClash(ValueError):
    """Two paths cannot both be in one tree (``a`` and ``a/b``, or ``a`` twice)."""


def nest(leaves: Iterable[tuple[str, object]]) -> dict[str, object]:
    """Posix paths -> leaves, as nested dicts (one per directory): the shape every tree
    built here (digests, commits, managed collections) starts from."""
    nested: dict[str, object] = {}
    for path, leaf in leaves:
        parts = path.split("/")
        node = nested
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise PathClash(f"{path} is inside {part}, which is not a directory")
            node = child
        if parts[-1] in node:
            raise PathClash(f"{path} appears twice (or holds other entries)")
        node[parts[-1]] = leaf
    return nested


def tree_id(leaves: Iterable[TreeLeaf], algorithm: HashName = "sha256") -> bytes:
    """Raw id of the git tree holding ``leaves`` (blob ids must use ``algorithm``)."""
    return _hash_tree(nest((leaf.path, (leaf.executable, leaf.blob)) for leaf in leaves),
                      algorithm, 1)


def tree_ids(files: Sequence[tuple[str, bool, bytes]]) -> tuple[bytes, list[bytes], bytes]:
    """For files given as (path, executable, data): git's SHA-1 tree id, each file's SHA-1
    blob id, and the SHA-256 tree id (the digest), from one nesting of the paths."""
    sha1_blobs = [blob_id(data, "sha1") for _, _, data in files]
    nested = nest((path, (executable, sha1, blob_id(data)))
                  for (path, executable, data), sha1 in zip(files, sha1_blobs, strict=True))
    sha1_tree, sha256_tree = _hash_both(nested)
    return sha1_tree, sha1_blobs, sha256_tree


def _hash_both(node: Mapping[str, object]) -> tuple[bytes, bytes]:
    """``_hash_tree`` for both algorithms at once: each directory's entries encoded and
    sorted once (leaves are (executable, SHA-1 blob id, SHA-256 blob id))."""
    entries: list[tuple[bytes, bytes, bytes, bytes]] = []
    for name, child in node.items():
        encoded = name.encode("utf-8")
        if isinstance(child, tuple):
            head = b"%o %s\x00" % (MODE_EXECUTABLE if child[0] else MODE_FILE, encoded)
            entries.append((encoded, head, child[1], child[2]))
        else:
            assert isinstance(child, dict)
            sha1, sha256 = _hash_both(child)
            entries.append((encoded + b"/", b"%o %s\x00" % (MODE_TREE, encoded), sha1, sha256))
    entries.sort()  # by git's key (a directory sorts as its name + "/"); keys are unique
    body1 = b"".join([head + sha1 for _, head, sha1, _ in entries])
    body256 = b"".join([head + sha256 for _, head, _, sha256 in entries])
    first = hashlib.sha1(b"tree %d\x00" % len(body1))
    first.update(body1)
    second = hashlib.sha256(b"tree %d\x00" % len(body256))
    second.update(body256)
    return first.digest(), second.digest()


def _hash_tree(node: Mapping[str, object], algorithm: HashName, pick: int) -> bytes:
    """The tree id of ``node``, whose leaves are tuples (executable, blob id, ...): the
    blob id at ``pick`` is the one of ``algorithm``."""
    entries: list[tuple[bytes, int, bytes]] = []
    for name, child in node.items():
        if isinstance(child, tuple):
            mode = MODE_EXECUTABLE if child[0] else MODE_FILE
            entries.append((name.encode("utf-8"), mode, child[pick]))
        else:
            assert isinstance(child, dict)
            entries.append((name.encode("utf-8"), MODE_TREE, _hash_tree(child, algorithm, pick)))
    entries.sort(key=_tree_sort_key)
    body = b"".join(b"%o %s\x00%s" % (mode, name, oid) for name, mode, oid in entries)
    hasher = _HASHES[algorithm](b"tree %d\x00" % len(body))
    hasher.update(body)
    return hasher.digest()


def format_digest(raw_sha256: bytes) -> str:
    return "sha256:" + raw_sha256.hex()


def content_digest(files: Iterable[tuple[str, bool, bytes]]) -> str:
    """``sha256:…`` of files given as (path, executable, data)."""
    leaves = (TreeLeaf(path, executable, blob_id(data)) for path, executable, data in files)
    return format_digest(tree_id(leaves))
