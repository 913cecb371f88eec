"""``librarian.lock`` (spec §2.13): one fixed shape, one item a line, any size.

The lock is written by this module only, in one shape: sorted keys, two-space indents,
each scalar plain when YAML would read it back as that very string, else double-quoted
with escapes. It is valid YAML (``yaml.safe_load`` reads the same document; the tests
hold the two readers to it), but reading it back needs no general YAML parse: each line
is matched against the few shapes the writer makes, so a 50,000-item lock reads in
milliseconds and has no size limit of its own. A lock in any other shape (edited by
hand, or written before this format) is read by the safe YAML loader instead, under a
limit sized for large locks rather than the 1 MiB of other manifests.

Refused on either path: unknown keys, duplicate keys, a wrong format version, values of
the wrong type.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from itertools import repeat
from typing import Any

from librarian.core.gitpaths import PLAIN_CHUNK, first_path_problem, visible
from librarian.core.names import name_problem
from librarian.errors import UsageError
from librarian.formats.yamlio import load_yaml, mapping_of

LOCK_FILE = "librarian.lock"
# Only a lock in another shape is parsed as general YAML; 64 MiB is ~600,000 items.
MAX_YAML_LOCK_BYTES = 64 * 1024 * 1024
_SOURCE_KEYS = ("commit", "items", "ref", "release", "release-tag", "url")
DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")
_DIGESTS_RE = re.compile(r"sha256:[0-9a-f]{64}(?:\nsha256:[0-9a-f]{64})*")
_ZERO_DIGEST = "sha256:" + "0" * 64
_OID_RE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def digest_problem(value: str) -> str | None:
    """Why ``value`` is not a digest librarian could have written (all zeros never is)."""
    if not DIGEST_RE.fullmatch(value):
        return f"{value!r} is not a digest (sha256: and 64 lowercase hex digits)"
    if value == _ZERO_DIGEST:
        return f"{value!r} is all zeros, the digest of no content"
    return None


def _first_digest_problem(items: Mapping[str, str]) -> tuple[str, str] | None:
    """The first item whose digest ``digest_problem`` refuses, with the reason, or None
    (all of them judged in one pass when all are well formed, as they are when read)."""
    digests = list(items.values())
    for start in range(0, len(digests), PLAIN_CHUNK):  # bounded regex state, as for paths
        chunk = digests[start:start + PLAIN_CHUNK]
        joined = "\n".join(chunk)
        if joined.count("\n") != len(chunk) - 1 or _DIGESTS_RE.fullmatch(joined) is None \
                or _ZERO_DIGEST in joined:
            break
    else:
        return None  # no digest holds the separator: each line is one digest
    for path, digest in items.items():
        problem = digest_problem(digest)
        if problem is not None:
            return path, problem
    return None


@dataclass(frozen=True, slots=True)
class LockedSource:
    url: str
    ref: str
    commit: str
    items: Mapping[str, str]  # upstream item path -> digest as installed
    release: int | None = None  # a signed source: the installed release's version ...
    release_tag: str | None = None  # ... and its tag object id (spec §7)


# -- scalars -------------------------------------------------------------------------------

# A plain scalar YAML (1.1, PyYAML's resolvers) reads back as the same string: starts with a
# letter, '/' or '_' (so never a number, date, '.inf', '-', '~' or an indicator), holds no
# space, '#', quote or flow character, and does not end in ':'.
_PLAIN_FIRST, _PLAIN_REST = "[A-Za-z_/]", "A-Za-z0-9_./@+=~%-"  # '-' last: itself
_PLAIN = re.compile(f"{_PLAIN_FIRST}[:{_PLAIN_REST}]*")
#: Lines of such scalars, none ending in ':' (each plain unless it is one of the words).
_PLAIN_PATHS = re.compile(f"{_PLAIN.pattern}(?<!:)(?:\n{_PLAIN.pattern}(?<!:))*")
# ... except the words YAML 1.1 reads as booleans or null.
_WORDS = frozenset(
    w for base in ("yes", "no", "true", "false", "on", "off", "null", "y", "n")
    for w in (base, base.capitalize(), base.upper()))
# A lowercase hex object id with at least one letter is a string too (no int or float form
# of YAML matches it), so commit ids stay unquoted.
_HEX = re.compile(r"[0-9a-f]*[a-f][0-9a-f]*")
_EXPONENT = re.compile(r"[0-9]+e[0-9]+")  # a float to YAML 1.2 readers: quoted
# A space is escaped too, so a quoted scalar never holds ": " and a line splits at its first.
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", " ": "\\x20"}
_UNESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "/": "/", "0": "\0"}
_QUOTED_BODY = re.compile(r'(?:[^"\\]|\\.)*')
_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)")


def _is_plain(text: str) -> bool:
    if _HEX.fullmatch(text):
        return _EXPONENT.fullmatch(text) is None
    return _PLAIN.fullmatch(text) is not None and not text.endswith(":") and (
        text not in _WORDS)


def _scalar(text: str) -> str:
    if _is_plain(text):
        return text
    out = []
    for char in text:
        code = ord(char)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if len(code) > 1:
        return chr(int(code[1:], 16))
    if code not in _UNESCAPES:
        raise ValueError(code)
    return _UNESCAPES[code]


def _read_scalar(text: str) -> str | None:
    """The string a scalar the writer makes stands for, or None for any other form."""
    if text.startswith('"'):
        if len(text) < 2 or not text.endswith('"') or not _QUOTED_BODY.fullmatch(text[1:-1]):
            return None
        body = text[1:-1]
        if any(ord(c) < 0x20 or ord(c) > 0x7E for c in body):
            return None
        try:
            return _ESCAPE.sub(_unescape, body)
        except ValueError:
            return None
    return text if _is_plain(text) else None


# -- writing -------------------------------------------------------------------------------


def dump_lock(locked: Mapping[str, LockedSource]) -> bytes:
    # Each line encoded as it is made and joined once: at 10,000 items the lock is a
    # megabyte, and a str joined, then extended, then encoded would be three more.
    lines = [b"librarian-lock: 1", b"sources: {}" if not locked else b"sources:"]
    for source_name, entry in sorted(locked.items()):
        lines.append(f"  {_scalar(source_name)}:".encode())
        lines.append(f"    commit: {_scalar(entry.commit)}".encode())
        if entry.items:
            lines.append(b"    items:")
            lines.append(_item_lines(sorted(entry.items.items())))
        else:
            lines.append(b"    items: {}")
        lines.append(f"    ref: {_scalar(entry.ref)}".encode())
        if entry.release is not None:
            lines.append(f"    release: {int(entry.release)}".encode())
        if entry.release_tag is not None:
            lines.append(f"    release-tag: {_scalar(entry.release_tag)}".encode())
        lines.append(f"    url: {_scalar(entry.url)}".encode())
    lines.append(b"")
    return b"\n".join(lines)


def _item_lines(items: list[tuple[str, str]]) -> bytes:
    """The item lines (without the last newline), each scalar plain when it can be: when
    all are, as is usual, that is judged a chunk of paths and of digests at a time."""
    for start in range(0, len(items), PLAIN_CHUNK):
        chunk = items[start:start + PLAIN_CHUNK]
        paths = "\n".join(path for path, _ in chunk)
        digests = "\n".join(digest for _, digest in chunk)
        if paths.count("\n") != len(chunk) - 1 or digests.count("\n") != len(chunk) - 1 \
                or not _PLAIN_PATHS.fullmatch(paths) or not _DIGESTS_RE.fullmatch(digests) \
                or not _WORDS.isdisjoint(path for path, _ in chunk):
            return "\n".join(f"      {_scalar(path)}: {_scalar(digest)}"
                             for path, digest in items).encode()
    return "\n".join(f"      {path}: {digest}" for path, digest in items).encode()


# -- reading -------------------------------------------------------------------------------

_KEY_VALUE = re.compile(r'("(?:[^"\\]|\\.)*"|[^\s"]+): (.+)')
_KEY_ONLY = re.compile(r'("(?:[^"\\]|\\.)*"|[^\s"]+):')
# Item lines as the writer makes them nearly always: a plain path without ':' and a digest,
# matched a run at a time in C. A run ends before the first line of fewer indents.
_FAST_ITEMS = re.compile(f"^      ({_PLAIN_FIRST}[{_PLAIN_REST}]*): ({DIGEST_RE.pattern})$",
                         re.MULTILINE)
_RUN_END = re.compile(r"\n(?!      )")
_INT = re.compile(r"0|[1-9][0-9]{0,17}")


class _OtherShape(Exception):
    """The text is not in the writer's shape: read it as general YAML instead."""


