"""The release statement (spec §7): what a signed release tag's message says.

::

    librarian-release: 1
    version: 3
    commit: 0123abcd…                 # the tagged commit
    created: '2026-12-01T09:00:00Z'
    expires: '2027-03-01T09:00:00Z'
    items:
      skills/pdf: sha256:…            # every item of the commit: upstream path -> digest

Written deterministically (this key order, items sorted, one a line; a value YAML would
read as something else, such as a commit id of digits only, is quoted) and parsed
strictly: every key required, no other key, exact types. Times are UTC; an unquoted
YAML timestamp is read too, so a hand-written statement signed with ``git tag -s`` is
accepted when it says the same. Any defect is a TrustError: a statement that cannot be
read cannot be trusted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from librarian.errors import TrustError, UsageError
from librarian.formats.yamlio import dump_yaml, load_yaml

FORMAT = 1
MAX_STATEMENT_BYTES = 64 * 1024 * 1024  # a 50,000-item collection is ~5 MiB
DEFAULT_EXPIRY_DAYS = 90
_KEYS = {"librarian-release", "version", "commit", "created", "expires", "items"}
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class ReleaseStatement:
    version: int
    commit: str
    created: datetime  # timezone-aware, UTC
    expires: datetime
    items: Mapping[str, str] = field(default_factory=dict)  # upstream path -> digest

    def expired(self, now: datetime) -> bool:
        return now >= self.expires


def new_statement(version: int, commit: str, items: Mapping[str, str], *,
                  now: datetime | None = None,
                  expires_days: int = DEFAULT_EXPIRY_DAYS) -> ReleaseStatement:
    created = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).replace(microsecond=0)
    if not 1 <= expires_days <= 36500:
        raise UsageError(f"--expires must be between 1 and 36500 days, not {expires_days}")
    statement = ReleaseStatement(version, commit, created,
                                 created + timedelta(days=expires_days), dict(items))
    _check(statement)
    return statement


def dump_statement(statement: ReleaseStatement) -> bytes:
    """The statement in a fixed key order (the format line first, so ``git tag -n`` shows
    it), items sorted, one a line."""
    fields = (("librarian-release", FORMAT), ("version", statement.version),
              ("commit", statement.commit), ("created", _time_text(statement.created)),
              ("expires", _time_text(statement.expires)),
              ("items", dict(sorted(statement.items.items()))))
    return b"".join(dump_yaml({key: value}) for key, value in fields)


def parse_statement(data: bytes) -> ReleaseStatement:
    try:
        document = load_yaml(data, "the release statement", max_bytes=MAX_STATEMENT_BYTES)
    except UsageError as exc:
        raise TrustError(exc.message) from None
    if not isinstance(document, dict):
        raise TrustError("the release statement is not a YAML mapping")
    keys = {k for k in document if isinstance(k, str)}
    if len(keys) != len(document) or keys != _KEYS:
        unknown = sorted(str(k) for k in document if k not in _KEYS)
        missing = sorted(_KEYS - keys)
        raise TrustError("the release statement "
                         + (f"has unknown keys {unknown}" if unknown else "")
                         + (" and " if unknown and missing else "")
                         + (f"lacks {missing}" if missing else ""))
    if _plain_int(document["librarian-release"]) != FORMAT:
        raise TrustError(f"the release statement's format is "
                         f"{document['librarian-release']!r}; this librarian reads format 1")
    version = _plain_int(document["version"])
    if version is None:
        raise TrustError("the release statement's version is not a whole number")
    commit = document["commit"]
    if not isinstance(commit, str):
        raise TrustError("the release statement's commit is not a commit id (quote it: "
                         "YAML reads an id of digits only as a number)")
    items = document["items"]
    if items is None:
        items = {}
    if not isinstance(items, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in items.items()):
        raise TrustError("the release statement's items are not a mapping of paths to digests")
    statement = ReleaseStatement(version, commit, _time(document["created"], "created"),
                                 _time(document["expires"], "expires"), items)
    _check(statement)
    return statement


def _check(statement: ReleaseStatement) -> None:
    if statement.version < 1:
        raise TrustError(f"the release statement's version {statement.version} is below 1")
    if not _COMMIT.fullmatch(statement.commit):
        raise TrustError("the release statement's commit is not a full hexadecimal commit id")
    if statement.expires <= statement.created:
        raise TrustError("the release statement expires before it was created")
    for path, digest in statement.items.items():
        problem = path_problem(path)
        if problem is not None:
            raise TrustError(f"the release statement names an invalid item path {path[:80]!r}: "
                             f"{problem}")
        if not _DIGEST.fullmatch(digest):
            raise TrustError(f"the release statement's digest for {path} is not sha256:<64 hex>")


def path_problem(path: str) -> str | None:
    if not path or path.startswith("/") or path.endswith("/"):
        return "not a relative path"
    for part in path.split("/"):
        if part in ("", ".", "..") or "\\" in part or "\x00" in part:
            return f"{part!r} is not a plain directory name"
        if part.lower() == ".git":
            return "a .git directory"
    return None


def _plain_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _time(value: object, key: str) -> datetime:
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            raise TrustError(f"the release statement's {key} is not a time: {text[:40]!r}") \
                from None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise TrustError(f"the release statement's {key} is not a time with a time zone "
                         "(write e.g. 2026-12-01T09:00:00Z)")
    return value.astimezone(timezone.utc)


def _time_text(value: datetime) -> str:
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
