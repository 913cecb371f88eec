"""The MCP skills extension served by ``librarian mcp``, driven by the MCP SDK's own client
over stdio in both protocol eras: ``skills/list`` (visible skills only, paginated, every
entry from one commit), ``skills/get`` (hidden skills too, never drafts, -32602 for an
unknown URI), ``resources/directory/read`` and ``resources/read``, every digest checked
against the bytes served; list changes reach a 2025-11-25 session and a 2026-07-28
``subscriptions/listen`` stream."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from support.helpers import cli_ok, git, make_skill, write
from support.sources_helpers import Upstream, install

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
import anyio  # noqa: E402  (installed with mcp)
import mcp_types as types  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.subscriptions import listen  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402  (installed with mcp)

Cap = pytest.CaptureFixture[str]
Body = Callable[[ClientSession], Awaitable[None]]
EXT = "io.modelcontextprotocol/skills"


def drive(library: Path, body: Body, *, modern: bool = False, args: tuple[str, ...] = ()
          ) -> None:
    """``librarian mcp`` in a process; ``initialize`` (2025-11-25) or ``server/discover``
    (2026-07-28) first, then ``body``."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "librarian", "--library", str(library), "mcp", *args],
        env=dict(os.environ), cwd=str(library))

    async def main() -> None:
        async with stdio_client(params) as (read, write_), ClientSession(
                read, write_, client_info=types.Implementation(name="ext", version="1")
        ) as session:
            if modern:
                await session.discover()
                assert session.protocol_version == "2026-07-28"
            else:
                await session.initialize()
                assert session.protocol_version == "2025-11-25"
            with anyio.fail_after(60):
                await body(session)

    anyio.run(main)


async def request(session: ClientSession, method: str, params: dict[str, Any] | None = None
                  ) -> dict[str, Any]:
    result: dict[str, Any] = await session.send_request(
        types.Request[Any, Any](method=method, params=params),  # type: ignore[arg-type]
        TypeAdapter(dict[str, Any]))
    return result


def build_library(library: Path, sources: Path, capsys: Cap, tmp_path: Path) -> None:
    cli_ok(capsys, library, "retain", str(make_skill(
        sources, "alpha", extra_files={"references/guide.md": "Read me.\n",
                                       "assets/logo.bin": b"\x00\xff\x00\r\n"})))
    write(sources / "beta" / "SKILL.md",
          "---\nname: beta\ndescription: Dates and yes stay strings.\nbeta: yes\n"
          "when: 2026-01-02\ntime: 1:30\nmetadata:\n  on: off\n---\nBody.\n")
    cli_ok(capsys, library, "retain", str(sources / "beta"))
    cli_ok(capsys, library, "retain", str(make_skill(sources, "secret")))
    cli_ok(capsys, library, "retain", "--draft", str(make_skill(sources, "drafty")))
    cli_ok(capsys, library, "hide", "secret")
    upstream = Upstream(tmp_path / "up").skill("skills/alpha").skill("skills/gamma")
    upstream.commit()
    install(capsys, library, upstream, source="team")


def verify_entry(entry: dict[str, Any], files: dict[str, bytes]) -> None:
    """Every listed file's digest and size equal those of the bytes served."""
    assert entry["resources"][0]["uri"] is not None
    listed = {r["uri"]: r for r in entry["resources"]}
    assert entry["uri"] in listed
    assert set(listed) == set(files)
    for uri, data in files.items():
        assert listed[uri]["digest"] == "sha256:" + hashlib.sha256(data).hexdigest(), uri
        assert listed[uri]["size"] == len(data)


async def read_bytes(session: ClientSession, uri: str) -> bytes:
    result = await session.read_resource(uri)
    content = result.contents[0]
    if isinstance(content, types.TextResourceContents):
        return content.text.encode("utf-8")
    assert isinstance(content, types.BlobResourceContents)
    return base64.b64decode(content.blob)


