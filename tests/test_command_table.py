"""The lazy command table: what a command line registers, and the tables the daemon's
server builds before it forks (cli.main.prebuild_tables)."""

from __future__ import annotations

import json
import subprocess
import sys

from librarian.cli import main as cli
from librarian.cli.app import app

_LISTING = """
import json, sys
from librarian.cli import main as cli
from librarian.cli.app import app
cli.register_commands(sys.argv[1:])
print(json.dumps([[c.name or c.callback.__name__ for c in app.registered_commands],
                  [g.name for g in app.registered_groups]]))
"""


def _fresh(args: list[str]) -> list[list[str]]:
    """What a fresh process's ``app`` holds after registering for ``args``."""
    out = subprocess.run([sys.executable, "-c", _LISTING, *args], check=True,
                         capture_output=True, text=True).stdout
    listing: list[list[str]] = json.loads(out)
    return listing


def _here() -> list[list[str]]:
    return [[c.name or getattr(c.callback, "__name__", "") for c in app.registered_commands],
            [g.name or "" for g in app.registered_groups]]


def test_any_order_of_registration_gives_a_fresh_process_table() -> None:
    for args in (["update"], ["--help"], ["status"], ["key", "list"], ["daemon", "status"]):
        cli.register_commands(["run"])  # something else first, as a daemon child might
        cli.register_commands(args)
        assert _here() == _fresh(args), args


def test_prebuilt_tables_are_reused_not_rebuilt() -> None:
    cli.prebuild_tables()
    built = dict(cli._tables)
    assert frozenset() in built and frozenset(cli.COMMAND_MODULES.values()) in built
    for args in (["update"], ["status"], ["--help"], ["expose", "x"]):
        cli.register_commands(args)
        assert any(cli.command_table() is table for table in built.values()), args
    assert cli._tables == built  # nothing was built after the prebuild
    cli.register_commands(["status"])
    assert _here() == _fresh(["status"])  # the foundation's alone, as at start
