"""``librarian mcp`` driven as a real subprocess by the MCP SDK's own stdio client: the
skills as ``prompt`` lists them, files confined to their skill, exposed tools through the
gate, the curation loop as library.yaml allows it, list_changed when HEAD moves."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from support.helpers import cli_ok, git, make_skill, requires_git, run_process, trailers, write

from librarian.agents.claude_manifests import GENERATED

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
import anyio  # noqa: E402  (installed with mcp)
import mcp_types as types  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

Cap = pytest.CaptureFixture[str]
Session = Callable[[ClientSession, list[Any]], Awaitable[None]]
CLIENT = "test-agent"


def drive(library: Path, body: Session, cwd: Path | None = None) -> None:
    """Start ``librarian mcp`` in a process, initialize, run ``body``, close."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "librarian", "--library", str(library), "mcp"],
        env=dict(os.environ), cwd=str(cwd or library))
    notes: list[Any] = []

    async def on_message(message: Any) -> None:
        notes.append(message)

    async def main() -> None:
        async with stdio_client(params) as (read, write_), ClientSession(
                read, write_, message_handler=on_message,
                client_info=types.Implementation(name=CLIENT, version="1")) as session:
            await session.initialize()
            with anyio.fail_after(60):
                await body(session, notes)

    anyio.run(main)



def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


# -- skills ---------------------------------------------------------------------------


def test_skills_are_listed_as_prompt_lists_them_and_read_within_the_item(
    library: Path, sources: Path, capsys: Cap
) -> None:
    cli_ok(capsys, library, "retain", str(make_skill(
        sources, "alpha", extra_files={"references/guide.md": "Read me.\n",
                                       "assets/logo.bin": b"\x00\xff\x00"})))
    cli_ok(capsys, library, "retain", str(make_skill(sources, "secret")))
    cli_ok(capsys, library, "retain", str(make_skill(sources, "always", body="Always do X.\n")))
    cli_ok(capsys, library, "retain", "--draft", str(make_skill(sources, "drafty")))
    cli_ok(capsys, library, "hide", "secret")
    cli_ok(capsys, library, "resident", "always")
    prompt = json.loads(cli_ok(capsys, library, "prompt", "--format", "json").out)
    budgeted = json.loads(cli_ok(capsys, library, "prompt", "--format", "json",
                              "--budget", "300").out)
    assert budgeted["cut"] is not None
    committed = (library / "skills" / "alpha" / "SKILL.md").read_text()
    write(library / "skills" / "alpha" / "SKILL.md", "a local edit\n")  # never served

    async def body(session: ClientSession, notes: list[Any]) -> None:
        assert "Always do X." in (session.instructions or "")  # resident body
        listed = await session.call_tool("list_skills", {})
        assert not listed.is_error
        assert listed.structured_content == prompt
        cut = await session.call_tool("list_skills", {"budget": 300})
        assert cut.structured_content == budgeted
        names = [s["name"] for s in prompt["skills"]]
        assert "secret" not in names and "drafty" not in names

        loaded = await session.call_tool("load_skill", {"name": "alpha"})
        assert text(loaded) == committed
        assert loaded.structured_content is not None
        assert loaded.structured_content["files"] == [
            "SKILL.md", "assets/logo.bin", "references/guide.md"]
        for hidden_or_draft in ("secret", "drafty"):  # usable by name, never listed
            found = await session.call_tool("load_skill", {"name": hidden_or_draft})
            assert not found.is_error, text(found)
        guide = await session.call_tool("read_skill_file",
                                        {"name": "alpha", "path": "references/guide.md"})
        assert text(guide) == "Read me.\n"
        binary = await session.call_tool("read_skill_file",
                                         {"name": "alpha", "path": "assets/logo.bin"})
        assert binary.structured_content is not None
        assert binary.structured_content["encoding"] == "base64"
        for outside in ("../secret/SKILL.md", "../../library.yaml", "/etc/passwd",
                        "references/../../secret/SKILL.md", "references", ""):
            refused = await session.call_tool("read_skill_file",
                                              {"name": "alpha", "path": outside})
            assert refused.is_error, outside
            assert text(refused).startswith("librarian: error: ")
            assert refused.structured_content is not None
            assert refused.structured_content["exit_code"] == 2
        missing = await session.call_tool("load_skill", {"name": "nope"})
        assert missing.is_error and "no skill named" in text(missing)

        resources = await session.list_resources()
        assert [r.name for r in resources.resources] == names
        read = await session.read_resource("skill://alpha/references/guide.md")
        first = read.contents[0]
        assert isinstance(first, types.TextResourceContents) and first.text == "Read me.\n"
        with pytest.raises(MCPError) as info:
            await session.read_resource("skill://alpha/../secret/SKILL.md")
        assert "is not a path inside the skill" in info.value.message

    drive(library, body)


