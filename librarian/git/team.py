"""A library shared through a git host: its upstream, fetching the branch whole, pushing
by compare-and-swap, cloning, and the ancestry questions a replay asks (over dulwich).

Unlike a source's fetch (``remote``: the tip only), a team's branch is fetched with its
history down to what the library holds, since the commits are replayed one by one. A push
names the remote's old tip: the server refuses it when the branch moved in between
(``RemoteMoved``), and a refusal by the server's own rules (a ``pre-receive`` hook) is a
``PushRefused`` carrying what the server said.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from dulwich.objects import ZERO_SHA, Commit, ObjectID
from dulwich.refs import Ref

from librarian.errors import ConflictError, UsageError
from librarian.git.remote import _reason, hostile_host, strip_credentials, transport_errors
from librarian.git.repo import GitStore, ObjectId


@dataclass(frozen=True, slots=True)
class Upstream:
    """Where the current branch publishes: ``remote`` (a name or a URL), its ``url``, the
    branch there (``refs/heads/main``) and the local ref remembering its tip."""

    remote: str
    url: str
    branch: bytes
    tracking: bytes

    @property
    def shown(self) -> str:
        return strip_credentials(self.url)


class RemoteMoved(ConflictError):
    """The remote branch is not at the tip the push was made against."""


class PushRefused(ConflictError):
    """The server refused the new tip by its own rules."""


class HungUp(ConflictError):
    """The server closed the connection mid-way (a busy ``git daemon`` does): worth
    another try, unlike a server that cannot be reached at all."""


def _config_value(store: GitStore, section: tuple[bytes, ...], name: bytes) -> str | None:
    config = store.dulwich_repo.get_config()
    try:
        return bytes(config.get(section, name)).decode("utf-8", "surrogateescape")
    except KeyError:
        return None


def upstream_of(store: GitStore) -> Upstream:
    """The current branch's upstream (``branch.<name>.remote`` / ``.merge``), else the
    same branch on ``origin``; exit 2 when there is none."""
    branch = store.branch()
    short = branch.removeprefix(b"refs/heads/")
    remote = _config_value(store, (b"branch", short), b"remote") or "origin"
    merge = _config_value(store, (b"branch", short), b"merge")
    url = _config_value(store, (b"remote", remote.encode()), b"url")
    if url is None:
        if "/" not in remote and ":" not in remote:
            raise UsageError(f"the branch {short.decode()} has no upstream (no remote "
                             f"{remote!r})", hint="add one: `git remote add origin URL`, or "
                             "start from `librarian clone URL`")
        url = remote
    if hostile_host(url):
        raise UsageError(f"cannot use {strip_credentials(url)}: its host starts with '-'")
    remote_branch = merge.encode() if merge else branch
    name = remote_branch.removeprefix(b"refs/heads/")
    return Upstream(remote, url, remote_branch, b"refs/remotes/" + remote.encode() + b"/" + name)


def _client(url: str) -> tuple[object, str]:
    from dulwich.client import get_transport_and_path

    return get_transport_and_path(url, quiet=True)


@contextlib.contextmanager
def _transport_errors(upstream: Upstream, verb: str) -> Iterator[None]:
    """Every dulwich/transport failure as a LibrarianError, with credentials stripped
    (``remote.transport_errors``); a server that hangs up may be tried again."""
    from dulwich.errors import HangupException

    with transport_errors(upstream.url, upstream.shown, verb):
        try:
            yield
        except HangupException as exc:
            raise HungUp(f"cannot {verb} {upstream.shown}: the server hung up "
                         f"({_reason(exc, upstream.url)})", hint="try again") from None


def fetch_branch(store: GitStore, upstream: Upstream) -> ObjectId | None:
    """Fetch the upstream branch with the history the library lacks, point the tracking
    ref at it and return its tip (None: the branch does not exist there yet)."""
    repo = store.dulwich_repo
    found: dict[str, bytes] = {}

    def wants(refs: Mapping[Ref, ObjectID], depth: int | None = None) -> list[ObjectID]:
        sha = refs.get(Ref(upstream.branch))
        if sha is None or sha == ZERO_SHA:
            return []
        found["tip"] = bytes(sha)
        return [] if sha in repo.object_store else [ObjectID(sha)]

    with _transport_errors(upstream, "fetch"):
        client, path = _client(upstream.url)
        client.fetch(path, repo, determine_wants=wants)  # type: ignore[attr-defined]
    tip = found.get("tip")
    if tip is None:
        return None
    if store.ref(upstream.tracking) != tip:
        repo.refs[Ref(upstream.tracking)] = ObjectID(tip)
    return tip


def push_branch(store: GitStore, upstream: Upstream, old: ObjectId | None,
                new: ObjectId) -> None:
    """Move the upstream branch from ``old`` to ``new``, or fail: ``RemoteMoved`` when it
    is not at ``old`` (nothing sent), ``PushRefused`` when the server refuses the tip."""
    repo = store.dulwich_repo
    said: list[str] = []

    def update_refs(refs: Mapping[Ref, ObjectID]) -> dict[Ref, ObjectID]:
        found = refs.get(Ref(upstream.branch))
        current = None if found is None or found == ZERO_SHA else bytes(found)
        if current != old:
            raise RemoteMoved(f"{upstream.shown} moved while publishing",
                              hint="run `librarian sync` again")
        return {**refs, Ref(upstream.branch): ObjectID(new)}

    def progress(data: bytes) -> None:
        said.append(data.decode("utf-8", "replace"))

    with _transport_errors(upstream, "push to"):
        client, path = _client(upstream.url)
        result = client.send_pack(  # type: ignore[attr-defined]
            path, update_refs, repo.generate_pack_data, progress=progress)
    status = (result.ref_status or {}).get(upstream.branch)
    if status is None:
        if store.ref(upstream.tracking) != new:
            repo.refs[Ref(upstream.tracking)] = ObjectID(new)
        return
    lines = "".join(said).replace("\r", "\n").splitlines()
    text = " ".join(" ".join(line.split()) for line in lines
                    if line.strip() and "objects" not in line and "%" not in line)
    shown = _reason(ValueError(f"{status}; {text}" if text else status), upstream.url)
    if "declined" not in status:  # a compare-and-swap lost: someone else pushed first
        raise RemoteMoved(f"{upstream.shown} refused the push: {shown}",
                          hint="run `librarian sync` again")
    raise PushRefused(f"{upstream.shown} refused the new tip: {shown}",
                      hint="the server checks every pushed tip; fix what it names, then sync")


def merge_base(store: GitStore, one: ObjectId, other: ObjectId) -> ObjectId | None:
    from dulwich.graph import find_merge_base

    bases = find_merge_base(store.dulwich_repo, [ObjectID(one), ObjectID(other)])
    return bytes(bases[0]) if bases else None


def copy_commit(store: GitStore, original: ObjectId, tree: ObjectId,
                parent: ObjectId) -> ObjectId:
    """``original`` made again on ``parent`` with ``tree``: its message and author kept,
    this repository's identity and clock as the committer (as ``git rebase`` does)."""
    old = store.dulwich_repo[ObjectID(original)]
    assert isinstance(old, Commit)
    made = store.make_commit(tree, [parent], "")
    commit = store._get(made).copy()
    assert isinstance(commit, Commit)
    commit.message = old.message
    commit.author = old.author
    commit.author_time, commit.author_timezone = old.author_time, old.author_timezone
    return store._stage(commit)


