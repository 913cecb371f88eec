"""The daemon's process: ``python -m librarian.cli.daemon_main LIBRARY IDLE [READY_FD]``,
started by ``librarian daemon start`` (run it in a terminal to see why a start fails).

Not a command: it imports what commands use (typer, click, dulwich, PyYAML, rich, every
library module) and builds typer's click command once for every set of command modules a
command line can ask for (cli.main.prebuild_tables), leaving the foundation's registered,
as a fresh process has. A child then registers its own command's module as in-process
does and finds its table built, so its command table, its help and its usage errors are
exactly the in-process ones.
"""

from __future__ import annotations

import gc
import pkgutil
import sys
from importlib import import_module

import librarian
from librarian.cli.main import main, prebuild_tables
from librarian.daemon.control import serve
from librarian.daemon.wire import open_state_dir

#: Command-line modules the server loads: the others register commands when imported.
_CLI_PRELOAD = ("render", "render_item", "render_sources", "progress")
#: What library functions import only when they run (dulwich's transport for a fetch,
#: ctypes for syncfs, PyYAML for a manifest or a configuration not yet remembered, ...):
#: ~7 ms a child would pay on every update (PyYAML alone ~11 ms).
#: tests/test_command_table.py holds a child's update and status to importing nothing new.
_LAZY_PRELOAD = ("dulwich.client", "dulwich.worktree", "dulwich.commit_graph",
                 "dulwich.trailers", "ctypes", "pwd", "yaml")


def preload() -> None:
    """Import every library module and what commands import lazily, once, in the server."""
    for name in _CLI_PRELOAD:
        import_module(f"librarian.cli.{name}")
    for module in pkgutil.walk_packages(librarian.__path__, "librarian."):
        if module.name.startswith(("librarian.cli", "librarian._", "librarian.agents.server")):
            continue
        import_module(module.name)
    for name in _LAZY_PRELOAD:
        import_module(name)
    for optional in ("rich.console", "rich.progress"):  # drawn only on a terminal
        try:
            import_module(optional)
        except ImportError:
            pass
    prebuild_tables()  # a child finds its command's table built


def run(argv: list[str]) -> None:
    library, idle = argv[0], float(argv[1])
    ready = int(argv[2]) if len(argv) > 2 else None
    preload()
    # Everything loaded so far lives as long as the server: out of the collector's sight,
    # a child's collections never touch (and so never copy) the pages it shares with the
    # server. Measured: an update through the daemon 5,600 -> 4,200 page faults.
    gc.collect()
    gc.freeze()
    serve(open_state_dir(library), idle, main, ready)


if __name__ == "__main__":
    run(sys.argv[1:])