def load_lock(data: bytes, where: str = LOCK_FILE) -> dict[str, LockedSource]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{where} is not valid UTF-8: {exc}", path=where) from None
    try:
        return _read_fixed_shape(text, where)
    except _OtherShape:
        return _from_document(load_yaml(data, where, max_bytes=MAX_YAML_LOCK_BYTES), where)


def _key(text: str) -> str:
    key = _read_scalar(text)
    if key is None:
        raise _OtherShape
    return key


def _read_fixed_shape(text: str, where: str) -> dict[str, LockedSource]:
    if not text.endswith("\n") or not text.startswith("librarian-lock: 1\n"):
        raise _OtherShape
    if text == "librarian-lock: 1\nsources: {}\n":
        return {}
    if not text.startswith("sources:\n", len("librarian-lock: 1\n")):
        raise _OtherShape
    sources: dict[str, dict[str, Any]] = {}
    judged: set[str] = set()  # the sources whose item digests were matched whole
    spec: dict[str, Any] | None = None
    name = ""  # the source whose keys are being read
    items: dict[str, str] | None = None
    value: str | None
    at = len("librarian-lock: 1\nsources:\n")
    while at < len(text):
        if text.startswith("      ", at):  # a run of item lines: the hot path
            if items is None:
                raise _OtherShape
            found = _RUN_END.search(text, at)
            end = found.end() if found is not None else len(text)
            if _read_items(text[at:end], items, where):
                judged.add(name)
            items, at = None, end
            continue
        end = text.index("\n", at) + 1
        line, at = text[at:end - 1], end
        if line.startswith("    "):
            items = None
            if spec is None:
                raise _OtherShape
            match = _KEY_VALUE.fullmatch(line[4:]) or _KEY_ONLY.fullmatch(line[4:])
            if match is None or match.group(1) not in _SOURCE_KEYS:
                raise _OtherShape
            field: str = match.group(1)
            if field in spec:
                raise UsageError(f"{where}: {field} is given twice", path=where)
            value = match.group(2) if match.re is _KEY_VALUE else None
            if field == "items":
                if value == "{}":
                    spec[field] = {}
                elif value is None:
                    spec[field] = items = {}
                else:
                    raise _OtherShape
            elif field == "release":
                if value is None or not _INT.fullmatch(value):
                    raise _OtherShape
                spec[field] = int(value)
            else:
                scalar = _read_scalar(value) if value is not None else None
                if scalar is None:
                    raise _OtherShape
                spec[field] = scalar
        elif line.startswith("  ") and line.endswith(":") and not line.startswith("   "):
            items = None
            name = _key(line[2:-1])
            if name in sources:
                raise UsageError(f"{where}: source {name!r} is listed twice", path=where)
            spec = sources[name] = {}
        else:
            raise _OtherShape
    return _from_document({"librarian-lock": 1, "sources": sources}, where, judged)


