"""The committed Claude Code manifests (spec §8): after every command that changes the set
of visible skills, ``.claude-plugin/marketplace.json`` lists exactly what ``prompt``
lists and ``plugin.json`` the visible managed skills, written in that same commit;
``check`` validates both; Claude Code's own validator accepts them (when it is on PATH)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from support.helpers import cli_out, git_text, make_skill, requires_git, run_main, write
from support.sources_helpers import Upstream

from librarian.formats.claude_plugin import (
    MARKETPLACE_FILE,
    PLUGIN_FILE,
    listed_skills,
    plugin_skills,
)

Cap = pytest.CaptureFixture[str]



def prompt_paths(capsys: Cap, library: Path) -> list[str]:
    document = json.loads(cli_out(capsys, library, "prompt", "--format", "json"))
    root = str(library) + "/"
    return [s["location"].removeprefix(root).removesuffix("/SKILL.md")
            for s in document["skills"]]


def assert_in_step(capsys: Cap, library: Path) -> None:
    visible = prompt_paths(capsys, library)
    marketplace = (library / MARKETPLACE_FILE).read_bytes()
    assert list(listed_skills(marketplace) or ()) == visible
    plugin = (library / PLUGIN_FILE).read_bytes()
    assert list(plugin_skills(plugin) or ()) == [p for p in visible if p.startswith("sources/")]
    entry = json.loads(marketplace)["plugins"][0]
    assert entry["source"] == "./" and len(json.loads(marketplace)["plugins"]) == 1
    assert run_main(capsys, "--library", str(library), "check").code == 0


def changed_in_head(library: Path) -> set[str]:
    return set(git_text(library, "show", "--name-only", "--format=", "HEAD").split())


@requires_git
def test_manifests_follow_every_change_to_the_visible_skills(
    library: Path, sources: Path, tmp_path: Path, capsys: Cap
) -> None:
    assert_in_step(capsys, library)  # init: no skill yet
    steps: list[tuple[str, ...]] = [
        ("retain", str(make_skill(sources, "alpha"))),
        ("retain", str(make_skill(sources, "beta"))),
        ("retain", "--draft", str(make_skill(sources, "gamma"))),
        ("promote", "gamma"),
        ("hide", "beta"),
        ("show", "beta"),
        ("retire", "alpha"),
        ("restore", "alpha"),
    ]
    for step in steps:
        before = (library / MARKETPLACE_FILE).read_bytes()
        cli_out(capsys, library, *step)
        assert_in_step(capsys, library)
        if (library / MARKETPLACE_FILE).read_bytes() != before:
            assert MARKETPLACE_FILE in changed_in_head(library), step  # the same commit
        elif step[0] == "retain" and "--draft" in step:
            assert not any(p.startswith(".claude-plugin") for p in changed_in_head(library))

    up = Upstream(tmp_path / "up.git")
    up.skill("skills/pdf").skill("skills/docx").commit("first")
    cli_out(capsys, library, "source", "add", "team", up.url)
    cli_out(capsys, library, "update")
    assert_in_step(capsys, library)
    assert {PLUGIN_FILE, MARKETPLACE_FILE} <= changed_in_head(library)
    assert "sources/team/skills/pdf" in prompt_paths(capsys, library)
    cli_out(capsys, library, "hide", "team:pdf")
    assert_in_step(capsys, library)
    up.remove("skills/docx").skill("skills/new").commit("second")
    cli_out(capsys, library, "update")
    assert_in_step(capsys, library)
    cli_out(capsys, library, "source", "remove", "team")
    assert_in_step(capsys, library)
    assert git_text(library, "status", "--porcelain").strip() == ""


def test_hidden_skills_are_left_out_and_drafts_never_listed(
    library: Path, sources: Path, capsys: Cap
) -> None:
    cli_out(capsys, library, "retain", str(make_skill(sources, "shown")))
    cli_out(capsys, library, "retain", str(make_skill(sources, "secret")))
    cli_out(capsys, library, "retain", "--draft", str(make_skill(sources, "drafty")))
    cli_out(capsys, library, "hide", "secret")
    assert listed_skills((library / MARKETPLACE_FILE).read_bytes()) == ("skills/shown",)
    cli_out(capsys, library, "hide", "shown")
    # nothing visible: the list names a folder without skills (an empty one would load
    # the whole skills/ folder)
    entry = json.loads((library / MARKETPLACE_FILE).read_bytes())["plugins"][0]
    assert entry["skills"] == ["./.claude-plugin"]
    assert listed_skills((library / MARKETPLACE_FILE).read_bytes()) == ()


def test_check_validates_both_manifests(library: Path, sources: Path, capsys: Cap) -> None:
    cli_out(capsys, library, "retain", str(make_skill(sources, "alpha")))
    good = (library / MARKETPLACE_FILE).read_bytes()
    write(library / MARKETPLACE_FILE, good.replace(b"./skills/alpha", b"./skills/ghost"))
    result = run_main(capsys, "--library", str(library), "check")
    assert result.code == 2
    assert "lists skills/ghost" in result.out + result.err
    write(library / MARKETPLACE_FILE, b"{not json")
    result = run_main(capsys, "--library", str(library), "check")
    assert "not the manifest" in result.out + result.err
    write(library / MARKETPLACE_FILE, good)
    (library / PLUGIN_FILE).unlink()
    result = run_main(capsys, "--library", str(library), "check")
    assert result.code == 2 and f"{PLUGIN_FILE}: missing" in result.out + result.err


def test_a_local_edit_of_a_manifest_is_not_clobbered(
    library: Path, sources: Path, capsys: Cap
) -> None:
    write(library / MARKETPLACE_FILE, b"{}\n")
    result = run_main(capsys, "--library", str(library), "retain",
                      str(make_skill(sources, "alpha")))
    assert result.code == 3
    assert MARKETPLACE_FILE in result.err
    assert not (library / "skills" / "alpha").exists()


@pytest.mark.skipif(shutil.which("claude") is None, reason="Claude Code is not on PATH")
def test_claude_code_validates_the_library(
    library: Path, sources: Path, tmp_path: Path, capsys: Cap
) -> None:
    cli_out(capsys, library, "retain", str(make_skill(sources, "alpha")))
    cli_out(capsys, library, "retain", str(make_skill(sources, "secret")))
    cli_out(capsys, library, "hide", "secret")
    for target in (library, library / PLUGIN_FILE):
        done = subprocess.run(["claude", "plugin", "validate", str(target)],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Validation passed" in done.stdout + done.stderr
