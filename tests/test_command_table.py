"""The lazy command table: what a command line registers, and the table it builds."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import run_main

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
    for args in (["update"], ["--help"], ["status"], ["key", "list"]):
        cli.register_commands(["run"])  # something else first, as a test before may have
        cli.register_commands(args)
        assert _here() == _fresh(args), args


def test_a_named_command_has_a_table_of_its_own_that_behaves_as_the_full_one(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A command line naming a known command gets a table holding that command alone;
    what it prints and its exit code are those of the table of every command."""
    lines = (["status", "--bogus"], ["status", "--help"], ["status", "x"], ["inspect", "-h"],
             ["source"], ["source", "add"], ["source", "ad"], ["update", "--frce"],
             ["update", "--help"], ["hooks"], ["--library", "/nonexistent", "log", "-n", "x"],
             ["export", "--help"], ["key", "list", "--bogus"], ["run"], ["--version"])
    alone = {tuple(args): run_main(capsys, *args) for args in lines}
    cli.register_commands(["status"])
    assert [c.name for c in cli.command_table().commands.values()] == ["status"]

    def every_command(args: list[str]) -> None:
        real(args)
        cli._only = None

    real = cli.register_commands
    monkeypatch.setattr(cli, "register_commands", every_command)
    for args in lines:
        assert run_main(capsys, *args) == alone[tuple(args)], args

