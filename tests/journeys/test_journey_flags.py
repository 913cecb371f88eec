"""Flags, the user config file, runs --prune, wait
without an id."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.helpers import cli, make_recipe, run_main, run_process

from librarian import __version__

Capsys = pytest.CaptureFixture[str]


def test_short_help_version_and_library_after_the_command(library: Path,
                                                          capsys: Capsys) -> None:
    assert run_main(capsys, "-h").code == 0
    assert "Usage: librarian status" in run_main(capsys, "status", "-h").out
    assert "Usage: librarian source add" in run_main(capsys, "source", "add", "-h").out
    result = run_main(capsys, "--version")
    assert (result.code, result.out.strip()) == (0, f"librarian {__version__}")
    after = run_main(capsys, "status", "--library", str(library), "--json")
    assert after.code == 0 and after.json["kind"] == "status"
    assert run_main(capsys, "status", f"--library={library}").code == 0


def test_run_accepts_y(library: Path, sources: Path, capsys: Capsys) -> None:
    recipe = make_recipe(sources, "count")
    cli(capsys, library, "retain", str(recipe))
    target = sources / "words.txt"
    target.write_text("one two three\n")
    result = cli(capsys, library, "run", "count", "-y", "--arg", f"path={target}")
    assert result.code == 0, result.err
    assert result.out.strip() == "3"


def test_the_default_library_in_the_user_config(library: Path, tmp_path: Path,
                                                isolated_environment: Path) -> None:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "librarian" / "config.yaml"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    refused = run_process("status", cwd=elsewhere)
    assert refused.returncode == 2 and str(config) in refused.stderr
    config.parent.mkdir(parents=True)
    config.write_text(f"library: {library}\n")
    found = run_process("status", "--json", cwd=elsewhere)
    assert found.returncode == 0, found.stderr
    config.write_text("libary: typo\n")
    assert run_process("status", cwd=elsewhere).returncode == 2


def test_runs_prune_and_wait_for_the_newest(library: Path, sources: Path,
                                            capsys: Capsys) -> None:
    cli(capsys, library, "retain", str(make_recipe(sources, "count")))
    target = sources / "words.txt"
    target.write_text("a b\n")
    assert cli(capsys, library, "wait").code == 2  # no runs yet
    ids = []
    for _ in range(3):
        launched = cli(capsys, library, "run", "count", "-y", "--async", "--arg",
                       f"path={target}", "--json")
        ids.append(launched.json["run_id"])
    waited = cli(capsys, library, "wait", "--json")
    assert waited.code == 0 and waited.json["run_id"] == ids[-1]
    for run_id in ids:
        cli(capsys, library, "wait", run_id)
    listed = cli(capsys, library, "runs", "--json").json["runs"]
    assert len(listed) == 3 and "recipe" not in listed[0]
    assert listed[0]["path"] == "recipes/count"
    pruned = cli(capsys, library, "runs", "--prune", "--keep", "1", "--json")
    assert pruned.code == 0 and len(pruned.json["pruned"]) == 2
    assert [r["run_id"] for r in cli(capsys, library, "runs", "--json").json["runs"]] == [
        ids[-1]]
    assert "nothing to prune" in cli(capsys, library, "runs", "--prune", "--keep", "1").out
