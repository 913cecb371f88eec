"""The store's value objects: an object id, a tree entry, a commit as read."""

from __future__ import annotations

from dataclasses import dataclass

ObjectId = bytes  # hex SHA-1, as dulwich spells object ids


@dataclass(frozen=True, slots=True)  # one per tree entry read: 10,000 in a large tree
class TreeEntry:
    mode: int
    sha: ObjectId


@dataclass(frozen=True, slots=True)
class CommitInfo:
    id: ObjectId
    tree: ObjectId
    parents: tuple[ObjectId, ...]
    message: str
    author: str
    time: int
    tz_offset: int
