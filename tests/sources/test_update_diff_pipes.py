"""``update --dry-run --diff`` prints patches as git does, unindented, so the output pipes
to ``git apply`` (what the update would write, applied to the work tree); the plan's name
column widens for names longer than 28 characters."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import cli, cli_ok, git, requires_git
from support.sources_helpers import Upstream

LONG = "a-skill-whose-name-is-well-over-twenty-eight"
BODY = "".join(f"line {n}\n" for n in range(12))


@requires_git
def test_the_dry_run_diff_applies_with_git_apply(
    capsys: pytest.CaptureFixture[str], library: Path, tmp_path: Path
) -> None:
    up = Upstream(tmp_path / "up.git")
    up.skill("skills/edited", body=BODY).skill("skills/plain", body=BODY).commit("one")
    cli_ok(capsys, library, "source", "add", "team", up.url)
    cli_ok(capsys, library, "update")
    edited = library / "sources" / "team" / "skills" / "edited" / "SKILL.md"
    edited.write_text(edited.read_text().replace("line 0\n", "line 0, edited here\n"))
    up.skill("skills/edited", body=BODY.replace("line 11\n", "line 11, upstream\n"))
    up.skill("skills/plain", body=BODY.replace("line 5\n", "line 5, upstream\n"))
    up.commit("two")
    out = cli_ok(capsys, library, "update", "--dry-run", "--diff").out
    patch = out[out.index("diff --git"):]
    assert all(not line.startswith(" diff") for line in out.splitlines())
    git(library, "apply", "--check", input=patch.encode())
    git(library, "apply", input=patch.encode())
    text = edited.read_text()
    assert "line 0, edited here" in text and "line 11, upstream" in text
    plain = (library / "sources" / "team" / "skills" / "plain" / "SKILL.md").read_text()
    assert "line 5, upstream" in plain


def test_long_names_keep_the_plan_columns(capsys: pytest.CaptureFixture[str],
                                          library: Path, tmp_path: Path) -> None:
    up = Upstream(tmp_path / "up.git")
    up.skill("skills/a").skill(f"skills/{LONG}").commit("one")
    cli_ok(capsys, library, "source", "add", "team", up.url)
    result = cli(capsys, library, "outdated")
    assert result.code == 10, result.err
    rows = [line for line in result.out.splitlines() if line.startswith("  add ")]
    assert len(rows) == 2
    assert len({row.index("new upstream") for row in rows}) == 1, rows
    assert f"team:{LONG} new upstream" in result.out
