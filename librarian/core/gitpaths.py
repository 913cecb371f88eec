"""Git's own rules for what a tree may hold, as one pure module (spec §2.8).

A path that git, or git on another operating system, would read as ``.git`` lets a tree
write into the repository's own metadata on checkout; git refuses such trees (``fsck``
reports ``hasDotgit``, ``git clone`` says ``invalid path``). This module ports that logic
from git (``fsck.c`` ``fsck_tree``, ``read-cache.c`` ``verify_path``, ``path.c``
``is_ntfs_dotgit`` / ``is_hfs_dotgit`` / ``is_ntfs_dot_generic``, ``utf8.c``
``next_hfs_char`` and ``compat/mingw.c`` ``is_valid_win32_path``) so a library stays
cloneable by plain git on Linux, macOS and Windows, and adds the one rule git leaves to
the file system: two names in one folder must not be equal under case folding or Unicode
normalisation (they would be one file on macOS and Windows).

Pure functions over ``str`` paths (posix, relative); no I/O, no imports from librarian.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Collection, Iterable

# utf8.c next_hfs_char: code points HFS+ ignores completely when comparing names.
HFS_IGNORABLE = frozenset(
    [0x200C, 0x200D, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E]
    + list(range(0x206A, 0x2070))
    + [0xFEFF]
)
_WIN_ILLEGAL = frozenset('<>:"|?*\\')


def _hfs_chars(name: str) -> str:
    return "".join(ch for ch in name if ord(ch) not in HFS_IGNORABLE)


def is_hfs_dot(name: str, needle: str) -> bool:
    """utf8.c is_hfs_dot_generic: ``.<needle>`` with HFS+ ignorables, in any ASCII case,
    then the end or a ``/`` (whatever follows it)."""
    chars = _hfs_chars(name)
    if not chars.startswith("."):
        return False
    word, after = chars[1 : 1 + len(needle)], chars[1 + len(needle) : 2 + len(needle)]
    if after not in ("", "/") or any(ord(c) > 127 for c in word):
        return False
    return word.lower() == needle


def is_hfs_dotgit(name: str) -> bool:
    return is_hfs_dot(name, "git")


def _only_spaces_periods_then_end(tail: str) -> bool:
    """After a match: only spaces and periods up to the end or an NTFS stream ``:``."""
    for ch in tail:
        if ch == ":":
            return True
        if ch not in " .":
            return False
    return True


def is_ntfs_dotgit(name: str) -> bool:
    """path.c is_ntfs_dotgit: ``.git`` or its 8.3 alias ``git~1``, any case, followed by
    trailing spaces / periods or an alternate data stream (``.git::$INDEX_ALLOCATION``)."""
    lowered = name.lower()
    if lowered.startswith(".git"):
        tail = name[4:]
    elif lowered.startswith("git~1"):
        tail = name[5:]
    else:
        return False
    for ch in tail:
        if ch in "/\\:":
            return True
        if ch not in " .":
            return False
    return True


def is_ntfs_dot_generic(name: str, dotname: str, shortname_prefix: str) -> bool:
    """path.c is_ntfs_dot_generic: ``.<dotname>``, its 6+``~N`` short name, or the
    hashed fall-back short name (``gi7eba~1`` for ``.gitmodules``)."""
    if name[:1] == "." and name[1 : 1 + len(dotname)].lower() == dotname:
        return _only_spaces_periods_then_end(name[1 + len(dotname) :])
    if name[:6].lower() == dotname[:6] and name[6:7] == "~" and name[7:8] in "1234":
        return _only_spaces_periods_then_end(name[8:]) if len(name) >= 8 else False
    i, saw_tilde = 0, False
    while i < 8:
        if i >= len(name):
            return False
        ch = name[i]
        if saw_tilde:
            if not "0" <= ch <= "9":
                return False
        elif ch == "~":
            i += 1
            if i >= len(name) or not "1" <= name[i] <= "9":
                return False
            saw_tilde = True
        elif i >= 6 or ord(ch) > 127 or ch.lower() != shortname_prefix[i]:
            return False
        i += 1
    return _only_spaces_periods_then_end(name[8:])


def is_dotgit_name(name: str) -> bool:
    """fsck.c fsck_tree's ``hasDotgit``: the name, or any part after a backslash (a
    directory separator on Windows), is ``.git`` for HFS+ or NTFS."""
    if is_hfs_dotgit(name) or is_ntfs_dotgit(name):
        return True
    pieces = name.split("\\")[1:]
    return any(is_ntfs_dotgit(piece) for piece in pieces)


def is_dotgitmodules(name: str) -> bool:
    """A name git reads as ``.gitmodules`` on some system (fsck checks every such blob)."""
    return is_hfs_dot(name, "gitmodules") or is_ntfs_dot_generic(name, "gitmodules", "gi7eba")


def _win32_reserved(segment: str) -> bool:
    """mingw.c: AUX, CON, CONIN$, CONOUT$, NUL, PRN, COM1-9, LPT1-9, then spaces and an
    end, an extension or a stream."""
    lowered = segment.lower()
    for word in ("conin$", "conout$", "aux", "con", "nul", "prn"):
        if lowered.startswith(word):
            rest = lowered[len(word) :]
            break
    else:
        if lowered[:3] in ("com", "lpt") and lowered[3:4] in set("123456789"):
            rest = lowered[4:]
        else:
            return False
    rest = rest.lstrip(" ")
    return rest == "" or rest[0] in ".:"


def segment_problem(segment: str) -> str | None:
    """Why one path component cannot be stored, or None."""
    if "/" not in segment and path_problem(segment) is None:
        return None
    return _segment_problem(segment)


def _segment_problem(segment: str) -> str | None:
    """``segment_problem`` by the full rules."""
    if segment in ("", ".", ".."):
        return "is not a relative path inside the item"
    if "\x00" in segment or "/" in segment:
        return "is not a relative path inside the item"
    if segment.lower() == ".git":
        return "a .git entry cannot be stored"
    if is_dotgit_name(segment):
        return f"a .git entry cannot be stored ({visible(segment)!r} is .git on Windows or macOS)"
    if is_dotgitmodules(segment):
        return "git reads it as .gitmodules on some system; items hold no submodules"
    if any(ch in _WIN_ILLEGAL or ord(ch) < 0x20 for ch in segment):
        return "holds a character Windows cannot store (<>:\"|?*\\ or a control character)"
    if segment[-1] in " .":
        return "ends in a space or a period (Windows drops them)"
    if _win32_reserved(segment):
        return "is a reserved device name on Windows"
    return None


# The shape nearly every real path has: ASCII segments of letters, digits, '_', '-' and
# inner periods. Such a segment cannot be read as .git or .gitmodules on any system (no
# leading period, no '~', no HFS+ ignorable, no trailing space or period) and holds no
# character Windows refuses, so only the reserved device names remain to be ruled out;
# a path in this shape is judged by two regular expressions instead of segment by
# segment, and many such paths by two passes over them all (the lock judges every item
# path it holds on every read). Any other path is judged by the full rules;
# tests/core/test_gitpaths.py holds the two to the same answers.
_PLAIN_SEGMENT = r"[A-Za-z0-9_-](?:[A-Za-z0-9._-]*[A-Za-z0-9_-])?"
_PLAIN_PATH = rf"{_PLAIN_SEGMENT}(?:/{_PLAIN_SEGMENT})*"
_PLAIN_PATHS = re.compile(rf"{_PLAIN_PATH}(?:\n{_PLAIN_PATH})*", re.ASCII)
# Searched in "\n" + the paths: a pattern that starts with a character set is scanned for
# fast (one that starts with an alternative is tried at every position).
_RESERVED_SEGMENT = re.compile(
    r"[/\n](?:aux|con|nul|prn|com[1-9]|lpt[1-9])(?:\.[^/\n]*)?(?:[/\n]|\Z)",
    re.ASCII | re.IGNORECASE)


def _all_plain(joined: str) -> bool:
    return _PLAIN_PATHS.fullmatch(joined) is not None and _RESERVED_SEGMENT.search(
        "\n" + joined) is None


@functools.lru_cache(maxsize=8192)  # paths repeat across items: SKILL.md, scripts/run.sh
def path_problem(path: str) -> str | None:
    """Why ``path`` (posix, relative) cannot be a path in a library tree, or None."""
    if "\n" not in path and _all_plain(path):
        return None
    return _path_problem(path)


# Paths judged per pass: the regular expression engine keeps state for every repetition of
# a group, ~0.9 KiB a path (9 MiB for the 10,000 paths of a lock in one pass).
PLAIN_CHUNK = 256


def first_path_problem(paths: Collection[str]) -> tuple[str, str] | None:
    """The first of ``paths`` that ``path_problem`` refuses, with the reason, or None."""
    listed = list(paths)
    for start in range(0, len(listed), PLAIN_CHUNK):
        chunk = listed[start:start + PLAIN_CHUNK]
        joined = "\n".join(chunk)
        if joined.count("\n") != len(chunk) - 1 or not _all_plain(joined):
            break
    else:
        return None  # no path holds the separator: each line is one path
    for path in listed:
        problem = _path_problem(path)
        if problem is not None:
            return path, problem
    return None


def _path_problem(path: str) -> str | None:
    """``path_problem`` by the full rules, segment by segment."""
    if not path or path.startswith("/") or path.endswith("/"):
        return "is not a relative path inside the item"
    for segment in path.split("/"):
        problem = _segment_problem(segment)
        if problem is not None:
            return problem
    return None


def fold_key(name: str) -> str:
    """One key for names that macOS or Windows may store as one: canonical caseless
    matching (NFD, case fold, NFD) after dropping HFS+ ignorable code points."""
    if name.isascii():  # no ignorable code point, NFD changes nothing, casefold is lower
        return name.lower()
    stripped = _hfs_chars(name)
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", stripped).casefold())


def collisions(paths: Iterable[str]) -> list[tuple[str, str]]:
    """Pairs of distinct entries (files or folders) in one folder that fold to one name.

    Each pair is (first seen, other) as full paths of the colliding entries, sorted."""
    seen: dict[tuple[str, str], str] = {}
    entries: set[str] = set()
    for path in paths:
        parts = path.split("/")
        for depth in range(1, len(parts) + 1):
            entries.add("/".join(parts[:depth]))
    found: list[tuple[str, str]] = []
    for entry in sorted(entries):
        parent, _, name = entry.rpartition("/")
        if not name:
            continue  # an empty segment: path_problem refuses the path itself
        key = (parent, fold_key(name))
        other = seen.get(key)
        if other is None:
            seen[key] = entry
        else:
            found.append((other, entry))
    return found


def visible(path: str) -> str:
    """``path`` with invisible code points (format, control, odd spaces) written as
    escapes, so an error can show a ``.g\\u200cit`` the reader would not see."""
    out = []
    for ch in path:
        category = unicodedata.category(ch)
        if ch != " " and (category in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp", "Zs")):
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)