@pytest.mark.parametrize("modern", [False, True], ids=["2025-11-25", "2026-07-28"])
def test_skills_are_listed_got_and_read_with_digests_in_both_eras(
    library: Path, sources: Path, capsys: Cap, tmp_path: Path, modern: bool
) -> None:
    build_library(library, sources, capsys, tmp_path)
    head = git(library, "rev-parse", "HEAD").stdout.decode().strip()
    alpha_tree = git(library, "rev-parse", "HEAD:skills/alpha").stdout.decode().strip()

    async def body(session: ClientSession) -> None:
        caps = session.server_capabilities
        assert caps is not None
        if modern:  # the SDK's 2025-11-25 schema drops `extensions` (see the raw test)
            assert caps.extensions is not None
            assert caps.extensions[EXT] == {"directoryRead": True}
        listed = await request(session, "skills/list")
        if modern:  # the 2025-11-25 client drops the later revision's cache fields
            assert listed["cacheScope"] == "private" and listed["ttlMs"] >= 0
        uris = [s["uri"] for s in listed["skills"]]
        assert uris == ["skill://library/alpha/SKILL.md", "skill://library/beta/SKILL.md",
                        "skill://sources/team/alpha/SKILL.md",
                        "skill://sources/team/gamma/SKILL.md"]
        for uri in uris:  # valid for Python's parser: an authority, no port
            parts = urlsplit(uri)
            assert parts.port is None and parts.path.split("/")[-2] in uri
        names = json.dumps(listed)
        assert "secret" not in names and "drafty" not in names
        for entry in listed["skills"]:
            files = {r["uri"]: await read_bytes(session, r["uri"]) for r in entry["resources"]}
            verify_entry(entry, files)
        alpha = listed["skills"][0]
        assert alpha["_meta"]["librarian/tree"] == alpha_tree
        beta = listed["skills"][1]["frontmatter"]
        assert beta["beta"] == "yes" and beta["when"] == "2026-01-02"
        assert beta["time"] == "1:30" and beta["metadata"] == {"on": "off"}

        got = await request(session, "skills/get", {"uri": "skill://library/secret/SKILL.md"})
        assert got["skill"]["frontmatter"]["name"] == "secret"  # hidden: got by URI
        for unknown in ("skill://library/drafty/SKILL.md", "skill://library/nope/SKILL.md",
                        "skill://library/alpha/references/guide.md", "skill://x/y/SKILL.md",
                        "skill://team:alpha/SKILL.md", "not a uri"):
            with pytest.raises(MCPError) as refused:
                await request(session, "skills/get", {"uri": unknown})
            assert refused.value.error.code == types.INVALID_PARAMS, unknown

        folder = await request(session, "resources/directory/read",
                               {"uri": "skill://library/alpha"})
        children = {r["uri"]: r["mimeType"] for r in folder["resources"]}
        assert children == {"skill://library/alpha/SKILL.md": "text/markdown",
                            "skill://library/alpha/assets": "inode/directory",
                            "skill://library/alpha/references": "inode/directory"}
        sub = await request(session, "resources/directory/read",
                            {"uri": "skill://library/alpha/references"})
        assert [r["uri"] for r in sub["resources"]] == [
            "skill://library/alpha/references/guide.md"]
        for outside in ("skill://library/alpha/../secret/SKILL.md",
                        "skill://library/alpha/%2e%2e/secret/SKILL.md",
                        "skill://library/drafty/SKILL.md"):
            with pytest.raises(MCPError):
                await session.read_resource(outside)
        assert head  # every entry above came from this commit

    drive(library, body, modern=modern)
    digests = library / ".git" / "librarian" / "cache" / "skill-digests.json"
    assert digests.is_file()  # remembered by blob id


def test_initialize_of_2025_11_25_advertises_the_extension(library: Path) -> None:
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}
    done = subprocess.run(
        [sys.executable, "-m", "librarian", "--library", str(library), "mcp"],
        input=json.dumps(hello) + "\n", capture_output=True, text=True, timeout=60,
        check=False)
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["result"]["capabilities"]["extensions"] == {EXT: {"directoryRead": True}}


def test_pages_all_come_from_one_commit(library: Path, sources: Path, capsys: Cap) -> None:
    for index in range(60):
        cli_ok(capsys, library, "retain", str(make_skill(sources, f"s-{index:02d}")))

    async def body(session: ClientSession) -> None:
        first = await request(session, "skills/list")
        assert len(first["skills"]) == 50 and "nextCursor" in first
        # HEAD moves between the pages: the second page is still the first's commit.
        await anyio.to_thread.run_sync(lambda: cli_ok(capsys, library, "retire", "s-59"))
        second = await request(session, "skills/list", {"cursor": first["nextCursor"]})
        assert [s["frontmatter"]["name"] for s in second["skills"]] == [
            f"s-{i:02d}" for i in range(50, 60)]
        assert "nextCursor" not in second
        again = await request(session, "skills/list")
        assert len(again["skills"]) == 50
        with pytest.raises(MCPError) as bad:
            await request(session, "skills/list", {"cursor": "nonsense"})
        assert bad.value.error.code == types.INVALID_PARAMS

    drive(library, body)


def test_a_skill_over_the_limits_is_not_served_and_check_says_so(
    library: Path, sources: Path, capsys: Cap
) -> None:
    many = {f"refs/f{i:03d}.md": f"{i}\n" for i in range(512)}
    cli_ok(capsys, library, "retain", str(make_skill(sources, "many", extra_files=many)))
    cli_ok(capsys, library, "retain", str(make_skill(sources, "small")))

    async def body(session: ClientSession) -> None:
        listed = await request(session, "skills/list")
        assert [s["frontmatter"]["name"] for s in listed["skills"]] == ["small"]

    drive(library, body)
    checked = cli_ok(capsys, library, "check")
    assert "skills/many" in checked.out + checked.err and "512" in checked.out + checked.err


