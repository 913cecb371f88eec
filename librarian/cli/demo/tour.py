"""``demo``: a guided tour on a throw-away library, offline, from the template's examples.

Each step calls the same library function the command line calls and renders it the same
way, so the transcript is what a user would see typing the commands.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from librarian.agents.claude_manifests import GENERATED
from librarian.cli.demo import releases as demo_releases
from librarian.cli.demo import skills as demo_skills
from librarian.cli.demo import sources as demo_sources
from librarian.cli.demo import tools as demo_tools
from librarian.cli.demo.steps import DemoStep
from librarian.cli.render import log_text, receipt_text, status_text
from librarian.core.resources import examples_dir
from librarian.errors import UsageError
from librarian.library import Library
from librarian.ops.create import init_library
from librarian.ops.diffing import diff_library
from librarian.ops.history import read_log
from librarian.ops.retention import retain
from librarian.ops.status import library_status


def run_demo(directory: Path | None = None) -> list[DemoStep]:
    workspace = Path(tempfile.mkdtemp(prefix="librarian-demo-")) if directory is None else (
        directory.expanduser().absolute())
    if workspace.exists() and any(workspace.iterdir()):
        raise UsageError(f"{workspace} is not empty", hint="give the demo a new directory")
    root = workspace / "library"
    examples = examples_dir()
    skill_source = examples / "skills" / "commit-message"
    recipe_source = examples / "recipes" / "word-count"
    steps: list[DemoStep] = []

    receipt = init_library(root, "demo-library", GENERATED, own_repo=True)
    steps.append(DemoStep("Create a library: a git repository with its first commit",
                          f"librarian init {root} --name demo-library", receipt_text(receipt)))
    library = Library(root, GENERATED)
    for source in (skill_source, recipe_source):
        receipt = retain(library, source, evidence="shipped as a librarian example")
        steps.append(DemoStep(f"Retain a {receipt.kind.split('_')[-1]}: one commit, digest pinned",
                              f"librarian retain {source} --evidence '…'", receipt_text(receipt)))

    skill_file = root / "skills" / "commit-message" / "SKILL.md"
    with skill_file.open("a", encoding="utf-8") as handle:
        handle.write("5. Keep unrelated changes in separate commits.\n")
    steps.append(DemoStep("Edit a retained skill in place (an agent or a person did this)",
                          f"echo '5. Keep unrelated changes…' >> {skill_file}", ""))
    steps.append(DemoStep("The edit is drift: its digest no longer matches the commit",
                          "librarian status", status_text(library_status(library))))
    steps.append(DemoStep("Review it as a patch", "librarian diff", diff_library(library)))
    steps.append(DemoStep("The audit trail: retention events with their git trailers",
                          "librarian log -n 3", log_text(read_log(library, limit=3))))

    for chapter in (demo_skills, demo_tools, demo_sources, demo_releases):
        steps += chapter.tour(library, workspace)
    steps.append(DemoStep("Explore on your own", f"cd {root} && git log --stat",
                          f"The demo library stays at {root}; remove it when done."))
    return steps
