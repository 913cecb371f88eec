"""Exit codes 0/1/2/3, the one-line error format and `--json` errors (spec §3.4).

The mapping of errors to exit codes lives in ``librarian.cli.main.main``; it is checked in process
(``main([...])``), through typer's CliRunner, and through a real ``python -m librarian``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.helpers import (
    assert_one_error_line,
    make_skill,
    run_main,
    run_process,
    skill_md,
    write,
)
from typer.testing import CliRunner

from librarian.agents.claude_manifests import GENERATED
from librarian.cli.main import app
from librarian.errors import UsageError
from librarian.library.layout import Library
from librarian.ops import inventory
from librarian.ops.retention import retain


@pytest.fixture
def stocked(library: Path, sources: Path) -> Path:
    retain(Library(library, GENERATED), make_skill(sources, "alpha"))
    return library


# -- in process: main(argv) --------------------------------------------------------------------


def _cases(library: Path, sources: Path) -> list[tuple[list[str], int]]:
    lib = ["--library", str(library)]
    taken = make_skill(sources / "again", "alpha")
    bad = make_skill(sources, "bad", skill_md_bytes=b"---\nname: bad\n---\n")
    return [
        ([*lib, "status"], 0),
        ([*lib, "inspect"], 0),
        (["nonsense-command"], 2),
        ([*lib, "retain"], 2),  # missing argument
        ([*lib, "status", "--bogus-option"], 2),
        ([*lib, "retain", str(bad)], 2),
        ([*lib, "retain", str(taken)], 3),
        ([*lib, "cat", "nope"], 2),
        ([*lib, "inspect", "nowhere"], 2),
        (["--library", str(sources), "status"], 2),  # not a library
        ([*lib, "init", str(library)], 3),
    ]


def test_exit_codes_and_error_lines(
    stocked: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv, code in _cases(stocked, sources):
        result = run_main(capsys, *argv)
        assert result.code == code, (argv, result.err)
        if code == 0:
            assert result.err == "", argv
            continue
        assert result.out == "", argv
        assert_one_error_line(result.err)


def test_json_errors_print_exactly_one_document(
    stocked: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv, code in _cases(stocked, sources):
        result = run_main(capsys, *argv, "--json")
        assert result.code == code, (argv, result.err)
        document = json.loads(result.out)  # exactly one document: json.loads rejects extra data
        if code == 0:
            continue
        assert document["kind"] == "error", argv
        assert document["exit_code"] == code
        assert "\n" not in document["error"]
        line = assert_one_error_line(result.err)
        hint = f" (hint: {document['hint']})" if document["hint"] else ""
        assert line == f"librarian: error: {document['error']}{hint}"


def test_a_json_error_names_the_path_it_is_about(
    stocked: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-skill"
    result = run_main(capsys, "--library", str(stocked), "retain", str(missing), "--json")
    assert result.code == 2
    assert json.loads(result.out)["path"] == str(missing)


def test_dirty_status_check_exits_3(stocked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (stocked / "skills" / "alpha" / "SKILL.md").write_bytes(skill_md("alpha", "Edited."))
    assert run_main(capsys, "--library", str(stocked), "status", "--check").code == 3
    result = run_main(capsys, "--library", str(stocked), "status", "--check", "--json")
    assert result.code == 3
    assert json.loads(result.out)["clean"] is False


def test_internal_error_exits_1_with_a_hint(
    stocked: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(inventory, "inspect_library", broken)
    result = run_main(capsys, "--library", str(stocked), "inspect")
    assert result.code == 1
    line = assert_one_error_line(result.err)
    assert "internal error" in line and "kaboom" in line
    assert "bug" in result.err
    result = run_main(capsys, "--library", str(stocked), "inspect", "--json")
    assert result.code == 1
    assert json.loads(result.out)["exit_code"] == 1


def test_validation_error_with_many_problems_stays_on_one_line(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = make_skill(sources, "messy", skill_md_bytes=b"---\nname: Messy\n---\n",
                     extra_files={".env": "A=1\n", "id_rsa": "x\n"})
    result = run_main(capsys, "--library", str(library), "retain", str(src))
    assert result.code == 2
    line = assert_one_error_line(result.err)
    assert ".env" in line and "id_rsa" in line and "more)" not in line  # all listed


# -- typer's CliRunner -------------------------------------------------------------------------


def test_cli_runner_exit_codes(stocked: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["--library", str(stocked), "status", "--check"])
    assert ok.exit_code == 0, ok.output
    assert ok.stdout.startswith("clean")
    (stocked / "skills" / "alpha" / "SKILL.md").write_bytes(b"edited\n")
    dirty = runner.invoke(app, ["--library", str(stocked), "status", "--check"])
    assert dirty.exit_code == 3
    assert "modified" in dirty.stdout
    usage = runner.invoke(app, ["--library", str(stocked), "no-such-command"])
    assert usage.exit_code == 2
    # Without main(), a librarian error surfaces as the exception that carries its code.
    missing = runner.invoke(app, ["--library", str(stocked), "cat", "nope"])
    assert isinstance(missing.exception, UsageError)
    assert missing.exception.exit_code == 2


# -- a real process ----------------------------------------------------------------------------


def test_real_process_success_and_refusal(stocked: Path, sources: Path) -> None:
    src = make_skill(sources, "fresh")
    ok = run_process("--library", str(stocked), "retain", str(src), "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["kind"] == "retained_skill"
    assert ok.stderr == ""

    again = run_process("--library", str(stocked), "retain", str(src), "--json")
    assert again.returncode == 3
    assert json.loads(again.stdout)["exit_code"] == 3
    assert "taken" in assert_one_error_line(again.stderr)

    human = run_process("--library", str(stocked), "retain", str(src))
    assert human.returncode == 3
    assert human.stdout == ""
    assert_one_error_line(human.stderr)


def test_real_process_usage_and_not_a_library(tmp_path: Path) -> None:
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    result = run_process("inspect", cwd=nowhere)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "not inside a library" in assert_one_error_line(result.stderr)
    assert list(nowhere.iterdir()) == []

    usage = run_process("frobnicate", "--json", cwd=nowhere)
    assert usage.returncode == 2
    assert json.loads(usage.stdout)["exit_code"] == 2
    assert_one_error_line(usage.stderr)


def test_real_process_status_check(stocked: Path) -> None:
    assert run_process("status", "--check", cwd=stocked / "skills").returncode == 0
    write(stocked / "skills" / "alpha" / "extra.txt", "new\n")
    dirty = run_process("status", "--check", cwd=stocked)
    assert dirty.returncode == 3
    assert "modified" in dirty.stdout and "skills/alpha" in dirty.stdout


def test_every_command_module_is_imported_and_registers_a_command() -> None:
    """cli.main imports the command modules it lists, and every command comes from one."""
    from librarian.cli import main as cli
    from librarian.cli.app import app

    infos = [*app.registered_commands]
    for group in app.registered_groups:
        assert group.typer_instance is not None
        infos += group.typer_instance.registered_commands
    defined = {info.callback.__module__ for info in infos if info.callback is not None}
    assert defined == {f"librarian.cli.{name}" for name in cli.COMMAND_MODULES}


def test_a_command_line_finds_its_command_after_the_library_option(
    library: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_main(capsys, "--library", str(library), "prompt", "--format", "json")
    assert result.code == 0 and result.out.lstrip().startswith("{")


def test_exit_4_and_5_in_process_and_in_a_real_process(
    stocked: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trust failures exit 4 (a signed source without a signed release is refused) and gate
    refusals exit 5 (an unapproved digest never runs), in process and as a real process."""
    from support.helpers import make_recipe

    lib = ["--library", str(stocked)]
    recipe = make_recipe(sources, "counter")
    assert run_main(capsys, *lib, "retain", str(recipe)).code == 0
    target = sources / "words.txt"
    target.write_text("one two three\n")
    from dulwich.repo import Repo

    Repo.init(str(sources / "unreleased"), mkdir=True).close()
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHZvGxHnnzjZRU6r5e1QfpCoUEdNbXxyOCSHySgqQTuf"
    added = run_main(capsys, *lib, "source", "add", "team", str(sources / "unreleased"),
                     "--trust", key)
    assert added.code == 0, added.err
    trust = [*lib, "update"]  # a signed source with no signed release
    refused_run = [*lib, "run", "counter", "--arg", f"path={target}"]
    for args, code in ((trust, 4), (refused_run, 5)):
        in_process = run_main(capsys, *args)
        assert in_process.code == code, in_process.err
        assert_one_error_line(in_process.err)
        real = run_process(*args)
        assert real.returncode == code, real.stderr
        assert_one_error_line(real.stderr)
    ran = run_process(*refused_run, "--yes")
    assert ran.returncode == 0 and ran.stdout.split()[0] == "3", ran.stderr


