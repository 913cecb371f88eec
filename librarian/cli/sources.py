"""Commands for shared libraries: ``source add|set|list|remove``, ``outdated``, ``update``.

Registered on the typer app when ``cli.main`` imports this module for its commands. Each
command parses, calls one library function and prints through ``cli.render``; errors (an
update refused by conflicts too: its message lists them) go to ``cli.main``, the one place
they become exit codes.
Progress of long fetches goes to stderr, when stderr is a terminal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from librarian.cli.app import JsonOpt, app, current_library, emit

if TYPE_CHECKING:
    from librarian.sources.update import UpdateReport

# demo_sources renders like the command line and imports these two names from here.

source_app = typer.Typer(no_args_is_help=True, help="Subscriptions to shared libraries.")
app.add_typer(source_app, name="source")

SourcesArg = Annotated[list[str] | None, typer.Argument(help="Sources (default: all).")]


def _progress() -> Callable[[str], None] | None:
    """The fetch's server messages go to the progress shown on a terminal (cli.progress),
    or nowhere."""
    from librarian.core import progress

    return progress.note if progress.active() else None


@source_app.command("add")
def source_add(
    name: str,
    url: str,
    ref: Annotated[str | None, typer.Option(
        "--ref", help="Branch, tag or ref to follow (default: the branch the remote's HEAD "
        "names, as git clone checks out).")] = None,
    include: Annotated[list[str] | None, typer.Option(
        "--include", help="Gitignore-style pattern over upstream item paths (repeatable).")] = None,
    exclude: Annotated[list[str] | None, typer.Option(
        "--exclude", help="Gitignore-style pattern to leave out (repeatable).")] = None,
    trust: Annotated[list[str] | None, typer.Option(
        "--trust", help="A trusted signing key: an 'ssh-ed25519 AAAA…' line, a .pub file or a "
        "host's <user>.keys list (repeatable); the source then installs only signed releases."
    )] = None,
    as_json: JsonOpt = False,
) -> None:
    """Subscribe to a shared library (one commit to library.yaml; nothing is fetched)."""
    from librarian.cli.render import receipt_text
    from librarian.sources.subscriptions import add_source

    receipt = add_source(current_library(), name, url, ref=ref, include=tuple(include or ()),
                         exclude=tuple(exclude or ()), trust=tuple(trust or ()))
    emit(receipt, as_json, receipt_text(receipt))


@source_app.command("set")
def source_set(
    name: str,
    url: Annotated[str | None, typer.Option("--url", help="A new URL (the pins are kept).")] = None,
    ref: Annotated[str | None, typer.Option(
        "--ref", help="A new branch, tag or ref to follow (the pins are kept).")] = None,
    include: Annotated[list[str] | None, typer.Option(
        "--include", help="Replace the include patterns (repeatable; '' clears them).")] = None,
    exclude: Annotated[list[str] | None, typer.Option(
        "--exclude", help="Replace the exclude patterns (repeatable; '' clears them).")] = None,
    trust: Annotated[list[str] | None, typer.Option(
        "--trust", help="Replace the trusted signing keys (repeatable; '' clears them: the "
        "source becomes unsigned).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a subscription (one commit to library.yaml; the lock is kept until `update`)."""
    from librarian.cli.render import receipt_text
    from librarian.sources.setsource import set_source

    receipt = set_source(current_library(), name, url=url, ref=ref,
                         include=tuple(include) if include is not None else None,
                         exclude=tuple(exclude) if exclude is not None else None,
                         trust=tuple(trust) if trust is not None else None)
    emit(receipt, as_json, receipt_text(receipt))


@source_app.command("list")
def source_list(as_json: JsonOpt = False) -> None:
    """Sources with their ref, installed commit and item count."""
    from librarian.cli.render_sources import sources_json, sources_text
    from librarian.sources.subscriptions import list_sources

    infos = list_sources(current_library())
    emit(sources_json(infos), as_json, sources_text(infos))


@source_app.command("remove")
def source_remove(
    name: str,
    force: Annotated[bool, typer.Option(
        "--force", help="Back up local edits in the collection, then remove it.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Unsubscribe and remove the managed collection (one commit)."""
    from librarian.cli.render_sources import source_removed_text
    from librarian.sources.subscriptions import remove_source

    receipt = remove_source(current_library(), name, force=force)
    emit(receipt, as_json, source_removed_text(receipt))


#: ``outdated`` exits with this when something is outdated (0: all up to date). Distinct
#: from 0-5 (spec §3.4), as ``npm outdated`` exits 1; see docs/commands.md.
EXIT_OUTDATED = 10

DiffOpt = Annotated[bool, typer.Option(
    "--diff", help="Show the content each planned change installs (upstream against HEAD) "
    "and what each merge writes into your edited files.")]


def _emit_plan(report: UpdateReport, diff: bool, content: str | None, as_json: bool) -> None:
    """The report on stdout; each source refused on its own (a signed release that
    failed) as one error line on stderr, and exit 4 (the others were planned or
    installed)."""
    from librarian.cli.render import error_line
    from librarian.cli.render_sources import update_output_text, update_report_json

    if as_json:
        document = update_report_json(report)
        if content is not None:
            document["diff"] = content
        emit(document, True)
    else:
        emit(None, False, update_output_text(report, diff, content))
    for refused in report.refused:
        typer.echo(error_line(refused.error, refused.hint), err=True)
    if report.refused:
        from librarian.errors import TrustError

        raise typer.Exit(TrustError.exit_code)


@app.command()
def outdated(names: SourcesArg = None, diff: DiffOpt = False, as_json: JsonOpt = False) -> None:
    """Fetch and show what `update` would do per item; changes nothing. Exit 10 when
    something is outdated."""
    from librarian.sources.plandiff import preview

    shown = preview(current_library(), names or (), dry_run_of_update=False,
                    progress=_progress(), diff=diff)
    _emit_plan(shown.report, diff, shown.diff if diff else None, as_json)
    if shown.report.plans and not shown.report.up_to_date:
        raise typer.Exit(EXIT_OUTDATED)


@app.command()
def update(
    names: SourcesArg = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan only.")] = False,
    force: Annotated[bool, typer.Option(
        "--force", help="Back up conflicting local edits, then overwrite them.")] = False,
    merge_conflicts: Annotated[bool, typer.Option(
        "--merge-conflicts", help="Install upstream's version and write each conflicting "
        "file into the work tree with git-style markers (resolve, then `librarian resolve "
        "NAME`).")] = False,
    diff: DiffOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Fetch sources, plan, and install the new collections in one commit."""
    from librarian.sources.update import update as run_update

    if dry_run:
        # Only a dry run shows content diffs (librarian.content.patch): imported for it.
        from librarian.sources.plandiff import preview

        shown = preview(current_library(), names or (), progress=_progress(), diff=diff)
        _emit_plan(shown.report, diff, shown.diff if diff else None, as_json)
        return
    report = run_update(current_library(), names or (), force=force,
                        merge_conflicts=merge_conflicts, progress=_progress())
    _emit_plan(report, diff, None, as_json)


@app.command()
def resolve(name: str, as_json: JsonOpt = False) -> None:
    """End a conflict `update --merge-conflicts` left, once its markers are gone (no
    commit: what you kept is a local edit)."""
    from librarian.cli.render import receipt_text
    from librarian.sources.conflicted import resolve as run_resolve

    receipt = run_resolve(current_library(), name)
    emit(receipt, as_json, receipt_text(receipt))
