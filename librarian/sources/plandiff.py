"""``update --dry-run --diff`` and ``outdated --diff``: the plan, and the content each
planned change would install, as a unified diff of HEAD's item against upstream's.

Imports ``sources.update`` (the plan) and the store; the diff text comes from
``content.patch``, the same as ``librarian diff``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from librarian.content.patch import tree_diff
from librarian.library import Library
from librarian.sources.update import Progress, UpdateReport, outdated, update

CHANGING = ("add", "update", "remove", "conflict")


@dataclass(frozen=True, slots=True)
class Preview:
    report: UpdateReport
    diff: str  # empty when nothing would change


def preview(library: Library, names: Sequence[str] = (), *, dry_run_of_update: bool = True,
            progress: Progress | None = None, diff: bool = True) -> Preview:
    """The plan of ``update --dry-run`` (or of ``outdated``) with its content diff (when
    ``diff``)."""
    report = (update(library, names, dry_run=True, progress=progress) if dry_run_of_update
              else outdated(library, names, progress=progress))
    lines: list[str] = []
    if not diff:
        return Preview(report, "")
    with library.store() as store:
        root = store.tree_of(store.head())
        for plan in report.plans:
            for item in plan.planned:  # a kept item has no diff
                if item.action not in CHANGING:
                    continue
                installed = store.lookup(root, item.library_path)
                old = store.read_files(installed.sha) if installed is not None else ()
                new = (store.read_files(item.upstream_tree.encode())
                       if item.upstream_tree and item.action != "remove" else ())
                lines += tree_diff(item.library_path, old, new)
    return Preview(report, "\n".join(lines) + ("\n" if lines else ""))
