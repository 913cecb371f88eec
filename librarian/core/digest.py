"""Per-item digests: the id of the item directory's git tree (spec §2.12).

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
    nested = nest((leaf.path, (leaf.executable, (leaf.blob,))) for leaf in leaves)
    return _hash_trees(nested, (algorithm,))[0]


def tree_ids(files: Sequence[tuple[str, bool, bytes]]) -> tuple[bytes, list[bytes], bytes]:
    """For files given as (path, executable, data): git's SHA-1 tree id, each file's SHA-1
    blob id, and the SHA-256 tree id (the digest), from one nesting of the paths."""
    sha1_blobs = [blob_id(data, "sha1") for _, _, data in files]
    nested = nest((path, (executable, (sha1, blob_id(data))))
                  for (path, executable, data), sha1 in zip(files, sha1_blobs, strict=True))
    sha1_tree, sha256_tree = _hash_trees(nested, ("sha1", "sha256"))
    return sha1_tree, sha1_blobs, sha256_tree


def _hash_trees(node: Mapping[str, object], algorithms: tuple[HashName, ...]) -> list[bytes]:
    """The ids of the tree ``node`` in each of ``algorithms``, whose leaves are
    (executable, (blob id in each algorithm)): each directory's entries encoded and sorted
    once for all of them."""
    entries: list[tuple[bytes, bytes, Sequence[bytes]]] = []
    for name, child in node.items():
        encoded = name.encode("utf-8")
        if isinstance(child, tuple):
            executable, oids = child
            entries.append((encoded, b"%o %s\x00" % (MODE_EXECUTABLE if executable
                                                     else MODE_FILE, encoded), oids))
        else:
            assert isinstance(child, dict)
            entries.append((encoded + b"/", b"%o %s\x00" % (MODE_TREE, encoded),
                            _hash_trees(child, algorithms)))
    entries.sort()  # by git's key (a directory sorts as its name + "/"); keys are unique
    ids = []
    for number, algorithm in enumerate(algorithms):
        body = b"".join([head + oids[number] for _, head, oids in entries])
        hasher = _HASHES[algorithm](b"tree %d\x00" % len(body))
        hasher.update(body)
        ids.append(hasher.digest())
    return ids


def format_digest(raw_sha256: bytes) -> str:
    return "sha256:" + raw_sha256.hex()


def content_digest(files: Iterable[tuple[str, bool, bytes]]) -> str:
    """``sha256:…`` of files given as (path, executable, data)."""
    leaves = (TreeLeaf(path, executable, blob_id(data)) for path, executable, data in files)
    return format_digest(tree_id(leaves))
