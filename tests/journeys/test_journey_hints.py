"""Hints that work."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.helpers import cli, git_text, make_recipe, make_skill, requires_git, run_main

from librarian.git.revparse import split_revision

Capsys = pytest.CaptureFixture[str]


def test_the_revise_warning_names_a_command_that_works(library: Path, sources: Path,
                                                       capsys: Capsys) -> None:
    cli(capsys, library, "retain", str(make_recipe(sources / "v1", "count")))
    cli(capsys, library, "expose", "count")
    v2 = make_recipe(sources / "v2", "count", extra_yaml="# v2\n")
    warning = cli(capsys, library, "revise", "count", str(v2), "--json").json["warnings"][-1]
    command = warning.split("`")[1].split()
    assert command[:2] == ["librarian", "expose"]
    assert cli(capsys, library, *command[1:]).code == 0


def test_a_missing_argument_points_at_the_command_help(capsys: Capsys) -> None:
    result = run_main(capsys, "retain")
    assert result.code == 2
    assert "`librarian retain --help`" in result.err
    result = run_main(capsys, "source", "add", "x")
    assert "`librarian source add --help`" in result.err


@requires_git
@pytest.mark.parametrize("revision", ["HEAD~1", "main~2", "HEAD^", "HEAD^1", "HEAD~1^"])
def test_restore_from_accepts_git_revisions(library: Path, sources: Path, capsys: Capsys,
                                            revision: str) -> None:
    cli(capsys, library, "retain", str(make_skill(sources, "gone")))  # main~2 holds it
    cli(capsys, library, "retain", str(make_skill(sources, "other")))
    cli(capsys, library, "retire", "gone")
    expected = git_text(library, "rev-parse", revision).strip()
    holds = "gone" in git_text(library, "ls-tree", "-r", "--name-only", expected)
    result = cli(capsys, library, "restore", "gone", "--from", revision, "--json")
    if holds:
        assert result.code == 0, result.err
        assert result.json["restored_from"] == expected
    else:
        assert result.code == 2 and "no retained item" in result.err


def test_an_unknown_revision_is_exit_2(library: Path, capsys: Capsys) -> None:
    assert cli(capsys, library, "restore", "x", "--from", "HEAD~40").code == 2
    assert cli(capsys, library, "restore", "x", "--from", "HEAD^2").code == 2


@given(st.text(alphabet="ab", min_size=1, max_size=4),
       st.lists(st.sampled_from(["~", "~2", "^", "^2", "^0"]), max_size=4))
def test_split_revision(base: str, suffixes: list[str]) -> None:
    name, steps = split_revision(base + "".join(suffixes))
    assert name == base
    expected: list[int] = []
    for suffix in suffixes:
        expected += {"~": [1], "~2": [1, 1], "^": [1], "^2": [2], "^0": []}[suffix]
    assert steps == expected
