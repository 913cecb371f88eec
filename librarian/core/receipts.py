"""Receipts: what a changing command hands back (spec §3). ``--json`` prints them as is."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Receipt:
    kind: str
    name: str
    path: str
    digest: str | None
    commit: str | None
    details: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        document = asdict(self)
        details = document.pop("details")
        document["warnings"] = list(self.warnings)
        document.update(details)
        return document
