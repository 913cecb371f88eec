"""git's ancestry suffixes on a revision (``HEAD~1``, ``main~2``, ``HEAD^``, ``HEAD^2``),
which dulwich's ``parse_commit`` does not read. Pure: imports nothing of librarian."""

from __future__ import annotations

import re

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
