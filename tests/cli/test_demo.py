"""The README's first command runs the demo: it must work offline, end to end, and leave
libraries that plain git finds consistent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.helpers import assert_git_consistent, git_text, requires_git, run_main

from librarian.cli.demo.tour import run_demo


def test_the_demo_tours_every_capability_through_the_library(tmp_path: Path) -> None:
    steps = run_demo(tmp_path / "tour")
    commands = [step.command for step in steps]
    transcript = "\n".join(f"{s.command}\n{s.output}" for s in steps)
    for expected in ("librarian init", "librarian retain", "librarian status", "librarian diff",
                     "librarian log", "librarian review", "librarian promote",
                     "librarian prompt", "librarian expose", "librarian approve",
                     "librarian run", "librarian wait", "librarian withdraw",
                     "librarian source add", "librarian update --force",
                     "librarian key generate", "librarian --library", "librarian verify"):
        assert any(c.startswith(expected) for c in commands), expected
    assert "modified   skills/commit-message" in transcript  # drift is shown
    assert "<available_skills>" in transcript
    assert {5, 3} <= {step.exit_code for step in steps}  # refusals are shown
    assert "git restore --source=refs/librarian/backups/" in transcript
    assert "signed: librarian-release/1 by SHA256:" in transcript  # a signed release
    assert "(exit 4" in transcript and "not a trusted key of this source" in transcript
    assert "team-signed: release 1 verified" in transcript


@requires_git
def test_the_demo_leaves_consistent_git_repositories(tmp_path: Path) -> None:
    run_demo(tmp_path / "tour")
    library = tmp_path / "tour" / "library"
    # The demo edits one retained skill on purpose (drift); everything else is committed.
    status = git_text(library, "status", "--porcelain").splitlines()
    assert status == [" M skills/commit-message/SKILL.md"], status
    assert_git_consistent(tmp_path / "tour" / "team-library")
    git_text(library, "fsck", "--strict")


def test_the_demo_command_refuses_a_non_empty_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    result = run_main(capsys, "demo", str(tmp_path / "full"), "--json")
    assert result.code == 2 and json.loads(result.out)["kind"] == "error"
