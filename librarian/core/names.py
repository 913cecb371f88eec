"""The Agent Skills name rule, shared by items, tools and sources (spec §2.2)."""

from __future__ import annotations

import re
from collections.abc import Iterable

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


#: Folders that say what an item is, not whose it is: left out of a qualified name.
_KIND_FOLDERS = frozenset({"skills", "recipes"})


def qualified_names(paths: Iterable[str]) -> dict[str, str]:
    """path -> the name of the item at each upstream ``path`` of one collection: its
    folder's name (``skills/pdf`` -> ``pdf``), or, for items sharing a folder name, that
    name behind the nearest folders that tell them apart, joined by ``:`` as Claude Code
    shows a plugin's skill (``external_plugins/imessage/skills/access`` ->
    ``imessage:access`` beside ``telegram:access``); ``skills``/``recipes`` folders are
    left out while others suffice."""
    groups: dict[str, list[str]] = {}
    for path in paths:
        groups.setdefault(path.rsplit("/", 1)[-1], []).append(path)
    out: dict[str, str] = {}
    for leaf, group in groups.items():
        if len(group) == 1:
            out[group[0]] = leaf
            continue
        out.update(_apart(leaf, sorted(set(group))))
    return out


def _apart(leaf: str, group: list[str]) -> dict[str, str]:
    raw = {p: p.split("/")[:-1] for p in group}
    plain = {p: [s for s in f if s not in _KIND_FOLDERS] for p, f in raw.items()}
    # Without its kind folders an item must still have a folder to be named by, or every
    # folder counts: each item of the group is qualified unless it has no folder at all.
    for folders in ((plain, raw) if all(plain[p] or not raw[p] for p in group) else (raw,)):
        longest = max(len(f) for f in folders.values())
        for depth in range(1, longest + 1):
            names = {p: ":".join([*f[-depth:], leaf]) for p, f in folders.items()}
            if len(set(names.values())) == len(names):
                return names
    return {p: ":".join([*p.split("/")[:-1], leaf]) for p in group}  # distinct paths
