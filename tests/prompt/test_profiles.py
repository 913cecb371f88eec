"""Per-agent views: ``agents.profiles`` in library.yaml narrows what ``prompt``,
``search``, ``librarian mcp`` (list_skills, skills/list, resources) and ``export
codex-config`` show to one agent; a profile never shows a hidden skill or a draft."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from support.helpers import cli, cli_ok, commit_config_edit, make_skill
from support.sources_helpers import Upstream, install

Cap = pytest.CaptureFixture[str]
PROFILES = ("agents:\n  profiles:\n    writer:\n      include: [doc*, 'team:*']\n"
            "      exclude: ['team:gamma']\n    secretive:\n      include: [secret]\n")


def build(library: Path, sources: Path, capsys: Cap, tmp_path: Path) -> None:
    for name in ("docx", "docs-style", "pdf", "secret"):
        cli_ok(capsys, library, "retain", str(make_skill(sources, name,
                                                         description=f"The {name} skill.")))
    cli_ok(capsys, library, "hide", "secret")
    upstream = Upstream(tmp_path / "up").skill("skills/alpha").skill("skills/gamma")
    upstream.commit()
    install(capsys, library, upstream, source="team")
    text = (library / "library.yaml").read_text()
    commit_config_edit(library, text, text + PROFILES)


def names(document: dict[str, Any]) -> list[str]:
    return [s["name"] for s in document["skills"]]


def test_a_profile_narrows_prompt_search_and_exports(
    library: Path, sources: Path, capsys: Cap, tmp_path: Path
) -> None:
    build(library, sources, capsys, tmp_path)
    everything = json.loads(cli_ok(capsys, library, "prompt", "--format", "json").out)
    assert names(everything) == ["docs-style", "docx", "pdf", "team:alpha", "team:gamma"]
    writer = json.loads(cli_ok(capsys, library, "prompt", "--format", "json",
                               "--profile", "writer").out)
    assert names(writer) == ["docs-style", "docx", "team:alpha"]
    secretive = json.loads(cli_ok(capsys, library, "prompt", "--format", "json",
                                  "--profile", "secretive").out)
    assert names(secretive) == []  # a profile only narrows: hidden stays hidden
    xml = cli_ok(capsys, library, "prompt", "--profile", "writer").out
    assert "pdf" not in xml and "docx" in xml
    found = json.loads(cli_ok(capsys, library, "search", "skill", "--profile", "writer",
                              "--json").out)
    assert sorted(h["name"] for h in found["hits"]) == ["docs-style", "docx"]
    codex = json.loads(cli_ok(capsys, library, "export", "codex-config", "--profile",
                              "writer", "--json").out)
    disabled = sorted(Path(p).parent.name for p in codex["hidden"])
    assert disabled == ["pdf", "secret"]
    unknown = cli(capsys, library, "prompt", "--profile", "nobody")
    assert unknown.code == 2 and "no agent profile 'nobody'" in unknown.err
    assert "secretive, writer" in unknown.err
    # library.yaml keeps its profiles when a command rewrites it
    cli_ok(capsys, library, "hide", "pdf")
    assert "writer" in (library / "library.yaml").read_text()


def test_librarian_mcp_serves_a_profile(
    library: Path, sources: Path, capsys: Cap, tmp_path: Path
) -> None:
    mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from pydantic import TypeAdapter

    build(library, sources, capsys, tmp_path)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "librarian", "--library", str(library), "mcp",
                                      "--profile", "writer"],
        env=dict(os.environ), cwd=str(library))

    async def main() -> None:
        async with stdio_client(params, errlog=sys.__stderr__) as (read, write_), \
                ClientSession(read, write_) as session:
            await session.initialize()
            listed = await session.call_tool("list_skills", {})
            assert listed.structured_content is not None
            assert names(listed.structured_content) == ["docs-style", "docx", "team:alpha"]
            page = await session.send_request(
                mcp.types.Request(method="skills/list", params=None),  # type: ignore[attr-defined]
                TypeAdapter(dict[str, Any]))
            assert [s["uri"] for s in page["skills"]] == [
                "skill://library/docs-style/SKILL.md", "skill://library/docx/SKILL.md",
                "skill://sources/team/alpha/SKILL.md"]
            resources = await session.list_resources()
            assert [r.name for r in resources.resources] == ["docs-style", "docx",
                                                             "team:alpha"]
            found = await session.call_tool("search_skills", {"query": "pdf skill"})
            assert found.structured_content is not None
            assert "pdf" not in [h["name"] for h in found.structured_content["hits"]]

    anyio.run(main)


def test_mcp_with_an_unknown_profile_exits_2_before_serving(library: Path) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "librarian", "--library", str(library), "mcp", "--profile",
         "nobody"], input="", capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert "no agent profile 'nobody'" in done.stderr and done.stdout == ""