def test_help_before_a_command_lists_every_command() -> None:
    result = run_process("--help", "review")
    assert result.returncode == 0
    for command in ("review", "expose", "update", "status"):
        assert f"  {command} " in result.stdout, command


def test_no_command_prints_the_help_and_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_main(capsys)
    assert result.code == 2
    assert "Usage: librarian" in result.out and "retain" in result.out
    assert_one_error_line(result.err)
    group = run_main(capsys, "source")
    assert group.code == 2 and "add" in group.out


# -- the dependency pin (docs/decisions.md: typer >=0.24,<0.26, click declared) ------------------


def test_the_installed_typer_is_in_the_pinned_range_and_raises_the_click_we_catch(
    tmp_path: Path,
) -> None:
    import importlib.metadata

    import click
    import typer.core

    requires = importlib.metadata.requires("librarian") or []
    assert any(r.replace(" ", "").startswith("click>=") for r in requires), requires
    typer_pin = next(r for r in requires if r.startswith("typer"))
    assert "<0.26" in typer_pin, typer_pin
    major, minor = (int(p) for p in importlib.metadata.version("typer").split(".")[:2])
    assert (0, 24) <= (major, minor) < (0, 26)
    # From 0.26 typer vendors click; then `except click.ClickException` in cli/main.py
    # would no longer match what typer raises and a usage error would become exit 1.
    assert typer.core.click is click
    usage = run_process("status", "--no-such-option", cwd=tmp_path)
    assert usage.returncode == 2, usage.stderr
    assert "no-such-option" in assert_one_error_line(usage.stderr)


def test_the_architecture_page_names_every_module() -> None:
    """docs/architecture.md must match the code: every module of every package is named."""
    root = Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "architecture.md").read_text()
    modules = sorted((root / "librarian").rglob("*.py"))
    missing = [str(module.relative_to(root)) for module in modules
               if module.name != "__init__.py" and module.parent.name != "librarian"
               and f"`{module.stem}`" not in doc and f"{module.stem}.py" not in doc]
    assert missing == []


def test_every_module_is_under_400_lines() -> None:
    """One concern per module: a module that outgrows 400 lines is split, not grown."""
    root = Path(__file__).resolve().parents[2] / "librarian"
    long = {str(m.relative_to(root)): n for m in root.rglob("*.py")
            if (n := len(m.read_text().splitlines())) >= 400}
    assert long == {}
