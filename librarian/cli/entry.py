"""The console entry point (``librarian``, ``python -m librarian``): the library's daemon
runs the command when one serves it (``librarian daemon start``), else this process does.

Only ``librarian.daemon.client`` (os, socket, signal) is imported before that choice;
typer, click, dulwich and PyYAML are loaded only when the command runs here, with the
cyclic garbage collector off until ``cli.main`` has the command's table built: what a
command line loads lives as long as the process, and each collection during the loading
went over all of it again (~10 ms of an update; docs/performance.md, "Speed devices kept,
with their measured gain").
"""

from __future__ import annotations

import gc
import sys

from librarian.daemon.client import forward


def entry() -> None:
    code = forward(sys.argv[1:])
    if code is None:
        gc.disable()  # cli.main.main enables it once the code is loaded
        from librarian.cli.main import main  # the in-process path: its imports only here

        code = main()
    raise SystemExit(code)
