"""Human and JSON renderings of what library functions return. No logic lives here."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rendering must not import what the command did not use
    from librarian.core.receipts import ExposureReceipt, Receipt
    from librarian.gate.checks import ApprovalReview
    from librarian.gate.runs import RunRecord
    from librarian.ops.checking import CheckReport
    from librarian.ops.history import LogEntry
    from librarian.ops.inventory import Inventory
    from librarian.ops.review import ReviewReport
    from librarian.ops.status import StatusReport


def count(number: int, noun: str) -> str:
    """``1 item``, ``2 items``."""
    return f"{number} {noun}" + ("" if number == 1 else "s")


def to_jsonable(value: Any) -> Any:
    """``core.jsonable.to_jsonable``, imported when a command prints JSON: it imports every
    receipt class, a start-up cost text output does not need."""
    from librarian.core.jsonable import to_jsonable as convert

    return convert(value)


def json_text(value: Any) -> str:
    from librarian.core.jsonable import with_times

    return json.dumps(with_times(to_jsonable(value)), indent=2, sort_keys=False,
                      ensure_ascii=False)


def run_json(record: RunRecord) -> dict[str, Any]:
    """A run as ``runs`` lists it: the recipe's library path is ``path``, as in receipts."""
    document = to_jsonable(record)
    document["path"] = document.pop("recipe")
    return {key: document[key] for key in ("run_id", "name", "entry", "path", "digest",
                                           "mode", "status", "started", "ended",
                                           "duration", "exit_code", "timeout", "reason",
                                           "enforced")}


def pruned_text(pruned: tuple[RunRecord, ...]) -> str:
    if not pruned:
        return "nothing to prune"
    return f"pruned {count(len(pruned), 'run')} (the usage ledger keeps their counts)"


VISIBILITY = {"hidden": "left out of the prompt (still usable by name)",
              "shown": "listed in the prompt again",
              "resident": "its body is always in the prompt",
              "not resident": "listed in the prompt by name and description only"}


def receipt_text(receipt: Receipt) -> str:
    commit = f" in {receipt.commit[:12]}" if receipt.commit else ""
    digest = f"\n  digest {receipt.digest}" if receipt.digest else ""
    state = receipt.details.get("visibility") if receipt.kind == "skill_visibility" else None
    if state is not None:  # hide, show, resident: say what changed
        what = f"skill {receipt.name} is now {state}: {VISIBILITY[state]}"
        lines = [what + commit] if receipt.commit else []
    else:
        lines = [f"{receipt.kind.replace('_', ' ')} {receipt.name} -> {receipt.path}{commit}"
                 f"{digest}"]
    lines += [f"  warning: {w}" for w in receipt.warnings]
    lines += [f"  reason: {receipt.reason}"] if receipt.reason else []
    lines += [f"  note: {receipt.note}"] if receipt.note else []
    return "\n".join(lines)


# -- what the commands of the gate print (the demo prints the same) ----------------------


def exposure_text(receipt: ExposureReceipt) -> str:
    """``expose``: the receipt and whether the tool is callable now, and why not."""
    callable_line = "callable now" if receipt.callable_now else (
        "not callable now" + (f": {receipt.reason}" if receipt.reason else ""))
    return receipt_text(receipt) + f"\n  {callable_line}"


def approval_text(review: ApprovalReview, receipt: Receipt) -> str:
    """``approve`` when it does not ask: what it approves, then the receipt."""
    return approval_review_text(review) + "\n" + receipt_text(receipt)


def launched_text(record: RunRecord) -> str:
    """``run --async``: the run id and how to get the result."""
    return (f"launched run {record.run_id} ({record.name})\n"
            f"  `librarian wait {record.run_id}` for its result")


def not_enforced_text(record: RunRecord) -> str | None:
    """The line on stderr naming what a best-effort run declared but did not get."""
    skipped = (record.enforced or {}).get("not_enforced") or []
    if not skipped:
        return None
    return "librarian: not enforced (run: {enforcement: best-effort}): " + "; ".join(skipped)


def run_end_text(record: RunRecord) -> str | None:
    """The line on stderr after a run that did not succeed (None after one that did)."""
    if not record.terminal:
        return f"librarian: run {record.run_id} is still {record.status}"
    if record.status == "succeeded":
        return None
    detail = f": {record.reason}" if record.reason else ""
    code = f" (exit {record.exit_code})" if record.exit_code is not None else ""
    return f"librarian: run {record.run_id} {record.status}{code}{detail}"


def status_text(report: StatusReport) -> str:
    lines = [f"{s.status:<10} {s.path}" for s in report.items if s.status != "clean"]
    lines += [f"{f.status:<10} {f.path}" for f in report.files if f.status != "clean"]
    lines += [f"{'stale':<10} tool {t.name} ({t.reason})" for t in report.tools
              if t.status == "stale"]
    lines += [f"{'unenforced':<10} tool {t.name}: its effects cannot be enforced here "
              f"({'; '.join(t.not_enforceable)})" for t in report.tools
              if t.enforceable is False]
    lines += [f"{'invalid':<10} {problem}" for problem in report.generated]
    if report.interrupted:
        lines.insert(0, "interrupted: a change was cut short and is pending")
    if not lines:
        return f"clean: {count(len(report.items), 'item')}, {count(len(report.tools), 'tool')}"
    lines += [f"hint: {hint}" for hint in report.hints]
    return "\n".join(lines)


