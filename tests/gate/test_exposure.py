"""`expose` and `withdraw`: one commit to tools.yaml each, contracts, bounds, callable_now."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.helpers import (
    assert_one_error_line,
    cli,
    commit_config_edit,
    commit_count,
    hand_commit,
    head,
    library_state,
    tree_snapshot,
    write,
)

from librarian.agents.claude_manifests import GENERATED
from librarian.core.events import parse_message
from librarian.formats.config import TOOLS_FILE, ToolEntry, dump_tools, load_tools
from librarian.gate.environments import environment_availability
from librarian.gate.tools import CHANGED, GONE
from librarian.library.layout import Library
from librarian.ops.retention import retain
from librarian.ops.revisions import revise
from librarian.txn.changes import FileChange

EFFECTS = "effects: {filesystem: read, network: false}\n"
RESULT = "result: A number on stdout.\n"


def make_recipe(base: Path, name: str, *, environment: str = "shell", result: str = RESULT,
                effects: str = EFFECTS, script: str = "#!/bin/sh\necho 1\n") -> Path:
    root = base / name
    write(root / "recipe.yaml",
          f"name: {name}\ndescription: Counts things.\nexecution: async\n"
          f"environment: {environment}\nentrypoint: run.sh\n"
          "inputs:\n  path: {type: path, required: true, description: What to count.}\n"
          f"{result}{effects}timeout: 30\n")
    write(root / "run.sh", script, 0o755)
    return root



def head_event(library: Path) -> dict[str, str]:
    from dulwich.repo import Repo

    repo = Repo(str(library))
    try:
        message = repo[repo.head()].message.decode()
    finally:
        repo.close()
    event = parse_message(message)
    assert event is not None
    return {"subject": event.subject, **dict(event.trailers)}


def tools_of(library: Path) -> dict[str, tuple[str, str]]:
    tools = load_tools((library / "tools.yaml").read_bytes())
    return {k: (v.recipe, v.digest) for k, v in tools.items()}


@pytest.fixture
def counted(library: Path, sources: Path) -> str:
    receipt = retain(Library(library, GENERATED), make_recipe(sources, "counter"))
    assert receipt.digest is not None
    return receipt.digest


def test_expose_is_one_commit_adding_the_pin(
    library: Path, counted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    commits = commit_count(library)
    before = tree_snapshot(library)
    result = cli(capsys, library, "expose", "counter", "--json")
    assert result.code == 0, result.err
    receipt = result.json
    assert receipt["kind"] == "exposed_tool"
    assert receipt["name"] == "counter" and receipt["path"] == "recipes/counter"
    assert receipt["digest"] == counted
    assert receipt["commit"] == head(library)
    # `run` would refuse an unapproved digest: not callable until it is approved
    assert receipt["callable_now"] is False and "approve counter" in receipt["reason"]
    assert receipt["execution"] == "async"  # exposure does not change the execution contract
    assert commit_count(library) == commits + 1
    assert tools_of(library) == {"counter": ("recipes/counter", counted)}
    after = tree_snapshot(library)
    # nothing copied or linked: tools.yaml is the only change
    assert {k for k in after if after[k] != before.get(k)} == {"tools.yaml"}
    event = head_event(library)
    assert event["Librarian-Event"] == "expose"
    assert event["Librarian-Tool"] == "counter"
    assert event["Librarian-Item"] == "recipes/counter"
    assert event["Librarian-Digest"] == counted
    status = cli(capsys, library, "status", "--json").json
    assert status["clean"] is True


def test_expose_as_another_name_and_name_taken(
    library: Path, sources: Path, counted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(capsys, library, "expose", "counter", "--as", "count-things").code == 0
    assert cli(capsys, library, "expose", "recipes/counter").code == 0
    retain(Library(library, GENERATED), make_recipe(sources, "other"))
    state = library_state(library)
    taken = cli(capsys, library, "expose", "other", "--as", "count-things")
    assert taken.code == 3
    assert "taken" in assert_one_error_line(taken.err)
    assert library_state(library) == state
    assert cli(capsys, library, "expose", "counter", "--as", "Bad_Name").code == 2
    assert set(tools_of(library)) == {"counter", "count-things"}


def test_policy_bound_on_exposed_tools(
    library: Path, sources: Path, counted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    commit_config_edit(library, "max_exposed_tools: 64", "max_exposed_tools: 1")
    assert cli(capsys, library, "expose", "counter").code == 0
    full = cli(capsys, library, "expose", "counter", "--as", "second")
    assert full.code == 3
    assert "limit is 1" in assert_one_error_line(full.err)


def test_drafts_and_invalid_contracts_are_refused(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    retain(Library(library, GENERATED), make_recipe(sources, "rough"), draft=True)
    draft = cli(capsys, library, "expose", "rough")
    assert draft.code == 3 and "promote" in draft.err
    retain(Library(library, GENERATED), make_recipe(sources / "x", "vague", result="", effects=""))
    vague = cli(capsys, library, "expose", "vague")
    assert vague.code == 2
    line = assert_one_error_line(vague.err)
    assert "result:" in line and "effects:" in line
    retain(Library(library, GENERATED), make_recipe(sources / "y", "half",
                                         effects="effects: {filesystem: read}\n"))
    half = cli(capsys, library, "expose", "half")
    assert half.code == 2 and "effects.network" in half.err
    assert cli(capsys, library, "expose", "nothing-here").code == 2
    assert tools_of(library) == {}


def test_docker_recipe_is_exposed_but_not_callable_without_docker(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if environment_availability("docker").available:
        pytest.skip("docker is available on this machine")
    retain(Library(library, GENERATED), make_recipe(sources, "boxed", environment="docker"))
    result = cli(capsys, library, "expose", "boxed", "--json")
    assert result.code == 0, result.err
    assert result.json["callable_now"] is False
    assert "docker is not available" in result.json["reason"]
    assert "boxed" in tools_of(library)  # the tool stays exposed
    human = cli(capsys, library, "expose", "boxed", "--as", "boxed-two")
    assert "not callable now" in human.out and "docker is not available" in human.out


def test_drifted_recipe_exposed_is_not_callable_now(
    library: Path, counted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    script = library / "recipes" / "counter" / "run.sh"
    script.write_text("#!/bin/sh\necho 2\n")
    receipt = cli(capsys, library, "expose", "counter", "--json").json
    assert receipt["callable_now"] is False and "local edits" in receipt["reason"]
    assert tools_of(library)["counter"][1] == counted  # the committed digest is pinned


def test_withdraw_is_one_commit_and_keeps_the_recipe(
    library: Path, counted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cli(capsys, library, "expose", "counter", "--as", "count-things")
    commits = commit_count(library)
    result = cli(capsys, library, "withdraw", "count-things", "--json")
    assert result.code == 0, result.err
    receipt = result.json
    assert receipt["kind"] == "withdrawn_tool" and receipt["name"] == "count-things"
    assert receipt["path"] == "recipes/counter" and receipt["commit"] == head(library)
    assert commit_count(library) == commits + 1
    assert tools_of(library) == {}
    assert (library / "recipes" / "counter" / "recipe.yaml").is_file()
    event = head_event(library)
    assert event["Librarian-Event"] == "withdraw" and event["Librarian-Tool"] == "count-things"
    unknown = cli(capsys, library, "withdraw", "count-things")
    assert unknown.code == 2
    log = cli(capsys, library, "log", "count-things", "--json").json
    assert [e["event"] for e in log["events"]] == ["withdraw", "expose"]


def test_stale_tool_reported_and_refreshed(
    library: Path, sources: Path, counted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cli(capsys, library, "expose", "counter")
    assert cli(capsys, library, "expose", "counter", "--refresh").code == 2  # not stale
    revised = revise(Library(library, GENERATED), "counter",
                     make_recipe(sources / "v2", "counter", script="#!/bin/sh\necho 2\n"))
    status = cli(capsys, library, "status", "--json").json
    (tool,) = status["tools"]
    assert tool["status"] == "stale" and tool["pinned"] == counted
    taken = cli(capsys, library, "expose", "counter")
    assert taken.code == 3 and "--refresh" in taken.err
    refreshed = cli(capsys, library, "expose", "counter", "--refresh", "--json").json
    assert refreshed["digest"] == revised.digest and refreshed["previous_digest"] == counted
    assert tools_of(library)["counter"] == ("recipes/counter", revised.digest)
    assert cli(capsys, library, "status", "--json").json["clean"] is True


def test_inspect_tools_lists_the_contract(
    library: Path, counted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cli(capsys, library, "expose", "counter", "--as", "count-things")
    doc = cli(capsys, library, "inspect", "tools", "--json").json
    (tool,) = doc["tools"]
    assert tool["name"] == "count-things" and tool["recipe"] == "recipes/counter"
    assert tool["description"] == "Counts things."
    assert tool["execution"] == "async" and tool["environment"] == "shell"
    assert tool["inputs"] == [{"name": "path", "type": "path", "required": True,
                               "default": None, "description": "What to count."}]
    assert tool["effects"] == {"filesystem": "read", "network": False}
    assert tool["result"] == "A number on stdout." and tool["status"] == "ok"
    text = cli(capsys, library, "inspect", "tools").out
    assert "count-things" in text and "path: path" in text and "async shell" in text


def test_status_inspect_prompt_and_run_agree_on_a_tools_state(
    library: Path, sources: Path, counted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """One decision (``tools.tool_state``) behind every reader of tools.yaml."""
    lib = Library(library, GENERATED)
    cli(capsys, library, "expose", "counter", "--as", "count-things")
    cli(capsys, library, "expose", "counter", "--as", "still-current")
    tools = load_tools((library / TOOLS_FILE).read_bytes())
    tools["gone"] = ToolEntry("recipes/nothing", "sha256:" + "0" * 64)
    hand_commit(lib, "hand-edit tools", [("Librarian-Event", "expose")],
                [FileChange(TOOLS_FILE, dump_tools(tools))])
    revised = revise(lib, "counter",
                     make_recipe(sources / "v2", "counter", script="#!/bin/sh\necho 2\n"))
    assert cli(capsys, library, "expose", "counter", "--as", "still-current",
               "--refresh").code == 0
    expected = {"count-things": ("stale", CHANGED), "gone": ("stale", GONE),
                "still-current": ("ok", None)}

    def states(tools: list[dict[str, object]]) -> dict[str, tuple[object, object]]:
        return {str(t["name"]): (t["status"], t["reason"]) for t in tools}

    assert states(cli(capsys, library, "status", "--json").json["tools"]) == expected
    inspected = cli(capsys, library, "inspect", "tools", "--json").json["tools"]
    assert states(inspected) == expected
    prompted = json.loads(cli(capsys, library, "prompt", "--json").out)["tools"]
    assert states(prompted) == expected
    # one contract type: inspect and prompt show the same fields and the same contracts
    assert inspected == prompted
    current = {t["name"]: t for t in inspected}["still-current"]
    assert current["digest"] == revised.digest and current["timeout"] == 30
    for tool, reason in (("count-things", CHANGED), ("gone", GONE)):
        refused = cli(capsys, library, "run", tool, "--yes", "--arg", "path=x")
        assert refused.code == 5
        line = assert_one_error_line(refused.err)
        assert f"tool {tool} is stale: {reason}" in line
