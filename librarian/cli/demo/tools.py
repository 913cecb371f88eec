"""The demo's part on tools: expose a retained recipe, meet the gate, run it sync and async,
wait for the result, withdraw it. Each step calls the library as the command line does."""

from __future__ import annotations

import io
from pathlib import Path

from librarian.cli.demo.steps import DemoStep
from librarian.cli.render import (
    approval_text,
    error_line,
    exposure_text,
    launched_text,
    receipt_text,
    run_end_text,
    runs_text,
)
from librarian.core.resources import examples_dir
from librarian.errors import GateRefusal
from librarian.gate.checks import record_approval, review_approval
from librarian.gate.exposure import expose, withdraw
from librarian.gate.runner import start_run
from librarian.gate.runs import RunRecord, list_runs, result_receipt, wait_run
from librarian.library import Library, Snapshot
from librarian.ops.retention import retain

RECIPE = "word-count"


def _retained(library: Library) -> bool:
    with library.store() as store:
        return Snapshot.head(library, store).lookup(f"recipes/{RECIPE}") is not None


def tour(library: Library, workspace: Path) -> list[DemoStep]:
    steps: list[DemoStep] = []
    if not _retained(library):
        source = examples_dir() / "recipes" / RECIPE
        receipt = retain(library, source, evidence="shipped as a librarian example")
        steps.append(DemoStep("Retain a recipe: one commit, digest pinned",
                              f"librarian retain {source}", receipt_text(receipt)))

    receipt = expose(library, RECIPE)
    steps.append(DemoStep(
        "Expose it as a tool: one commit adding {recipe, digest} to tools.yaml",
        f"librarian expose {RECIPE}", exposure_text(receipt)))

    notes = workspace / "notes.txt"
    notes.write_text("Writing is cheap,\nexecuting is gated.\n", encoding="utf-8")
    command = f"librarian run {RECIPE} --arg file={notes}"
    try:
        start_run(library, RECIPE, {"file": str(notes)})
        refusal = "(unexpectedly ran)"
    except GateRefusal as exc:  # what `librarian run` prints, exit 5
        refusal = error_line(exc.message, exc.hint)
    steps.append(DemoStep("The gate refuses a digest nobody approved: nothing ran",
                          command, refusal, GateRefusal.exit_code))

    review = review_approval(library, RECIPE)
    approval = record_approval(library, review)
    steps.append(DemoStep("Review and approve exactly this digest",
                          f"librarian approve {RECIPE} --yes", approval_text(review, approval)))

    out, err = io.BytesIO(), io.BytesIO()
    record = start_run(library, RECIPE, {"file": str(notes)}, stdout=out, stderr=err)
    steps.append(DemoStep(
        "Run it sync: scrubbed environment, own working directory, declared timeout",
        command, _printed(out.getvalue() + err.getvalue(), record)))

    launched = start_run(library, RECIPE, {"file": str(notes)}, run_async=True)
    steps.append(DemoStep("Run it async: a run id at once, not a result",
                          command + " --async", launched_text(launched)))

    finished = wait_run(library, launched.run_id, timeout=30)
    result = result_receipt(library, finished)
    steps.append(DemoStep("Wait for its result", f"librarian wait {launched.run_id}",
                          _printed((result.output + result.stderr).encode(), finished)))
    steps.append(DemoStep("Every run is recorded", "librarian runs",
                          runs_text(list_runs(library))))

    receipt = withdraw(library, RECIPE)
    steps.append(DemoStep("Withdraw the tool: the recipe stays retained, its usage is kept",
                          f"librarian withdraw {RECIPE}", receipt_text(receipt)))
    return steps


def _printed(output: bytes, record: RunRecord) -> str:
    """What ``run`` and ``wait`` print: the recipe's output, then the note on a run that
    did not succeed."""
    note = run_end_text(record)
    text = output.decode("utf-8", "replace")
    return text + (note + "\n" if note else "")
