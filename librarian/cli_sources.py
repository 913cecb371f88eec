"""Commands for shared libraries: ``source add|list|remove``, ``outdated``, ``update``.

Registered on the typer app by one import line in ``cli.py``. Each command parses, calls one
library function and prints; progress of long fetches goes to stderr, on a terminal only.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .cliapp import JsonOpt, app, current_library, emit, jsonable

if TYPE_CHECKING:
    from .update import SourcePlan, UpdateReport

source_app = typer.Typer(no_args_is_help=True, help="Subscriptions to shared libraries.")
app.add_typer(source_app, name="source")

SourcesArg = Annotated[list[str] | None, typer.Argument(help="Sources (default: all).")]


def _progress(as_json: bool) -> Any:
    """A progress callback writing to stderr, or None when stdout is not a terminal."""
    if as_json or not sys.stdout.isatty():
        return None

    def show(text: str) -> None:
        sys.stderr.write(text)
        sys.stderr.flush()

    return show


@source_app.command("add")
def source_add(
    name: str,
    url: str,
    ref: Annotated[str, typer.Option("--ref", help="Branch, tag or ref to follow.")] = "main",
    include: Annotated[list[str] | None, typer.Option(
        "--include", help="Gitignore-style pattern over upstream item paths (repeatable).")] = None,
    exclude: Annotated[list[str] | None, typer.Option(
        "--exclude", help="Gitignore-style pattern to leave out (repeatable).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Subscribe to a shared library (one commit to library.yaml; nothing is fetched)."""
    from .render import receipt_text
    from .sources import add_source

    receipt = add_source(current_library(), name, url, ref=ref, include=tuple(include or ()),
                         exclude=tuple(exclude or ()))
    emit(receipt, as_json, receipt_text(receipt))


@source_app.command("list")
def source_list(as_json: JsonOpt = False) -> None:
    """Sources with their ref, installed commit and item count."""
    from .sources import list_sources

    infos = list_sources(current_library())
    lines = [f"{s.name:<20} {s.url} ({s.ref}) "
             + (f"at {s.commit[:12]}, {s.items} items" if s.commit else "not installed yet")
             for s in infos]
    emit({"kind": "sources", "sources": [jsonable(s) for s in infos]}, as_json,
         "\n".join(lines) if lines else "(no sources)")


@source_app.command("remove")
def source_remove(
    name: str,
    force: Annotated[bool, typer.Option(
        "--force", help="Back up local edits in the collection, then remove it.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Unsubscribe and remove the managed collection (one commit)."""
    from .render import receipt_text
    from .sources import remove_source

    receipt = remove_source(current_library(), name, force=force)
    text = receipt_text(receipt)
    if receipt.details.get("backup"):
        text += f"\n  local edits saved in {receipt.details['backup']}; restore with:"
        text += "".join(f"\n    {c}" for c in receipt.details["restore"])
    emit(receipt, as_json, text)


@app.command()
def outdated(names: SourcesArg = None, as_json: JsonOpt = False) -> None:
    """Fetch and show what `update` would do per item; changes nothing."""
    from .update import outdated as plan_outdated

    report = plan_outdated(current_library(), names or (), progress=_progress(as_json))
    emit(report_json(report) if as_json else None, as_json, report_text(report))


@app.command()
def update(
    names: SourcesArg = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan only.")] = False,
    force: Annotated[bool, typer.Option(
        "--force", help="Back up conflicting local edits, then overwrite them.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Fetch sources, plan, and install the new collections in one commit."""
    from .update import UpdateConflict
    from .update import update as run_update

    try:
        report = run_update(current_library(), names or (), dry_run=dry_run, force=force,
                            progress=_progress(as_json))
    except UpdateConflict as exc:
        # The plan is the useful part of this refusal: print it, then fail with exit 3.
        if as_json:
            emit({"kind": "error", "error": exc.message, "exit_code": exc.exit_code,
                  "hint": exc.hint, "conflicts": [jsonable(c) for p in exc.plans
                                                   for c in p.conflicts],
                  "plans": [plan_json(p) for p in exc.plans]}, True)
        else:
            typer.echo("\n".join(_plan_lines(exc.plans)))
        typer.echo(f"librarian: error: {exc.message}", err=True)
        typer.echo(f"librarian: hint: {exc.hint}", err=True)
        raise typer.Exit(exc.exit_code) from None
    emit(report_json(report) if as_json else None, as_json, report_text(report))


# -- rendering ------------------------------------------------------------------------


def plan_json(plan: SourcePlan) -> dict[str, Any]:
    return {
        "source": plan.source, "url": plan.url, "ref": plan.ref,
        "old_commit": plan.old_commit, "new_commit": plan.new_commit,
        "counts": plan.counts(),
        "items": [jsonable(i) for i in plan.items],
        "skipped": [jsonable(s) for s in plan.skipped],
        "filtered_out": plan.filtered_out,
    }


def report_json(report: UpdateReport) -> dict[str, Any]:
    names = [p.source for p in report.plans]
    return {
        "kind": report.kind,
        "name": ",".join(names),
        "path": ",".join(f"sources/{n}" for n in names),
        "digest": None,
        "commit": report.commit,
        "dry_run": report.dry_run,
        "forced": report.forced,
        "up_to_date": report.up_to_date,
        "plans": [plan_json(p) for p in report.plans],
        "backups": [{"ref": b.ref, "commit": b.commit, "paths": list(b.paths),
                     "restore": list(b.restore)} for b in report.backups],
        "stale_tools": list(report.stale_tools),
        "warnings": list(report.warnings),
    }


def _plan_lines(plans: tuple[SourcePlan, ...]) -> list[str]:
    lines = []
    for plan in plans:
        old = plan.old_commit[:12] if plan.old_commit else "(not installed)"
        lines.append(f"{plan.source}: {old} -> {plan.new_commit[:12]} ({plan.url} {plan.ref})")
        for item in plan.items:
            if item.action != "keep" or item.local_edit or item.work is None:
                lines.append(f"  {item.action:<9} {item.name:<28} {item.reason}")
        counts = plan.counts()
        lines.append("  " + ", ".join(f"{v} {k}" for k, v in counts.items() if v))
        for skipped in plan.skipped:
            lines.append(f"  skipped   {skipped.path}: {'; '.join(skipped.problems)}")
    return lines


def report_text(report: UpdateReport) -> str:
    lines = _plan_lines(report.plans)
    if not report.plans:
        return "no sources to update: subscribe with `librarian source add NAME URL`"
    if report.up_to_date:
        lines.append("already up to date: nothing to change, no commit made")
    elif report.kind == "outdated" or report.dry_run:
        lines.append("dry run: nothing was changed" if report.dry_run
                     else "run `librarian update` to install these changes")
    elif report.commit:
        lines.append(f"updated in {report.commit[:12]}")
    for backup in report.backups:
        lines.append(f"local edits saved in {backup.ref}; restore each with:")
        lines += [f"  {command}" for command in backup.restore]
    for tool in report.stale_tools:
        lines.append(f"tool {tool} is now stale: its recipe changed; review and expose it again")
    return "\n".join(lines)
