"""A recipe runs with exactly the authority its approved manifest declares: real runs on
the real kernel against a file outside the run, a fake home and a TCP server on loopback,
for every combination of ``filesystem`` and ``network``; a child of the recipe inherits
the confinement; the refusal (exit 5) where the kernel cannot enforce, and best-effort."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.helpers import cli, cli_ok, commit_config_edit, write

from librarian.agents.claude_manifests import GENERATED
from librarian.gate import enforcement
from librarian.gate.enforcement import Support, kernel_support
from librarian.gate.runner import confined_start
from librarian.library.layout import Library
from librarian.ops.retention import retain

SUPPORT = kernel_support()
enforcing = pytest.mark.skipif(
    SUPPORT.landlock_abi < 4 or not (SUPPORT.userns or SUPPORT.seccomp),
    reason="this kernel cannot enforce effects (needs Landlock ABI >= 4)")

#: Tries everything, itself and in a child process, and prints one JSON object.
PROBE = r'''import json, os, socket, subprocess, sys
args = json.load(sys.stdin)

def attempt(action):
    try:
        action()
        return True
    except OSError:
        return False

def read():
    with open(args["outside"]) as f:
        f.read()

def append():
    with open(args["outside"], "a") as f:
        f.write("recipe was here\n")

def connect():
    socket.create_connection(("127.0.0.1", int(args["port"])), timeout=5).close()

def unix():
    with socket.socket(socket.AF_UNIX) as client:
        client.connect(args["unix"])

result = {"read": attempt(read), "write": attempt(append),
          "home": attempt(lambda: os.listdir(args["home"])),
          "connect": attempt(connect), "unix": attempt(unix),
          "work": attempt(lambda: open("scratch.txt", "w").close())}
if len(sys.argv) == 1:
    child = subprocess.run([sys.executable, "-s", "-E", __file__, "child"],
                           input=json.dumps(args), capture_output=True, text=True)
    result["child"] = json.loads(child.stdout)
print(json.dumps(result))
'''

INPUTS = """inputs:
  outside: {type: string, required: true}
  home: {type: string, required: true}
  port: {type: integer, required: true}
  unix: {type: string, required: true}