# -- tools ----------------------------------------------------------------------------

MARK = '#!/bin/sh\necho ran >> "$LIBRARIAN_INPUT_MARK"\necho "n=$LIBRARIAN_INPUT_N"\n'


def make_recipe(base: Path, name: str, execution: str = "sync", script: str = MARK) -> Path:
    root = base / name
    write(root / "recipe.yaml",
          f"name: {name}\ndescription: Marks a file.\nexecution: {execution}\n"
          "environment: shell\nentrypoint: run.sh\ninputs:\n"
          "  mark: {type: path, required: true, description: The file to mark.}\n"
          "  n: {type: integer, default: 1}\n"
          "result: A line on stdout.\neffects: {filesystem: write, network: false}\n"
          "timeout: 20\n")
    write(root / "run.sh", script, 0o755)
    return root


def test_exposed_tools_run_through_the_gate(
    library: Path, sources: Path, tmp_path: Path, capsys: Cap
) -> None:
    cli_ok(capsys, library, "retain", str(make_recipe(sources, "marker")))
    cli_ok(capsys, library, "retain", str(make_recipe(sources, "later", "async")))
    cli_ok(capsys, library, "expose", "marker")
    cli_ok(capsys, library, "expose", "later")
    cli_ok(capsys, library, "approve", "later", "--yes")
    mark = tmp_path / "mark.txt"

    async def body(session: ClientSession, notes: list[Any]) -> None:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        assert "approve" not in listed and "promote" not in listed
        schema = listed["marker"].input_schema
        assert schema["required"] == ["mark"]
        assert schema["properties"]["mark"]["type"] == "string"  # a path is a string
        assert schema["properties"]["n"] == {"type": "integer", "default": 1}
        assert "Marks a file." in (listed["marker"].description or "")

        refused = await session.call_tool("marker", {"mark": str(mark)})
        assert refused.is_error and "is not approved to run" in text(refused)
        assert refused.structured_content is not None
        assert refused.structured_content["exit_code"] == 5
        assert not mark.exists()
        # a person approves (the agent has no way to)
        cli_ok(capsys, library, "approve", "marker", "--yes")
        ran = await session.call_tool("marker", {"mark": str(mark), "n": 3})
        assert not ran.is_error, text(ran)
        assert "n=3" in text(ran)
        assert ran.structured_content is not None
        assert ran.structured_content["exit_code"] == 0
        assert mark.read_text() == "ran\n"
        wrong = await session.call_tool("marker", {"mark": str(mark), "n": "many"})
        assert wrong.is_error
        unknown_recipe = await session.call_tool("later-not-exposed", {})
        assert unknown_recipe.is_error

        launched = await session.call_tool("later", {"mark": str(mark)})
        assert not launched.is_error, text(launched)
        assert launched.structured_content is not None
        run_id = launched.structured_content["run_id"]
        waited = await session.call_tool("wait_run", {"run_id": run_id, "timeout": 30})
        assert waited.structured_content is not None
        assert waited.structured_content["status"] == "succeeded", text(waited)
        status = await session.call_tool("run_status", {"run_id": run_id})
        assert status.structured_content is not None
        assert status.structured_content["exit_code"] == 0
        bad = await session.call_tool("run_status", {"run_id": "nope"})
        assert bad.is_error

        # drift: a local edit of the recipe is refused by the gate
        write(library / "recipes" / "marker" / "run.sh", MARK + "echo extra\n", 0o755)
        drifted = await session.call_tool("marker", {"mark": str(mark)})
        assert drifted.is_error and "local edits" in text(drifted)
        assert mark.read_text() == "ran\nran\n"  # only the approved runs ran

    drive(library, body, cwd=tmp_path)


# -- curation and list_changed -----------------------------------------------------------


async def wait_for_change(session: ClientSession, notes: list[Any]) -> None:
    # The server sends both notifications, one after the other: wait for both (the second
    # may still be on its way when the first arrives).
    kinds = (types.ToolListChangedNotification, types.ResourceListChangedNotification)
    with anyio.fail_after(15):
        while not all(any(isinstance(n, kind) for n in notes) for kind in kinds):
            await anyio.sleep(0.05)
    notes.clear()


