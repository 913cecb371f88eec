"""Tag objects and tag refs for signed releases (spec §7): a remote's refs under a prefix,
a tag object's exact bytes, writing a tag object and its ref, and whether a publishing
repository's work tree is clean. The bytes are laid out and judged by
``librarian.trust``; this module only moves them in and out of git, over dulwich.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from dulwich.errors import NotGitRepository
from dulwich.objects import ObjectID, ShaFile, Tag
from dulwich.refs import Ref

from librarian.core.fsutil import fsync_dir, fsync_now
from librarian.errors import ConflictError, UsageError
from librarian.git.remote import hide_secrets, hostile_host, strip_credentials
from librarian.git.repo import GitStore, ObjectId
from librarian.git.settings import FALLBACK_IDENTITY

TAG_TYPE = 4  # git's object type number for a tag
_HEX = re.compile(rb"[0-9a-f]{40}")


def remote_refs(url: str, prefix: bytes) -> dict[bytes, ObjectId]:
    """The refs of the repository at ``url`` whose names start with ``prefix`` (what
    ``git ls-remote`` lists; peeled ``^{}`` entries left out)."""
    refs, _ = _ls_remote(url, "the tags of")
    return {k: v for k, v in refs.items()
            if v is not None and k.startswith(prefix) and not k.endswith(b"^{}")}


def remote_head(url: str) -> str | None:
    """The branch the repository at ``url`` names as its HEAD, what ``git clone`` checks
    out: the ``symref`` capability of a server, the ``HEAD`` file of a repository on this
    machine (a path or ``file://``); None when HEAD is detached or not advertised."""
    _, symrefs = _ls_remote(url, "the default branch of")
    target = symrefs.get(b"HEAD")
    if target is None:
        return None
    return target.decode("utf-8", "replace")


def _ls_remote(url: str, what: str) -> tuple[dict[bytes, ObjectId | None], dict[bytes, bytes]]:
    from dulwich.client import HTTPUnauthorized, LocalGitClient, get_transport_and_path
    from dulwich.errors import GitProtocolError
    from dulwich.repo import Repo

    shown = strip_credentials(url)
    if hostile_host(url):
        raise UsageError(f"cannot list {shown}: its host or user starts with '-', which ssh "
                         "would read as an option", hint="check the source's URL")
    try:
        client, path = get_transport_and_path(url, quiet=True)
        result = client.get_refs(path.encode() if isinstance(path, str) else path)
        symrefs = {bytes(k): bytes(v) for k, v in (result.symrefs or {}).items()}
        if isinstance(client, LocalGitClient) and b"HEAD" not in symrefs:
            # dulwich's local client advertises no symrefs: read the repository's HEAD.
            with Repo(path if isinstance(path, str) else path.decode()) as repo:
                chain, _ = repo.refs.follow(Ref(b"HEAD"))
                if len(chain) > 1:
                    symrefs[b"HEAD"] = bytes(chain[1])
    except (NotGitRepository, HTTPUnauthorized, FileNotFoundError, NotADirectoryError) as exc:
        raise UsageError(f"cannot list {what} {shown}: {_reason(exc, url)}",
                         hint="check the URL (and that the repository exists)") from None
    except (GitProtocolError, OSError) as exc:
        raise ConflictError(f"cannot list {what} {shown}: {_reason(exc, url)}",
                            hint="check that the server is up and try again") from None
    except (ValueError, KeyError, TypeError, AssertionError) as exc:
        raise UsageError(f"cannot list {what} {shown}: {_reason(exc, url)}") from None
    refs = {bytes(k): (bytes(v) if v is not None else None) for k, v in result.refs.items()}
    return refs, symrefs


def tag_bytes(store: GitStore, sha: ObjectId) -> bytes | None:
    """The exact body of tag object ``sha`` (None when it is absent or not a tag)."""
    if not _HEX.fullmatch(sha):  # e.g. a hand-edited lock
        return None
    try:
        type_num, raw = store.dulwich_repo.object_store.get_raw(ObjectID(sha))
    except KeyError:
        return None
    return bytes(raw) if type_num == TAG_TYPE else None


def write_tag(store: GitStore, raw: bytes, ref: bytes) -> ObjectId:
    """Store tag object ``raw`` byte for byte (loose, fsynced) and create ``ref`` for it;
    the ref must not exist yet (exit 3 when another command created it first)."""
    obj = ShaFile.from_raw_string(TAG_TYPE, raw)
    assert isinstance(obj, Tag) and obj.as_raw_string() == raw
    object_store = store.dulwich_repo.object_store
    object_store.add_object(obj)
    hexsha = obj.id.decode()
    path = Path(str(object_store.path)) / hexsha[:2] / hexsha[2:]
    if path.exists():
        fd = os.open(path, os.O_RDONLY)
        try:
            fsync_now(fd)
        finally:
            os.close(fd)
        fsync_dir(path.parent)
    store.set_ref(ref, None, bytes(obj.id), b"librarian: release")
    return bytes(obj.id)


def tagger(store: GitStore, when: int, offset_minutes: int = 0) -> bytes:
    """``Name <email> <seconds> <+hhmm>``: git's identity from its configuration."""
    config = store.dulwich_repo.get_config_stack()
    try:
        identity = bytes(config.get((b"user",), b"name")) + b" <" + bytes(
            config.get((b"user",), b"email")) + b">"
    except KeyError:
        identity = FALLBACK_IDENTITY
    sign = "-" if offset_minutes < 0 else "+"
    hours, minutes = divmod(abs(offset_minutes), 60)
    return identity + f" {when} {sign}{hours:02d}{minutes:02d}".encode()


def dirty_paths(store: GitStore, limit: int = 5) -> list[str]:
    """Tracked paths whose staged or work-tree content differs from HEAD (untracked files
    are not looked at: a release is made of the commit, as ``git describe --dirty``)."""
    from dulwich import porcelain

    status = porcelain.status(store.dulwich_repo, untracked_files="no")
    paths: list[str] = []
    for group in status.staged.values():
        paths.extend(os.fsdecode(p) for p in group)
    paths.extend(os.fsdecode(p) for p in status.unstaged)
    return sorted(dict.fromkeys(paths))[:limit]


def _reason(exc: BaseException, url: str) -> str:
    text = hide_secrets(str(exc) or type(exc).__name__, url)
    text = re.sub(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]*@", r"\1", text)
    return " ".join(text.split())[:300]
