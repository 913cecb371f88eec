"""Fault injection for the recovery tests: ``LIBRARIAN_CRASH_AT=<name>`` kills the process
at the named point with SIGKILL, exactly as an outside kill would."""

from __future__ import annotations

import os
import signal


def crash_point(name: str) -> None:
    if os.environ.get("LIBRARIAN_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