def inventory_text(inventory: Inventory, verbose: bool) -> str:
    lines = []
    for info in inventory.items:
        lines.append(f"{info.kind:<7} {info.state:<8} {info.name:<24} {info.path}")
        if info.description:
            lines.append(f"        {info.description}")
        if verbose:
            if info.digest:
                lines.append(f"        digest {info.digest}")
            for f in info.files:
                lines.append(f"        {f.bytes:>9}  {'x' if f.executable else '-'}  {f.path}")
            if info.last_event:
                lines.append(f"        last event: {info.last_event['subject']}")
            for key, value in info.details.items():
                lines.append(f"        {key}: {value}")
            if info.usage is not None:
                lines.append(f"        usage: {usage_text(info.usage)}")
            lines += [f"        warning: {w}" for w in info.warnings]
        lines += [f"        problem: {d}" for d in info.diagnostics]
    for tool in inventory.tools:
        stale = "  (stale)" if tool.get("status") == "stale" else ""
        lines.append(f"tool    {tool['name']:<33} {tool['recipe']}{stale}")
        if tool.get("description"):
            lines.append(f"        {tool['description']}")
        if tool.get("execution"):
            inputs = ", ".join(f"{i['name']}: {i['type']}{'' if i['required'] else '?'}"
                               for i in tool.get("inputs", ()))
            effects = tool.get("effects") or {}
            network = "network" if effects.get("network") else "no network"
            lines.append(f"        {tool['execution']} {tool['environment']}; inputs ({inputs});"
                         f" effects: filesystem {effects.get('filesystem')}, {network}")
            if tool.get("enforceable") is False:
                lines.append("        NOT enforceable here: "
                             + "; ".join(tool.get("not_enforceable", ())))
    for source in inventory.sources:
        lines.append(f"source  {source['name']:<33} {source['url']} ({source['ref']})")
    return "\n".join(lines) if lines else "(empty)"


def usage_text(usage: dict[str, Any]) -> str:
    if not usage.get("runs") and not usage.get("refusals"):
        return "never run"
    last = usage.get("last_used")
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(last)) if last else "never"
    return (f"{usage['runs']} runs, {usage['successes']} succeeded, {usage['failures']} failed, "
            f"{usage['refusals']} refused; last used {when}")


def log_text(entries: list[LogEntry]) -> str:
    out = []
    for entry in entries:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.time))
        author = entry.author.split(" <", 1)[0]
        out.append(f"{entry.commit[:12]} {when} {author}: {entry.subject}")
        out += [f"    {k}: {v}" for k, v in entry.trailers]
    return "\n".join(out) if out else "(no retention events)"


def check_text(report: CheckReport) -> str:
    warnings = [f"warning: {w}" for w in report.shown_warnings]
    if report.other_warnings:
        warnings.append(
            f"{count(report.other_warnings, 'conformance warning')} in items unchanged since "
            "the last commit: `librarian inspect --verbose` lists them")
    if report.ok:
        return "\n".join([*warnings,
                          f"ok: {count(report.items, 'item')} in the {report.scope} "
                          f"{'passes' if report.items == 1 else 'pass'} every check"])
    return "\n".join([*report.problems, *warnings])


def approval_review_text(review: ApprovalReview) -> str:
    lines = [f"recipe {review.path} at {review.digest}"]
    if review.already_approved:
        lines.append("  (this digest is already approved)")
    if review.diff is not None and review.previous:
        lines.append(f"changes since the approved {review.previous}:")
        lines.append(review.diff.rstrip("\n"))
    else:
        for item_file in review.files:
            mode = "executable" if item_file.executable else "file"
            lines.append(f"--- {item_file.path} ({item_file.bytes} bytes, {mode})")
            lines.append(item_file.text.rstrip("\n") if item_file.text is not None
                         else "(binary content)")
    return "\n".join(lines)


def runs_text(records: list[RunRecord]) -> str:
    lines = []
    for record in records:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.started))
        code = "" if record.exit_code is None else f" exit {record.exit_code}"
        lines.append(f"{record.run_id}  {record.status:<9} {record.mode:<5} {when}  "
                     f"{record.name}{code}")
    return "\n".join(lines) if lines else "(no runs)"


# -- shared libraries: source list|remove, outdated, update ----------------------------


def age_text(seconds: int | None) -> str:
    if seconds is None:
        return "age unknown"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def review_text(report: ReviewReport) -> str:
    if not report.drafts:
        return "no drafts awaiting review"
    lines = []
    for draft in report.drafts:
        lines.append(f"{draft.status:<9}{draft.kind:<7} {draft.name:<28} "
                     f"{age_text(draft.age_seconds):>6}  {draft.digest or '?'}")
        lines.append(f"         evidence: {draft.evidence or 'unknown'}")
        decision = draft.decision
        if decision is not None:
            until = f" until {decision.until}" if decision.until else ""
            lines.append(f"         deferred{until}: {decision.reason or ''}")
    return "\n".join(lines)


def error_line(message: str, hint: str | None = None) -> str:
    """The one line an error is on stderr (spec §3.4), with its hint when there is one."""
    text = " ".join(message.split())
    return f"librarian: error: {text}" + (f" (hint: {' '.join(hint.split())})" if hint else "")
