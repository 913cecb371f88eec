"""Fetching from remote repositories: the transport half of the git layer (over dulwich).

``gitstore`` owns the local repository; this module brings a source's ref into it.
Nothing outside these two modules (and ``gitindex``) imports dulwich.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from dulwich.objects import Commit, ObjectID
from dulwich.refs import Ref

from librarian.errors import ConflictError, LibrarianError, UsageError
from librarian.git.repo import GitStore, ObjectId
from librarian.git.transfer import RefusedPack, transfer

SSH_SCHEMES = frozenset({"ssh", "git+ssh", "ssh+git"})
SCHEMES = frozenset({"file", "git", "http", "https", *SSH_SCHEMES})  # what dulwich speaks
_SCHEME_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://([^/?#]*)([^?#]*)(.*)$", re.S)
_SCP_URL = re.compile(r"^(?:([^/@]*)@)?([^/@:]+):(.*)$", re.S)  # [user@]host:path, as dulwich
HELPER_URL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+.-]*::")  # ext::, fd::…: dulwich reads ssh


@dataclass(frozen=True, slots=True)
class RemoteUrl:
    """The parts of a remote URL that matter for credentials and for ssh's command line."""

    scheme: str | None  # None: scp-like ``[user@]host:path``
    user: str | None  # the user name (or a token) before ``@``
    password: str | None  # after ``user:``
    host: str  # host, with ``:port`` for scheme URLs
    path: str
    extra: str  # ``?query`` or ``#fragment``, which may carry a token

    @property
    def is_ssh(self) -> bool:
        return self.scheme is None or self.scheme.lower() in SSH_SCHEMES

    def without_credentials(self) -> str:
        """The URL without a password or query; a user name is kept only for ssh, where
        it is an account name and not a secret."""
        user = f"{self.user}@" if self.user is not None and self.is_ssh else ""
        if self.scheme is None:
            return f"{user}{self.host}:{self.path}"
        return f"{self.scheme}://{user}{self.host}{self.path}"

    def secrets(self) -> tuple[str, ...]:
        """The parts that must never be shown: passwords, tokens, query strings."""
        found = [self.password, self.extra]
        if not self.is_ssh:
            found.append(self.user)
        return tuple(s for s in found if s)


def parse_remote(url: str) -> RemoteUrl | None:
    """A scheme URL or an scp-like ssh location, split; None for a local path."""
    match = _SCHEME_URL.match(url)
    if match is not None:
        scheme, authority, path, extra = match.groups()
        userinfo, at, host = authority.rpartition("@")
        user, colon, password = userinfo.partition(":")
        return RemoteUrl(scheme, user if at else None, password if colon else None, host,
                         path, extra)
    match = _SCP_URL.match(url)
    if match is None:
        return None
    userinfo, host, path = match.groups()
    path, question, query = path.partition("?")
    user, colon, password = (userinfo or "").partition(":")
    return RemoteUrl(None, user if userinfo is not None else None,
                     password if colon else None, host, path, question + query)


def strip_credentials(url: str) -> str:
    """``url`` without a password, a token before ``@`` (a user name stays for ssh only)
    or a query string: for every message, trailer, receipt and the lock."""
    remote = parse_remote(url)
    return url if remote is None else remote.without_credentials()


def hide_secrets(text: str, url: str) -> str:
    """``text`` (an error from a transport, say) with ``url``'s secrets blanked out."""
    remote = parse_remote(url)
    if remote is None:
        return text
    text = text.replace(url, remote.without_credentials())
    for secret in sorted(remote.secrets(), key=len, reverse=True):
        if len(secret) >= 4:  # blanking every "a" of a message would hide the message
            text = text.replace(secret, "***")
    return text


def hostile_host(url: str) -> bool:
    """Whether ssh would read the URL's host (or user) as a command-line option."""
    remote = parse_remote(url)
    if remote is None:
        return False
    return remote.host.startswith("-") or (remote.user or "").startswith("-")


