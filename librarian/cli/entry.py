"""The console entry point (``librarian``, ``python -m librarian``): the library's daemon
runs the command when one serves it (``librarian daemon start``), else this process does.

Only ``librarian.daemon.client`` (os, socket, signal) is imported before that choice;
typer, click, dulwich and PyYAML are loaded only when the command runs here.
"""

from __future__ import annotations

import sys

from librarian.daemon.client import forward


def entry() -> None:
    code = forward(sys.argv[1:])
    if code is None:
        from librarian.cli.main import main  # the in-process path: its imports only here

        code = main()
    raise SystemExit(code)