@pytest.mark.parametrize("modern", [False, True], ids=["2025-11-25", "2026-07-28"])
def test_list_changes_reach_both_eras(library: Path, sources: Path, capsys: Cap,
                                      modern: bool) -> None:
    cli_ok(capsys, library, "retain", str(make_skill(sources, "first")))
    seen: list[str] = []

    async def legacy(session: ClientSession) -> None:
        await anyio.to_thread.run_sync(
            lambda: cli_ok(capsys, library, "retain", str(make_skill(sources, "second"))))
        with anyio.fail_after(30):
            while not {"tools", "resources"} <= set(seen):
                await anyio.sleep(0.05)

    async def modern_body(session: ClientSession) -> None:
        async with listen(session, tools_list_changed=True,
                          resources_list_changed=True) as events:
            await anyio.to_thread.run_sync(
                lambda: cli_ok(capsys, library, "retain", str(make_skill(sources, "second"))))
            with anyio.fail_after(30):
                async for event in events:
                    seen.append(type(event).__name__)
                    if {"ToolsListChanged", "ResourcesListChanged"} <= set(seen):
                        break

    if modern:
        drive(library, modern_body, modern=True)
        return
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "librarian", "--library", str(library), "mcp"],
        env=dict(os.environ), cwd=str(library))

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            seen.append("tools")
        if isinstance(message, types.ResourceListChangedNotification):
            seen.append("resources")

    async def main() -> None:
        async with stdio_client(params) as (read, write_), ClientSession(
                read, write_, message_handler=on_message) as session:
            await session.initialize()
            await legacy(session)

    anyio.run(main)


def test_every_name_makes_a_uri_every_parser_reads() -> None:
    """Whatever a skill or source is called, its SKILL.md URI parses (no port, the name
    the last segment before SKILL.md) and reads back to the same skill."""
    from hypothesis import given
    from hypothesis import strategies as st

    from librarian.agents.catalog import named_uri, parse_uri

    names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1,
                    max_size=30).filter(lambda n: n not in (".", "..") and "/" not in n
                                        and "\x00" not in n)

    @given(names.filter(lambda n: ":" not in n), names)
    def check(source: str, name: str) -> None:
        for uri, expected in ((named_uri(name, "retained"), ["library", name]),
                              (named_uri(f"{source}:{name}", "managed"),
                               ["sources", source, name])):
            parts = urlsplit(uri)
            assert parts.scheme == "skill" and parts.port is None and not parts.query
            root, below = parse_uri(uri)
            assert below == ["SKILL.md"]
            assert root == uri[: -len("/SKILL.md")]
            decoded = [unquote(s) for s in root[len("skill://"):].split("/")]
            assert decoded == expected

    check()


def test_node_parses_every_uri_the_same_way(tmp_path: Path) -> None:
    """Node's WHATWG URL parser reads the URIs of awkward names without throwing, and
    finds the skill's name as the last path segment before SKILL.md."""
    import shutil

    from librarian.agents.catalog import named_uri

    if shutil.which("node") is None:
        pytest.skip("node is not on PATH")
    names = ["pdf", "a b", "ü-ñ", "x#y", "q?r", "100%", "dot.name", "[v6]", "a@b", "semi;c",
             "tab\tname", "back\\slash"]
    uris = [named_uri(n, "retained") for n in names] + [
        named_uri(f"team:{n}", "managed") for n in names]
    script = ("const uris = JSON.parse(process.argv[1]); const out = [];\n"
              "for (const u of uris) { const url = new URL(u);\n"
              "  const parts = url.pathname.split('/');\n"
              "  out.push([url.port, decodeURIComponent(parts[parts.length - 2])]); }\n"
              "console.log(JSON.stringify(out));\n")
    done = subprocess.run(["node", "-e", script, json.dumps(uris)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    read = json.loads(done.stdout)
    assert [port for port, _ in read] == [""] * len(uris)
    assert [name for _, name in read] == names + names


def test_digests_are_remembered_by_blob_id(library: Path, sources: Path, capsys: Cap) -> None:
    """A file's digest is computed once per blob: a second server reads it from the memo
    (shown here by a remembered value no hashing would give)."""
    cli_ok(capsys, library, "retain", str(make_skill(sources, "alpha")))
    blob = git(library, "rev-parse", "HEAD:skills/alpha/SKILL.md").stdout.decode().strip()
    listed: list[dict[str, Any]] = []

    async def body(session: ClientSession) -> None:
        listed.append(await request(session, "skills/list"))

    drive(library, body)
    memo = library / ".git" / "librarian" / "cache" / "skill-digests.json"
    document = json.loads(memo.read_text())
    digest, size = document["entries"][blob].split()
    assert listed[0]["skills"][0]["resources"][0]["digest"] == digest
    document["entries"][blob] = f"sha256:{'0' * 64} {size}"
    memo.write_text(json.dumps(document))
    drive(library, body)
    assert listed[1]["skills"][0]["resources"][0]["digest"] == f"sha256:{'0' * 64}"
