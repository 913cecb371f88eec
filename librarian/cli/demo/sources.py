"""The shared-library part of ``demo``: subscribe, update, edit, conflict, resolve.

Builds a team's library beside the demo library (a librarian library is a git repository
any other library can subscribe to), then walks through ``source add``, ``update``, a local
edit to a managed skill, an upstream change that conflicts with it, and ``update --force``
with its backup. Each step calls the library function the command line calls and renders
it as the command line does.
"""

from __future__ import annotations

from pathlib import Path

from librarian.cli.demo.steps import DemoStep
from librarian.cli.render import error_line, receipt_text, update_report_text
from librarian.core.events import trailers
from librarian.core.model import ItemFile
from librarian.core.resources import examples_dir
from librarian.errors import ConflictError
from librarian.ops.create import init_library
from librarian.ops.retention import retain
from librarian.sources.subscriptions import add_source
from librarian.sources.update import outdated, update
from librarian.store.library import Library
from librarian.store.txn import Transaction

SOURCE = "team"


def tour(library: Library, workspace: Path) -> list[DemoStep]:
    steps: list[DemoStep] = []
    shared_root = workspace / "team-library"
    shared = Library(shared_root)
    init_library(shared_root, "team-library")
    skill = examples_dir() / "skills" / "commit-message"
    retain(shared, skill, evidence="the team's convention")
    retain(shared, examples_dir() / "recipes" / "word-count", evidence="used in CI")
    steps.append(DemoStep(
        "A team publishes a shared library (any git repository holding skills and recipes)",
        f"librarian init {shared_root} && librarian --library {shared_root} retain {skill} …",
        f"{shared_root}: skills/commit-message, recipes/word-count",
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
    with managed.open("a", encoding="utf-8") as handle:
        handle.write("6. Our team also writes the ticket number in the subject.\n")
    steps.append(DemoStep(
        "Edit the managed skill team:commit-message locally (the local commit-message "
        "skill is a different item)",
        f"echo '6. Our team also writes the ticket number…' >> {managed}", ""))

    _publish_upstream_change(shared)
    steps.append(DemoStep("Meanwhile the team changes the same skill upstream",
                          f"(in {shared_root}) librarian revise commit-message …",
                          "skills/commit-message revised upstream"))
    plan = update_report_text(update(library, dry_run=True))
    steps.append(DemoStep("See the plan first: the local edit and the upstream change conflict",
                          "librarian update --dry-run", plan))
    try:
        update(library)
        conflict = "(no conflict?)"
    except ConflictError as exc:  # what `librarian update` prints, exit 3
        conflict = f"{error_line(exc.message, exc.hint)}\n(exit 3: nothing was changed)"
    steps.append(DemoStep("Update refuses to clobber the edit: exit 3, nothing changed",
                          "librarian update", conflict))
    steps.append(DemoStep(
        "Resolve: take upstream's version; your edit is saved first under refs/librarian/"
        "backups/ and the command to bring it back is printed",
        "librarian update --force", update_report_text(update(library, force=True))))
    return steps


def _publish_upstream_change(shared: Library) -> None:
    """What ``revise`` does upstream: one commit with a new revision of the skill."""
    path = "skills/commit-message"
    with Transaction(shared) as tx:
        files = [ItemFile(f.path, f.executable, f.data + b"\n7. Wrap the body at 72 columns.\n")
                 if f.path == "SKILL.md" else f for f in tx.base.files(tx.base.find(path))]
        tx.put_dir(path, tuple(files))
        tx.commit("revise skill commit-message", trailers("revise", item=path))