def set_config(store: GitStore, values: Mapping[tuple[tuple[bytes, ...], bytes], bytes]) -> None:
    """Write ``values`` into the repository's own config (``.git/config``)."""
    config = store.dulwich_repo.get_config()
    for (section, name), value in values.items():
        config.set(section, name, value)
    config.write_to_path()


def clone_repository(url: str, target: Path) -> None:
    """Clone ``url`` into the new directory ``target`` (work tree checked out, ``origin``
    and the branch's upstream configured); nothing is left behind when it fails."""
    import shutil

    from dulwich.client import get_transport_and_path

    upstream = Upstream("origin", url, b"", b"")
    created = not target.exists()
    try:
        with _transport_errors(upstream, "clone"):
            client, path = get_transport_and_path(url, quiet=True)
            repo = client.clone(path, str(target), mkdir=created, origin="origin",
                                checkout=True, origin_url=url)
        try:
            config = repo.get_config()
            head = repo.refs.follow(Ref(b"HEAD"))[0]
            if len(head) >= 2:
                short = bytes(head[-1]).removeprefix(b"refs/heads/")
                config.set((b"branch", short), b"remote", b"origin")
                config.set((b"branch", short), b"merge", bytes(head[-1]))
            config.set((b"gc",), b"auto", b"0")
            config.write_to_path()
        finally:
            repo.close()
    except BaseException:
        if created and target.exists():
            shutil.rmtree(target, ignore_errors=True)
        raise
