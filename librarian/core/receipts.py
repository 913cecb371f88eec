"""Receipts: what a changing command hands back (spec §3.5). ``--json`` prints them as is.

The fields every reader needs are typed; ``details`` holds the rest of a receipt's JSON
document (flattened into it), which only ``--json`` readers look at.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True, slots=True)
class Receipt:
    kind: str
    name: str
    path: str
    digest: str | None
    commit: str | None
    details: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    reason: str | None = None  # why the decision was taken (discard, defer, retire) or refused
    note: str | None = None  # what the user should know (nothing changed, nothing fetched)

    #: typed fields left out of the JSON document when they are None
    omitted_when_none: ClassVar[tuple[str, ...]] = ("reason", "note")

    def to_json(self) -> dict[str, Any]:
        document = asdict(self)
        details = document.pop("details")
        for key in self.omitted_when_none:
            if document[key] is None:
                del document[key]
        document["warnings"] = list(self.warnings)
        document.update(details)
        return document


@dataclass(frozen=True, slots=True)
class ExposureReceipt(Receipt):
    """``exposed_tool``: whether the tool can run here now (``reason`` says why not)."""

    callable_now: bool = False
    omitted_when_none: ClassVar[tuple[str, ...]] = ("note",)  # the spec: always a reason


@dataclass(frozen=True, slots=True)
class RunReceipt(Receipt):
    """``run_launched`` and ``run_result``: ``reason`` (why it failed or was refused) is
    always in the document, null when there is none."""

    omitted_when_none: ClassVar[tuple[str, ...]] = ("note",)


@dataclass(frozen=True, slots=True)
class RunResultReceipt(RunReceipt):
    """``run_result``: what the run printed (the first ``OUTPUT_LIMIT`` bytes of each)."""

    output: str = ""
    stderr: str = ""


@dataclass(frozen=True, slots=True)
class BackupReceipt(Receipt):
    """A change that overwrote local edits after saving them: where, and how to restore."""

    backup: str | None = None
    restore: tuple[str, ...] = ()
