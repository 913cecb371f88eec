"""``review``: the drafts awaiting a decision, with what the history says about each.

Order: deferrals whose date has come first (earliest date first), then drafts nobody has
decided on yet (oldest first), then deferrals still waiting for their date.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass

from librarian.cache import DigestCache
from librarian.core.events import parse_message
from librarian.errors import UsageError
from librarian.git import GitStore, walk_log
from librarian.library import Item, Library, Snapshot

#: status values, in the order ``review`` lists them
DUE, NEW, DEFERRED = "due", "new", "deferred"


@dataclass(frozen=True, slots=True)
class Decision:
    event: str
    commit: str
    time: int
    reason: str | None
    until: str | None
    evidence: str | None


@dataclass(frozen=True, slots=True)
class DraftReview:
    name: str
    kind: str
    path: str
    digest: str | None
    status: str  # due | new | deferred
    admitted: int | None  # unix time of the retention that admitted the draft
    age_seconds: int | None
    evidence: str | None  # as stated when it was admitted
    decision: Decision | None  # the last decision since admission (a deferral)


@dataclass(frozen=True, slots=True)
class ReviewReport:
    drafts: tuple[DraftReview, ...]


@dataclass
class _Found:
    admitted: int | None = None
    evidence: str | None = None
    decision: Decision | None = None
    done: bool = False


def review_drafts(
    library: Library, *, now: float | None = None, today: dt.date | None = None
) -> ReviewReport:
    moment = int(now if now is not None else time.time())
    day = today or dt.date.today()
    with library.store() as store:
        snapshot = Snapshot.head(library, store)
        base = snapshot.commit
        drafts = [i for i in snapshot.items() if i.state == "draft"]
        found = {d.path: _Found() for d in drafts}
        pending = len(found)
        for info in walk_log(store, base) if pending else ():
            event = parse_message(info.message)
            if event is None:
                continue
            # A retain of several items names each (``Librarian-Item`` repeats).
            for path in event.values("Librarian-Item"):
                state = found.get(path)
                if state is None or state.done:
                    continue
                if event.kind == "defer" and state.decision is None:
                    state.decision = Decision(
                        "defer", info.id.decode(), info.time, event.get("Librarian-Reason"),
                        event.get("Librarian-Until"), event.get("Librarian-Evidence"))
                elif event.kind == "retain":
                    # Admission: decisions older than this were about an earlier draft.
                    state.admitted, state.evidence, state.done = (
                        info.time, event.get("Librarian-Evidence"), True)
                    pending -= 1
            if not pending:
                break
        digests = DigestCache(library.cache_dir)
        entries = [_entry(store_digest(digests, store, d), d, found[d.path], moment, day)
                   for d in drafts]
        digests.save()
    return ReviewReport(tuple(sorted(entries, key=_order)))


def store_digest(digests: DigestCache, store: GitStore, item: Item) -> str | None:
    try:
        return digests.digest(store, item.tree)
    except UsageError:  # a symlink committed with plain git: `check` reports it
        return None


def _entry(digest: str | None, item: Item, found: _Found, now: int, today: dt.date
           ) -> DraftReview:
    status = NEW
    decision = found.decision
    if decision is not None:
        status = DEFERRED
        if decision.until is None or _date(decision.until) <= today:
            status = DUE
    return DraftReview(
        name=item.name,
        kind=item.kind,
        path=item.path,
        digest=digest,
        status=status,
        admitted=found.admitted,
        age_seconds=None if found.admitted is None else max(0, now - found.admitted),
        evidence=found.evidence,
        decision=decision,
    )


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:  # a hand-written trailer: treat it as due, so it is seen
        return dt.date.min


def _order(entry: DraftReview) -> tuple[int, str, int, str]:
    rank = {DUE: 0, NEW: 1, DEFERRED: 2}[entry.status]
    until = entry.decision.until if entry.decision and entry.decision.until else ""
    return rank, until, entry.admitted or 0, entry.name
