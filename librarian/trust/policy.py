"""What a release must pass before a subscriber installs it (spec §7).

``verify_release`` judges one release tag on its own: an SSH signature by one of the
source's trusted keys over this very tag (its name, its commit and its statement), a
statement that parses, names the tagged commit and the tag's version. ``check_succession``
judges it against what is installed: no rollback (a lower version, or the same version
with another commit), no freeze (expired). ``check_items`` judges the fetched tree
against the statement: every item in the tree is in the statement, and every item that
would be installed has the stated digest. Each failure is a TrustError (exit 4) that names
the source, the tag and what differs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from librarian.errors import TrustError, UsageError
from librarian.trust.keys import PublicKey, parse_public_key
from librarian.trust.sshsig import verify
from librarian.trust.statement import ReleaseStatement, parse_statement
from librarian.trust.tag import parse_tag, release_version

ROTATION_HINT = "if the publisher moved to a new key, add it to the source's trust: in " \
    "library.yaml and commit that (docs/sources.md, key rotation)"


@dataclass(frozen=True)
class VerifiedRelease:
    source: str
    ref_name: str  # librarian-release/N
    tag_id: str  # hex id of the tag object
    statement: ReleaseStatement
    signer: PublicKey  # the trusted key that signed it (as written in trust:)

    @property
    def version(self) -> int:
        return self.statement.version

    @property
    def commit(self) -> str:
        return self.statement.commit


def trusted_keys(lines: Sequence[str], source: str) -> tuple[PublicKey, ...]:
    keys = []
    for line in lines:
        try:
            keys.append(parse_public_key(line))
        except UsageError as exc:
            raise TrustError(f"source {source!r}: a trust: key is unusable: {exc.message}",
                             hint="fix trust: in library.yaml and commit it") from None
    return tuple(keys)


def verify_release(raw: bytes, *, source: str, ref_name: str, tag_id: str,
                   trusted: Sequence[PublicKey], fetched_commit: str | None = None
                   ) -> VerifiedRelease:
    """The release in tag object ``raw`` (found as ``refs/tags/<ref_name>``), or a
    TrustError. ``fetched_commit`` is the commit the fetch peeled the tag to."""
    where = f"source {source!r}: {ref_name}"

    def refuse(reason: str, hint: str | None = None) -> TrustError:
        return TrustError(f"{where} refused: {reason}; nothing was changed", hint=hint)

    version = release_version(ref_name)
    if version is None:
        raise refuse("not a release tag name (librarian-release/<N>)")
    try:
        tag = parse_tag(raw)
    except TrustError as exc:
        raise refuse(exc.message) from None
    if tag.signature is None:
        raise refuse("the tag is not signed", hint="the publisher signs with "
                     "`librarian release --key PATH` (or `git tag -s` with gpg.format=ssh)")
    if not tag.ssh_signed:
        raise refuse("the tag is signed with OpenPGP, not with an SSH key")
    try:
        signer = verify(tag.payload, tag.signature)
    except TrustError as exc:
        raise refuse(f"its signature does not verify: {exc.message}") from None
    trusted_key = next((k for k in trusted if k.same_key(signer)), None)
    if trusted_key is None:
        shown = ", ".join(k.fingerprint for k in trusted)
        raise refuse(f"signed by {signer.fingerprint}, which is not a trusted key of this "
                     f"source ({shown})", hint=ROTATION_HINT)
    # The signature covers the header: a tag signed as another name is not this release.
    if tag.name != ref_name:
        raise refuse(f"the signed tag is named {tag.name[:60]!r}, not {ref_name!r} (a "
                     "signature that does not cover this tag)")
    if tag.object_type != "commit":
        raise refuse(f"the tag names a {tag.object_type[:20]}, not a commit")
    if fetched_commit is not None and tag.object != fetched_commit:
        raise refuse(f"the tag names commit {tag.object}, not the fetched {fetched_commit}")
    try:
        statement = parse_statement(tag.message)
    except TrustError as exc:
        raise refuse(exc.message) from None
    if statement.commit != tag.object:
        raise refuse(f"the statement is for commit {statement.commit}, but the tag names "
                     f"{tag.object} (a tag whose commit is not the released one)")
    if statement.version != version:
        raise refuse(f"the statement says version {statement.version}, the tag's name "
                     f"says {version}")
    return VerifiedRelease(source, ref_name, tag_id, statement, trusted_key)


def check_succession(release: VerifiedRelease, *, locked_version: int | None,
                     locked_commit: str | None, now: datetime) -> None:
    """Refuse a rollback and a frozen (expired) release."""
    where = f"source {release.source!r}: {release.ref_name} refused"
    if locked_version is not None:
        if release.version < locked_version:
            raise TrustError(f"{where}: version {release.version} is older than the "
                             f"installed {locked_version} (rollback); nothing was changed")
        if release.version == locked_version and release.commit != locked_commit:
            raise TrustError(f"{where}: it is version {release.version} again, but for "
                             f"commit {release.commit}, not the installed {locked_commit} "
                             "(a release is never re-made); nothing was changed")
    if release.statement.expired(now):
        raise TrustError(f"{where}: it expired on {_day(release.statement.expires)} "
                         "(freeze: the newest release offered is stale); nothing was changed",
                         hint="the publisher makes a new release "
                         "(`librarian release --key PATH`)")


def check_items(release: VerifiedRelease, tree_paths: Iterable[str],
                digests: Mapping[str, str]) -> None:
    """``tree_paths``: every item directory in the released tree; ``digests``: upstream
    path -> digest of each item that would be installed."""
    stated = release.statement.items
    where = f"source {release.source!r}: {release.ref_name} refused"
    paths = set(tree_paths)
    extra = sorted(paths - set(stated))
    if extra:
        raise TrustError(f"{where}: {_listed(extra)} in the tree but not in the signed "
                         "statement (mix-and-match); nothing was changed")
    absent = sorted(set(stated) - paths)
    if absent:
        raise TrustError(f"{where}: {_listed(absent)} in the signed statement but not in "
                         "the tree; nothing was changed")
    differ = sorted(p for p, d in digests.items() if stated.get(p) != d)
    if differ:
        raise TrustError(f"{where}: the content of {_listed(differ)} does not match the "
                         "signed digest (tampering); nothing was changed")


def installed_differences(release: VerifiedRelease, *, locked_version: int | None,
                          locked_commit: str | None, locked_items: Mapping[str, str],
                          committed: Mapping[str, str | None]) -> list[str]:
    """What differs between an installed release (lock, committed items) and its signed
    statement; empty when everything matches. ``committed``: upstream path -> digest of
    the committed item (None: missing)."""
    out = []
    if locked_version != release.version:
        out.append(f"the lock says release {locked_version}, the tag is {release.version}")
    if locked_commit != release.commit:
        out.append(f"the lock says commit {locked_commit}, the statement {release.commit}")
    stated = release.statement.items
    for path, digest in sorted(locked_items.items()):
        if stated.get(path) != digest:
            out.append(f"{path}: locked {digest}, signed {stated.get(path) or 'nothing'}")
    for path, actual in sorted(committed.items()):
        expected = locked_items.get(path)
        if actual is None:
            out.append(f"{path}: missing from the committed library")
        elif actual != expected:
            out.append(f"{path}: committed content {actual} differs from {expected or 'the lock'}")
    return out


def _listed(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    return shown + (" is" if len(paths) == 1 else " are")


def _day(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC")
