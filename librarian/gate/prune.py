"""``runs --prune``: delete the records of old finished runs; ``wait`` without an id: the
newest run. Imports ``gate.runs`` only.

A run record is ``.git/librarian/runs/<id>/`` (record, output). Pruning keeps the newest
``keep`` records and every run not yet ended; the usage ledger (``usage.jsonl``) is kept
whole, so ``inspect`` still counts pruned runs.
"""

from __future__ import annotations

import shutil

from librarian.errors import UsageError
from librarian.gate.runs import RunRecord, list_runs, runs_dir
from librarian.library import Library

DEFAULT_KEEP = 50


def prune_runs(library: Library, keep: int = DEFAULT_KEEP) -> tuple[RunRecord, ...]:
    """Delete finished runs beyond the newest ``keep``; returns those deleted."""
    if keep < 0:
        raise UsageError(f"--keep {keep}: the number of runs kept cannot be negative")
    records = list_runs(library)  # newest first
    doomed = tuple(r for r in records[keep:] if r.terminal)
    for record in doomed:
        shutil.rmtree(runs_dir(library) / record.run_id, ignore_errors=True)
    return doomed


def newest_run_id(library: Library) -> str:
    """The id of the newest run (``wait`` with no id)."""
    records = list_runs(library)
    if not records:
        raise UsageError("no runs are recorded in this library",
                         hint="start one with `librarian run NAME --async`")
    return records[0].run_id
