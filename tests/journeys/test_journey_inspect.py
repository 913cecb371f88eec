"""``inspect NAME``, ``outdated``'s exit code, ``update --dry-run
--diff``, shell completion."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import cli, git, make_recipe, requires_git, run_main, tree_snapshot
from support.sources_helpers import Upstream

Capsys = pytest.CaptureFixture[str]


def test_inspect_one_recipe_whole(library: Path, sources: Path, capsys: Capsys) -> None:
    cli(capsys, library, "retain", str(make_recipe(sources / "v1", "count")))
    cli(capsys, library, "revise", "count", str(make_recipe(sources / "v2", "count",
                                                             extra_yaml="# two\n")))
    cli(capsys, library, "expose", "count", "--as", "counter")
    cli(capsys, library, "approve", "count", "--yes")
    before = tree_snapshot(library, skip_git=False)
    result = cli(capsys, library, "inspect", "count", "--json")
    assert result.code == 0, result.err
    doc = result.json
    assert doc["kind"] == "item" and doc["item"]["path"] == "recipes/count"
    assert doc["work_tree"] == "clean" and doc["item"]["digest"].startswith("sha256:")
    assert [r["event"] for r in doc["revisions"]] == ["expose", "revise", "retain"]
    assert doc["exposed_as"] == [{"tool": "counter", "digest": doc["item"]["digest"],
                                  "status": "ok"}]
    assert doc["approvals"][0]["current"] is True
    assert doc["usage"]["runs"] == 0 and doc["provenance"] is None
    assert tree_snapshot(library, skip_git=False) == before  # creates nothing
    human = cli(capsys, library, "inspect", "count").out
    assert "exposed as counter (ok)" in human and "revisions  3" in human
    assert cli(capsys, library, "inspect", "nope").code == 2


@requires_git
def test_inspect_a_managed_item_outdated_and_the_diff(library: Path, tmp_path: Path,
                                                      capsys: Capsys) -> None:
    up = Upstream(tmp_path / "up.git")
    up.skill("skills/pdf", body="Version one.\n").commit()
    cli(capsys, library, "source", "add", "team", up.url)
    assert cli(capsys, library, "outdated").code == 10
    cli(capsys, library, "update")
    assert cli(capsys, library, "outdated").code == 0
    doc = cli(capsys, library, "inspect", "team:pdf", "--json").json
    provenance = doc["provenance"]
    assert provenance["source"] == "team" and provenance["url"] == up.url
    assert provenance["upstream_commit"] == up.commits[-1]
    assert provenance["locked_digest"] == provenance["head_digest"] == doc["item"]["digest"]
    assert provenance["matches_lock"] is True

    skill = library / "sources" / "team" / "skills" / "pdf" / "SKILL.md"
    skill.write_text(skill.read_text() + "Local.\n")
    git(library, "commit", "-qam", "plain git edit", "--no-verify")
    provenance = cli(capsys, library, "inspect", "team:pdf", "--json").json["provenance"]
    assert provenance["matches_lock"] is False
    assert "DIFFERS from the lock" in cli(capsys, library, "inspect", "team:pdf").out

    up.skill("skills/pdf", body="Version two.\n").commit()
    before = tree_snapshot(library)
    shown = cli(capsys, library, "update", "--dry-run", "--diff")
    assert shown.code == 0, shown.err
    assert "-Version one." in shown.out and "+Version two." in shown.out
    assert "diff --git a/sources/team/skills/pdf/SKILL.md" in shown.out
    as_json = cli(capsys, library, "outdated", "--diff", "--json")
    assert as_json.code == 10 and "+Version two." in as_json.json["diff"]
    assert tree_snapshot(library) == before


def test_shell_completion_is_on(capsys: Capsys) -> None:
    result = run_main(capsys, "--help")
    assert "--install-completion" in result.out and "--show-completion" in result.out
