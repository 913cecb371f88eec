"""Commands of the foundation: init, retain, reading the library (inspect, cat, status,
diff, log, check), recover, hooks, demo.

Each command parses, calls one library function, prints. Library modules are imported
inside commands so that a command pays only for what it uses.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from librarian.cli.app import JsonOpt, app, current_library, current_stack, emit, jsonable
from librarian.errors import UsageError

hooks_app = typer.Typer(no_args_is_help=True, help="Git hooks for plain-git users.")
app.add_typer(hooks_app, name="hooks")


@app.command()
def init(
    path: Annotated[Path, typer.Argument(help="Directory for the new library.")] = Path(),
    name: Annotated[str | None, typer.Option("--name", help="Library name.")] = None,
    own_repo: Annotated[bool, typer.Option(
        "--own-repo", help="A repository of its own, even inside a git work tree.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Create a new library from the template, with its first commit (inside a git work
    tree: a folder of that repository, committed with the project)."""
    from librarian.agents.claude_manifests import GENERATED
    from librarian.cli.render import receipt_text
    from librarian.ops.create import init_library

    receipt = init_library(path, name, GENERATED, own_repo=own_repo)
    emit(receipt, as_json, receipt_text(receipt))


@app.command()
def retain(
    sources: Annotated[list[Path], typer.Argument(
        help="Skill or recipe directories, or .md files: all in one commit, or none.")],
    name: Annotated[str | None, typer.Option("--name", help="Assert the item's name.")] = None,
    draft: Annotated[bool, typer.Option("--draft", help="Admit into drafts/.")] = False,
    evidence: Annotated[str | None, typer.Option("--evidence", help="Why it is kept.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Admit skills or recipes (create-only), as one commit."""
    from librarian.cli.render import receipt_text
    from librarian.ops.retention import retain_all

    receipts = retain_all(current_library(), sources, name=name, draft=draft,
                          evidence=evidence)
    if len(receipts) == 1:
        emit(receipts[0], as_json, receipt_text(receipts[0]))
        return
    document = {"kind": "retained_items", "name": None, "path": None, "digest": None,
                "commit": receipts[0].commit,
                "warnings": [w for r in receipts for w in r.warnings],
                "items": [r.to_json() for r in receipts]}
    emit(document, as_json, "\n".join(receipt_text(r) for r in receipts))


@app.command()
def inspect(
    section: Annotated[str | None, typer.Argument(
        help="skills, recipes, drafts, tools or sources; or one item's NAME.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Read-only inventory with paths and diagnostics; `inspect NAME`: one item whole."""
    from librarian.cli.render import inventory_text
    from librarian.ops.inventory import SECTIONS, inspect_library

    if section is not None and section not in SECTIONS:
        from librarian.cli.render_item import holdings_text, item_report_text
        from librarian.layers.reading import inspect_layered

        found = inspect_layered(current_stack(), section)
        document = {"kind": "item", **jsonable(found.report)}
        if found.layers:
            document.update(layer=found.layer,
                            layers=[jsonable(held) for held in found.layers])
        emit(document if as_json else None, as_json,
             item_report_text(found.report) + holdings_text(found.layers))
        return
    inventory = inspect_library(current_library(), section, verbose=verbose)
    emit({"kind": "inventory", **jsonable(inventory)} if as_json else None, as_json,
         inventory_text(inventory, verbose))


@app.command()
def cat(name: str, as_json: JsonOpt = False) -> None:
    """Print the item's body (SKILL.md or recipe.yaml) as committed."""
    from librarian.layers.reading import cat_layered

    found = cat_layered(current_stack(), name)
    text = found.body.decode("utf-8", "replace")
    if as_json:
        emit({"kind": "body", "name": found.name, "path": found.path, "file": found.file,
              "digest": found.digest, "commit": found.commit, "body": text}, True)
    else:
        sys.stdout.write(text)


@app.command()
def status(
    check: Annotated[bool, typer.Option(
        "--check", help="Exit 3 when not clean, or when check rejects a generated file.")]
    = False,
    as_json: JsonOpt = False,
) -> None:
    """Per item: clean, modified, missing, untracked; stale tools."""
    from librarian.cli.render import status_text
    from librarian.ops.status import library_status

    report = library_status(current_library(), judge_generated=check)
    emit({"kind": "status", "clean": report.clean, **jsonable(report)} if as_json else report,
          as_json, status_text(report))
    if check and not report.clean:
        raise typer.Exit(3)


@app.command()
def diff(name: Annotated[str | None, typer.Argument()] = None, as_json: JsonOpt = False) -> None:
    """Unified diff of local edits against the committed content."""
    from librarian.ops.diffing import diff_library

    text = diff_library(current_library(), name)
    if as_json:
        emit({"kind": "diff", "name": name, "diff": text}, True)
    else:
        sys.stdout.write(text)


@app.command()
def log(
    name: Annotated[str | None, typer.Argument()] = None,
    limit: Annotated[int | None, typer.Option("--limit", "-n")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Retention events with their trailers, newest first."""
    from librarian.cli.render import log_text
    from librarian.ops.history import read_log

    entries = read_log(current_library(), name, limit)
    emit({"kind": "log", "events": entries} if as_json else None, as_json,
         log_text(entries) if limit != 0 else None)  # `-n 0` prints nothing, as git


@app.command()
def check(
    staged: Annotated[bool, typer.Option("--staged", help="Check the git index.")] = False,
    index_file: Annotated[Path | None, typer.Option(
        "--index-file", help="With --staged: the index to check (the hook passes git's).")
    ] = None,
    commit: Annotated[str | None, typer.Option(
        "--commit", help="Check the committed tree of REV (works in a bare repository).")
    ] = None,
    git_dir: Annotated[Path | None, typer.Option(
        "--git-dir", help="With --commit: the repository (default: --library, else here).")
    ] = None,
    objects: Annotated[list[Path] | None, typer.Option(
        "--objects", hidden=True, help="More object directories (a push's quarantine).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Validate the whole library; exit 2 when anything is wrong."""
    from librarian.cli.render import check_text

    if commit is not None:
        from librarian.agents.claude_manifests import GENERATED
        from librarian.cli.app import State
        from librarian.ops.checking import check_commit

        where = git_dir or State.library or Path.cwd()
        report = check_commit(where.absolute(), commit, GENERATED, tuple(objects or ()))
    else:
        from librarian.layers.reading import check_layered

        report = check_layered(current_stack(), staged=staged, index_file=index_file)
    if as_json:
        emit({"kind": "check", "ok": report.ok, **jsonable(report)}, True)
    else:
        emit(None, False, check_text(report))  # the report is output; the error is one line
    if not report.ok:
        if as_json:
            raise typer.Exit(2)  # the one document already says ok: false
        raise UsageError(f"{len(report.problems)} problem(s) found")


@app.command()
def recover(as_json: JsonOpt = False) -> None:
    """Finish or roll back an interrupted change."""
    from librarian.txn import recover_library

    outcome = recover_library(current_library())
    message = outcome or "nothing to recover"
    emit({"kind": "recover", "outcome": message}, as_json, message)


@hooks_app.command("install")
def hooks_install(
    force: Annotated[bool, typer.Option("--force")] = False,
    server: Annotated[bool, typer.Option(
        "--server", help="In a bare repository on the host: the pre-receive gate.")] = False,
    git_dir: Annotated[Path | None, typer.Option(
        "--git-dir", help="With --server: the bare repository (default: here).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Copy the hooks to where git runs them (.git/hooks or core.hooksPath) and register
    the merge driver of the generated files; with --server, the gate of a bare repository."""
    if server:
        from librarian.ops.hooks import install_server_hook

        installed = install_server_hook((git_dir or Path.cwd()).absolute(), force=force)
        emit({"kind": "hooks", "installed": installed, "path": None, "backups": [],
              "merge_driver": []}, as_json, "installed " + ", ".join(installed))
        return
    from librarian.ops.hooks import install_hooks_and_driver

    done, merged = install_hooks_and_driver(current_library(), force=force)
    kept = "".join(f"\n  the hook that was there is kept as {backup}" for backup in done.backups)
    driver = f"; merge driver for {', '.join(merged)}" if merged else ""
    emit({"kind": "hooks", **jsonable(done), "merge_driver": merged}, as_json,
         f"installed {', '.join(done.installed)} in {done.path}{driver}{kept}")


@app.command()
def demo(
    directory: Annotated[Path | None, typer.Argument(help="Where to build the demo.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """A guided tour on a throw-away library."""
    from librarian.cli.demo.tour import run_demo

    steps = run_demo(directory)
    if as_json:
        emit({"kind": "demo", "steps": steps}, True)
        return
    for step in steps:
        typer.echo(f"\n== {step.title}\n$ {step.command}")
        if step.output:
            typer.echo(step.output.rstrip("\n"))
        if step.exit_code:
            typer.echo(f"[exit {step.exit_code}]")
