"""Commands of exposure and the execution gate: expose, withdraw, approve, run, runs, wait.

A sync run's output is streamed here (the library copies it into the file objects this
module passes) and its exit code passed through: the recipe's own, 124 when it timed out,
125 when it was lost, 126 when it could not be started.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from librarian.cli.app import JsonOpt, app, current_library, current_stack, emit, jsonable
from librarian.errors import UsageError

if TYPE_CHECKING:
    from librarian.gate.runs import RunRecord

EXIT_TIMED_OUT = 124
EXIT_LOST = 125
EXIT_NOT_STARTED = 126
EXIT_STILL_RUNNING = 3


@app.command()
def expose(
    recipe: Annotated[str, typer.Argument(help="A retained recipe (name or path).")],
    as_tool: Annotated[str | None, typer.Option("--as", help="The tool's name.")] = None,
    refresh: Annotated[bool, typer.Option(
        "--refresh", help="Re-pin an exposed tool to the recipe's current digest.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Offer a retained recipe to the agent as a named tool (one commit to tools.yaml)."""
    from librarian.cli.render import exposure_text
    from librarian.gate.exposure import expose as expose_recipe

    receipt = expose_recipe(current_library(), recipe, as_tool=as_tool, refresh=refresh)
    emit(receipt, as_json, exposure_text(receipt))


@app.command()
def withdraw(
    tool: Annotated[str, typer.Argument(help="An exposed tool.")], as_json: JsonOpt = False
) -> None:
    """Remove a tool from tools.yaml; the recipe stays retained."""
    from librarian.cli.render import receipt_text
    from librarian.gate.exposure import withdraw as withdraw_tool

    receipt = withdraw_tool(current_library(), tool)
    emit(receipt, as_json, receipt_text(receipt))


@app.command()
def approve(
    name: Annotated[str, typer.Argument(help="A tool or recipe.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
    = False,
    as_json: JsonOpt = False,
) -> None:
    """Show the recipe (or its diff since the last approval) and approve its digest.

    Asked only on a terminal without --yes or --json; otherwise the command itself is the
    decision: it approves the digest it shows."""
    from librarian.cli.render import approval_review_text, approval_text, receipt_text
    from librarian.gate.checks import ApprovalReview
    from librarian.gate.checks import approve as approve_recipe

    def confirm(review: ApprovalReview) -> bool:
        typer.echo(approval_review_text(review))
        return typer.confirm(f"approve {review.path} at {review.digest[:19]}… to run?")

    interactive = not yes and not as_json and sys.stdin.isatty()
    approval = approve_recipe(current_library(), name, confirm if interactive else None)
    if as_json:
        document = jsonable(approval.receipt)
        document["files"] = [jsonable(f) for f in approval.review.files]
        document["diff"] = approval.review.diff
        emit(document, True)
        return
    typer.echo(receipt_text(approval.receipt) if interactive
               else approval_text(approval.review, approval.receipt))


def _parse_args(pairs: list[str]) -> dict[str, str]:
    values: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--arg {pair!r} must be KEY=VALUE")
        if key in values:
            raise UsageError(f"--arg {key} is given twice")
        values[key] = value
    return values


def _exit_code(record: RunRecord) -> int:
    if record.status == "timed_out":
        return EXIT_TIMED_OUT
    if record.status == "lost":
        return EXIT_LOST
    if record.exit_code is None:
        return EXIT_NOT_STARTED if record.terminal else EXIT_STILL_RUNNING
    return record.exit_code


def _end_note(record: RunRecord) -> None:
    from librarian.cli.render import not_enforced_text, run_end_text

    for note in (not_enforced_text(record), run_end_text(record)):
        if note is not None:
            typer.echo(note, err=True)


@app.command()
def run(
    name: Annotated[str, typer.Argument(help="A tool or a retained recipe.")],
    arg: Annotated[list[str] | None, typer.Option(
        "--arg", help="An input as KEY=VALUE (repeatable).")] = None,
    run_async: Annotated[bool, typer.Option(
        "--async", help="Launch and return at once with a run id.")] = False,
    yes: Annotated[bool, typer.Option(
        "--yes", "-y", help="Approve the recipe's current digest and run.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run a tool or recipe through the execution gate."""
    from librarian.gate.runner import start_run
    from librarian.gate.runs import launch_receipt, result_receipt
    from librarian.layers.union import holder

    # The layer holding the name runs it, through its own gate and approvals.
    library = holder(current_stack(), name, tools=True).library
    args = _parse_args(arg or [])
    if not as_json:
        sys.stdout.flush()
        sys.stderr.flush()
    record = start_run(library, name, args, run_async=run_async, approve_now=yes,
                       stdout=None if as_json else sys.stdout.buffer,
                       stderr=None if as_json else sys.stderr.buffer)
    if record.mode == "async" and record.status == "launched":
        from librarian.cli.render import launched_text

        emit(launch_receipt(record), as_json, launched_text(record))
        return
    if as_json:
        emit(result_receipt(library, record), True)
    else:
        _end_note(record)
    code = _exit_code(record)
    if code:
        raise typer.Exit(code)


#: How many of the newest runs ``runs --prune`` keeps when ``--keep`` is not given.
DEFAULT_KEEP = 50


@app.command()
def runs(
    prune: Annotated[bool, typer.Option(
        "--prune", help="Delete the records of finished runs beyond the newest --keep.")]
    = False,
    keep: Annotated[int | None, typer.Option(
        "--keep", help="With --prune: how many of the newest runs to keep (default 50).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Recorded runs with their status, newest first (or --prune the old ones)."""
    from librarian.cli.render import pruned_text, run_json, runs_text
    from librarian.gate.prune import prune_runs
    from librarian.gate.runs import list_runs

    if keep is not None and not prune:
        # git-like: an option that only means something with another is refused without it
        raise UsageError("--keep is how many runs --prune keeps; without --prune it does "
                         "nothing", hint=f"librarian runs --prune --keep {keep}")
    library = current_library()
    if prune:
        kept = DEFAULT_KEEP if keep is None else keep
        pruned = prune_runs(library, kept)
        emit({"kind": "runs_pruned", "pruned": [run_json(r) for r in pruned], "kept": kept},
             as_json, pruned_text(pruned))
        return
    records = list_runs(library)
    emit({"kind": "runs", "runs": [run_json(r) for r in records]}, as_json, runs_text(records))


@app.command()
def wait(
    run_id: Annotated[str | None, typer.Argument(
        help="A run id from `run --async` or `runs` (default: the newest run).")] = None,
    timeout: Annotated[float | None, typer.Option(
        "--timeout", help="Give up waiting after S seconds (exit 3; the run goes on).")]
    = None,
    as_json: JsonOpt = False,
) -> None:
    """Block until a run ends; print its result and pass its exit code through."""
    from librarian.gate.prune import newest_run_id
    from librarian.gate.runs import result_receipt, wait_run

    library = current_library()
    record = wait_run(library, run_id or newest_run_id(library), timeout)
    receipt = result_receipt(library, record)
    if as_json:
        emit(receipt, True)
    else:
        if receipt.output:
            sys.stdout.write(receipt.output)
        if receipt.stderr:
            sys.stderr.write(receipt.stderr)
        sys.stdout.flush()
        _end_note(record)
    code = _exit_code(record)
    if code:
        raise typer.Exit(code)
