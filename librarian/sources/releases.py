"""Signed sources (spec §7): fetch the newest release tag, verify it, check the plan
against its statement; ``verify`` re-checks the installed release offline.

A source with ``trust:`` keys is not fetched by its ``ref``: its release tags
(``refs/tags/librarian-release/<N>``) are listed, the newest is fetched into
``refs/librarian/sources/<name>`` (the tagged commit) and judged by
``librarian.trust.policy``: signature by a trusted key over this very tag, no rollback, no
freeze, the tagged commit is the fetched one; after planning, every item in the tree must
be in the statement with the digest the plan would install. ``update`` calls
``fetch_source`` and ``check_plan``; every refusal is a TrustError, raised before anything
is written, and ``update`` puts the fetched refs back. A successful update records the
release in ``librarian.lock`` (``release``, ``release-tag``) and keeps the tag object
reachable from ``refs/librarian/releases/<name>``, so ``verify`` needs no network.
"""

from __future__ import annotations

import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from librarian.core.digest import content_digest
from librarian.errors import TrustError, UsageError
from librarian.formats.config import LockedSource, SourceConfig
from librarian.git import (
    FetchResult,
    GitStore,
    ObjectId,
    fetch_ref,
    remote_refs,
    strip_credentials,
    tag_bytes,
)
from librarian.library import Library, Snapshot
from librarian.sources.plan import installed_items, source_ref
from librarian.sources.plan_values import SourcePlan
from librarian.sources.upstream import find_item_trees

if TYPE_CHECKING:
    from librarian.trust.policy import VerifiedRelease

# The trust machinery (keys, SSHSIG, statements, cryptography's ed25519) is imported by
# the functions below only where a source is signed: an update of unsigned sources, the
# usual case, does not pay its start-up cost.

RELEASE_REF_PREFIX = "refs/librarian/releases/"
_TAGS = b"refs/tags/"
Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class ReleaseInfo:
    """How a source is signed, for plans and ``source list``."""

    source: str
    signed: bool
    keys: tuple[str, ...]  # fingerprints of the trusted keys
    version: int | None = None
    tag: str | None = None  # tag object id
    signer: str | None = None  # fingerprint of the key that signed it
    expires: str | None = None


def release_ref(source: str) -> bytes:
    return (RELEASE_REF_PREFIX + source).encode()


def release_info(source: str, config: SourceConfig,
                 release: VerifiedRelease | None = None) -> ReleaseInfo:
    if not config.trust:
        return ReleaseInfo(source, False, ())
    from librarian.trust.policy import trusted_keys

    keys = tuple(k.fingerprint for k in trusted_keys(config.trust, source))
    if release is None:
        return ReleaseInfo(source, True, keys)
    return ReleaseInfo(source, True, keys, release.version, release.tag_id,
                       release.signer.fingerprint,
                       release.statement.expires.strftime("%Y-%m-%dT%H:%M:%SZ"))


def fetch_source(store: GitStore, name: str, source: SourceConfig,
                 locked: LockedSource | None, *, progress: Progress | None = None,
                 now: datetime | None = None) -> tuple[FetchResult, VerifiedRelease | None]:
    """Fetch what ``update`` installs from: the ref of an unsigned source; the newest
    release tag of a signed one, verified (rollback and freeze included)."""
    have = store.ref(source_ref(name))
    if not source.trust:
        return fetch_ref(store, source.url, source.ref, into=source_ref(name), have=have,
                         progress=progress, source=name), None
    from librarian.trust.policy import check_succession, trusted_keys, verify_release
    from librarian.trust.tag import RELEASE_TAG_PREFIX, release_tag_name, release_version

    trusted = trusted_keys(source.trust, name)
    shown = strip_credentials(source.url)
    tags = {}
    for ref, sha in remote_refs(source.url, _TAGS + RELEASE_TAG_PREFIX.encode()).items():
        version = release_version(ref[len(_TAGS):].decode("utf-8", "replace"))
        if version is not None:
            tags[version] = sha
    if not tags:
        raise TrustError(f"source {name!r} installs signed releases only (trust: keys), and "
                         f"{shown} has no release tag ({RELEASE_TAG_PREFIX}<N>); nothing was "
                         "changed", hint="the publisher makes one with "
                         "`librarian release --key PATH`")
    version = max(tags)
    ref_name = release_tag_name(version)
    fetched = fetch_ref(store, source.url, "refs/tags/" + ref_name, into=source_ref(name),
                        have=have, progress=progress, source=name)
    raw = tag_bytes(store, tags[version])
    if raw is None:
        raise TrustError(f"source {name!r}: {ref_name} refused: it is a lightweight tag, not a "
                         "signed annotated tag; nothing was changed")
    release = verify_release(raw, source=name, ref_name=ref_name, tag_id=tags[version].decode(),
                             trusted=trusted, fetched_commit=fetched.commit.decode())
    check_succession(release, locked_version=locked.release if locked else None,
                     locked_commit=locked.commit if locked else None,
                     now=now or datetime.now(timezone.utc))
    return fetched, release


def check_plan(store: GitStore, plan: SourcePlan, release: VerifiedRelease | None) -> None:
    """Every item of the released tree is in the statement, and every item the plan would
    install has its stated digest (tampering, mix-and-match)."""
    if release is None:
        return
    from librarian.trust.policy import check_items

    tree = store.commit(plan.new_commit.encode()).tree  # the upstream's root tree
    paths = [path for path, _, _ in find_item_trees(store, tree)]
    digests = {path: digest for path, digest, _ in plan.installs()}
    check_items(release, paths, digests)


