"""git fsck's rules for commit and tag headers (``fsck.c``: ``fsck_commit``, ``fsck_tag``,
``fsck_ident``, ``verify_headers``), over an object's raw bytes, as git 2.39 applies them
under ``--strict``; used by ``git.fsck``. Each function gives (fsck's message id, what)
for the first rule broken, or None. Pure; no imports from librarian.
"""

from __future__ import annotations

import re

HEX = re.compile(rb"[0-9a-fA-F]{40}")
_HEX = HEX
_TYPES = frozenset({b"commit", b"tree", b"blob", b"tag"})
_MAX_TIMESTAMP = 2**63 - 1  # date_overflows: must fit a signed 64-bit time_t


def commit_problem(raw: bytes) -> tuple[str, str] | None:
    """fsck_commit: (message id, what) for the first rule the commit breaks, or None."""
    header = _header_problem(raw)
    if header is not None:
        return header
    lines = iter(raw.split(b"\n"))
    line = next(lines)
    if not line.startswith(b"tree "):
        return "missingTree", "no tree line"
    if not _HEX.fullmatch(line[5:]):
        return "badTreeSha1", "a bad tree id"
    line = next(lines, b"")
    while line.startswith(b"parent "):
        if not _HEX.fullmatch(line[7:]):
            return "badParentSha1", "a bad parent id"
        line = next(lines, b"")
    authors = 0
    while line.startswith(b"author "):
        authors += 1
        problem = ident_problem(line[7:])
        if problem is not None:
            return problem
        line = next(lines, b"")
    if authors != 1:
        return ("missingAuthor", "no author") if not authors else (
            "multipleAuthors", "several authors")
    if not line.startswith(b"committer "):
        return "missingCommitter", "no committer"
    problem = ident_problem(line[10:])
    if problem is not None:
        return problem
    if b"\0" in raw:
        return "nulInCommit", "a NUL byte in the message"
    return None


def tag_problem(raw: bytes) -> tuple[str, str] | None:
    """fsck_tag: (message id, what) for the first rule the tag breaks, or None (a missing
    tagger or an odd tag name are only notes to git)."""
    header = _header_problem(raw)
    if header is not None:
        return header
    lines = raw.split(b"\n")
    if not lines[0].startswith(b"object "):
        return "missingObject", "no object line"
    if not _HEX.fullmatch(lines[0][7:]):
        return "badObjectSha1", "a bad object id"
    if len(lines) < 2 or not lines[1].startswith(b"type "):
        return "missingTypeEntry", "no type line"
    if len(lines) < 3:
        return "missingType", "nothing after the type line"
    if lines[1][5:] not in _TYPES:
        return "badType", "an unknown object type"
    if not lines[2].startswith(b"tag "):
        return "missingTagEntry", "no tag line"
    if len(lines) < 4:
        return "missingTag", "nothing after the tag line"
    if lines[3].startswith(b"tagger "):
        return ident_problem(lines[3][7:])
    return None


def _header_problem(raw: bytes) -> tuple[str, str] | None:
    """verify_headers: no NUL before the blank line; the last header line ends in LF."""
    end = raw.find(b"\n\n")
    header = raw if end < 0 else raw[:end]
    if b"\0" in header:
        return "nulInHeader", "a NUL byte in the header"
    if end < 0 and not raw.endswith(b"\n"):
        return "unterminatedHeader", "an unterminated header"
    return None


def ident_problem(ident: bytes) -> tuple[str, str] | None:
    """fsck_ident over ``Name <email> 1234567890 +0000`` (the line, without its LF)."""
    if ident.startswith(b"<"):
        return "missingNameBeforeEmail", "an identity without a name"
    match = re.match(rb"[^<>]*", ident)
    p = match.end() if match else 0
    if p < len(ident) and ident[p : p + 1] == b">":
        return "badName", "a bad name"
    if p >= len(ident):
        return "missingEmail", "an identity without an email"
    if ident[p - 1 : p] != b" ":
        return "missingSpaceBeforeEmail", "no space before the email"
    close = re.match(rb"[^<>]*", ident[p + 1 :])
    q = p + 1 + (close.end() if close else 0)
    if ident[q : q + 1] != b">":
        return "badEmail", "a bad email"
    rest = ident[q + 1 :]
    if not rest.startswith(b" "):
        return "missingSpaceBeforeDate", "no space before the date"
    rest = rest[1:]
    if rest.startswith(b"0") and rest[1:2] != b" ":
        return "zeroPaddedDate", "a zero-padded date"
    digits = re.match(rb"[0-9]*", rest)
    count = digits.end() if digits else 0
    if count and int(rest[:count]) > _MAX_TIMESTAMP:
        return "badDateOverflow", "a date that overflows"
    if not count or rest[count : count + 1] != b" ":
        return "badDate", "a bad date"
    zone = rest[count + 1 :]
    if not re.fullmatch(rb"[+-][0-9]{4}", zone):
        return "badTimezone", "a bad time zone"
    return None
