"""The human output says what it means."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import cli, git, make_recipe, make_skill, run_main, write
from support.sources_helpers import Upstream

Capsys = pytest.CaptureFixture[str]


def test_inventory_prints_no_python_values(library: Path, sources: Path, capsys: Capsys) -> None:
    cli(capsys, library, "retain", str(make_recipe(sources, "count")))
    cli(capsys, library, "expose", "count")
    write(library / "skills" / "broken" / "SKILL.md", b"no front matter\n")
    git(library, "add", "skills/broken")
    git(library, "commit", "-qm", "broken, with plain git", "--no-verify")
    text = cli(capsys, library, "inspect", "-v").out
    assert "None" not in text and "False" not in text and "True" not in text
    assert "effects: filesystem read, no network" in text


def test_counts_agree_with_their_nouns(library: Path, sources: Path, capsys: Capsys) -> None:
    cli(capsys, library, "retain", str(make_skill(sources, "one")))
    assert cli(capsys, library, "status").out.strip() == "clean: 1 item, 0 tools"
    assert "1 item in the work tree passes" in cli(capsys, library, "check").out


def test_an_unknown_command_suggests_once(library: Path, capsys: Capsys) -> None:
    result = run_main(capsys, "--library", str(library), "statu")
    assert result.code == 2
    assert result.err.count("Did you mean") == 1


def test_visibility_says_what_changed(library: Path, sources: Path, capsys: Capsys) -> None:
    cli(capsys, library, "retain", str(make_skill(sources, "tips")))
    assert "skill tips is now hidden: left out of the prompt" in cli(
        capsys, library, "hide", "tips").out
    assert "tips is already hidden; nothing changed" in cli(capsys, library, "hide", "tips").out
    assert "is now shown" in cli(capsys, library, "show", "tips").out
    assert "is now resident" in cli(capsys, library, "resident", "tips").out
    assert "is now not resident" in cli(capsys, library, "resident", "tips", "--off").out
    assert "skill visibility" not in cli(capsys, library, "hide", "tips").out


def test_outdated_and_update_subjects(library: Path, tmp_path: Path, capsys: Capsys) -> None:
    ups = {}
    for name in ("team", "other"):
        ups[name] = Upstream(tmp_path / f"{name}.git").skill("skills/pdf")
        ups[name].commit()
        cli(capsys, library, "source", "add", name, ups[name].url)
    cli(capsys, library, "update")
    ups["team"].skill("skills/pdf", body="New.\n").commit()
    text = cli(capsys, library, "outdated").out
    assert "dry run" not in text and text.rstrip().endswith("to install these changes")
    assert cli(capsys, library, "update").code == 0
    events = cli(capsys, library, "log", "-n", "1", "--json").json["events"]
    assert events[0]["subject"] == "update team (0 added, 1 updated, 0 removed)"
    assert ("Librarian-Source", "other") not in [tuple(t) for t in events[0]["trailers"]]
