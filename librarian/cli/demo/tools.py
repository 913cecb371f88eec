"""The demo's part on tools: expose a retained recipe, meet the gate, run it sync and async,
wait for the result, withdraw it. Each step calls the library as the command line does."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

from librarian.cli.demo.steps import DemoStep
from librarian.cli.render import (
    approval_review_text,
    error_line,
    receipt_text,
    runs_text,
    usage_text,
)
from librarian.core.resources import examples_dir
from librarian.errors import GateRefusal
from librarian.gate.checks import record_approval, review_approval
from librarian.gate.exposure import expose, withdraw
from librarian.gate.ledger import usage_by_recipe
from librarian.gate.runner import start_run
from librarian.gate.runs import launch_receipt, list_runs, wait_run
from librarian.ops.retention import retain
from librarian.store.library import Library
from librarian.store.snapshot import Snapshot

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
    callable_line = "callable now" if receipt.callable_now else (
        f"not callable now: {receipt.reason}")
    steps.append(DemoStep(
        "Expose it as a tool: one commit adding {recipe, digest} to tools.yaml",
        f"librarian expose {RECIPE}", receipt_text(receipt) + f"\n  {callable_line}"))

    notes = workspace / "notes.txt"
    notes.write_text("Writing is cheap,\nexecuting is gated.\n", encoding="utf-8")
    command = f"librarian run {RECIPE} --arg file={notes}"
    try:
        start_run(library, RECIPE, {"file": str(notes)})
        refusal = "(unexpectedly ran)"
    except GateRefusal as exc:
        refusal = f"{error_line(exc.message, exc.hint)}\n(exit 5)"
    steps.append(DemoStep("The gate refuses a digest nobody approved (exit 5, nothing ran)",
                          command, refusal))

    review = review_approval(library, RECIPE)
    approval = record_approval(library, review)
    steps.append(DemoStep("Review and approve exactly this digest",
                          f"librarian approve {RECIPE}",
                          approval_review_text(review) + "\n" + receipt_text(approval)))

    out, err = io.BytesIO(), io.BytesIO()
    record = start_run(library, RECIPE, {"file": str(notes)}, stdout=out, stderr=err)
    steps.append(DemoStep(
        "Run it sync: scrubbed environment, own working directory, declared timeout",
        command, (out.getvalue() + err.getvalue()).decode("utf-8", "replace")
        + f"({record.status}, exit {record.exit_code}, run {record.run_id})"))

    launched = start_run(library, RECIPE, {"file": str(notes)}, run_async=True)
    steps.append(DemoStep("Run it async: a launch receipt at once, not a result",
                          command + " --async", receipt_text(launch_receipt(launched))
                          + f"\n  run {launched.run_id}: {launched.status}"))

    finished = wait_run(library, launched.run_id, timeout=30)
    output = ""
    if finished.terminal:
        output = (library.state_dir / "runs" / finished.run_id / "stdout").read_text(
            encoding="utf-8", errors="replace")
    steps.append(DemoStep("Wait for its result", f"librarian wait {launched.run_id}",
                          output + f"({finished.status}, exit {finished.exit_code})"))
    steps.append(DemoStep("Every run is recorded", "librarian runs",
                          runs_text(list_runs(library))))

    receipt = withdraw(library, RECIPE)
    usage = usage_by_recipe(library).get(f"recipes/{RECIPE}")
    usage_line = usage_text(dataclasses.asdict(usage)) if usage is not None else "never run"
    steps.append(DemoStep("Withdraw the tool: the recipe stays retained, its usage is kept",
                          f"librarian withdraw {RECIPE}",
                          receipt_text(receipt) + f"\n  usage of recipes/{RECIPE}: {usage_line}"))
    return steps