"""


def make_probe(base: Path, name: str, filesystem: str, network: bool,
               script: str = PROBE) -> Path:
    root = base / name
    write(root / "recipe.yaml",
          f"name: {name}\ndescription: Probes what it may do.\nexecution: sync\n"
          f"environment: python\nentrypoint: probe.py\n{INPUTS}"
          f"result: JSON on stdout.\neffects: {{filesystem: {filesystem}, "
          f"network: {'true' if network else 'false'}}}\ntimeout: 60\n")
    write(root / "probe.py", script, 0o755)
    return root


def _serve(listener: socket.socket, stop: threading.Event) -> None:
    listener.settimeout(0.2)
    while not stop.is_set():
        try:
            connection, _ = listener.accept()
        except TimeoutError:
            continue
        connection.close()


@pytest.fixture
def server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that accepts and closes; yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    thread = threading.Thread(target=_serve, args=(listener, stop), daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    listener.close()


@pytest.fixture
def targets(tmp_path: Path, isolated_environment: Path) -> Iterator[dict[str, str]]:
    """A file outside any run, the (fake) home holding a key, and a unix socket server
    (as a local daemon listens)."""
    outside = write(tmp_path / "elsewhere" / "notes.txt", "private\n")
    write(isolated_environment / ".ssh" / "id_ed25519", "KEY\n")
    path = tmp_path / "daemon.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen()
    stop = threading.Event()
    thread = threading.Thread(target=_serve, args=(listener, stop), daemon=True)
    thread.start()
    yield {"outside": str(outside), "home": str(isolated_environment), "unix": str(path)}
    stop.set()
    thread.join()
    listener.close()


def run_probe(capsys: pytest.CaptureFixture[str], library: Path, name: str,
              targets: dict[str, str], port: int) -> tuple[dict[str, object], dict[str, object]]:
    result = cli(capsys, library, "run", name, "--yes", "--json", *probe_args(targets, port))
    assert result.code == 0, result.out + result.err
    doc = result.json
    return json.loads(doc["output"]), doc["enforced"]


def probe_args(targets: dict[str, str], port: int) -> list[str]:
    return [f"--arg={key}={value}" for key, value in (*targets.items(), ("port", port))]


EXPECTED = {  # filesystem -> (read outside, write outside, list the home)
    "none": (False, False, False),
    "read": (True, False, True),
    "write": (True, True, True),
}


@enforcing
@pytest.mark.parametrize("network", [False, True])
@pytest.mark.parametrize("filesystem", ["none", "read", "write"])
def test_a_run_gets_exactly_the_declared_authority_and_its_children_too(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str], server: int,
    targets: dict[str, str], filesystem: str, network: bool,
) -> None:
    name = f"probe-{filesystem}-{'net' if network else 'offline'}"
    lib = Library(library, GENERATED)
    retain(lib, make_probe(sources, name, filesystem, network))
    result, enforced = run_probe(capsys, library, name, targets, server)
    can_read, can_write, can_list_home = EXPECTED[filesystem]
    expected = {"read": can_read, "write": can_write, "home": can_list_home,
                "connect": network, "unix": network, "work": True}
    child = result.pop("child")
    assert result == expected
    assert child == expected  # inherited by what the recipe starts
    assert ("recipe was here" in Path(targets["outside"]).read_text()) is can_write
    assert enforced["filesystem"] == filesystem and enforced["network"] is network
    assert enforced["not_enforced"] == []
    assert ("landlock" in enforced["by"]) is (filesystem != "write" or not network)


@enforcing
def test_a_threaded_caller_confines_through_the_helper(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str], server: int,
    targets: dict[str, str],
) -> None:
    """With another thread running, the confinement is applied by the re-exec helper
    (not between fork and exec), and holds the same."""
    retain(Library(library, GENERATED), make_probe(sources, "probe-threaded", "none", False))
    policy = {"network": "deny", "netns": True, "landlock_abi": 4}
    idle = threading.Event()
    thread = threading.Thread(target=idle.wait, daemon=True)
    thread.start()
    try:
        argv, preexec = confined_start(["/bin/true"], policy)
        assert preexec is None and argv[-2:] == ["--", "/bin/true"]
        result, _ = run_probe(capsys, library, "probe-threaded", targets, server)
    finally:
        idle.set()
        thread.join()
    child = result.pop("child")
    assert result == child == {"read": False, "write": False, "home": False,
                               "connect": False, "unix": False, "work": True}


def test_the_memory_limit_comes_from_the_committed_policy(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    script = ("try:\n    block = bytearray(400 << 20)\n    print('allocated')\n"
              "except MemoryError:\n    print('capped')\n")
    root = sources / "hungry"
    write(root / "recipe.yaml",
          "name: hungry\ndescription: Allocates 400 MiB.\nexecution: sync\n"
          "environment: python\nentrypoint: eat.py\nresult: A word.\n"
          "effects: {filesystem: write, network: true}\ntimeout: 60\n")
    write(root / "eat.py", script)
    retain(Library(library, GENERATED), root)
    first = cli(capsys, library, "run", "hungry", "--yes", "--json")
    assert first.json["output"] == "allocated\n", first.out
    commit_config_edit(library, "policy:\n", "policy:\n  run_memory_mb: 200\n")
    capped = cli(capsys, library, "run", "hungry", "--json")
    assert capped.json["output"] == "capped\n", capped.out
    assert "rlimits" in capped.json["enforced"]["by"]


def test_a_kernel_that_cannot_enforce_is_refused_unless_best_effort_is_committed(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str], server: int,
    targets: dict[str, str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    retain(Library(library, GENERATED), make_probe(sources, "probe-old", "none", False))
    monkeypatch.setattr(enforcement, "kernel_support", lambda: Support(True, 0, False, False))
    args = probe_args(targets, server)
    refused = cli(capsys, library, "run", "probe-old", "--yes", *args)
    assert refused.code == 5
    assert "filesystem: none (this kernel has no Landlock)" in refused.err
    assert "network: false (neither user namespaces nor seccomp are available)" in refused.err
    inspected = cli(capsys, library, "inspect", "probe-old", "--json").json
    assert inspected["enforceable"] is False
    assert len(inspected["not_enforceable"]) == 2
    exposed = cli_ok(capsys, library, "expose", "probe-old", "--as", "prober", "--json").json
    assert exposed["callable_now"] is False
    assert "cannot be enforced here" in exposed["reason"]
    status = cli(capsys, library, "status", "--json").json
    assert [t["enforceable"] for t in status["tools"]] == [False]
    assert "cannot be enforced here" in cli(capsys, library, "status").out
    by_tool = cli_ok(capsys, library, "inspect", "prober", "--json").json
    assert by_tool["not_enforceable"] == inspected["not_enforceable"]
    assert "NOT enforceable here" in cli_ok(capsys, library, "inspect", "prober").out

    commit_config_edit(library, "sources: {}\n", "sources: {}\nrun:\n  enforcement: best-effort\n")
    ran = cli(capsys, library, "run", "probe-old", "--yes", "--json", *args)
    assert ran.code == 0, ran.err
    enforced = ran.json["enforced"]
    assert enforced["filesystem"] is None and enforced["network"] is None
    assert enforced["not_enforced"] == [
        "filesystem: none (this kernel has no Landlock)",
        "network: false (neither user namespaces nor seccomp are available)"]
    assert json.loads(ran.json["output"])["read"] is True  # what best-effort means
    record = cli(capsys, library, "runs", "--json").json["runs"][0]
    assert record["enforced"] == enforced
    told = cli(capsys, library, "run", "probe-old", *args)
    assert told.code == 0
    assert ("librarian: not enforced (run: {enforcement: best-effort}): filesystem: none "
            "(this kernel has no Landlock)") in told.err


def test_best_effort_is_validated(library: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from librarian.errors import UsageError
    from librarian.formats.config import dump_library_config, load_library_config

    with pytest.raises(UsageError, match="run.enforcement must be one of"):
        load_library_config(b"librarian: 1\nname: x\nrun: {enforcement: lax}\n")
    with pytest.raises(UsageError, match="run_memory_mb must be a whole number"):
        load_library_config(b"librarian: 1\nname: x\npolicy: {run_memory_mb: 0}\n")
    config = load_library_config(b"librarian: 1\nname: x\nrun: {enforcement: best-effort}\n"
                                 b"policy: {run_processes: 64}\n")
    assert config.best_effort and config.policy.run_processes == 64
    written = dump_library_config(config)
    assert b"enforcement: best-effort" in written and b"run_processes: 64" in written
    assert b"run_memory_mb" not in written  # a default is not written
    again = load_library_config(written)
    assert again.best_effort and again.policy == config.policy
    assert b"run:" not in dump_library_config(load_library_config(b"librarian: 1\nname: x\n"))


@enforcing
def test_a_tool_called_over_mcp_is_confined_and_says_so(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str], server: int,
    targets: dict[str, str], tmp_path: Path,
) -> None:
    """The MCP server has threads: its runs go through the re-exec helper."""
    mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    retain(Library(library, GENERATED), make_probe(sources, "offline", "none", False))
    cli_ok(capsys, library, "expose", "offline")
    cli_ok(capsys, library, "approve", "offline", "--yes")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "librarian", "--library", str(library), "mcp"],
        env=dict(os.environ), cwd=str(tmp_path))
    seen: dict[str, object] = {}

    async def main() -> None:
        with (tmp_path / "server.log").open("w") as log:
            await serve(log)

    async def serve(log: Any) -> None:
        async with stdio_client(params, errlog=log) as (read, write_), ClientSession(
                read, write_) as session:
            await session.initialize()
            with anyio.fail_after(60):
                called = await session.call_tool("offline", {**targets, "port": server})
                assert not called.is_error
                seen.update(called.structured_content or {})

    anyio.run(main)
    assert mcp is not None
    result = json.loads(str(seen["output"]))
    child = result.pop("child")
    assert result == child == {"read": False, "write": False, "home": False,
                               "connect": False, "unix": False, "work": True}
    enforced = seen["enforced"]
    assert isinstance(enforced, dict)
    assert enforced["filesystem"] == "none" and enforced["network"] is False


@enforcing
def test_an_async_run_is_confined_by_its_supervisor(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str], server: int,
    targets: dict[str, str],
) -> None:
    retain(Library(library, GENERATED), make_probe(sources, "later", "read", False))
    launched = cli(capsys, library, "run", "later", "--yes", "--async", "--json",
                   *probe_args(targets, server))
    assert launched.code == 0, launched.err
    assert launched.json["enforced"]["filesystem"] == "read"
    waited = cli(capsys, library, "wait", launched.json["run_id"], "--json")
    assert waited.code == 0, waited.out
    result = json.loads(waited.json["output"])
    child = result.pop("child")
    assert result == child == {"read": True, "write": False, "home": True,
                               "connect": False, "unix": False, "work": True}
    assert waited.json["enforced"] == launched.json["enforced"]


WRITER = r"""import json, os, sys
args = json.load(sys.stdin)
for name in ("out", "src"):
    try:
        with open(os.path.join(args[name], "made.txt"), "w") as f:
            f.write("written\n")
        print(name, "writable")
    except OSError:
        print(name, "read-only")
