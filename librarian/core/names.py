"""The Agent Skills name rule, shared by items, tools and sources (spec §2.2)."""

from __future__ import annotations

import re

from librarian.errors import UsageError

_NAME_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")


def name_problem(name: str) -> str | None:
    """Why ``name`` breaks the rule, or None when it is valid."""
    if not name:
        return "is empty"
    if len(name) > 64:
        return f"is {len(name)} characters long (at most 64)"
    if not _NAME_RE.fullmatch(name):
        if name.startswith("-") or name.endswith("-"):
            return "starts or ends with '-'"
        return "may only hold a-z, 0-9 and '-'"
    if "--" in name:
        return "holds '--'"
    return None


def is_valid_name(name: str) -> bool:
    return name_problem(name) is None


def check_name(name: str, what: str = "name") -> str:
    """Return ``name`` or raise UsageError saying why it is invalid."""
    problem = name_problem(name)
    if problem is not None:
        raise UsageError(
            f"invalid {what} {name!r}: it {problem}",
            hint="names are 1-64 characters of a-z, 0-9 and '-', not starting or ending "
            "with '-', without '--'",
        )
    return name