def url_problem(url: str) -> str | None:
    """Why the remote ``url`` (not a local path) must not be committed to library.yaml
    (credentials, options smuggled to ssh, a scheme dulwich does not speak), without
    quoting any secret; None when it is fine."""
    if HELPER_URL.match(url):
        return f"the transport {url.split('::')[0]!r}:: (a git remote helper) is not spoken"
    remote = parse_remote(url)
    if remote is None:
        return "the URL cannot be read as scheme://host/path or [user@]host:path"
    if remote.scheme is None and remote.path.startswith(":"):
        # git's <transport>::<address> (ext::, fd::): dulwich would take it for an ssh host
        return (f"the {remote.host}:: transport is not supported "
                f"(use {', '.join(sorted(SCHEMES))}, an ssh user@host:path or a local path)")
    if remote.scheme is not None and remote.scheme.lower() not in SCHEMES:
        return (f"the URL scheme {remote.scheme!r} is not supported "
                f"(use {', '.join(sorted(SCHEMES))}, an ssh user@host:path or a local path)")
    if remote.password is not None:
        return "the URL holds a password, which would be committed to library.yaml"
    if remote.user is not None and not remote.is_ssh:
        return ("the URL holds a user name or token before '@', which would be committed to "
                "library.yaml (only ssh URLs may name a user)")
    if remote.extra:
        return ("the URL holds a query string or fragment, which may carry a token and would "
                "be committed to library.yaml")
    if hostile_host(url):
        return "the URL's host or user starts with '-', which ssh would read as an option"
    if remote.scheme is not None and remote.scheme.lower() != "file" and not remote.host:
        return "the URL names no host"
    return None


@dataclass(frozen=True, slots=True)
class FetchResult:
    commit: ObjectId  # the commit the ref names (annotated tags peeled)
    ref: bytes  # the full upstream ref name that matched
    fetched: bool  # whether any object was transferred


def _ref_candidates(ref: str) -> list[bytes]:
    raw = ref.encode("utf-8")
    if raw == b"HEAD" or raw.startswith(b"refs/"):
        return [raw]
    return [b"refs/heads/" + raw, b"refs/tags/" + raw, b"refs/" + raw]


class _Progress:
    """Adapts dulwich's progress bytes to a text callback (lines; \\r updates kept)."""

    def __init__(self, callback: Callable[[str], None] | None) -> None:
        self.callback = callback

    def __call__(self, data: bytes) -> None:
        if self.callback is not None and data:
            self.callback(data.decode("utf-8", "replace"))


@contextlib.contextmanager
def transport_errors(url: str, shown: str, verb: str) -> Iterator[None]:
    """Every dulwich/transport failure inside as a LibrarianError naming ``shown`` (the URL
    without its credentials): exit 2 for a bad URL or a missing repository, exit 3 when the
    server cannot be reached. ``verb``: what was being done (``fetch``, ``push to``…)."""
    from dulwich.client import (
        HTTPProxyUnauthorized,
        HTTPUnauthorized,
        StrangeHostname,
        TransportNotAllowed,
    )
    from dulwich.errors import GitProtocolError, NotGitRepository

    try:
        yield
    except LibrarianError:
        raise
    except (NotGitRepository, HTTPUnauthorized, HTTPProxyUnauthorized) as exc:
        raise UsageError(f"cannot {verb} {shown}: {_reason(exc, url)}",
                         hint="check the URL (and that the repository exists)") from None
    except (StrangeHostname, TransportNotAllowed) as exc:
        raise UsageError(f"cannot {verb} {shown}: dulwich refuses the URL "
                         f"({type(exc).__name__}: {_reason(exc, url)})",
                         hint="check the URL") from None
    except GitProtocolError as exc:
        raise _protocol_error(shown, exc, url) from None
    except OSError as exc:
        raise ConflictError(f"cannot reach {shown}: {_reason(exc, url)}",
                            hint="check that the server is up and try again") from None
    except (ValueError, KeyError, TypeError, AssertionError) as exc:
        # dulwich raises these for URLs it cannot parse and for malformed replies
        raise UsageError(f"cannot {verb} {shown}: {_reason(exc, url)}",
                         hint="a URL is a local path, file://, git://, http(s):// or ssh") from None


