"""Commands of the foundation (init, retain, reading the library) and the entry point.

Each command parses, calls one library function, prints. Errors are mapped to exit codes
and the one-line ``librarian: error: …`` format in ``main`` and nowhere else. Library
modules are imported inside commands so that a command pays only for what it uses.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import click
import typer

from .cliapp import JsonOpt, app, current_library, emit, jsonable
from .errors import LibrarianError

hooks_app = typer.Typer(no_args_is_help=True, help="Git hooks for plain-git users.")
app.add_typer(hooks_app, name="hooks")


@app.command()
def init(
    path: Annotated[Path, typer.Argument(help="Directory for the new library.")] = Path(),
    name: Annotated[str | None, typer.Option("--name", help="Library name.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a new library from the template, with its first commit."""
    from .create import init_library
    from .render import receipt_text

    receipt = init_library(path, name)
    emit(receipt, as_json, receipt_text(receipt))


@app.command()
def retain(
    source: Annotated[Path, typer.Argument(help="A skill or recipe directory, or one .md file.")],
    name: Annotated[str | None, typer.Option("--name", help="Assert the item's name.")] = None,
    draft: Annotated[bool, typer.Option("--draft", help="Admit into drafts/.")] = False,
    evidence: Annotated[str | None, typer.Option("--evidence", help="Why it is kept.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Admit a skill or recipe (create-only), as one commit."""
    from .render import receipt_text
    from .retention import retain as retain_item

    receipt = retain_item(current_library(), source, name=name, draft=draft, evidence=evidence)
    emit(receipt, as_json, receipt_text(receipt))


@app.command()
def inspect(
    section: Annotated[str | None, typer.Argument(
        help="skills, recipes, drafts, tools or sources.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Read-only inventory with paths and diagnostics."""
    from .inventory import inspect_library
    from .render import inventory_text

    inventory = inspect_library(current_library(), section, verbose=verbose)
    emit({"kind": "inventory", **jsonable(inventory)} if as_json else None, as_json,
         inventory_text(inventory, verbose))


@app.command()
def cat(name: str, as_json: JsonOpt = False) -> None:
    """Print the item's body (SKILL.md or recipe.yaml) as committed."""
    from .inventory import cat_item

    body = cat_item(current_library(), name)
    if as_json:
        emit({"kind": "body", "name": name, "body": body.decode("utf-8", "replace")}, True)
    else:
        sys.stdout.write(body.decode("utf-8", "replace"))


@app.command()
def status(
    check: Annotated[bool, typer.Option("--check", help="Exit 3 when not clean.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Per item: clean, modified, missing, untracked; stale tools."""
    from .render import status_text
    from .status import library_status

    report = library_status(current_library())
    emit({"kind": "status", "clean": report.clean, **jsonable(report)} if as_json else report,
          as_json, status_text(report))
    if check and not report.clean:
        raise typer.Exit(3)


@app.command()
def diff(name: Annotated[str | None, typer.Argument()] = None, as_json: JsonOpt = False) -> None:
    """Unified diff of local edits against the committed content."""
    from .diffing import diff_library

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
    from .history import read_log
    from .render import log_text

    entries = read_log(current_library(), name, limit)
    emit({"kind": "log", "events": entries} if as_json else None, as_json, log_text(entries))


@app.command()
def check(
    staged: Annotated[bool, typer.Option("--staged", help="Check the git index.")] = False,
    index_file: Annotated[Path | None, typer.Option(
        "--index-file", help="With --staged: the index to check (the hook passes git's).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Validate the whole library; exit 2 when anything is wrong."""
    from .checking import check_library
    from .render import check_text

    report = check_library(current_library(), staged=staged, index_file=index_file)
    if as_json:
        emit({"kind": "check", "ok": report.ok, **jsonable(report)}, True)
    else:
        typer.echo(check_text(report))  # the report is output; the error is one line
    if not report.ok:
        if not as_json:
            typer.echo(f"librarian: error: {len(report.problems)} problem(s) found", err=True)
        raise typer.Exit(2)


@app.command()
def recover(as_json: JsonOpt = False) -> None:
    """Finish or roll back an interrupted change."""
    from .recovery import recover_library

    outcome = recover_library(current_library())
    message = outcome or "nothing to recover"
    emit({"kind": "recover", "outcome": message}, as_json, message)


@hooks_app.command("install")
def hooks_install(
    force: Annotated[bool, typer.Option("--force")] = False, as_json: JsonOpt = False
) -> None:
    """Copy the project's hooks into the library's .git/hooks (copies, not links)."""
    from .hooks import install_hooks

    installed = install_hooks(current_library(), force=force)
    emit({"kind": "hooks", "installed": installed}, as_json,
          "installed " + ", ".join(installed))


@app.command()
def demo(
    directory: Annotated[Path | None, typer.Argument(help="Where to build the demo.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """A guided tour on a throw-away library."""
    from .demo import run_demo

    steps = run_demo(directory)
    if as_json:
        emit({"kind": "demo", "steps": steps}, True)
        return
    for step in steps:
        typer.echo(f"\n== {step.title}\n$ {step.command}")
        if step.output:
            typer.echo(step.output.rstrip("\n"))


# Command modules of later capabilities register their commands on `app` when imported.
# typer inspects every registered command when it starts (~20 ms for these modules), so a
# command line imports only the module of its own command; help, an unknown command or no
# command imports them all. tests/test_cli_exit_codes.py holds this table to the modules.
COMMAND_MODULES = {
    **dict.fromkeys(("review", "promote", "discard", "defer", "revise", "retire", "restore",
                     "hide", "show", "resident", "prompt"), "cli_skills"),
    **dict.fromkeys(("expose", "withdraw", "approve", "run", "runs", "wait"), "cli_tools"),
    **dict.fromkeys(("source", "outdated", "update"), "cli_sources"),
}
FOUNDATION_COMMANDS = frozenset(
    ("init", "retain", "inspect", "cat", "status", "diff", "log", "check", "recover", "demo",
     "hooks"))


def register_commands(args: list[str]) -> None:
    """Import the command module(s) the command line ``args`` needs."""
    from importlib import import_module

    command, skip = None, False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--library":
            skip = True  # its value is not the command
        elif arg in ("--help", "-h"):
            break  # the top-level help lists every command
        elif not arg.startswith("-"):
            command = arg
            break
    if command in FOUNDATION_COMMANDS:
        return
    modules = {COMMAND_MODULES[command]} if command in COMMAND_MODULES else set(
        COMMAND_MODULES.values())
    for module in sorted(modules):
        import_module(f"librarian.{module}")


def _fail(
    message: str, code: int, hint: str | None, as_json: bool, details: Any = None
) -> NoReturn:
    if as_json:
        from .render import json_text

        document = {"kind": "error", "error": message, "exit_code": code, "hint": hint,
                    **(details or {})}
        sys.stdout.write(json_text(document) + "\n")
    from .render import error_line

    sys.stderr.write(error_line(message, hint) + "\n")
    raise SystemExit(code)


def _strip_git_environment() -> None:
    """Inherited GIT_* variables would redirect dulwich (GIT_DIR, GIT_INDEX_FILE) or forge
    identities; a library is always the repository it says it is."""
    for key in [k for k in os.environ if k.startswith("GIT_")]:
        del os.environ[key]


def main(argv: list[str] | None = None) -> int:
    """Console entry point: the single place where errors become exit codes."""
    _strip_git_environment()
    args = sys.argv[1:] if argv is None else argv
    as_json = "--json" in args
    register_commands(args)
    try:
        result = app(args=args, prog_name="librarian", standalone_mode=False)
    except LibrarianError as exc:
        _fail(" ".join(exc.message.split("\n")), exc.exit_code, exc.hint, as_json, exc.details)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.exceptions.NoArgsIsHelpError as exc:  # `librarian` or `librarian source`
        if not as_json:
            sys.stdout.write(exc.format_message() + "\n")
        _fail("a command is required", 2, "see the commands above, or `librarian --help`",
              as_json)
    except click.ClickException as exc:  # usage errors found while parsing
        _fail(" ".join(exc.format_message().split()), 2, "see `librarian --help`", as_json)
    except click.exceptions.Abort:
        _fail("aborted", 1, None, as_json)
    except KeyboardInterrupt:
        _fail("interrupted", 130, None, as_json)
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the one place a bug is turned into exit 1
        if os.environ.get("LIBRARIAN_DEBUG"):
            import traceback  # only on this path: it costs ~20 ms to import

            traceback.print_exc()
        _fail(f"internal error: {type(exc).__name__}: {exc}", 1,
              "this is a bug in librarian; rerun with LIBRARIAN_DEBUG=1 for the traceback",
              as_json)
    return int(result) if isinstance(result, int) else 0


def entry() -> None:
    raise SystemExit(main())
