"""``source set``: change a subscription in one commit, the lock kept.

What changes is ``library.yaml`` only; the installed collection and its pins in
``librarian.lock`` stay as they are until the next ``update``, which plans against them as
``npm install`` plans a changed ``package.json`` against its lock file: an item still
selected whose upstream digest is its pin is kept untouched (the same tree, no
re-download), one no longer selected (``--include``/``--exclude``) is removed, one newly
selected is added, one whose content differs is updated. A new ``--url`` (a mirror, a
moved repository) or ``--ref`` keeps every pin: the next update installs only what differs
from them. What ``source set`` drops is what names another repository: with a new URL,
the fetched commit ``refs/librarian/sources/<name>`` (the next fetch asks for the tip
afresh). Validation is ``source add``'s (URL, ref, patterns, ed25519 keys).
"""

from __future__ import annotations

from dataclasses import replace

from librarian.core.events import trailers
from librarian.core.receipts import Receipt
from librarian.errors import UsageError
from librarian.formats.config import LIBRARY_FILE, dump_library_config
from librarian.git import strip_credentials
from librarian.library import Library
from librarian.sources.plan import source_ref
from librarian.sources.subscriptions import (
    check_ref,
    fingerprints,
    normalise_url,
    trust_lines,
)
from librarian.sources.upstream import collection_path, compile_patterns
from librarian.txn import Transaction


def _listed(values: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """A repeated option as given; one empty value (``--include ''``) clears the list."""
    if values is None:
        return None
    return tuple(v for v in values if v.strip())


def set_source(
    library: Library,
    name: str,
    *,
    url: str | None = None,
    ref: str | None = None,
    include: tuple[str, ...] | None = None,
    exclude: tuple[str, ...] | None = None,
    trust: tuple[str, ...] | None = None,
) -> Receipt:
    """Change ``name``'s URL, ref, filters or trusted keys (each given one replaces the
    old value; a list given as one empty value is cleared): one ``source-set`` commit."""
    include, exclude, trust = _listed(include), _listed(exclude), _listed(trust)
    if url is None and ref is None and include is None and exclude is None and trust is None:
        raise UsageError("nothing to change",
                         hint="give --url, --ref, --include, --exclude or --trust")
    if url is not None:
        url = normalise_url(url)
    if ref is not None:
        check_ref(ref)
    if include is not None:
        compile_patterns(include, "include")
    if exclude is not None:
        compile_patterns(exclude, "exclude")
    keys = trust_lines(trust) if trust is not None else None
    with Transaction(library) as tx:
        config = tx.base.config
        old = config.sources.get(name)
        if old is None:
            raise UsageError(f"no source named {name!r} in the committed {LIBRARY_FILE}",
                             hint="`librarian source list`; `librarian source add` subscribes")
        new = replace(
            old,
            url=url if url is not None else old.url,
            ref=ref if ref is not None else old.ref,
            include=include if include is not None else old.include,
            exclude=exclude if exclude is not None else old.exclude,
            trust=keys if keys is not None else old.trust,
        )
        changed = [field for field in ("url", "ref", "include", "exclude", "trust")
                   if getattr(new, field) != getattr(old, field)]
        if not changed:
            raise UsageError(f"source {name!r} already has these settings; nothing was changed")
        sources = dict(config.sources)
        sources[name] = new
        tx.put_file(LIBRARY_FILE, dump_library_config(replace(config, sources=sources)))
        result = tx.commit(f"source-set {name} ({', '.join(changed)})", trailers(
            "source-set", source=name, url=strip_credentials(new.url), ref=new.ref,
            trust=fingerprints(new.trust)))
        if "url" in changed and tx.store.ref(source_ref(name)) is not None:
            tx.store.delete_ref(source_ref(name))  # another repository's commit
    return Receipt(
        kind="source_set", name=name, path=collection_path(name), digest=None,
        commit=result.commit,
        details={"changed": changed, "url": strip_credentials(new.url), "ref": new.ref,
                 "include": list(new.include), "exclude": list(new.exclude),
                 "trust": list(fingerprints(new.trust))},
        note=f"the lock is kept: `librarian update {name}` installs what the new settings "
        "select (`librarian outdated` shows it first)",
    )