def _read_items(run: str, items: dict[str, str], where: str) -> bool:
    """Read a run of item lines (each ending in a newline) into ``items``; True when every
    line is a plain path and a well-formed digest, none all zeros (the digests judged)."""
    pairs = _FAST_ITEMS.findall(run)
    if len(pairs) == run.count("\n"):  # every line matched: no line held anything else
        items.update(pairs)
        if len(items) == len(pairs) and _WORDS.isdisjoint(items):
            return _ZERO_DIGEST not in run
        items.clear()
    for line in run[:-1].split("\n"):
        key, sep, value = line[6:].partition(": ")
        path, digest = _read_scalar(key), _read_scalar(value)
        if not sep or path is None or digest is None:
            raise _OtherShape
        if path in items:
            raise UsageError(f"{where}: item {path!r} is listed twice", path=where)
        items[path] = digest
    return False


def _unknown(keys: Mapping[str, Any], allowed: set[str], what: str) -> None:
    extra = sorted(set(keys) - allowed)
    if extra:
        raise UsageError(f"{what}: unknown key {extra[0]!r}", hint=f"allowed: {sorted(allowed)}")


def _from_document(document: object, where: str,
                   judged: Collection[str] = ()) -> dict[str, LockedSource]:
    """Validate a parsed lock document (either reader's) into the typed lock; the item
    digests of the sources in ``judged`` were matched whole as they were read."""
    doc = mapping_of(document, where)
    _unknown(doc, {"librarian-lock", "sources"}, where)
    if doc.get("librarian-lock") != 1:
        raise UsageError(f"{where}: 'librarian-lock: 1' is required (format version)")
    locked: dict[str, LockedSource] = {}
    for source_name, spec in mapping_of(doc.get("sources"), f"{where}: sources").items():
        what = f"{where}: sources.{source_name}"
        spec = mapping_of(spec, what)
        _unknown(spec, set(_SOURCE_KEYS), what)
        items = mapping_of(spec.get("items"), f"{what}.items")
        release = spec.get("release")
        if release is not None and (isinstance(release, bool) or not isinstance(release, int)):
            raise UsageError(f"{what}.release must be an integer")
        release_tag = spec.get("release-tag")
        if release_tag is not None and not isinstance(release_tag, str):
            raise UsageError(f"{what}.release-tag must be a tag object id")
        text = {key: spec.get(key, "") for key in ("url", "ref", "commit")}
        bad = sorted(key for key, value in text.items() if not isinstance(value, str))
        if bad or not all(map(isinstance, items.values(), repeat(str))):
            raise UsageError(f"{what}.{bad[0] if bad else 'items'} must hold strings")
        if name_problem(source_name):
            raise UsageError(f"{what}: invalid source name")
        commit = spec.get("commit")
        if commit is not None and not _OID_RE.fullmatch(commit):
            raise UsageError(f"{what}.commit {commit!r} is not a commit id")
        bad_path = first_path_problem(items)
        if bad_path is not None:
            raise UsageError(f"{what}.items: {visible(bad_path[0])!r} is not an item path")
        bad_digest = None if source_name in judged else _first_digest_problem(items)
        if bad_digest is not None:
            raise UsageError(f"{what}.items.{bad_digest[0]}: {bad_digest[1]}")
        locked[source_name] = LockedSource(
            url=text["url"],
            ref=text["ref"],
            commit=text["commit"],
            items=dict(items),
            release=release,
            release_tag=release_tag,
        )
    return locked
