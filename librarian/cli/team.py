"""Commands of a library shared through a git host: sync, clone, and the merge driver git
calls for the generated files (docs/teams.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from librarian.cli.app import JsonOpt, app, current_library, emit, jsonable


@app.command()
def sync(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Fetch and show the plan only.")]
    = False,
    as_json: JsonOpt = False,
) -> None:
    """Publish and receive: replay local commits onto the upstream branch, push."""
    from librarian.ops.sync import sync as sync_library

    report = sync_library(current_library(), dry_run=dry_run)
    branch = report.branch.removeprefix("refs/heads/")
    lines = [f"{report.action} ({branch} at {report.upstream})"]
    for step in report.steps:
        outcome = ("upstream holds it already" if step.replayed_as is None
                   else ("kept" if step.replayed_as == step.commit else
                         f"replayed as {step.replayed_as[:12]}"))
        lines.append(f"  {step.commit[:12]} {step.subject}: {outcome}")
    emit({"kind": "sync", "action": report.action, **jsonable(report)} if as_json else None,
         as_json, "\n".join(lines))


@app.command()
def clone(
    url: Annotated[str, typer.Argument(help="The team library's git URL or path.")],
    directory: Annotated[Path | None, typer.Argument(help="Where (default: from the URL).")]
    = None,
    as_json: JsonOpt = False,
) -> None:
    """Clone a team library and install its hooks and merge driver."""
    from librarian.agents.claude_manifests import GENERATED
    from librarian.ops.hooks import clone_library

    result = clone_library(url, directory, GENERATED)
    emit({"kind": "clone", **jsonable(result)}, as_json,
         f"cloned {result.url} into {result.path}; installed " + ", ".join(result.installed)
         + "; merge driver for " + ", ".join(result.merge_driver))


@app.command("merge-driver", hidden=True)
def merge_driver(
    base: Annotated[Path, typer.Argument(help="%O: the common ancestor's version.")],
    ours: Annotated[Path, typer.Argument(help="%A: ours; the result is written here.")],
    theirs: Annotated[Path, typer.Argument(help="%B: theirs.")],
    path: Annotated[str, typer.Argument(help="%P: the file's path in the library.")],
) -> None:
    """Merge one generated file by meaning (git calls it; `hooks install` registers it)."""
    from librarian.ops.hooks import merge_file

    problem = merge_file(base, ours, theirs, path)
    if problem is not None:
        sys.stderr.write(f"librarian merge-driver: {problem}\n")
        raise typer.Exit(1)
