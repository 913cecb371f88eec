"""Per-item digests: the id of the item directory's git tree (spec §2).

The same function yields the SHA-256 digest users see (``sha256:<hex>``) and the SHA-1
tree id the library's own git repository stores, so drift can be found by comparing tree
ids without reading file contents twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

HashName = Literal["sha1", "sha256"]

MODE_FILE = 0o100644
MODE_EXECUTABLE = 0o100755
MODE_TREE = 0o040000


def blob_id(data: bytes, algorithm: HashName = "sha256") -> bytes:
    """Raw id of a git blob holding ``data``."""
    hasher = hashlib.new(algorithm)
    hasher.update(b"blob %d\x00" % len(data))
    hasher.update(data)
    return hasher.digest()


@dataclass(frozen=True)
class TreeLeaf:
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
    return _hash_tree(nest((leaf.path, leaf) for leaf in leaves), algorithm)


def _hash_tree(node: Mapping[str, object], algorithm: HashName) -> bytes:
    entries: list[tuple[bytes, int, bytes]] = []
    for name, child in node.items():
        if isinstance(child, TreeLeaf):
            mode = MODE_EXECUTABLE if child.executable else MODE_FILE
            entries.append((name.encode("utf-8"), mode, child.blob))
        else:
            assert isinstance(child, dict)
            entries.append((name.encode("utf-8"), MODE_TREE, _hash_tree(child, algorithm)))
    entries.sort(key=_tree_sort_key)
    body = b"".join(b"%o %s\x00%s" % (mode, name, oid) for name, mode, oid in entries)
    hasher = hashlib.new(algorithm)
    hasher.update(b"tree %d\x00" % len(body))
    hasher.update(body)
    return hasher.digest()


def format_digest(raw_sha256: bytes) -> str:
    return "sha256:" + raw_sha256.hex()


def content_digest(files: Iterable[tuple[str, bool, bytes]]) -> str:
    """``sha256:…`` of files given as (path, executable, data)."""
    leaves = (TreeLeaf(path, executable, blob_id(data)) for path, executable, data in files)
    return format_digest(tree_id(leaves))
