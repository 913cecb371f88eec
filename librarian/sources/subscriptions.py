"""``source add``, ``source list``, ``source remove``: subscriptions in library.yaml.

Adding a source is one commit to ``library.yaml``; nothing is fetched until ``update``.
Removing one is one commit that drops the subscription, its pin in ``librarian.lock`` and
its managed collection under ``sources/<name>/``; local edits there refuse the removal
(exit 3) unless ``force``, which backs them up first (``librarian.sources.backups``); a tool
exposing one of its recipes refuses it (exit 3) until the tool is withdrawn. Every command
reads the committed ``library.yaml``, never the work tree's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from librarian.cache import WorkTreeCache
from librarian.content.worktree import NotRegularFile
from librarian.core.events import trailers
from librarian.core.names import check_name
from librarian.core.progress import counted
from librarian.core.receipts import BackupReceipt, Receipt
from librarian.errors import ConflictError, UsageError
from librarian.formats.config import (
    LIBRARY_FILE,
    LOCK_FILE,
    TOOLS_FILE,
    SourceConfig,
    dump_library_config,
    dump_lock,
)
from librarian.git import GitStore, ObjectId, parse_remote, strip_credentials, url_problem
from librarian.library import Library, Snapshot
from librarian.sources.backups import back_up
from librarian.sources.plan import (
    SOURCE_REF_PREFIX,
    installed_items,
    source_ref,
)
from librarian.sources.releases import release_ref
from librarian.sources.upstream import collection_path, compile_patterns
from librarian.trust.keys import parse_public_key, read_public_keys
from librarian.txn import FileChange, Transaction


@dataclass(frozen=True, slots=True)
class SourceInfo:
    name: str
    url: str  # credentials stripped
    ref: str
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    commit: str | None  # the installed upstream commit (librarian.lock)
    items: int
    fetched: str | None  # what refs/librarian/sources/<name> names
    keys: tuple[str, ...] = ()  # fingerprints of the trust: keys (signed releases only)
    release: int | None = None  # the installed signed release (librarian.lock)


def normalise_url(url: str) -> str:
    """Local paths become absolute (the library may be used from anywhere); URLs stay."""
    url = url.strip()
    if not url:
        raise UsageError("the URL is empty")
    if parse_remote(url) is not None:
        problem = url_problem(url)
        if problem is not None:  # the message never shows a secret the URL holds
            shown = strip_credentials(url)
            raise UsageError(
                f"{shown}: {problem}",
                hint="a URL is a local path, file://, git://, http(s):// or ssh; credentials "
                "belong in an ssh key or a git credential helper, never in the URL",
            )
        return url
    path = Path(url).expanduser()
    if not path.exists():
        raise UsageError(f"{url} is neither a git URL nor an existing local repository",
                         hint="a URL is a local path, file://, git://, http(s):// or ssh")
    return str(path.absolute())


def trust_lines(trust: tuple[str, ...]) -> tuple[str, ...]:
    """``--trust`` keys (a public-key line, a ``.pub`` file or a host's ``.keys`` list each)
    as the lines ``library.yaml`` records; only ed25519 keys, no key twice."""
    lines: list[str] = []
    raws: set[bytes] = set()
    for argument in trust:
        for key in read_public_keys(argument):
            if key.raw not in raws:
                raws.add(key.raw)
                lines.append(key.line())
    return tuple(lines)


def check_ref(ref: str) -> None:
    if not ref.strip() or any(c in ref for c in " ~^:?*[\\") or ".." in ref:
        raise UsageError(f"invalid ref {ref!r}")


def default_branch(url: str) -> str:
    """The branch the remote's HEAD names (``main``, ``master``…); ``HEAD`` itself when
    it is detached. A remote that cannot be reached is an error: ``--ref`` names the
    branch without asking."""
    from librarian.errors import LibrarianError
    from librarian.git import remote_head

    try:
        target = remote_head(url)
    except LibrarianError as exc:
        exc.hint = "pass --ref BRANCH to subscribe without asking the remote for its HEAD"
        raise
    if target is None:
        return "HEAD"
    return target.removeprefix("refs/heads/")


def fingerprints(trust: tuple[str, ...]) -> tuple[str, ...]:
    out = []
    for line in trust:
        try:
            out.append(parse_public_key(line).fingerprint)
        except UsageError:
            out.append("(unusable key)")
    return tuple(out)


def add_source(
    library: Library,
    name: str,
    url: str,
    *,
    ref: str | None = None,
    include: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    trust: tuple[str, ...] = (),
) -> Receipt:
    """Subscribe (one commit). Without ``ref`` the remote's HEAD is asked for, as ``git
    clone`` does, and the branch it names is recorded."""
    trust = trust_lines(trust)
    check_name(name, "source name")
    url = normalise_url(url)
    if ref is not None:
        check_ref(ref)
    compile_patterns(include, "include")
    compile_patterns(exclude, "exclude")
    if ref is None:
        ref = default_branch(url)
    with Transaction(library) as tx:
        config = tx.base.config
        if name in config.sources:
            raise ConflictError(f"the source name {name!r} is taken",
                                hint="`librarian source list`; remove it first or pick another")
        if tx.base.lookup(collection_path(name)) is not None:
            raise ConflictError(f"{collection_path(name)} already exists in the library")
        source = SourceConfig(url=url, ref=ref, include=include, exclude=exclude, trust=trust)
        sources = dict(config.sources)
        sources[name] = source
        new_data = dump_library_config(replace(config, sources=sources))
        tx.put_file(LIBRARY_FILE, new_data)
        result = tx.commit(f"source-add {name}", trailers(
            "source-add", source=name, url=strip_credentials(url), ref=ref,
            trust=fingerprints(trust)))
    return Receipt(
        kind="source_added", name=name, path=collection_path(name), digest=None,
        commit=result.commit,
        details={"url": strip_credentials(url), "ref": ref, "include": list(include),
                 "exclude": list(exclude), "trust": list(fingerprints(trust))},
        note=f"nothing fetched yet: run `librarian update {name}`",
    )


def list_sources(library: Library) -> tuple[SourceInfo, ...]:
    """The committed subscriptions (what ``update`` follows) with their pins."""
    with library.store() as store:
        return source_infos(Snapshot.head(library, store))


def source_infos(snapshot: Snapshot) -> tuple[SourceInfo, ...]:
    """The subscriptions of ``snapshot`` with their pins and fetch refs."""
    fetched = snapshot.store.refs_under(SOURCE_REF_PREFIX.encode())
    out = []
    for name, source in sorted(snapshot.config.sources.items()):
        pin = snapshot.lock.get(name)
        ref = fetched.get(source_ref(name))
        out.append(SourceInfo(name, strip_credentials(source.url), source.ref,
                              source.include, source.exclude,
                              pin.commit if pin else None, len(pin.items) if pin else 0,
                              ref.decode() if ref else None, fingerprints(source.trust),
                              pin.release if pin else None))
    return tuple(out)


def remove_source(library: Library, name: str, *, force: bool = False) -> BackupReceipt:
    with Transaction(library) as tx:
        store, tree, base, config = tx.store, tx.base.tree, tx.base.commit, tx.base.config
        if name not in config.sources:
            raise UsageError(f"no source named {name!r}", hint="`librarian source list`")
        _refuse_exposed(tx.base, name)
        edited = local_edits(library, store, tree, name)
        backup = None
        if edited:
            if not force:
                raise ConflictError(
                    f"{name} holds local edits: {', '.join(edited)}; nothing was changed",
                    hint="rerun with --force to back them up and remove the source",
                )
            backup = back_up(library, store, base, name, edited, f"source-remove {name}")
        sources = {k: v for k, v in config.sources.items() if k != name}
        files = [FileChange(LIBRARY_FILE, dump_library_config(replace(config, sources=sources)))]
        if name in tx.base.lock:
            locked = {k: v for k, v in tx.base.lock.items() if k != name}
            files.append(FileChange(LOCK_FILE, dump_lock(locked)))
        for change in files:  # the collection itself was judged item by item
            tx.check_unmodified(change)
            tx.change(change)
        tx.put_dir(collection_path(name), None)
        result = tx.commit_over_local_edits(f"source-remove {name}", trailers(
            "source-remove", source=name, backup=backup.ref if backup else None))
        for ref in (source_ref(name), release_ref(name)):  # fetched commit, release tag
            if store.ref(ref) is not None:
                store.delete_ref(ref)
        if os.path.lexists(library.conflicts_path):
            from librarian.sources.conflicted import forget_source

            forget_source(library, name)
    return BackupReceipt(kind="source_removed", name=name, path=collection_path(name),
                         digest=None, commit=result.commit,
                         details={"url": strip_credentials(config.sources[name].url)},
                         backup=backup.ref if backup else None,
                         restore=tuple(backup.restore) if backup else ())


def _refuse_exposed(snapshot: Snapshot, name: str) -> None:
    """Tools in tools.yaml pointing into the collection would dangle once it is gone."""
    inside = collection_path(name) + "/"
    tools = sorted(tool for tool, spec in snapshot.tools.items()
                   if spec.recipe.startswith(inside))
    if tools:
        raise ConflictError(
            f"{name}'s collection holds recipes exposed as tool {', '.join(tools)} in "
            f"{TOOLS_FILE}; nothing was changed",
            hint="withdraw " + ("it" if len(tools) == 1 else "them") + " first: "
            + "; ".join(f"`librarian withdraw {tool}`" for tool in tools),
        )


def local_edits(library: Library, store: GitStore, tree: ObjectId | None,
                source: str) -> list[str]:
    """Library paths of the source's items whose work tree differs from the commit, plus
    anything untracked inside the collection."""
    cache = WorkTreeCache(library.cache_dir)
    edited = []
    installed = installed_items(store, tree, source)
    for path, (committed, _) in counted(f"check {source}", installed.items()):
        library_path = collection_path(source, path)
        target = library.path_of(library_path)
        if not target.exists():
            continue
        try:
            work = cache.item_hash(library_path, str(target))
        except NotRegularFile:
            work = None
        if work is None or work.tree_sha1 != committed:
            edited.append(library_path)
    root = library.path_of(collection_path(source))
    if root.is_dir():
        # Linear in the collection: an installed item was judged above, so the walk does
        # not descend into it; any other directory holding files is untracked content.
        items = {collection_path(source, path) for path in installed}
        for directory, dirs, files in os.walk(root):
            rel = Path(directory).relative_to(library.root).as_posix()
            if rel in items:
                dirs[:] = []
            elif files:
                edited.append(rel)
    return sorted(dict.fromkeys(edited))
