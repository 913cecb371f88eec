"""``release --key PATH [--expires DAYS]``: sign the publishing repository's HEAD as the
next release (spec §7).

The publishing repository is a librarian library or any git repository of items. Its
items are found and judged exactly as a subscriber's ``update`` will find and judge them
(``librarian.sources.upstream``: every directory holding SKILL.md or recipe.yaml, under
the committed policy of its ``library.yaml`` when it has one, else the defaults), so the
statement's digests are the ones a subscriber computes. The release is refused, with
nothing written, when the work tree has uncommitted changes to tracked files, an item
fails validation, or the key is not an unencrypted ed25519 key. It is one tag object and
one new ref, ``refs/tags/librarian-release/<N>`` (N one above the highest), on HEAD;
``git push --tags`` (or ``git push origin librarian-release/<N>``) publishes it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from librarian.core.model import Policy
from librarian.core.receipts import Receipt
from librarian.errors import ConflictError, UsageError
from librarian.formats.config import LIBRARY_FILE, load_library_config
from librarian.git import GitStore, ObjectId, dirty_paths, tagger, write_tag
from librarian.sources.upstream import Skipped, find_item_trees, judge_item
from librarian.trust.keys import load_signing_key
from librarian.trust.statement import DEFAULT_EXPIRY_DAYS, dump_statement, new_statement
from librarian.trust.tag import RELEASE_TAG_PREFIX, release_tag_name, release_version, signed_tag

TAG_REFS = b"refs/tags/" + RELEASE_TAG_PREFIX.encode()


@dataclass(frozen=True, slots=True)
class ReleaseReceipt(Receipt):
    """``release``: the tag made, what it signs, with which key, until when."""

    version: int = 0
    tag: str = ""  # the tag object id
    items: int = 0
    key: str = ""  # the signing key's fingerprint
    expires: str = ""
    publish: str = ""  # the command that publishes it


def find_publisher(start: Path) -> Path:
    """The work tree of the git repository holding ``start`` (a library or not)."""
    here = start.absolute()
    for candidate in (here, *here.parents):
        if (candidate / ".git").is_dir():
            return candidate
    raise UsageError(f"{start} is not inside a git repository",
                     hint="run `librarian release` in the repository to publish, or pass "
                     "--library PATH")


def release(root: Path, key_path: Path, *, expires_days: int = DEFAULT_EXPIRY_DAYS,
            now: datetime | None = None) -> ReleaseReceipt:
    key = load_signing_key(key_path)
    when = now or datetime.now(timezone.utc)
    with GitStore(root) as store:
        head = store.head()
        if head is None:
            raise UsageError("nothing is committed yet: a release signs a commit")
        dirty = dirty_paths(store)
        if dirty:
            raise ConflictError(f"the work tree has uncommitted changes ({', '.join(dirty)}); "
                                "a release signs the commit, so commit or stash them first; "
                                "nothing was changed")
        tree = store.tree_of(head)
        items = release_items(store, tree, _policy(store, tree))
        versions = [release_version(ref[len(b"refs/tags/"):].decode("utf-8", "replace"))
                    for ref in store.refs_under(TAG_REFS)]
        version = max((v for v in versions if v is not None), default=0) + 1
        statement = new_statement(version, head.decode(), items, now=when,
                                  expires_days=expires_days)
        name = release_tag_name(version)
        offset = -time.altzone if time.localtime().tm_isdst > 0 else -time.timezone
        raw = signed_tag(head.decode(), name, tagger(store, int(when.timestamp()), offset // 60),
                         dump_statement(statement), key)
        tag_id = write_tag(store, raw, b"refs/tags/" + name.encode())
    return ReleaseReceipt(
        kind="release", name=name, path="refs/tags/" + name, digest=None,
        commit=head.decode(), version=version, tag=tag_id.decode(), items=len(items),
        key=key.public.fingerprint, expires=dump_time(statement.expires),
        publish=f"git push origin {name}",
    )


def release_items(store: GitStore, tree: ObjectId | None, policy: Policy) -> dict[str, str]:
    """upstream path -> digest of every item of ``tree``; any invalid item refuses."""
    items: dict[str, str] = {}
    problems: list[str] = []
    for path, item_tree, problem in find_item_trees(store, tree):
        if problem is not None:
            problems.append(f"{path}: {problem}")
            continue
        judged = judge_item(store, path, item_tree, policy)
        if isinstance(judged, Skipped):
            problems.append(f"{path}: {'; '.join(judged.problems)}")
        else:
            items[path] = judged.digest
    if problems:
        raise UsageError(f"release refused: {len(problems)} item(s) fail validation, nothing "
                         f"was changed: {'; '.join(problems[:5])}",
                         hint="fix or remove them and commit; `librarian check` in a library "
                         "lists every problem")
    return items


def _policy(store: GitStore, tree: ObjectId | None) -> Policy:
    entry = store.lookup(tree, LIBRARY_FILE)
    if entry is None:
        return Policy()
    return load_library_config(store.read_blob(entry.sha)).policy


def dump_time(value: datetime) -> str:
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
