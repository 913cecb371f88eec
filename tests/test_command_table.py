"""The lazy command table: what a command line registers, and the tables the daemon's
server builds before it forks (cli.main.prebuild_tables)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import git, git_env, make_skill, run_main, run_process, write

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
    every = frozenset(cli.COMMAND_MODULES.values())
    assert (frozenset(), "status") in built and (every, None) in built
    assert (frozenset({"sources"}), "update") in built
    for args in (["update"], ["status"], ["--help"], ["expose", "x"]):
        cli.register_commands(args)
        assert any(cli.command_table() is table for table in built.values()), args
    assert cli._tables == built  # nothing was built after the prebuild
    cli.register_commands(["status"])
    assert _here() == _fresh(["status"])  # the foundation's alone, as at start


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


_CHILD_UPDATE = """
import json, os, sys
from librarian.cli.daemon_main import preload
preload()
from librarian.cli.main import main
before = set(sys.modules)
out, sys.stdout = sys.stdout, open(os.devnull, "w")
try:
    main(["--library", sys.argv[1], *sys.argv[2:]])
except SystemExit:
    pass
sys.stdout = out
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_a_daemon_child_imports_nothing_for_an_update_or_a_status(tmp_path: Path) -> None:
    """What the server preloads covers an update that installs a change (the hot path)
    and the status after it (what commands import only when they use it included)."""
    upstream = tmp_path / "up"
    make_skill(upstream / "skills", "alpha")
    git(tmp_path, "init", "-q", "-b", "main", str(upstream))
    git(upstream, "add", "-A")
    git(upstream, "commit", "-qm", "first")
    library = tmp_path / "lib"
    env = {**git_env(), "LIBRARIAN_NO_DAEMON": "1"}
    for args in (["init", str(library)], ["--library", str(library), "source", "add", "up",
                                          str(upstream)], ["--library", str(library), "update"]):
        assert run_process(*args, env=env).returncode == 0
    write(upstream / "skills" / "alpha" / "notes.md", "new\n")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-qm", "second")
    for command in ("update", "status"):
        out = subprocess.run([sys.executable, "-c", _CHILD_UPDATE, str(library), command],
                             check=True, capture_output=True, text=True, env=env).stdout
        assert json.loads(out) == [], command
    assert "notes.md" in git(library, "ls-tree", "-r", "--name-only", "HEAD").stdout.decode()
