"""The first half of ``update`` and ``outdated``: each chosen source fetched and planned,
**judged on its own**. A signed source whose release is refused (a ``TrustError``: an
untrusted signer, a rollback, an expired or tampered release) has its fetch refs put back
and is set aside with its reason; the other sources are planned and installed as usual,
and the command exits 4 naming each refused one. Only when every chosen source is
refused is the refusal raised whole, as an error (exit 4, nothing changed). Any other
failure (a fetch that fails, a hostile upstream) still stops the whole update.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from librarian.core.faults import crash_point
from librarian.core.progress import phase as shown_phase
from librarian.errors import TrustError
from librarian.formats.config import SourceConfig
from librarian.git import FetchResult, GitStore, ObjectId, strip_credentials
from librarian.sources.plan import plan_source, source_ref
from librarian.sources.plan_values import SourcePlan
from librarian.sources.releases import check_plan, fetch_source, release_ref
from librarian.txn import Transaction

if TYPE_CHECKING:  # the trust machinery is imported only for a signed source
    from librarian.trust.policy import VerifiedRelease

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class RefusedSource:
    """A source left out of an update: its release was refused."""

    source: str
    error: str
    hint: str | None


@dataclass(frozen=True, slots=True)
class Fetched:
    plans: tuple[SourcePlan, ...]  # of the sources not refused, in the chosen order
    releases: Mapping[str, VerifiedRelease]
    refused: Mapping[str, TrustError]

    def refusals(self) -> tuple[RefusedSource, ...]:
        return tuple(RefusedSource(n, e.message, e.hint) for n, e in self.refused.items())


def restore_refs(store: GitStore, previous: Mapping[bytes, ObjectId | None]) -> None:
    """Put the fetch and release refs back where they were."""
    for ref, old in previous.items():
        current = store.ref(ref)
        if current == old or current is None:
            continue
        if old is None:
            store.delete_ref(ref)
        else:
            store.set_ref(ref, current, old, b"librarian: update refused, fetch undone")


def fetch_and_plan(tx: Transaction, chosen: Mapping[str, SourceConfig],
                   progress: Progress | None) -> Fetched:
    store, locked = tx.store, tx.base.lock
    fetched: dict[str, FetchResult] = {}
    releases: dict[str, VerifiedRelease] = {}
    refused: dict[str, TrustError] = {}
    previous: dict[str, dict[bytes, ObjectId | None]] = {}
    for name, source in chosen.items():
        shown_phase(f"fetch {name}")
        if progress is not None:
            progress(f"fetching {name} from {strip_credentials(source.url)}\n")
        previous[name] = {ref: store.ref(ref) for ref in (source_ref(name), release_ref(name))}
        try:
            fetched[name], release = fetch_source(store, name, source, locked.get(name),
                                                  progress=progress)
        except TrustError as exc:  # judged on its own: the others go on
            restore_refs(store, previous[name])
            refused[name] = exc
            continue
        if release is not None:
            releases[name] = release
    crash_point("update-after-fetch")
    plans = []
    for name, source in chosen.items():
        if name in refused:
            continue
        plan = plan_source(tx.library, store, tx.base.tree, name, source, locked.get(name),
                           fetched[name].commit, tx.base.policy)
        try:
            check_plan(store, plan, releases.get(name))
        except TrustError as exc:
            restore_refs(store, previous[name])
            releases.pop(name, None)
            refused[name] = exc
            continue
        plans.append(plan)
    if refused and not plans:  # nothing else to do: refused as before, whole
        raise _refusal(refused)
    return Fetched(tuple(plans), releases, refused)


def _refusal(refused: Mapping[str, TrustError]) -> TrustError:
    """Every chosen source refused: the one error as before, or all of them in one."""
    if len(refused) == 1:
        return next(iter(refused.values()))
    return TrustError("; ".join(e.message for e in refused.values()),
                      hint=next((e.hint for e in refused.values() if e.hint), None))
