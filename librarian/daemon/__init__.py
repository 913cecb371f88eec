"""The opt-in resident process (``librarian daemon``, docs/commands.md): a fork server per
library that has imported the command table once, so a command pays no interpreter start.

``wire`` is what client and server share: where the socket is (``.git/librarian``, opened
without following links), the request, the fingerprint of the installed code and the
start-up settings a child cannot change. ``client`` is the console entry's fast path,
``server`` the fork loop, ``child`` a forked child, ``control`` start/stop/status.

May import: the standard library and ``librarian.errors`` only (a lint-imports contract):
the client runs before typer, click, dulwich or PyYAML are imported, and the server is
handed the command line to run (``cli.daemon_main`` passes ``cli.main.main``), so this package
sits below the command line it serves."""
