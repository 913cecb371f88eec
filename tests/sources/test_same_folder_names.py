"""Two items of one source sharing a folder name (a collection of plugins, each with its
own `skills/access`) are both installed, at their upstream paths, and named apart by the
folders that tell them apart: `team:imessage:access` beside `team:telegram:access`, as
Claude Code shows a plugin's skills (`imessage:access`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.helpers import cli, git
from support.sources_helpers import Upstream

Cap = pytest.CaptureFixture[str]
MIRROR = Path("/work/.mirror/anthropics+claude-plugins-official/repo")


def _names(capsys: Cap, library: Path) -> set[str]:
    result = cli(capsys, library, "inspect", "--json")
    assert result.code == 0, result.err
    return {item["name"] for item in result.json["items"]}


def test_both_skills_of_one_folder_name_are_installed_named_apart(
    library: Path, tmp_path: Path, capsys: Cap
) -> None:
    up = Upstream(tmp_path / "up.git")
    for plugin in ("imessage", "telegram"):
        up.skill(f"external_plugins/{plugin}/skills/access", body=f"{plugin} access.\n")
        up.skill(f"external_plugins/{plugin}/skills/configure", body=f"{plugin} setup.\n")
    up.skill("skills/pdf").commit("first")
    assert cli(capsys, library, "source", "add", "team", up.url).code == 0
    result = cli(capsys, library, "update", "--json")
    assert result.code == 0, result.err
    plan = result.json["plans"][0]
    assert plan["skipped"] == [] and plan["counts"]["add"] == 5
    assert {i["name"] for i in plan["items"]} == {
        "team:imessage:access", "team:telegram:access", "team:imessage:configure",
        "team:telegram:configure", "team:pdf"}
    for plugin in ("imessage", "telegram"):
        skill = library / f"sources/team/external_plugins/{plugin}/skills/access/SKILL.md"
        assert skill.read_text().endswith(f"{plugin} access.\n")
    names = _names(capsys, library)
    assert {"team:imessage:access", "team:telegram:access", "team:pdf"} <= names
    shown = cli(capsys, library, "cat", "team:telegram:access")
    assert shown.code == 0 and "telegram access." in shown.out
    # Claude Code names a plugin's skills by folder: the plugin route lists a bare name
    # once (the first in path order); librarian mcp serves both, named apart.
    plugin = json.loads((library / ".claude-plugin/plugin.json").read_text())
    listed = json.dumps(plugin)
    assert "external_plugins/imessage/skills/access" in listed
    assert "external_plugins/telegram/skills/access" not in listed
    # an update of one of them is planned under its own name
    up.skill("external_plugins/telegram/skills/access", body="Changed.\n").commit("second")
    again = cli(capsys, library, "update", "--json")
    assert again.code == 0, again.err
    changed = [i for i in again.json["plans"][0]["items"] if i["action"] == "update"]
    assert [i["name"] for i in changed] == ["team:telegram:access"]
    assert cli(capsys, library, "check").code == 0


@pytest.mark.skipif(not MIRROR.is_dir(), reason="no mirror of anthropics/claude-plugins-official")
def test_the_official_claude_plugins_collection_installs_whole(
    library: Path, tmp_path: Path, capsys: Cap
) -> None:
    clone = tmp_path / "official"
    git(tmp_path, "clone", "-q", "--bare", str(MIRROR), str(clone))
    skills = git(clone, "ls-tree", "-r", "--name-only", "HEAD").stdout.decode().split("\n")
    folders = [p.rsplit("/", 1)[0] for p in skills if p.endswith("/SKILL.md")]
    assert cli(capsys, library, "source", "add", "official", str(clone)).code == 0
    result = cli(capsys, library, "update", "--json")
    assert result.code == 0, result.err
    plan = result.json["plans"][0]
    assert not [s for s in plan["skipped"] if "another item" in " ".join(s["problems"])]
    installed = {i["path"] for i in plan["items"] if i["action"] == "add"}
    assert installed == set(folders) - {s["path"] for s in plan["skipped"]}
    names = _names(capsys, library)
    for plugin in ("imessage", "telegram", "discord"):
        for skill in ("access", "configure"):
            if f"external_plugins/{plugin}/skills/{skill}" in installed:
                assert f"official:{plugin}:{skill}" in names
    assert len([n for n in names if n.startswith("official:")]) == len(installed)
    shutil.rmtree(clone)


_segment = st.sampled_from(["a", "b", "skills", "recipes", "x-y", "plugins"])


@given(st.sets(st.lists(_segment, min_size=1, max_size=4).map("/".join), max_size=12))
def test_qualified_names_are_unique_and_plain_when_they_can_be(paths: set[str]) -> None:
    from librarian.core.names import qualified_names

    names = qualified_names(paths)
    assert set(names) == paths
    assert len(set(names.values())) == len(paths)  # every item told apart
    leaves = [p.rsplit("/", 1)[-1] for p in paths]
    for path, name in names.items():
        leaf = path.rsplit("/", 1)[-1]
        assert name.split(":")[-1] == leaf  # the folder's own name comes last
        if leaves.count(leaf) == 1:
            assert name == leaf
        elif name == leaf:  # shared, but nothing above it to qualify it with
            assert "/" not in path
