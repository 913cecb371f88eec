"""Human and JSON rendering of shared libraries: subscriptions, update plans and reports,
signed releases (split from ``cli.render`` to keep each module small)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from librarian.cli.render import count, receipt_text, to_jsonable

if TYPE_CHECKING:  # rendering must not import what the command did not use
    from librarian.core.receipts import BackupReceipt
    from librarian.sources.plan_values import PlannedItem
    from librarian.sources.releases import ReleaseInfo, VerifyReport
    from librarian.sources.subscriptions import SourceInfo
    from librarian.sources.update import SourcePlan, UpdateReport


def sources_json(infos: tuple[SourceInfo, ...]) -> dict[str, Any]:
    return {"kind": "sources", "sources": [to_jsonable(s) for s in infos]}


def sources_text(infos: tuple[SourceInfo, ...]) -> str:
    lines = [f"{s.name:<20} {s.url} ({s.ref}) "
             + (f"at {s.commit[:12]}, {count(s.items, 'item')}" if s.commit
                else "not installed yet")
             + (f"; signed by {', '.join(s.keys)}"
                + (f", release {s.release}" if s.release is not None else "")
                if s.keys else "; unsigned")
             for s in infos]
    return "\n".join(lines) if lines else "(no sources)"


def source_removed_text(receipt: BackupReceipt) -> str:
    text = receipt_text(receipt)
    if receipt.backup:
        text += f"\n  local edits saved in {receipt.backup}; restore with:"
        text += "".join(f"\n    {c}" for c in receipt.restore)
    return text


def update_plan_json(plan: SourcePlan) -> dict[str, Any]:
    return {
        "source": plan.source, "url": plan.url, "ref": plan.ref,
        "old_commit": plan.old_commit, "new_commit": plan.new_commit,
        "counts": plan.counts(),
        "items": [to_jsonable(i) for i in plan.items],
        "skipped": [to_jsonable(s) for s in plan.skipped],
        "filtered_out": plan.filtered_out,
    }


def update_report_json(report: UpdateReport) -> dict[str, Any]:
    names = [p.source for p in report.plans]
    paths = [f"sources/{n}" for n in names]
    return {
        "kind": report.kind,
        "name": names[0] if len(names) == 1 else None,  # one source; else see "sources"
        "path": paths[0] if len(paths) == 1 else None,
        "sources": names,
        "paths": paths,
        "digest": None,
        "commit": report.commit,
        "dry_run": report.dry_run,
        "forced": report.forced,
        "up_to_date": report.up_to_date,
        "plans": [update_plan_json(p) for p in report.plans],
        "backups": [{"ref": b.ref, "commit": b.commit, "paths": list(b.paths),
                     "restore": list(b.restore)} for b in report.backups],
        "stale_tools": list(report.stale_tools),
        "warnings": list(report.warnings),
        "releases": [to_jsonable(r) for r in report.releases],
        "refused": [{"source": r.source, "error": r.error, "hint": r.hint}
                    for r in report.refused],
    }


def signing_line(info: ReleaseInfo | None) -> str:
    if info is None or not info.signed:
        return "  unsigned: no trust: keys, the content is not verified"
    return (f"  signed: librarian-release/{info.version} by {info.signer}, verified "
            f"(expires {info.expires})")


def update_plan_lines(plans: tuple[SourcePlan, ...],
                      releases: tuple[ReleaseInfo, ...] = (), diff: bool = False) -> list[str]:
    lines = []
    signing = {r.source: r for r in releases}
    for plan in plans:
        old = plan.old_commit[:12] if plan.old_commit else "(not installed)"
        lines.append(f"{plan.source}: {old} -> {plan.new_commit[:12]} ({plan.url} {plan.ref})")
        lines.append(signing_line(signing.get(plan.source)))
        listed = [item for item in plan.planned  # the kept ones are counted, not listed
                  if item.action != "keep" or item.local_edit]
        # One column for the reasons, wide enough for the longest name listed.
        width = max([NAME_COLUMN, *(len(item.name) for item in listed)])
        for item in listed:
            lines += _item_lines(item, diff, width)
        counts = plan.counts()
        lines.append("  " + ", ".join(f"{v} {k}" for k, v in counts.items() if v))
        for skipped in plan.skipped:
            lines.append(f"  skipped   {skipped.path}: {'; '.join(skipped.problems)}")
    return lines


#: The width of the plan's name column, widened to the longest name a plan lists.
NAME_COLUMN = 28


def _item_lines(item: PlannedItem, diff: bool, width: int = NAME_COLUMN) -> list[str]:
    merge = item.merge
    if merge is None or merge.markers or (not merge.clean and not merge.conflicts):
        return [f"  {item.action:<9} {item.name:<{width}} {item.reason}"]
    # only a plan holding a merge pays for these imports (rendering imports what it uses)
    from librarian.git import describe_hunk

    if not merge.clean and item.action != "conflict":  # --force took upstream's side
        return [f"  {item.action:<9} {item.name:<{width}} local edit, changed upstream: "
                f"{len(merge.conflicts)} file(s) conflicted; overwritten after a backup "
                "(--force)"]
    if not merge.clean:
        lines = [f"  {item.action:<9} {item.name:<{width}} local edit, changed upstream: "
                 f"{len(merge.conflicts)} file(s) conflict"]
        for conflict in merge.conflicts:
            lines.append(f"              {conflict.path}: {conflict.detail}")
            lines += [f"                {describe_hunk(h)}" for h in conflict.hunks]
        return lines
    below = " (its patch below)" if diff and merge.merged is not None else ""
    return [f"  {item.action:<9} {item.name:<{width}} {item.reason}{below}"]


def merge_patches(plans: tuple[SourcePlan, ...]) -> list[str]:
    """What each clean merge writes into the work tree (the upstream change on top of the
    local edit), as unindented git patches: the output pipes to ``git apply``."""
    from librarian.content.patch import tree_diff

    lines: list[str] = []
    for plan in plans:
        for item in plan.planned:
            merge = item.merge
            if merge is not None and merge.clean and merge.merged is not None:
                lines += tree_diff(item.library_path, merge.work, merge.merged)
    return lines


def update_output_text(report: UpdateReport, diff: bool, content: str | None) -> str:
    """What ``outdated`` and ``update`` print: the plan (with merge hunks under ``diff``),
    then the content diff of ``--dry-run --diff`` / ``outdated --diff``."""
    text = update_report_text(report, diff)
    return text + ("\n" + content.rstrip("\n") if content else "")


def update_report_text(report: UpdateReport, diff: bool = False) -> str:
    if not report.plans:
        return "\n".join(["no sources to update: subscribe with `librarian source add NAME URL`",
                          *(f"warning: {w}" for w in report.warnings)])
    lines = update_plan_lines(report.plans, report.releases, diff)
    lines += [f"{r.source}: refused, left as it was (the error is below)" for r in report.refused]
    if report.up_to_date:
        lines.append("already up to date: nothing to change, no commit made")
    elif report.kind == "outdated":
        lines.append("run `librarian update` to install these changes")
    elif report.dry_run:
        lines.append("dry run: nothing was changed")
    elif report.commit:
        lines.append(f"updated in {report.commit[:12]}")
    for backup in report.backups:
        lines.append(f"local edits saved in {backup.ref}; restore each with:")
        lines += [f"  {command}" for command in backup.restore]
    for tool in report.stale_tools:
        lines.append(f"tool {tool} is now stale: its recipe changed; review and expose it again")
    shown = {f"{p.source}: skipped {s.path}: " + "; ".join(s.problems)  # listed above
             for p in report.plans for s in p.skipped}
    lines += [f"warning: {w}" for w in report.warnings if w not in shown]
    if diff:
        lines += merge_patches(report.plans)
    return "\n".join(lines)


def verify_text(report: VerifyReport) -> str:
    lines = []
    for s in report.sources:
        if not s.signed:
            lines.append(f"{s.name}: unsigned (no trust: keys), nothing to verify")
        elif not s.installed:
            lines.append(f"{s.name}: signed, not installed yet")
        else:
            lines.append(f"{s.name}: release {s.release} verified: signed by {s.signer}, "
                         f"{s.items} items match" + (" (expired since: the next update "
                                                     "needs a new release)" if s.expired else ""))
    return "\n".join(lines) if lines else "(no sources)"
