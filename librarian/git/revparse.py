"""A revision to a commit: a hex id, a branch, tag or HEAD, and git's ancestry suffixes
(``HEAD~1``, ``main~2``, ``HEAD^``, ``HEAD^2``), which dulwich's ``parse_commit`` does not
read; first-parent history (recovery's view of the branch librarian moved) and the whole
history through every parent (``git log``'s view: what arrived through merges)."""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from librarian.errors import UsageError

if TYPE_CHECKING:
    from librarian.git.ids import CommitInfo
    from librarian.git.repo import GitStore, ObjectId

_SUFFIX = re.compile(r"(~(\d*)|\^(\d*))")


def split_revision(revision: str) -> tuple[str, list[int]]:
    """``main~2^2`` -> ("main", [1, 1, 2]): the base and, per step back, which parent."""
    match = re.search(r"([~^]\d*)+$", revision)
    if match is None or match.start() == 0:
        return revision, []
    steps: list[int] = []
    for tilde, count, caret in (m.group(1, 2, 3) for m in _SUFFIX.finditer(match.group(0))):
        if tilde.startswith("~"):
            steps += [1] * (int(count) if count else 1)
        else:
            number = int(caret) if caret else 1
            steps += [number] if number else []  # ^0 is the commit itself
    return revision[:match.start()], steps


def resolve(store: GitStore, revision: str) -> ObjectId:
    """A commit id from a full or abbreviated hex id, a branch, tag or HEAD, followed
    by git's ancestry suffixes (``HEAD~1``, ``main~2``, ``HEAD^``, ``HEAD^2``)."""
    from dulwich.objectspec import AmbiguousShortId, parse_commit

    base, steps = split_revision(revision)
    try:
        commit = bytes(parse_commit(store.dulwich_repo, base.encode()).id)
        for parent in steps:
            parents = store.commit(commit).parents
            if parent > len(parents):
                raise UsageError(f"unknown revision {revision!r}: {commit.decode()[:12]} "
                                 f"has {len(parents)} parent(s)")
            commit = parents[parent - 1]
        return commit
    except (KeyError, ValueError) as exc:
        raise UsageError(f"unknown revision {revision!r}") from exc
    except AmbiguousShortId:
        raise UsageError(f"the revision {revision!r} is ambiguous",
                         hint="give more characters of the commit id") from None


def walk_log(store: GitStore, start: ObjectId | None) -> Iterator[CommitInfo]:
    """First-parent history from ``start``, newest first."""
    sha = start
    while sha is not None:
        info = store.commit(sha)
        yield info
        sha = info.parents[0] if info.parents else None


def walk_history(store: GitStore, start: ObjectId | None) -> Iterator[CommitInfo]:
    """Every commit reachable from ``start`` through every parent, each once, newest commit
    time first (``git log``'s default order: a commit before its parents when their clocks
    agree), so the work of another clone that arrived through a merge is listed too."""
    if start is None:
        return
    seen = {start}
    first = store.commit(start)
    queue: list[tuple[int, int, CommitInfo]] = [(-first.time, 0, first)]
    order = 1  # ties: the commit met first (a child before its parents) comes first
    while queue:
        _, _, info = heapq.heappop(queue)
        yield info
        for parent in info.parents:
            if parent not in seen:
                seen.add(parent)
                found = store.commit(parent)
                heapq.heappush(queue, (-found.time, order, found))
                order += 1
