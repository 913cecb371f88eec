"""The shared-library part of ``demo``: subscribe, update, edit, merge, conflict, resolve.

Builds a team's library beside the demo library (a librarian library is a git repository
any other library can subscribe to), then walks through ``source add``, ``update``, a local
edit to a managed skill and an upstream change to other lines (merged three ways), then
edits that overlap (a conflict, with its hunk) and ``update --force`` with its backup. Each
step calls the library function the command line calls and renders it as the command line
does.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from librarian.agents.claude_manifests import GENERATED
from librarian.cli.demo.steps import DemoStep
from librarian.cli.render import error_line, receipt_text
from librarian.cli.render_sources import update_output_text, update_report_text
from librarian.core.resources import examples_dir
from librarian.errors import ConflictError
from librarian.library import Library
from librarian.ops.create import init_library
from librarian.ops.retention import retain
from librarian.ops.revisions import revise
from librarian.sources.plandiff import preview
from librarian.sources.subscriptions import add_source
from librarian.sources.update import outdated, update

SOURCE = "team"


def tour(library: Library, workspace: Path) -> list[DemoStep]:
    steps: list[DemoStep] = []
    shared_root = workspace / "team-library"
    shared = Library(shared_root, GENERATED)
    skill = examples_dir() / "skills" / "commit-message"
    recipe = examples_dir() / "recipes" / "word-count"
    printed = [receipt_text(init_library(shared_root, "team-library", GENERATED, own_repo=True)),
               receipt_text(retain(shared, skill, evidence="the team's convention")),
               receipt_text(retain(shared, recipe, evidence="used in CI"))]
    steps.append(DemoStep(
        "A team publishes a shared library (any git repository holding skills and recipes)",
        f"librarian init {shared_root} --name team-library && "
        f"librarian --library {shared_root} retain {skill} && "
        f"librarian --library {shared_root} retain {recipe}",
        "\n".join(printed),
    ))

    receipt = add_source(library, SOURCE, str(shared_root))
    steps.append(DemoStep("Subscribe to it: one commit to library.yaml, nothing fetched yet",
                          f"librarian source add {SOURCE} {shared_root}", receipt_text(receipt)))
    steps.append(DemoStep("See what an update would install (fetches, changes nothing)",
                          "librarian outdated", update_report_text(outdated(library))))
    steps.append(DemoStep(
        "Install it: staged, verified, swapped in, pinned in librarian.lock, one commit",
        "librarian update", update_report_text(update(library))))

    managed = library.path_of(f"sources/{SOURCE}/skills/commit-message/SKILL.md")
    managed.write_text(managed.read_text(encoding="utf-8").replace(
        "at most 72 characters", "at most 50 characters"), encoding="utf-8")
    steps.append(DemoStep(
        "Edit the managed skill team:commit-message locally (the local commit-message "
        "skill is a different item): the team wants 50-character subjects",
        f"sed -i 's/at most 72 characters/at most 50 characters/' {managed}", ""))
    revision = _upstream_revision(shared, workspace,
                                  "5. Keep unrelated changes in separate commits.")
    steps.append(DemoStep("Meanwhile the team adds a step to the same skill upstream",
                          f"librarian --library {shared_root} revise commit-message {revision}",
                          receipt_text(revise(shared, "commit-message", revision))))
    steps.append(DemoStep(
        "Different lines: the update merges them, file by file, three ways, as git would",
        "librarian update --dry-run --diff",
        _dry_run_with_diff(library)))
    steps.append(DemoStep(
        "Update: HEAD and the lock take upstream's version; the merged file stays in the "
        "work tree as your local edit (status: modified), and the edit is backed up first",
        "librarian update", update_report_text(update(library))))

    with managed.open("a", encoding="utf-8") as handle:
        handle.write("6. Our team also writes the ticket number in the subject.\n")
    steps.append(DemoStep(
        "Edit the same skill again, at its end",
        f"echo '6. Our team also writes the ticket number…' >> {managed}", ""))

    revision = _upstream_revision(shared, workspace, "6. Wrap the body at 72 columns.")
    steps.append(DemoStep("Meanwhile the team changes the same lines upstream",
                          f"librarian --library {shared_root} revise commit-message {revision}",
                          receipt_text(revise(shared, "commit-message", revision))))
    plan = update_report_text(update(library, dry_run=True))
    steps.append(DemoStep("See the plan first: the two edits overlap, a conflict with its hunk",
                          "librarian update --dry-run", plan))
    try:
        update(library)
        conflict = "(no conflict?)"
    except ConflictError as exc:  # what `librarian update` prints, exit 3
        conflict = error_line(exc.message, exc.hint)
    steps.append(DemoStep("Update refuses to clobber the edit: nothing changed",
                          "librarian update", conflict, ConflictError.exit_code))
    steps.append(DemoStep(
        "Resolve: take upstream's version; your edit is saved first under refs/librarian/"
        "backups/ and the command to bring it back is printed",
        "librarian update --force", update_report_text(update(library, force=True))))
    return steps


def _dry_run_with_diff(library: Library) -> str:
    """What ``librarian update --dry-run --diff`` prints."""
    shown = preview(library, diff=True)
    return update_output_text(shown.report, True, shown.diff)


def _upstream_revision(shared: Library, workspace: Path, line: str) -> Path:
    """A copy of the team's skill with ``line`` appended to its SKILL.md: the new revision
    ``revise`` takes upstream."""
    source = shared.path_of("skills/commit-message")
    target = workspace / f"revision-{len(list(workspace.glob('revision-*'))) + 1}" / (
        "commit-message")
    shutil.copytree(source, target)
    with (target / "SKILL.md").open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")
    return target
