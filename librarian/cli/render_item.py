"""The human rendering of ``inspect NAME`` (one item whole). No logic lives here."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from librarian.cli.render import usage_text

if TYPE_CHECKING:
    from librarian.layers.union import Holding
    from librarian.ops.itemreport import ItemReport


def _when(seconds: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds)) if seconds else "?"


def item_report_text(report: ItemReport) -> str:
    info = report.item
    lines = [f"{info.kind} {info.name} ({info.state}) at {info.path}"]
    if info.description:
        lines.append(f"  {info.description}")
    lines.append(f"  digest     {info.digest or '(invalid content: see the problems)'}")
    lines.append(f"  work tree  {report.work_tree}")
    lines += [f"  problem    {d}" for d in info.diagnostics]
    lines.append(f"  files      {len(info.files)}")
    lines += [f"    {f.bytes:>9}  {'x' if f.executable else '-'}  {f.path}" for f in info.files]
    if report.provenance is not None:
        p = report.provenance
        lines.append(f"  source     {p.source}: {p.url} ({p.ref}), upstream {p.upstream_path}")
        lines.append(f"  upstream   {p.upstream_commit or '(not locked)'}")
        agree = "matches" if p.matches_lock else "DIFFERS from"
        lines.append(f"  locked     {p.locked_digest or '(not locked)'}")
        lines.append(f"  HEAD       {p.head_digest} ({agree} the lock)")
    lines.append(f"  revisions  {len(report.revisions)}")
    lines += [f"    {r['commit'][:12]} {_when(r['time'])} {r['author'].split(' <', 1)[0]}: "
              f"{r['subject']}" for r in report.revisions]
    if info.kind == "recipe":
        exposed = ", ".join(f"{t['tool']} ({t['status']})" for t in report.exposed_as)
        lines.append(f"  exposed as {exposed or 'no tool'}")
        current = [a for a in report.approvals if a["current"]]
        lines.append(f"  approvals  {len(report.approvals)}"
                     + ("; the current digest is approved" if current
                        else "; the current digest is not approved"))
        if report.usage is not None:
            lines.append(f"  usage      {usage_text(report.usage)}")
        if report.enforceable is not None:
            lines.append("  effects    " + ("enforced on this machine" if report.enforceable
                         else "NOT enforceable here: " + "; ".join(report.not_enforceable)))
    return "\n".join(lines)


def holdings_text(held: tuple[Holding, ...]) -> str:
    """What each layer holds of the name (``inspect NAME`` over layers), nearest first."""
    if not held:
        return ""
    lines = ["", "  layers (nearest first; the first holding a name wins it):"]
    lines += [f"    {'wins    ' if h.wins else 'shadowed' if h.state != 'draft' else 'draft   '}"
              f"  {h.kind} {h.name} at {h.layer}/{h.path} ({h.origin})" for h in held]
    return "\n".join(lines)
