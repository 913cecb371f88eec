"""The skills part of ``librarian demo``: a captured draft is reviewed, deferred, promoted,
made resident, and shows up in what the agent sees (``prompt``)."""

from __future__ import annotations

from pathlib import Path

from librarian.cli.demo.steps import DemoStep
from librarian.cli.render import receipt_text, review_text
from librarian.library import Library
from librarian.ops.lifecycle import defer, promote
from librarian.ops.retention import retain
from librarian.ops.review import review_drafts
from librarian.ops.visibility import resident
from librarian.prompt.registry import load_registry
from librarian.prompt.render import render_prompt

DRAFT_NAME = "release-notes"
DRAFT_SKILL = f"""---
name: {DRAFT_NAME}
description: Write release notes from the commits since the last tag, grouped by kind of change.
---
# Release notes

1. List the commits since the last tag: `git log --oneline $(git describe --tags --abbrev=0)..`.
2. Group them: features, fixes, everything else.
3. One line per change, in the imperative; link the issue when there is one.
"""


def tour(library: Library, workspace: Path) -> list[DemoStep]:
    steps: list[DemoStep] = []
    source = workspace / "captured" / DRAFT_NAME
    source.mkdir(parents=True, exist_ok=True)
    (source / "SKILL.md").write_text(DRAFT_SKILL, encoding="utf-8")

    receipt = retain(library, source, draft=True, evidence="written by the agent in session 12")
    steps.append(DemoStep(
        "An agent captures a skill as a draft: committed, but never shown to the agent",
        f"librarian retain {source} --draft --evidence 'written by the agent in session 12'",
        receipt_text(receipt)))
    steps.append(DemoStep("Drafts await review, with age, digest and evidence",
                          "librarian review", review_text(review_drafts(library))))
    receipt = defer(library, DRAFT_NAME, reason="wait for a second use", until="7d")
    steps.append(DemoStep("A decision can wait: defer records it in the history",
                          f"librarian defer {DRAFT_NAME} --reason 'wait for a second use' "
                          "--until 7d", receipt_text(receipt)))
    receipt = promote(library, DRAFT_NAME, evidence="used in two releases, notes accepted")
    steps.append(DemoStep("Promote it: drafts/ -> skills/ in one commit, digest unchanged",
                          f"librarian promote {DRAFT_NAME} --evidence 'used in two releases…'",
                          receipt_text(receipt)))
    registry = load_registry(library)
    steps.append(DemoStep(
        "What the agent sees at session start: names, descriptions, locations (not bodies)",
        "librarian prompt", render_prompt(registry).text))
    receipt = resident(library, DRAFT_NAME)
    steps.append(DemoStep("Make a skill resident: its body is always in the prompt",
                          f"librarian resident {DRAFT_NAME}", receipt_text(receipt)))
    steps.append(DemoStep("Markdown within a budget of 700 characters: what is cut is said",
                          "librarian prompt --format markdown --budget 700",
                          render_prompt(load_registry(library), "markdown", 700).text))
    return steps