def fetch_ref(
    store: GitStore,
    url: str,
    ref: str,
    *,
    into: bytes,
    have: ObjectId | None,
    progress: Callable[[str], None] | None = None,
    source: str | None = None,
) -> FetchResult:
    """Fetch ``ref`` of the repository at ``url`` into this object store and point the local
    ref ``into`` at it: the tip only (depth 1), with ``have`` (the previously fetched
    upstream commit) offered as what the library holds, so the transfer follows the change,
    never the upstream's or the library's history (``transfer``). Every dulwich/transport
    failure becomes a LibrarianError with the URL's credentials stripped: exit 2 for a bad
    URL, a missing repository or ref, or an incomplete upstream; exit 3 when the server
    cannot be reached. A pack holding an object git refuses (``transfer.RefusedPack``) is
    refused whole, named after ``source`` (the subscription's name) when given."""
    from dulwich.client import get_transport_and_path

    shown = strip_credentials(url)
    if hostile_host(url) or HELPER_URL.match(url):  # never hand ssh an option, nor a helper
        reason = url_problem(url) or "its host or user starts with '-', read by ssh as an option"
        raise UsageError(f"cannot fetch {shown}: {reason}", hint="check the source's URL")
    found: dict[str, bytes] = {}

    def determine_wants(refs: Mapping[Ref, ObjectID], depth: int | None = None) -> list[ObjectID]:
        for candidate in _ref_candidates(ref):
            sha = refs.get(Ref(candidate))
            if sha is not None:
                found["ref"], found["sha"] = candidate, bytes(sha)
                return [] if ObjectID(sha) in store.dulwich_repo.object_store else [ObjectID(sha)]
        return []

    with transport_errors(url, shown, "fetch"):
        client, path = get_transport_and_path(url, quiet=progress is None)
        try:
            result = transfer(store, client, path, determine_wants, have, _Progress(progress))
        except RefusedPack as exc:
            raise RefusedPack(exc.finding, f"source {source}" if source else shown) from None
    if "sha" not in found:
        names = ", ".join(sorted(r.decode("utf-8", "replace") for r in result.refs))
        raise UsageError(f"{shown} has no ref {ref!r}",
                         hint=f"its refs: {names[:300] or '(none: an empty repository)'}")
    target = found["sha"]
    commit = _peel(store, target, shown, ref)
    old = store.ref(into)
    if old != commit:
        store.set_ref(into, old, commit, b"librarian: fetch " + shown.encode())
    return FetchResult(commit, found["ref"], result.fetched)


def _peel(store: GitStore, sha: bytes, shown: str, ref: str) -> ObjectId:
    from dulwich.objects import Tag

    for _ in range(8):
        try:
            obj = store.dulwich_repo[ObjectID(sha)]
        except KeyError:
            raise UsageError(f"{shown}: {ref!r} names {sha.decode()}, which was not sent") from None
        if isinstance(obj, Tag):
            sha = bytes(obj.object[1])
            continue
        if isinstance(obj, Commit):
            return sha
        break
    raise UsageError(f"{shown}: {ref!r} does not name a commit")


def _reason(exc: BaseException, url: str) -> str:
    text = hide_secrets(str(exc) or type(exc).__name__, url)
    text = re.sub(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]*@", r"\1", text)  # anywhere in it
    return " ".join(text.split())[:300]


def _protocol_error(shown: str, exc: BaseException, url: str) -> LibrarianError:
    text = _reason(exc, url)
    lowered = text.lower()
    if any(word in lowered for word in ("not found", "does not exist", "not exported",
                                        "no such", "access denied", "not a git")):
        return UsageError(f"cannot fetch {shown}: the repository is missing or not exported "
                          f"({text})", hint="check the URL")
    return ConflictError(f"cannot fetch {shown}: {text}",
                         hint="the server hung up or spoke an unexpected protocol; try again")


