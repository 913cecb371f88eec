"""The console entry point (``librarian``, ``python -m librarian``).

typer, click, dulwich and PyYAML are loaded only when the command runs, with the cyclic
garbage collector off until ``cli.main`` has the command's table built: what a command
line loads lives as long as the process, and each collection during the loading went
over all of it again (docs/perf-devices.md).
"""

from __future__ import annotations

import gc


def entry() -> None:
    gc.disable()  # cli.main.main enables it once the code is loaded
    from librarian.cli.main import main  # its imports only here

    raise SystemExit(main())
