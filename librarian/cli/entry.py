"""The console entry point (``librarian``, ``python -m librarian``): ``cli.main.main``,
its return value the process's exit code."""

from __future__ import annotations

from librarian.cli.main import main


def entry() -> None:
    raise SystemExit(main())
