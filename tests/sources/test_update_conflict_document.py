"""`update`'s conflict error carries its plans under the documented error field `plans`,
each in the very shape `update --dry-run --json` gives a plan: one shape per field name."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import cli, cli_ok
from support.sources_helpers import Upstream

ERROR_FIELDS = {"kind", "error", "exit_code", "hint", "path", "problems", "plans"}


def test_the_conflict_error_plans_have_the_plans_shape(
    capsys: pytest.CaptureFixture[str], library: Path, tmp_path: Path
) -> None:
    up = Upstream(tmp_path / "up.git")
    up.skill("skills/pdf", body="Step one.\n").commit("one")
    cli_ok(capsys, library, "source", "add", "team", up.url)
    cli_ok(capsys, library, "update")
    skill = library / "sources" / "team" / "skills" / "pdf" / "SKILL.md"
    skill.write_text(skill.read_text().replace("Step one.", "Step one, mine."))
    up.skill("skills/pdf", body="Step one, theirs.\n").commit("two")
    planned = cli(capsys, library, "update", "--dry-run", "--json").json["plans"]
    refused = cli(capsys, library, "update", "--json")
    assert refused.code == 3, refused.err
    document = refused.json
    assert document["kind"] == "error" and set(document) <= ERROR_FIELDS
    assert [set(plan) for plan in document["plans"]] == [set(plan) for plan in planned]
    assert document["plans"][0]["counts"] == planned[0]["counts"]
