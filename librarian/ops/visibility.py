"""``hide`` / ``show`` / ``resident``: a skill's visibility in the agent registry.

Kept in ``library.yaml`` (``skills.hidden``, ``skills.resident``) and changed by one commit
each. Hidden skills are not listed by ``prompt`` but stay usable by name (``cat``);
resident skills have their body included in the prompt. A request that changes nothing
(hiding a hidden skill) succeeds without a commit and says so.
"""

from __future__ import annotations

from dataclasses import replace

from librarian.cache import DigestCache
from librarian.core.events import trailers
from librarian.core.receipts import Receipt
from librarian.errors import UsageError
from librarian.formats.config import LIBRARY_FILE, LibraryConfig, dump_library_config
from librarian.library import Library, Snapshot
from librarian.txn import Transaction

Field = str  # "hidden" | "resident"


def hide(library: Library, name: str) -> Receipt:
    return _set(library, name, "hidden", True, "hide")


def show(library: Library, name: str) -> Receipt:
    return _set(library, name, "hidden", False, "show")


def resident(library: Library, name: str, *, on: bool = True) -> Receipt:
    return _set(library, name, "resident", on, "resident")


def _set(library: Library, name: str, field: Field, on: bool, event: str) -> Receipt:
    with Transaction(library) as tx:
        config = tx.base.config
        current: tuple[str, ...] = getattr(config, field)
        if not on and name in current:
            # Taking a name off a list works even when the skill is gone (cleaning up).
            skill_name, path, digest = name, _path_of(tx.base, name), None
        else:
            item = tx.base.find(name)
            if item.kind != "skill" or item.state == "draft":
                what = "a draft" if item.state == "draft" else f"a {item.kind}"
                raise UsageError(
                    f"{item.name} is {what}, not a retained or managed skill",
                    hint="visibility applies to skills listed by `librarian prompt`"
                    + ("; promote the draft first" if item.state == "draft" else ""),
                )
            skill_name, path = item.name, item.path
            digest = DigestCache(library.cache_dir).digest(tx.store, item.tree)
        wanted = on
        present = skill_name in current
        state_word = _state_word(field, on)
        if present == wanted:
            return _receipt(event, skill_name, path, digest, None, field, on,
                            note=f"{skill_name} is already {state_word}; nothing changed")
        values = (*current, skill_name) if wanted else tuple(v for v in current if v != skill_name)
        ordered = tuple(sorted(values))
        updated: LibraryConfig = (
            replace(config, hidden=ordered) if field == "hidden"
            else replace(config, resident=ordered))
        subject = f"{event} skill {skill_name}" + (
            "" if field == "hidden" else (" on" if on else " off"))
        tx.put_file(LIBRARY_FILE, dump_library_config(updated))
        result = tx.commit(subject, trailers(
            event, item=path,
            resident=None if field == "hidden" else ("on" if on else "off")))
        other = updated.resident if field == "hidden" else updated.hidden
        warning = None
        if on and skill_name in other:
            warning = (f"{skill_name} is both hidden and resident: hidden wins, the prompt "
                       "shows neither its entry nor its body")
    return _receipt(event, skill_name, path, digest, result.commit, field, on, warning=warning)


def _path_of(snapshot: Snapshot, name: str) -> str:
    """The item's path when it is still there; else the name (a list entry being cleaned)."""
    try:
        return snapshot.find(name).path
    except UsageError:
        return name


def _state_word(field: Field, on: bool) -> str:
    if field == "hidden":
        return "hidden" if on else "shown"
    return "resident" if on else "not resident"


def _receipt(
    event: str,
    name: str,
    path: str,
    digest: str | None,
    commit: str | None,
    field: Field,
    on: bool,
    *,
    note: str | None = None,
    warning: str | None = None,
) -> Receipt:
    details: dict[str, object] = {"event": event, field: on,
                                  "visibility": _state_word(field, on),
                                  "changed": commit is not None}
    return Receipt(
        kind="skill_visibility",
        name=name,
        path=path,
        digest=digest,
        commit=commit,
        details=details,
        note=note or None,
        warnings=(warning,) if warning else (),
    )
