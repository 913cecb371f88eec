"""hide / show / resident (library.yaml, one commit each) and `prompt`: the registry the
agent reads, its formats, the budget and the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.helpers import (
    assert_git_consistent,
    assert_one_error_line,
    cli,
    commit_count,
    committed_policy,
    hand_commit,
    library_state,
    make_recipe,
    make_skill,
)

from librarian.agents.claude_manifests import GENERATED
from librarian.content.validate import load_source
from librarian.formats.config import TOOLS_FILE, ToolEntry, dump_tools
from librarian.library.layout import Library
from librarian.ops.retention import retain
from librarian.ops.visibility import hide, resident
from librarian.prompt.cache import ITEMS_CACHE, REGISTRY_CACHE
from librarian.prompt.registry import load_registry
from librarian.prompt.render import render_prompt
from librarian.txn.changes import DirChange, FileChange

Capsys = pytest.CaptureFixture[str]



def prompt_text(capsys: Capsys, library: Path, *args: str) -> str:
    result = cli(capsys, library, "prompt", *args)
    assert result.code == 0, result.err
    return str(result.out)


def library_yaml(library: Path) -> str:
    return (library / "library.yaml").read_text()


@pytest.fixture
def stocked(library: Path, sources: Path) -> Path:
    lib = Library(library, GENERATED)
    retain(lib, make_skill(sources, "pdf", description='Fill PDF forms & "read" <tables>.',
                           body="# PDF\n\nUse <b>pdftotext</b> & friends.\n"))
    retain(lib, make_skill(sources, "alpha", description="First in order."))
    retain(lib, make_recipe(sources, "word-count"))
    retain(lib, make_skill(sources / "d", "secret-draft"), draft=True)
    return library


# -- visibility -----------------------------------------------------------------------


def test_hide_show_resident_change_library_yaml_by_one_commit(
    stocked: Path, capsys: Capsys
) -> None:
    count = commit_count(stocked)
    result = cli(capsys, stocked, "hide", "pdf", "--json")
    assert result.code == 0, result.err
    assert result.json["kind"] == "skill_visibility"
    assert result.json["hidden"] is True
    inspected = cli(capsys, stocked, "inspect", "skills", "--json").json["items"]
    assert result.json["digest"] == next(i["digest"] for i in inspected if i["name"] == "pdf")
    assert commit_count(stocked) == count + 1
    assert "hidden:\n  - pdf" in library_yaml(stocked)
    assert "pdf" not in prompt_text(capsys, stocked)
    # Hidden skills stay usable by name.
    assert "Use <b>pdftotext</b>" in cli(capsys, stocked, "cat", "pdf").out

    # Hiding again changes nothing and makes no commit.
    again = cli(capsys, stocked, "hide", "pdf", "--json")
    assert again.code == 0 and again.json["commit"] is None and "already" in again.json["note"]
    assert commit_count(stocked) == count + 1

    assert cli(capsys, stocked, "show", "pdf").code == 0
    assert "<name>\npdf\n</name>" in prompt_text(capsys, stocked)
    assert cli(capsys, stocked, "resident", "pdf").code == 0
    assert "resident:\n  - pdf" in library_yaml(stocked)
    text = prompt_text(capsys, stocked)
    assert "<resident_skills>" in text and "Use &lt;b&gt;pdftotext&lt;/b&gt; &amp; friends." in text
    assert cli(capsys, stocked, "resident", "pdf", "--off").code == 0
    assert "<resident_skills>" not in prompt_text(capsys, stocked)
    assert commit_count(stocked) == count + 4
    assert_git_consistent(stocked)

    log = cli(capsys, stocked, "log", "pdf", "--json").json["events"]
    assert [e["event"] for e in log[:4]] == ["resident", "resident", "show", "hide"]


def test_visibility_refuses_unknown_and_non_skills(stocked: Path, capsys: Capsys) -> None:
    for args in (["hide", "ghost"], ["show", "ghost"], ["resident", "ghost"],
                 ["hide", "word-count"], ["resident", "secret-draft"]):
        before = library_state(stocked)
        result = cli(capsys, stocked, *args)
        assert result.code == 2, (args, result.err)
        assert_one_error_line(result.err)
        assert library_state(stocked) == before


def test_hidden_wins_over_resident(stocked: Path) -> None:
    lib = Library(stocked, GENERATED)
    resident(lib, "pdf")
    receipt = hide(lib, "pdf")
    assert receipt.warnings
    registry = load_registry(lib)
    assert [s.name for s in registry.skills] == ["alpha"]
    assert registry.resident == ()
    assert registry.hidden == ("pdf",)


# -- prompt ---------------------------------------------------------------------------


def test_prompt_xml_is_the_agent_skills_shape(stocked: Path, capsys: Capsys) -> None:
    text = prompt_text(capsys, stocked)
    root = stocked.resolve()
    expected_skills = (
        "<available_skills>\n"
        "<skill>\n<name>\nalpha\n</name>\n<description>\nFirst in order.\n</description>\n"
        f"<location>\n{root}/skills/alpha/SKILL.md\n</location>\n</skill>\n"
        "<skill>\n<name>\npdf\n</name>\n<description>\n"
        "Fill PDF forms &amp; &quot;read&quot; &lt;tables&gt;.\n</description>\n"
        f"<location>\n{root}/skills/pdf/SKILL.md\n</location>\n</skill>\n"
        "</available_skills>\n"
    )
    assert text.startswith(expected_skills)
    assert "<available_recipes>\n<recipe>\n<name>\nword-count\n</name>\n" in text
    assert "<environment>\nshell\n</environment>\n<execution>\nsync\n</execution>" in text
    assert "secret-draft" not in text  # drafts are never listed
    assert "Counts words" not in text  # recipes by name only
    # Locations are absolute paths to files that exist.
    for line in text.splitlines():
        if line.endswith("/SKILL.md"):
            assert Path(line).is_absolute() and Path(line).is_file()
    # Deterministic: same output, cached or not.
    assert prompt_text(capsys, stocked) == text
    (stocked / ".git" / "librarian" / "cache" / REGISTRY_CACHE).unlink()
    (stocked / ".git" / "librarian" / "cache" / ITEMS_CACHE).unlink()
    assert prompt_text(capsys, stocked) == text


def test_prompt_markdown_and_json(stocked: Path, capsys: Capsys) -> None:
    markdown = prompt_text(capsys, stocked, "--format", "markdown")
    assert markdown.startswith("# Available skills\n\n- **alpha**: First in order.")
    assert "- **word-count**: environment shell, execution sync" in markdown
    for args in (["--json"], ["--format", "json"]):
        document = json.loads(prompt_text(capsys, stocked, *args))
        assert document["kind"] == "prompt"
        assert [s["name"] for s in document["skills"]] == ["alpha", "pdf"]
        assert document["skills"][1]["location"].endswith("/skills/pdf/SKILL.md")
        assert document["recipes"] == [{"name": "word-count", "environment": "shell",
                                        "execution": "sync", "state": "retained"}]
        assert document["cut"] is None
    result = cli(capsys, stocked, "prompt", "--format", "yaml")
    assert result.code == 2


def test_prompt_budget_shortens_then_drops_and_says_so(library: Path, sources: Path) -> None:
    lib = Library(library, GENERATED)
    for number in range(30):
        retain(lib, make_skill(sources, f"skill-{number:02d}",
                               description=f"Skill number {number}. " + "Long words here. " * 12))
    registry = load_registry(lib)
    full = render_prompt(registry).text
    assert render_prompt(registry, budget=len(full)).cut is None

    shorter = render_prompt(registry, budget=len(full) - 500)
    assert len(shorter.text) <= len(full) - 500
    assert shorter.cut is not None and shorter.cut.shortened == 30
    assert not shorter.cut.dropped_skills
    assert "30 skill descriptions shortened" in shorter.text
    assert shorter.text.count("<skill>") == 30

    tiny = render_prompt(registry, budget=1500)
    assert len(tiny.text) <= 1500
    assert tiny.cut is not None and tiny.cut.dropped_skills
    kept = tiny.text.count("<skill>")
    assert kept + len(tiny.cut.dropped_skills) == 30
    assert f"{len(tiny.cut.dropped_skills)} skills not listed" in tiny.text
    # Entries are dropped from the end of the deterministic order.
    assert tiny.cut.dropped_skills[-1] == "skill-29"

    impossible = render_prompt(registry, budget=10)
    assert impossible.cut is not None and impossible.cut.over_budget
    assert "still over budget" in impossible.text
    for fmt in ("markdown", "json"):
        fitted = render_prompt(registry, fmt, budget=2000)
        assert len(fitted.text) <= 2000 and fitted.cut is not None
    with pytest.raises(Exception, match="budget"):
        render_prompt(registry, budget=0)


def test_prompt_budget_via_cli(stocked: Path, capsys: Capsys) -> None:
    text = prompt_text(capsys, stocked, "--budget", "300")
    assert "<librarian_note>" in text and "Budget 300 characters" in text


def test_prompt_lists_managed_skills_and_exposed_tools(library: Path, sources: Path,
                                                       capsys: Capsys) -> None:
    lib = Library(library, GENERATED)
    recipe = retain(lib, make_recipe(sources, "review-change", extra_yaml=""))
    shared = load_source(make_skill(sources / "up", "pdf", description="Upstream pdf."),
                         committed_policy(lib))
    hidden_shared = load_source(make_skill(sources / "up2", "quiet"), committed_policy(lib))
    assert recipe.digest is not None
    tools = dump_tools({"count-words": ToolEntry("recipes/review-change", recipe.digest),
                        "gone": ToolEntry("recipes/nothing", "sha256:" + "0" * 64)})
    hand_commit(lib, "update team", [("Librarian-Event", "update")],
                [DirChange("sources/team/skills/pdf", shared.files),
                                DirChange("sources/team/skills/quiet", hidden_shared.files),
                                FileChange(TOOLS_FILE, tools)])
    assert cli(capsys, library, "hide", "team:quiet").code == 0
    text = prompt_text(capsys, library)
    assert "<name>\nteam:pdf\n</name>" in text
    assert f"{library.resolve()}/sources/team/skills/pdf/SKILL.md" in text
    assert "team:quiet" not in text
    assert "<exposed_tools>" in text
    assert '<input name="path" type="path" required="true"></input>' in text
    assert '<effects filesystem="read" network="false"/>' in text
    document = json.loads(prompt_text(capsys, library, "--json"))
    tool = {t["name"]: t for t in document["tools"]}
    assert tool["count-words"]["status"] == "ok"
    assert tool["count-words"]["execution"] == "sync"
    assert tool["count-words"]["inputs"][0]["type"] == "path"
    assert tool["gone"]["status"] == "stale"


def test_prompt_cache_follows_head(stocked: Path, sources: Path, capsys: Capsys) -> None:
    lib = Library(stocked, GENERATED)
    first = prompt_text(capsys, stocked)
    cache = json.loads((stocked / ".git/librarian/cache" / REGISTRY_CACHE).read_text())
    assert cache["registry"]["tree"] in cache["key"]
    retain(lib, make_skill(sources / "n", "newer"))
    second = prompt_text(capsys, stocked)
    assert "newer" in second and "newer" not in first
    items = json.loads((stocked / ".git/librarian/cache" / ITEMS_CACHE).read_text())["items"]
    assert len(items) == 4  # three skills and a recipe; drafts are not read


def test_invalid_committed_skill_is_reported_not_listed(library: Path, capsys: Capsys) -> None:
    from librarian.core.model import ItemFile

    lib = Library(library, GENERATED)
    broken = (ItemFile("SKILL.md", False, b"---\nname: broken\n---\nno description\n"),)
    hand_commit(lib, "plain git commit", [],
                [DirChange("skills/broken", broken)])
    result = cli(capsys, library, "prompt")
    assert result.code == 0
    assert "broken" not in result.out
    assert "librarian: warning: skills/broken" in result.err


def test_an_unknown_prompt_format_is_refused_with_json_too(
    stocked: Path, capsys: Capsys
) -> None:
    for extra in ((), ("--json",)):
        result = cli(capsys, stocked, "prompt", "--format", "yaml", *extra)
        assert result.code == 2, extra
