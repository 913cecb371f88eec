"""A tree's raw bytes with a few entries set or removed, the rest copied as they are; a
large tree's entries parsed once and looked into by bisection.

Changing ten entries of a 10,000-entry tree through dulwich's ``Tree`` parses it into a
map, copies it (a second parse) and serializes all 10,000 entries again in Python
(~30 ms). Here the entries are parsed once in C, their byte offsets summed from their
lengths, and the new bytes are the old runs between the changes with the changed
entries in between (~5 ms). Only a tree whose modes are written as git (or, below
``0o1000``, dulwich) writes them is spliced (every offset adds up); anything else is the
caller's to build. The parses and sets of the last four large trees are kept for the life
of the process (~3 MB for a 10,000-entry tree's, measured). Pure over bytes; imports
dulwich's C parser and ``git.ids`` only.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from functools import lru_cache
from itertools import accumulate

from dulwich.objects import parse_tree

from librarian.git.ids import TreeEntry

_FORMAT, _DIR = 0o170000, 0o040000
#: Below this size a tree is rebuilt through dulwich's ``Tree`` (a few entries: no gain),
#: its entries are not kept, and it is looked into through ``Tree``.
SPLICED_BYTES = 16 * 1024
#: The width of the octal text of each mode git writes (others are measured as dulwich
#: writes them: at least four digits).
MODE_WIDTHS = {0o040000: 5, 0o100644: 6, 0o100755: 6, 0o120000: 6, 0o160000: 6}


Entry = tuple[bytes, int, bytes]  # (name, mode, hex id), as dulwich's C parser gives it


def _key(entry: Entry) -> bytes:
    """git's order: a directory sorts as if its name ended in '/'."""
    return entry[0] + b"/" if entry[1] & _FORMAT == _DIR else entry[0]


def entries(raw: bytes) -> Sequence[Entry]:
    """The entries of a tree's content, from dulwich's C parser; a large tree's are kept
    for the next caller (one update parses the changed 10,000-entry folder for the fetch,
    the judge, the walk, the delta and the splice: once). ValueError or dulwich's
    ObjectFormatException when ``raw`` is no tree."""
    return _large_entries(raw) if len(raw) >= SPLICED_BYTES else tuple(parse_tree(raw, 20))


@lru_cache(maxsize=4)  # the old and new of one folder, upstream and committed
def _large_entries(raw: bytes) -> Sequence[Entry]:
    return tuple(parse_tree(raw, 20))


def entry_set(raw: bytes) -> frozenset[Entry]:
    """The entries of a tree's content as a set: two trees compare in C (a large tree's
    set is kept too: the fetch and the delta compare the same two folders)."""
    return _large_set(raw) if len(raw) >= SPLICED_BYTES else frozenset(entries(raw))


@lru_cache(maxsize=4)
def _large_set(raw: bytes) -> frozenset[Entry]:
    return frozenset(_large_entries(raw))


def find_entry(found: Sequence[Entry], name: bytes) -> tuple[int, bytes] | None:
    """(mode, hex id) of the entry ``name`` of a tree's ``entries``, by bisection in
    git's order (as a file, then as a directory), or None."""
    for key in (name, name + b"/"):
        at = bisect_left(found, key, key=_key)
        if at < len(found) and found[at][0] == name and _key(found[at]) == key:
            return found[at][1], found[at][2]
    return None


def splice_entries(raw: bytes, changes: Mapping[bytes, tuple[int, bytes] | None]
                   ) -> bytes | None:
    """``raw`` (a tree's content) with each named entry set to (mode, hex id), or
    removed for None; None when ``raw`` is not in the canonical shape."""
    parsed = entries(raw)
    offsets = list(accumulate(
        (len(name) + (MODE_WIDTHS.get(mode) or len(b"%04o" % mode)) + 22
         for name, mode, _ in parsed), initial=0))
    if offsets[-1] != len(raw):
        return None
    # (position, 0: insert before the entry there / 1: drop that entry, git key, bytes)
    edits: list[tuple[int, int, bytes, bytes]] = []
    for name, change in changes.items():
        for key in (name, name + b"/"):  # the name as a file, then as a directory
            at = bisect_left(parsed, key, key=_key)
            if at < len(parsed) and parsed[at][0] == name and _key(parsed[at]) == key:
                edits.append((at, 1, b"", b""))
        if change is not None:
            mode, sha = change
            key = name + b"/" if mode & _FORMAT == _DIR else name
            edits.append((bisect_left(parsed, key, key=_key), 0, key,
                          b"%04o %s\0%s" % (mode, name, bytes.fromhex(sha.decode("ascii")))))
    pieces: list[bytes] = []
    copied = 0  # entries before this one are in ``pieces``
    for at, drop, _, data in sorted(edits):
        if at > copied:
            pieces.append(raw[offsets[copied]:offsets[at]])
            copied = at
        if drop:
            copied = at + 1
        else:
            pieces.append(data)
    pieces.append(raw[offsets[copied]:])
    return b"".join(pieces)


def splice_node(raw: bytes, node: Mapping[str, object]) -> bytes | None:
    """``raw`` with the changes of a ``nest``-ed node (name -> TreeEntry, or None to
    remove) when every change is an entry of this tree and the tree is large; None
    otherwise (a nested change, a small tree, or a shape ``splice_entries`` refuses)."""
    if len(raw) < SPLICED_BYTES:
        return None
    changes: dict[bytes, tuple[int, bytes] | None] = {}
    for part, change in node.items():
        if change is not None and not isinstance(change, TreeEntry):
            return None  # a subdirectory's own changes
        name = part.encode("utf-8", "surrogateescape")
        changes[name] = None if change is None else (change.mode, change.sha)
    return splice_entries(raw, changes)
