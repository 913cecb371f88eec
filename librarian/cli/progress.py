"""Progress on a terminal: rich, loaded only when stderr is a terminal and not ``--json``.

Installed once by ``cli.main`` around the command; commands with no long work report no
phase, and then rich is never imported. The display is redrawn from the command's own
thread (at most every ``REDRAW_SECONDS``), not by rich's refresh thread: with a second
thread running, long work is not split over two processors (``core.halves``: a fork
would copy that thread's locks).

The display is taken off the terminal before the command prints (``emit`` and the other
writers call ``core.progress.finish``): click writes to the terminal's own buffer, past
rich's redirection of ``sys.stdout``, so a frame left up would stay beside the output.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Any

from librarian.core.progress import reporting

REDRAW_SECONDS = 0.1


class TerminalReporter:
    """Draws the current phase with a bar (or a spinner when the total is unknown)."""

    def __init__(self) -> None:
        self._progress: Any = None
        self._task: Any = None
        self._drawn = 0.0

    def _start(self) -> Any:
        if self._progress is None:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
            )

            self._progress = Progress(
                SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                MofNCompleteColumn(), console=Console(file=sys.stderr), transient=True,
                auto_refresh=False,  # no thread of its own: drawn by _draw
                # Output printed while a phase is shown goes above it on the terminal;
                # piped output is never touched.
                redirect_stdout=sys.stdout.isatty(), redirect_stderr=False)
            self._progress.start()
        return self._progress

    def phase(self, name: str, total: int | None) -> None:
        progress = self._start()
        if self._task is not None:
            progress.update(self._task, visible=False)
        self._task = progress.add_task(name, total=total)
        self._draw(force=True)

    def advance(self, count: int) -> None:
        if self._task is not None:
            self._progress.advance(self._task, count)
            self._draw()

    def note(self, text: str) -> None:
        line = " ".join(text.replace("\r", "\n").split("\n")[-2:]).strip()
        if self._task is not None and line:
            self._progress.update(self._task, description=line[:60])
            self._draw()

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._drawn >= REDRAW_SECONDS:
            self._progress.refresh()
            self._drawn = now

    def close(self) -> None:
        """Erase the display (rich's ``transient``); called before the command's output
        (``core.progress.finish``) and again, harmlessly, when the command ends."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = self._task = None


def on_terminal(as_json: bool) -> contextlib.AbstractContextManager[None]:
    """Progress for this command: on a terminal (stderr) and without ``--json`` only."""
    if as_json or os.environ.get("TERM") == "dumb" or not sys.stderr.isatty():
        return contextlib.nullcontext()
    return reporting(TerminalReporter())
