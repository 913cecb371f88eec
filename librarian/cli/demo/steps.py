"""One step of the tour: what it shows, the command a user would type, what it printed."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DemoStep:
    title: str
    command: str
    output: str  # exactly what the command prints (stdout, then stderr)
    exit_code: int = 0
