"""``librarian mcp`` at the edge, as an attacker or a broken library would drive it:
arguments checked against the advertised schema before anything runs, a file's size
read from its object header before its blob, a bad committed library.yaml answered as a
tool error while the rest is served, one line (no traceback loop) when the library
vanishes, and the missing extra a usage error with the install line."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO

import pytest
from support.helpers import cli_ok, git, make_skill, write

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
import anyio  # noqa: E402  (installed with mcp)
import mcp_types as types  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

Cap = pytest.CaptureFixture[str]
Body = Callable[[ClientSession], Awaitable[None]]


def drive(library: Path, body: Body, errlog: TextIO | None = None) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "librarian", "--library", str(library), "mcp"],
        env=dict(os.environ), cwd=str(library.parent))

    async def main(log: TextIO) -> None:
        async with stdio_client(params, errlog=log) as (read, write_), \
                ClientSession(read, write_) as session:
            await session.initialize()
            with anyio.fail_after(60):
                await body(session)

    if errlog is not None:
        anyio.run(main, errlog)
        return
    with tempfile.TemporaryFile("w+") as log:  # pytest's captured stderr has no fd
        anyio.run(main, log)


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def usage_error(result: types.CallToolResult, words: str) -> None:
    assert result.is_error, text(result)
    assert text(result).startswith("librarian: error: "), text(result)
    assert words in text(result), text(result)
    assert result.structured_content is not None
    assert result.structured_content["exit_code"] == 2


MARK = '#!/bin/sh\necho "n=$LIBRARIAN_INPUT_N"\n'


def test_arguments_are_checked_against_the_schema(
    library: Path, sources: Path, capsys: Cap
) -> None:
    cli_ok(capsys, library, "retain", str(make_skill(sources, "alpha")))
    recipe = sources / "echoer"
    write(recipe / "recipe.yaml",
          "name: echoer\ndescription: Echoes.\nexecution: sync\nenvironment: shell\n"
          "entrypoint: run.sh\ninputs:\n  n: {type: string, required: true}\n"
          "result: A line on stdout.\n"
          "effects: {filesystem: none, network: false}\n")
    write(recipe / "run.sh", MARK, 0o755)
    cli_ok(capsys, library, "retain", str(recipe))
    cli_ok(capsys, library, "expose", "echoer")
    cli_ok(capsys, library, "approve", "echoer", "--yes")

    async def body(session: ClientSession) -> None:
        cases: list[tuple[str, dict[str, Any], str]] = [
            ("load_skill", {"name": "alpha", "extra": 1}, "unknown argument 'extra'"),
            ("load_skill", {"name": 5}, "must be string, got integer"),
            ("load_skill", {}, "'name' is required"),
            ("load_skill", {"name": "al\x00pha"}, "NUL"),
            ("read_skill_file", {"name": "alpha", "path": "SKILL.md\x00x"}, "NUL"),
            ("list_skills", {"budget": True}, "must be integer, got boolean"),
            ("list_skills", {"budget": 0}, "at least 1"),
            ("wait_run", {"run_id": "x", "timeout": "abc"}, "must be number, got string"),
            ("run_status", {"run_id": ["x"]}, "must be string, got array"),
            ("echoer", {"n": "a\x00b"}, "NUL"),
            ("echoer", {"n": "1", "other": "2"}, "unknown argument 'other'"),
            ("draft_skill", {"name": "x", "description": "d", "body": "b", "z": 1},
             "unknown argument 'z'"),
        ]
        for tool, arguments, words in cases:
            usage_error(await session.call_tool(tool, arguments), words)
        ran = await session.call_tool("echoer", {"n": "7"})
        assert not ran.is_error and "n=7" in text(ran)

    drive(library, body)
    runs = library / ".git" / "librarian" / "runs"
    records = [p.read_text() for p in runs.rglob("*.json")] if runs.is_dir() else []
    assert not any('"running"' in r for r in records)


def test_a_blob_too_large_is_refused_from_its_header(
    library: Path, sources: Path, capsys: Cap
) -> None:
    cli_ok(capsys, library, "retain", str(make_skill(sources, "alpha")))
    big = library / "skills" / "alpha" / "big.bin"
    big.write_bytes(b"\x01" * (17 * 1024 * 1024))
    git(library, "add", "skills/alpha/big.bin")
    git(library, "commit", "-q", "-m", "a large file, with plain git")
    blob = git(library, "rev-parse", "HEAD:skills/alpha/big.bin").stdout.decode().strip()
    # Only the header of this object can be read: reading the blob would fail; its size,
    # from the header alone, is what refuses it.
    loose = library / ".git" / "objects" / blob[:2] / blob[2:]
    packer = zlib.compressobj()
    head = packer.compress(f"blob {17 * 1024 * 1024}\0".encode() + b"\x01" * 64)
    loose.chmod(0o644)
    loose.write_bytes(head + packer.flush(zlib.Z_SYNC_FLUSH))

    async def body(session: ClientSession) -> None:
        refused = await session.call_tool("read_skill_file",
                                          {"name": "alpha", "path": "big.bin"})
        usage_error(refused, "is larger than 8388608 bytes")
        with pytest.raises(mcp.shared.exceptions.MCPError) as info:
            await session.read_resource("skill://library/alpha/big.bin")
        assert "over the 16777216 a read serves" in info.value.error.message

    drive(library, body)


def test_a_bad_committed_library_yaml_is_a_tool_error_naming_it(
    library: Path, sources: Path, capsys: Cap
) -> None:
    cli_ok(capsys, library, "retain", str(make_skill(sources, "alpha")))
    (library / "library.yaml").write_text("skills: [unclosed\n")
    git(library, "commit", "-q", "-am", "a broken library.yaml, with plain git")

    async def body(session: ClientSession) -> None:
        names = {t.name for t in (await session.list_tools()).tools}
        assert {"list_skills", "load_skill", "read_skill_file"} <= names
        listed = await session.call_tool("list_skills", {})
        assert listed.is_error and "library.yaml" in text(listed)
        assert "internal error" not in text(listed)
        loaded = await session.call_tool("load_skill", {"name": "alpha"})
        assert not loaded.is_error, text(loaded)

    drive(library, body)


def test_a_vanished_library_is_said_once(library: Path, tmp_path: Path) -> None:
    errors = tmp_path / "stderr.txt"

    async def body(session: ClientSession) -> None:
        await session.list_tools()
        library.rename(library.parent / "gone")
        await anyio.sleep(3)  # six polls of HEAD
        library.parent.joinpath("gone").rename(library)
        await anyio.sleep(1)

    with errors.open("w") as errlog:
        drive(library, body, errlog)
    said = errors.read_text()
    assert "Traceback" not in said
    assert said.count("cannot read the library's HEAD") == 1, said


def test_without_the_sdk_dependencies_mcp_says_how_to_install_it(library: Path) -> None:
    for missing in ("anyio", "pydantic", "mcp_types"):
        code = (f"import sys; sys.modules[{missing!r}] = None; "
                "from librarian.cli.main import main; "
                f"sys.exit(main(['--library', {str(library)!r}, 'mcp']))")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=60, check=False)
        assert done.returncode == 2, (missing, done.stderr)
        assert "pip install 'agent-librarian[mcp]'" in done.stderr
        assert "Traceback" not in done.stderr
