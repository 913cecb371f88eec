"""A project's library (``<repo>/.agents``) layered over the user's (``~/.agents``): the
reading commands see the union, the nearer layer winning a name; ``check`` and
``inspect NAME`` say what is shadowed; a name runs in the layer that holds it, with that
layer's approvals only; changing commands write to the nearest layer."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.helpers import GIT, git, make_skill, run_main, write

pytestmark = pytest.mark.skipif(GIT is None, reason="needs the git binary")

Cap = pytest.CaptureFixture[str]


def make_marker(base: Path, says: str) -> Path:
    """A recipe ``marker`` that appends ``says`` to the file its ``mark`` input names."""
    root = base / "marker"
    write(root / "recipe.yaml",
          "name: marker\ndescription: Marks a file.\nexecution: sync\nenvironment: shell\n"
          "entrypoint: run.sh\ninputs:\n  mark: {type: path, required: true}\n"
          "result: A line on stdout.\neffects: {filesystem: write, network: false}\n"
          "timeout: 20\n")
    write(root / "run.sh", f'#!/bin/sh\necho {says} >> "$LIBRARIAN_INPUT_MARK"\n', 0o755)
    return root


@dataclass(frozen=True)
class Stacked:
    project: Path
    library: Path  # <project>/.agents
    user: Path  # ~/.agents


def ok(capsys: Cap, *args: str) -> str:
    result = run_main(capsys, *args)
    assert result.code == 0, (args, result.err)
    return result.out


@pytest.fixture
def stacked(isolated_environment: Path, tmp_path: Path, capsys: Cap,
            monkeypatch: pytest.MonkeyPatch) -> Stacked:
    user = isolated_environment / ".agents"
    ok(capsys, "init", str(user))
    src = tmp_path / "src"
    ok(capsys, "--library", str(user), "retain",
       str(make_skill(src / "user", "pdf", description="The user's PDF skill.")))
    ok(capsys, "--library", str(user), "retain",
       str(make_skill(src / "user", "mail", description="The user's mail skill.")))
    ok(capsys, "--library", str(user), "retain", str(make_marker(src / "user", "user")))
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    write(project / "README.md", "# A project\n")
    git(project, "add", "README.md")
    git(project, "commit", "-q", "-m", "first")
    monkeypatch.chdir(project)
    ok(capsys, "init", ".agents")
    ok(capsys, "retain",
       str(make_skill(src / "project", "pdf", description="The project's PDF skill.")))
    ok(capsys, "retain", str(make_marker(src / "project", "project")))
    return Stacked(project, project / ".agents", user)


def test_prompt_lists_the_union_with_the_projects_version(stacked: Stacked,
                                                           capsys: Cap) -> None:
    document = json.loads(ok(capsys, "prompt", "--format", "json"))
    skills = {s["name"]: s for s in document["skills"]}
    assert set(skills) == {"pdf", "mail"}
    assert skills["pdf"]["description"] == "The project's PDF skill."
    assert skills["pdf"]["location"] == str(stacked.library / "skills" / "pdf" / "SKILL.md")
    assert skills["mail"]["location"].startswith(str(stacked.user))
    assert [r["name"] for r in document["recipes"]] == ["marker"]
    assert document["layers"] == [str(stacked.library), str(stacked.user)]
    # --library names one library: no user layer below it
    alone = json.loads(ok(capsys, "--library", str(stacked.library), "prompt", "--json"))
    assert {s["name"] for s in alone["skills"]} == {"pdf"} and "layers" not in alone
    # --layer adds one below it
    layered = json.loads(ok(capsys, "--library", str(stacked.library), "prompt", "--json",
                            "--layer", str(stacked.user)))
    assert {s["name"] for s in layered["skills"]} == {"pdf", "mail"}


def test_check_and_inspect_report_the_shadowing(stacked: Stacked, capsys: Cap) -> None:
    report = ok(capsys, "check")
    shadowed = [line for line in report.splitlines() if "shadowed" in line]
    assert len(shadowed) == 2, report
    assert any(line.startswith("warning: shadowed: pdf: " + str(stacked.library))
               and str(stacked.user / "skills" / "pdf") in line for line in shadowed)
    assert any("marker" in line for line in shadowed)
    document = json.loads(ok(capsys, "inspect", "pdf", "--json"))
    assert document["layer"] == str(stacked.library)
    held = [(h["layer"], h["origin"], h["wins"]) for h in document["layers"]]
    assert held == [(str(stacked.library), "project", True), (str(stacked.user), "user", False)]
    assert "shadowed  skill pdf at " + str(stacked.user) in ok(capsys, "inspect", "pdf")
    mail = json.loads(ok(capsys, "inspect", "mail", "--json"))
    assert mail["layer"] == str(stacked.user) and mail["item"]["name"] == "mail"


def test_cat_reads_the_layer_that_wins_the_name(stacked: Stacked, capsys: Cap) -> None:
    assert "The project's PDF skill." in ok(capsys, "cat", "pdf")
    assert "The user's mail skill." in ok(capsys, "cat", "mail")


def test_changing_commands_write_to_the_nearest_layer(stacked: Stacked, capsys: Cap,
                                                      tmp_path: Path) -> None:
    user_head = git(stacked.user, "rev-parse", "HEAD").stdout
    ok(capsys, "hide", "pdf")
    assert git(stacked.user, "rev-parse", "HEAD").stdout == user_head
    document = json.loads(ok(capsys, "prompt", "--json", "--operator"))
    # the project hides its pdf: the name stays the project's, the user's is not shown
    assert {s["name"] for s in document["skills"]} == {"mail"}
    assert document["operator"]["hidden"] == ["pdf"]  # never named to an agent
    refused = run_main(capsys, "hide", "mail")  # the user's skill is not the project's
    assert refused.code == 2


def test_run_uses_the_approvals_of_the_layer_holding_the_recipe(
        stacked: Stacked, capsys: Cap, tmp_path: Path) -> None:
    mark = tmp_path / "mark.txt"
    # approved in the user layer only: the project's marker wins the name and is refused
    ok(capsys, "--library", str(stacked.user), "approve", "marker")
    refused = run_main(capsys, "run", "marker", "--arg", f"mark={mark}")
    assert refused.code == 5 and "not approved" in refused.err
    assert not mark.exists()
    ok(capsys, "approve", "marker")  # the nearest layer: the project
    ok(capsys, "run", "marker", "--arg", f"mark={mark}")
    assert mark.read_text() == "project\n"
    # the user's recipe still runs in its own library, with its own approval
    ok(capsys, "--library", str(stacked.user), "run", "marker", "--arg", f"mark={mark}")
    assert mark.read_text() == "project\nuser\n"


def test_layers_from_the_user_config_and_a_broken_layer(
        stacked: Stacked, capsys: Cap, tmp_path: Path) -> None:
    team = tmp_path / "team"
    ok(capsys, "init", str(team))
    ok(capsys, "--library", str(team), "retain",
       str(make_skill(tmp_path / "src" / "team", "mail", description="The team's mail.")))
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "librarian" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(f"layers:\n  - {team}\n")
    document = json.loads(ok(capsys, "prompt", "--json"))
    assert document["layers"] == [str(stacked.library), str(team), str(stacked.user)]
    mail = next(s for s in document["skills"] if s["name"] == "mail")
    assert mail["description"] == "The team's mail."
    config.write_text(f"layers:\n  - {tmp_path / 'nowhere'}\n")
    broken = run_main(capsys, "prompt")
    assert broken.code == 2 and "is not a library" in broken.err


def test_export_codex_config_disables_the_shadowed_user_skill(
        stacked: Stacked, capsys: Cap) -> None:
    document = json.loads(ok(capsys, "export", "codex-config", "--json"))
    assert document["hidden"] == [str(stacked.user / "skills" / "pdf" / "SKILL.md")]


# -- MCP --------------------------------------------------------------------------------


def _mcp_session(cwd: Path, calls: list[tuple[str, dict[str, Any]]], log: Path
                 ) -> list[Any]:
    mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
    import anyio
    import mcp_types as types
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    assert mcp
    params = StdioServerParameters(command=sys.executable, args=["-m", "librarian", "mcp"],
                                   env=dict(os.environ), cwd=str(cwd))
    results: list[Any] = []

    async def main() -> None:
        async with stdio_client(params, errlog=errlog) as (read, write_), ClientSession(
                read, write_, client_info=types.Implementation(name="t", version="1")) as s:
            await s.initialize()
            with anyio.fail_after(60):
                for name, args in calls:
                    results.append(await s.call_tool(name, args))

    with log.open("w") as errlog:
        anyio.run(main)
    return results


def test_mcp_lists_the_union_and_loads_each_name_from_its_layer(stacked: Stacked,
                                                                tmp_path: Path) -> None:
    listed, pdf, mail = _mcp_session(stacked.project, [
        ("list_skills", {}), ("load_skill", {"name": "pdf"}), ("load_skill", {"name": "mail"})],
        tmp_path / "server.log")
    document = listed.structured_content
    skills = {s["name"]: s["description"] for s in document["skills"]}
    assert skills == {"pdf": "The project's PDF skill.", "mail": "The user's mail skill."}
    assert "The project's PDF skill." in pdf.content[0].text
    assert "The user's mail skill." in mail.content[0].text


def test_an_mcp_tool_call_runs_in_its_layer_with_its_approvals(
        stacked: Stacked, capsys: Cap, tmp_path: Path) -> None:
    ok(capsys, "expose", "marker")
    ok(capsys, "--library", str(stacked.user), "expose", "marker")
    ok(capsys, "--library", str(stacked.user), "approve", "marker")
    mark = tmp_path / "mark.txt"
    [refused] = _mcp_session(stacked.project, [("marker", {"mark": str(mark)})],
                             tmp_path / "one.log")
    assert refused.is_error and refused.structured_content["exit_code"] == 5
    assert not mark.exists()
    ok(capsys, "approve", "marker")
    [ran] = _mcp_session(stacked.project, [("marker", {"mark": str(mark)})],
                         tmp_path / "two.log")
    assert not ran.is_error, ran.content[0].text
    assert mark.read_text() == "project\n"
