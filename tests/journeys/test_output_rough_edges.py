"""The rough edges a new user meets in the output: `log -n 0`, `runs --keep` without
`--prune`, `--json` before the command, `expose` twice and of an unapproved digest,
`diff`/`inspect` of an untracked item, retiring twice, conformance warnings of items the
change does not touch (check, and the hook that runs `check --staged`) and the `export`
help."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.helpers import (
    VENV_BIN,
    assert_one_error_line,
    cli,
    cli_ok,
    commit_count,
    git,
    make_recipe,
    make_skill,
    requires_git,
    run_main,
    skill_md,
    write,
)

Cap = pytest.CaptureFixture[str]


def test_log_n_0_prints_nothing(capsys: Cap, library: Path) -> None:
    result = cli_ok(capsys, library, "log", "-n", "0")
    assert result.out == "" and result.err == ""
    assert cli_ok(capsys, library, "log", "-n", "0", "--json").json["events"] == []


def test_runs_keep_without_prune_is_refused(capsys: Cap, library: Path) -> None:
    result = cli(capsys, library, "runs", "--keep", "1")
    assert result.code == 2
    assert "--prune" in assert_one_error_line(result.err)
    assert cli(capsys, library, "runs", "--prune", "--keep", "1").code == 0


def test_json_before_the_command(capsys: Cap, library: Path) -> None:
    result = run_main(capsys, "--json", "--library", str(library), "status")
    assert result.code == 0, result.err
    assert result.json["kind"] == "status"
    result = run_main(capsys, "--library", str(library), "--json", "source", "list")
    assert result.code == 0 and result.json["kind"] == "sources"


def test_expose_twice_is_a_no_op_and_unapproved_is_not_callable(
    capsys: Cap, library: Path, sources: Path
) -> None:
    cli_ok(capsys, library, "retain", str(make_recipe(sources, "count")))
    first = cli_ok(capsys, library, "expose", "count", "--json").json
    assert first["callable_now"] is False and "librarian approve count" in first["reason"]
    human = cli_ok(capsys, library, "expose", "count", "--as", "count-two").out
    assert "callable now" not in human.replace("not callable now", "")
    commits = commit_count(library)
    again = cli(capsys, library, "expose", "count", "--json")
    assert again.code == 0, again.err
    assert again.json["commit"] is None and "nothing changed" in again.json["note"]
    assert commit_count(library) == commits
    cli_ok(capsys, library, "approve", "count", "--yes")
    approved = cli_ok(capsys, library, "expose", "count", "--json").json
    assert approved["callable_now"] is True and approved["reason"] is None


def test_diff_and_inspect_of_an_untracked_item(capsys: Cap, library: Path) -> None:
    write(library / "skills" / "loose" / "SKILL.md", skill_md("loose"))
    for command in ("diff", "inspect"):
        result = cli(capsys, library, command, "loose")
        assert result.code == 2
        line = assert_one_error_line(result.err)
        assert "skills/loose is untracked" in line and "librarian retain skills/loose" in line
    assert "no item named" in cli(capsys, library, "diff", "nothing").err


def test_retiring_twice_points_to_restore(capsys: Cap, library: Path, sources: Path) -> None:
    cli_ok(capsys, library, "retain", str(make_skill(sources, "gone")))
    cli_ok(capsys, library, "retire", "gone")
    result = cli(capsys, library, "retire", "gone")
    assert result.code == 2
    line = assert_one_error_line(result.err)
    assert "already retired" in line and "librarian restore gone" in line


def test_check_and_the_hook_count_warnings_of_untouched_items(
    capsys: Cap, library: Path, sources: Path
) -> None:
    odd = make_skill(sources, "odd", skill_md_bytes=skill_md("other-name"))
    cli_ok(capsys, library, "retain", str(odd), "--name", "odd")
    clean = cli_ok(capsys, library, "check")
    assert "other-name" not in clean.out
    assert "1 conformance warning in items unchanged" in clean.out
    assert "librarian inspect --verbose" in clean.out
    document = cli_ok(capsys, library, "check", "--json").json
    assert document["other_warnings"] == 1 and len(document["warnings"]) == 1
    # An item being changed still has its warnings shown, in the work tree and staged.
    write(library / "skills" / "fresh" / "SKILL.md", skill_md("fresh-other"))
    assert "fresh-other" in cli_ok(capsys, library, "check").out
    git(library, "add", "skills/fresh")
    staged = cli_ok(capsys, library, "check", "--staged")
    assert "fresh-other" in staged.out and "other-name" not in staged.out
    assert "1 conformance warning in items unchanged" in staged.out


def test_export_help_says_print(capsys: Cap) -> None:
    out = run_main(capsys, "export", "--help").out
    assert "Print" in out and "Write" not in out


@requires_git
def test_the_hook_counts_warnings_of_items_the_commit_leaves_alone(
    capsys: Cap, library: Path, sources: Path
) -> None:
    odd = make_skill(sources, "odd", skill_md_bytes=skill_md("other-name"))
    cli_ok(capsys, library, "retain", str(odd), "--name", "odd")
    cli_ok(capsys, library, "hooks", "install")
    (library / "README.md").write_text("# Our library\n")
    git(library, "add", "README.md")
    env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin",
           "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    done = git(library, "commit", "-m", "readme", env=env)
    said = (done.stdout + done.stderr).decode()
    assert "other-name" not in said, said
    assert "1 conformance warning in items unchanged" in said, said