def signed_entry(entry: LockedSource, release: VerifiedRelease | None) -> LockedSource:
    """The lock entry a plan gives, with the release it came from."""
    if release is None:
        return entry
    return replace(entry, release=release.version, release_tag=release.tag_id)


def keep_release_tags(store: GitStore, releases: Mapping[str, VerifiedRelease]) -> None:
    """Point ``refs/librarian/releases/<name>`` at each installed tag (so the tag object
    survives gc and ``verify`` works offline)."""
    for name, release in releases.items():
        ref = release_ref(name)
        old = store.ref(ref)
        if old != release.tag_id.encode():
            store.set_ref(ref, old, release.tag_id.encode(), b"librarian: release installed")


@dataclass(frozen=True, slots=True)
class VerifiedSource:
    """One source as ``verify`` found it, keyed by ``name`` as ``source list`` keys it;
    ``items`` is how many items the verified release covers, None when nothing was
    verified (an unsigned source, or a signed one not installed yet)."""

    name: str
    signed: bool
    installed: bool
    release: int | None = None
    tag: str | None = None
    signer: str | None = None
    items: int | None = None
    expired: bool = False


@dataclass(frozen=True, slots=True)
class VerifyReport:
    sources: tuple[VerifiedSource, ...]


def verify_sources(library: Library, names: Sequence[str] = (), *,
                   now: datetime | None = None) -> VerifyReport:
    """Offline: each signed source's locked release tag verifies with the committed trust
    keys, and the lock and the committed collection match its statement."""
    now = now or datetime.now(timezone.utc)
    with library.store() as store:
        snapshot = Snapshot.head(library, store)
        tree, config, locked = snapshot.tree, snapshot.config, snapshot.lock
        unknown = [n for n in names if n not in config.sources]
        if unknown:
            raise UsageError(f"no source named {unknown[0]!r}", hint="`librarian source list`")
        chosen = list(dict.fromkeys(names)) or sorted(config.sources)
        out = []
        for name in chosen:
            source = config.sources[name]
            if not source.trust:
                if names:
                    raise TrustError(f"source {name!r} is unsigned (no trust: keys): there is no "
                                     "signed statement to verify it against")
                out.append(VerifiedSource(name, False, name in locked))
                continue
            out.append(_verify_one(library, store, tree, name, source, locked.get(name), now))
    return VerifyReport(tuple(out))


def _verify_one(library: Library, store: GitStore, tree: ObjectId | None, name: str,
                source: SourceConfig, entry: LockedSource | None,
                now: datetime) -> VerifiedSource:
    from librarian.trust.policy import installed_differences, trusted_keys, verify_release
    from librarian.trust.tag import release_tag_name

    if entry is None:
        if installed_items(store, tree, name):
            raise TrustError(f"source {name!r}: content is installed but librarian.lock has "
                             "no entry for it")
        return VerifiedSource(name, True, False)
    if entry.release is None or entry.release_tag is None:
        raise TrustError(f"source {name!r} is installed without a signed release (it was "
                         "installed before its trust: keys were added)",
                         hint=f"`librarian update {name}` installs its newest signed release")
    raw = tag_bytes(store, entry.release_tag.encode())
    if raw is None:
        raise TrustError(f"source {name!r}: the locked release tag {entry.release_tag} is not "
                         "in the object store")
    release = verify_release(raw, source=name, ref_name=release_tag_name(entry.release),
                             tag_id=entry.release_tag, trusted=trusted_keys(source.trust, name),
                             fetched_commit=entry.commit)
    committed: dict[str, str | None] = {}
    installed = installed_items(store, tree, name)
    for path in sorted(set(installed) | set(entry.items)):
        item = installed.get(path)
        committed[path] = None if item is None else content_digest(
            (f.path, f.executable, f.data) for f in store.read_files(item[0]))
    differences = installed_differences(release, locked_version=entry.release,
                                        locked_commit=entry.commit, locked_items=entry.items,
                                        committed=committed)
    differences += on_disk_differences(library, name, entry.items)
    if differences:
        raise TrustError(f"source {name!r} does not match its signed release "
                         f"{release.ref_name}: " + "; ".join(differences[:5])
                         + (f" and {len(differences) - 5} more" if len(differences) > 5 else ""),
                         hint=f"`librarian status` and `librarian diff {name}:NAME` show a "
                         f"local edit on disk; `git log -p -- sources/{name}` shows how the "
                         "committed content changed after the update that installed the "
                         "release")
    return VerifiedSource(name, True, True, release.version, release.tag_id,
                          release.signer.fingerprint, len(entry.items),
                          release.statement.expired(now))


def on_disk_differences(library: Library, source: str,
                        locked_items: Mapping[str, str]) -> list[str]:
    """What agents read: every locked item's directory in the work tree, hashed afresh (no
    cache), against its locked digest; an edited, deleted or added file names the item."""
    from librarian.content.worktree import NotRegularFile, hash_work_dir
    from librarian.sources.upstream import collection_path

    out = []
    for path, digest in sorted(locked_items.items()):
        where = collection_path(source, path)
        directory = library.path_of(where)
        try:
            is_dir = stat.S_ISDIR(directory.lstat().st_mode)  # a link is not followed
        except OSError:  # gone, or a parent is a file now
            is_dir = False
        try:
            found = hash_work_dir(directory) if is_dir else None
        except NotRegularFile as exc:
            out.append(f"{path}: {where} on disk holds {exc.path.name}, not a regular file")
            continue
        except OSError as exc:
            out.append(f"{path}: {where} cannot be read on disk ({exc.strerror})")
            continue
        if found is None:
            out.append(f"{path}: missing on disk at {where}")
        elif found.digest != digest:
            out.append(f"{path}: {where} on disk is {found.digest}, not the signed {digest} "
                       "(a local edit)")
    return out
