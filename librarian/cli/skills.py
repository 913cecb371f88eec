"""Commands of the skills lifecycle: review, promote, discard, defer, revise, retire,
restore, hide, show, resident, prompt. Each parses, calls one library function, prints."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from librarian.cli.app import JsonOpt, app, current_library, current_stack, emit

EvidenceOpt = Annotated[
    str | None, typer.Option("--evidence", help="Why it is kept (free text; default unknown).")
]
ReasonOpt = Annotated[str, typer.Option("--reason", help="Why (recorded in the commit).")]


def _receipt(receipt: object, as_json: bool) -> None:
    from librarian.cli.render import receipt_text
    from librarian.core.receipts import Receipt

    assert isinstance(receipt, Receipt)
    emit(receipt, as_json, receipt_text(receipt))


@app.command()
def review(as_json: JsonOpt = False) -> None:
    """Drafts awaiting a decision: kind, age, digest, last decision, evidence."""
    from librarian.cli.render import review_text
    from librarian.ops.review import review_drafts

    report = review_drafts(current_library())
    emit({"kind": "review", "drafts": report.drafts} if as_json else None, as_json,
         review_text(report))


@app.command()
def promote(name: str, evidence: EvidenceOpt = None, as_json: JsonOpt = False) -> None:
    """Move a draft to skills/ or recipes/ by its kind; the digest is unchanged."""
    from librarian.ops.lifecycle import promote as promote_draft

    _receipt(promote_draft(current_library(), name, evidence=evidence), as_json)


@app.command()
def discard(name: str, reason: ReasonOpt, evidence: EvidenceOpt = None,
            as_json: JsonOpt = False) -> None:
    """Remove a draft (drafts only; a retained item is retired)."""
    from librarian.ops.lifecycle import discard as discard_draft

    _receipt(discard_draft(current_library(), name, reason=reason, evidence=evidence), as_json)


@app.command()
def defer(
    name: str,
    reason: ReasonOpt,
    until: Annotated[str | None, typer.Option(
        "--until", help="When to look again: YYYY-MM-DD, or 14d / 2w from today.")] = None,
    evidence: EvidenceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Record a decision to review a draft later; the draft stays."""
    from librarian.ops.lifecycle import defer as defer_draft

    _receipt(defer_draft(current_library(), name, reason=reason, until=until,
                         evidence=evidence), as_json)


@app.command()
def revise(
    name: str,
    source: Annotated[Path, typer.Argument(help="The new content (directory or .md file).")],
    evidence: EvidenceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Replace a retained item's content with a new revision (same kind and name)."""
    from librarian.ops.revisions import revise as revise_item

    _receipt(revise_item(current_library(), name, source, evidence=evidence), as_json)


@app.command()
def retire(
    name: str,
    reason: Annotated[str | None, typer.Option("--reason", help="Why (recorded).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Remove a retained item in one commit (refused while a tool exposes it)."""
    from librarian.ops.revisions import retire as retire_item

    _receipt(retire_item(current_library(), name, reason=reason), as_json)


@app.command()
def restore(
    name: str,
    revision: Annotated[str | None, typer.Option(
        "--from", help="The commit (or branch, tag) to take the content from.")] = None,
    evidence: EvidenceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Bring back a retired item's last retained content (or the one at --from)."""
    from librarian.ops.revisions import restore as restore_item

    _receipt(restore_item(current_library(), name, revision=revision, evidence=evidence),
             as_json)


@app.command()
def hide(skill: str, as_json: JsonOpt = False) -> None:
    """Leave a skill out of the prompt (it stays usable by name)."""
    from librarian.ops.visibility import hide as hide_skill

    _receipt(hide_skill(current_library(), skill), as_json)


@app.command()
def unhide(skill: str, as_json: JsonOpt = False) -> None:
    """List a hidden skill in the prompt again (also called `show`)."""
    from librarian.ops.visibility import show as show_skill

    _receipt(show_skill(current_library(), skill), as_json)


@app.command("show")
def show(skill: str, as_json: JsonOpt = False) -> None:
    """The same as `unhide` (its first name)."""
    unhide(skill, as_json)


@app.command()
def resident(
    skill: str,
    off: Annotated[bool, typer.Option("--off", help="Stop including the body.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Always include a skill's body in the prompt (or stop, with --off)."""
    from librarian.ops.visibility import resident as set_resident

    _receipt(set_resident(current_library(), skill, on=not off), as_json)


@app.command()
def prompt(
    fmt: Annotated[str, typer.Option("--format", help="xml, markdown or json.")] = "xml",
    budget: Annotated[int | None, typer.Option(
        "--budget", help="At most this many characters; what is cut is said.")] = None,
    operator: Annotated[bool, typer.Option(
        "--operator", help="JSON only: add the hidden skills under `operator` (a view "
        "for people; agents never get it).")] = False,
    profile: Annotated[str | None, typer.Option(
        "--profile", help="Only what this agent profile of library.yaml shows.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """The agent registry: skills, resident bodies, recipes, exposed tools (of every
    layer, the nearer winning a name)."""
    from librarian.layers.union import union_registry
    from librarian.prompt.profiles import profiled_registry
    from librarian.prompt.render import check_format, render_prompt

    check_format(fmt)  # refused with --json too, which overrides the format
    stack = current_stack()
    registry = profiled_registry(stack.nearest, union_registry(stack), profile)
    rendered = render_prompt(registry, "json" if as_json else fmt, budget, operator=operator)
    sys.stdout.write(rendered.text + "\n")
    for problem in rendered.problems:
        sys.stderr.write(f"librarian: warning: {problem}\n")