@requires_git
def test_the_curation_loop_is_limited_by_library_yaml_and_named_in_trailers(
    library: Path, sources: Path, capsys: Cap
) -> None:
    async def body(session: ClientSession, notes: list[Any]) -> None:
        names = {t.name for t in (await session.list_tools()).tools}
        assert {"draft_skill", "draft_recipe"} <= names
        assert not names & {"promote", "defer", "discard", "expose"}  # default: [draft]
        drafted = await session.call_tool("draft_skill", {
            "name": "notes", "description": "How to take notes.", "body": "Write it down."})
        assert not drafted.is_error, text(drafted)
        assert ("Librarian-Agent", CLIENT) in trailers(library)
        loaded = await session.call_tool("load_skill", {"name": "notes"})
        assert "Write it down." in text(loaded)
        listed = await session.call_tool("list_skills", {})
        assert listed.structured_content is not None
        assert "notes" not in [s["name"] for s in listed.structured_content["skills"]]
        refused = await session.call_tool("promote", {"name": "notes"})
        assert refused.is_error and "does not allow agents to promote" in text(refused)
        bad = await session.call_tool("draft_skill", {"name": "Bad Name", "description": "x",
                                                      "body": "y"})
        assert bad.is_error

        # a person allows more, in a commit made by plain git: the server notices HEAD
        config = (library / "library.yaml").read_text()
        write(library / "library.yaml",
              config + "agents: {may: [draft, promote, defer, discard]}\n")
        git(library, "commit", "-qam", "let the agent promote")
        await wait_for_change(session, notes)
        names = {t.name for t in (await session.list_tools()).tools}
        assert {"promote", "defer", "discard"} <= names and "expose" not in names
        promoted = await session.call_tool("promote", {"name": "notes",
                                                       "evidence": "used twice"})
        assert not promoted.is_error, text(promoted)
        assert ("Librarian-Agent", CLIENT) in trailers(library)
        await wait_for_change(session, notes)  # its own commit moved HEAD too
        listed = await session.call_tool("list_skills", {})
        assert listed.structured_content is not None
        assert "notes" in [s["name"] for s in listed.structured_content["skills"]]
        recipe = await session.call_tool("draft_recipe", {
            "name": "hello", "description": "Says hello.", "script": "#!/bin/sh\necho hi\n"})
        assert not recipe.is_error, text(recipe)
        discarded = await session.call_tool("discard", {"name": "hello", "reason": "dup"})
        assert not discarded.is_error, text(discarded)
        assert ("Librarian-Event", "discard") in trailers(library)

        # another process retains: the server tells the client to refresh
        other = run_process("--library", str(library), "retain",
                            str(make_skill(sources, "from-elsewhere")))
        assert other.returncode == 0, other.stderr
        await wait_for_change(session, notes)
        resources = await session.list_resources()
        assert "from-elsewhere" in [r.name for r in resources.resources]

    drive(library, body)


def test_a_bug_is_a_tool_error_logged_to_stderr_and_the_server_goes_on(
    library: Path, sources: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from librarian.agents import server as server_module
    from librarian.library.layout import Library

    cli_lib = Library(library, GENERATED)
    state = server_module.LibraryServer(cli_lib)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    class Session:
        client_params = None

    class Context:
        session = Session()

    monkeypatch.setattr(server_module.skills, "load_skill", broken)
    params = types.CallToolRequestParams(name="load_skill", arguments={"name": "x"})

    async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
        failed = await state.call_tool(Context(), params)  # type: ignore[arg-type]
        listed = await state.call_tool(Context(), types.CallToolRequestParams(  # type: ignore[arg-type]
            name="list_skills", arguments={}))
        return failed, listed

    with caplog.at_level("ERROR", logger="librarian.mcp"):
        failed, listed = anyio.run(main)
    assert failed.is_error and "internal error" in text(failed)
    assert "RuntimeError: a bug" in caplog.text  # the traceback, for the bug report
    assert not listed.is_error


@pytest.mark.skipif(shutil.which("claude") is None, reason="Claude Code is not on PATH")
def test_claude_code_connects_to_the_server(library: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    command = [sys.executable, "-m", "librarian", "--library", str(library), "mcp"]
    added = subprocess.run(["claude", "mcp", "add", "librarian", "--", *command], cwd=project,
                           capture_output=True, text=True, timeout=120, check=False)
    assert added.returncode == 0, added.stderr
    listed = subprocess.run(["claude", "mcp", "list"], cwd=project, capture_output=True,
                            text=True, timeout=120, check=False)
    assert "Connected" in listed.stdout, listed.stdout + listed.stderr