"""


@enforcing
@pytest.mark.parametrize("filesystem", ["none", "read"])
def test_only_the_path_inputs_declared_writable_are_writable(
    library: Path, sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    filesystem: str,
) -> None:
    root = sources / "writer"
    write(root / "recipe.yaml",
          "name: writer\ndescription: Writes into its output.\nexecution: sync\n"
          "environment: python\nentrypoint: w.py\ninputs:\n"
          "  out: {type: path, required: true, writable: true}\n"
          "  src: {type: path, required: true}\n"
          f"result: Lines.\neffects: {{filesystem: {filesystem}, network: false}}\n")
    write(root / "w.py", WRITER)
    retain(Library(library, GENERATED), root)
    out, src = tmp_path / "given" / "out", tmp_path / "given" / "src"
    out.mkdir(parents=True)
    src.mkdir()
    ran = cli(capsys, library, "run", "writer", "--yes", "--json", "--arg", f"out={out}",
              "--arg", f"src={src}")
    assert ran.code == 0, ran.out + ran.err
    assert ran.json["output"] == "out writable\nsrc read-only\n"
    assert (out / "made.txt").exists() and not (src / "made.txt").exists()


def test_only_a_path_input_can_be_declared_writable() -> None:
    from librarian.errors import UsageError
    from librarian.formats.recipe import parse_recipe

    base = ("name: w\ndescription: W.\nexecution: sync\nenvironment: shell\n"
            "entrypoint: run.sh\ninputs:\n")
    with pytest.raises(UsageError) as caught:
        parse_recipe((base + "  n: {type: string, writable: true}\n").encode(), "w")
    assert "inputs.n.writable: only a path input can be writable" in str(caught.value.problems)
    with pytest.raises(UsageError) as caught:
        parse_recipe((base + "  p: {type: path, writable: 1}\n").encode(), "w")
    assert "inputs.p.writable: must be true or false, got integer" in str(caught.value.problems)
    manifest = parse_recipe((base + "  p: {type: path, writable: true}\n").encode(), "w")
    assert manifest.inputs[0].writable


paths = st.lists(st.text(st.characters(blacklist_characters="\x00"), min_size=1), max_size=4)


@given(read=paths, write=paths, filesystem=st.sampled_from([None, "none", "read"]),
       memory=st.integers(1, 1 << 40), abi=st.integers(0, 9))
def test_the_helper_reads_back_the_policy_it_was_given(
    read: list[str], write: list[str], filesystem: str | None, memory: int, abi: int,
) -> None:
    from librarian.gate.confine import helper_argv, parse_policy

    policy = {"filesystem": filesystem, "read": read, "write": write, "network": "deny",
              "netns": True, "seccomp": False, "memory_bytes": memory, "processes": 64,
              "landlock_abi": abi}
    argv = helper_argv(policy, ["/bin/sh", "--", "x=y"])
    split = argv.index("--")
    assert argv[split + 1:] == ["/bin/sh", "--", "x=y"]
    expected = {k: v for k, v in policy.items() if v is not None}
    assert parse_policy(argv[4:split]) == expected


@enforcing
@pytest.mark.skipif(not SUPPORT.userns, reason="no unprivileged user namespaces here")
def test_without_seccomp_a_network_namespace_stands_in(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str], server: int,
    targets: dict[str, str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(enforcement, "kernel_support",
                        lambda: Support(True, 3, True, False))  # no TCP rules, no seccomp
    retain(Library(library, GENERATED), make_probe(sources, "namespaced", "write", False))
    result, enforced = run_probe(capsys, library, "namespaced", targets, server)
    assert enforced["by"] == ["rlimits", "network namespace"]
    child = result.pop("child")
    # no route out; a named unix socket is not separated by a namespace (documented)
    assert result == child == {"read": True, "write": True, "home": True,
                               "connect": False, "unix": True, "work": True}
