"""The execution gate: every refusal is exit 5 with one line, runs nothing, and is ledgered;
approval is bound to the digest."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from support.helpers import assert_one_error_line, cli, write

from librarian.agents.claude_manifests import GENERATED
from librarian.errors import UsageError
from librarian.gate import checks as gate
from librarian.gate.checks import ApprovalReview, approve
from librarian.gate.environments import Availability, environment_availability
from librarian.library.layout import Library
from librarian.ops.retention import retain
from librarian.ops.revisions import revise

MARK_SCRIPT = '#!/bin/sh\necho ran >> "$LIBRARIAN_INPUT_MARK"\necho "n=$LIBRARIAN_INPUT_N"\n'
MARK_INPUTS = ("inputs:\n  mark: {type: path, required: true}\n"
               "  n: {type: integer, default: 1}\n")


def make_recipe(base: Path, name: str, script: str = MARK_SCRIPT, *,
                environment: str = "shell", inputs: str = MARK_INPUTS,
                description: str = "Marks a file.") -> Path:
    root = base / name
    write(root / "recipe.yaml",
          f"name: {name}\ndescription: {description}\nexecution: sync\n"
          f"environment: {environment}\nentrypoint: run.sh\n{inputs}"
          "result: A line on stdout.\neffects: {filesystem: write, network: false}\n"
          "timeout: 20\n")
    write(root / "run.sh", script, 0o755)
    return root



def ledger(library: Path) -> list[dict[str, object]]:
    path = library / ".git" / "librarian" / "usage.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def marked(library: Path, sources: Path, tmp_path: Path) -> Path:
    retain(Library(library, GENERATED), make_recipe(sources, "marker"))
    return tmp_path / "mark.txt"


def refused(capsys: pytest.CaptureFixture[str], library: Path, mark: Path, *args: str) -> str:
    result = cli(capsys, library, "run", *args)
    assert result.code == 5, (result.out, result.err)
    assert not mark.exists(), "a refused run executed"
    return assert_one_error_line(result.err)


def test_unapproved_digest_is_refused_then_approved(
    library: Path, marked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = refused(capsys, library, marked, "marker", "--arg", f"mark={marked}")
    assert "not approved" in line
    assert ledger(library)[-1]["status"] == "refused"

    approval = cli(capsys, library, "approve", "marker")
    assert approval.code == 0, approval.err
    assert "--- run.sh" in approval.out and "echo ran" in approval.out  # the files are shown
    result = cli(capsys, library, "run", "marker", "--arg", f"mark={marked}")
    assert result.code == 0, result.err
    assert marked.read_text() == "ran\n"
    assert result.out == "n=1\n"


def test_yes_approves_and_runs_in_one_step(
    library: Path, marked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = cli(capsys, library, "run", "marker", "--yes", "--arg", f"mark={marked}", "--json")
    assert result.code == 0, result.err
    assert result.json["status"] == "succeeded"
    assert cli(capsys, library, "run", "marker", "--arg", f"mark={marked}").code == 0
    assert marked.read_text() == "ran\nran\n"


def test_a_revised_recipe_needs_a_new_approval_and_shows_the_diff(
    library: Path, sources: Path, marked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = cli(capsys, library, "approve", "marker", "--json").json
    assert first["kind"] == "approval" and first["diff"] is None
    assert {f["path"] for f in first["files"]} == {"recipe.yaml", "run.sh"}
    new_source = make_recipe(sources / "v2", "marker",
                             MARK_SCRIPT.replace("echo ran", "echo ran-v2"))
    revise(Library(library, GENERATED), "marker", new_source)
    line = refused(capsys, library, marked, "marker", "--arg", f"mark={marked}")
    assert "not approved" in line
    second = cli(capsys, library, "approve", "marker", "--json").json
    assert second["digest"] != first["digest"]
    assert second["previous"] == first["digest"]
    assert "-echo ran >>" in second["diff"] and "+echo ran-v2 >>" in second["diff"]
    assert cli(capsys, library, "run", "marker", "--arg", f"mark={marked}").code == 0
    assert marked.read_text() == "ran-v2\n"


def test_drifted_recipe_is_refused(
    library: Path, marked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli(capsys, library, "approve", "marker")
    script = library / "recipes" / "marker" / "run.sh"
    original = script.read_bytes()
    script.write_bytes(original + b"echo sneaky\n")
    line = refused(capsys, library, marked, "marker", "--arg", f"mark={marked}")
    assert "local edits" in line
    # --yes approves a digest; it does not excuse drift
    refused(capsys, library, marked, "marker", "--yes", "--arg", f"mark={marked}")
    script.write_bytes(original)
    assert cli(capsys, library, "run", "marker", "--arg", f"mark={marked}").code == 0


@pytest.mark.parametrize(("args", "words"), [
    ((), "input mark is required"),
    (("--arg", "mark=x", "--arg", "colour=red"), "unknown input 'colour'"),
    (("--arg", "mark=x", "--arg", "n=three"), "expected an integer"),
])
def test_bad_inputs_are_refused(
    library: Path, marked: Path, capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...], words: str,
) -> None:
    cli(capsys, library, "approve", "marker")
    line = refused(capsys, library, marked, "marker", *args)
    assert words in line


def test_missing_environment_is_refused(
    library: Path, sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if environment_availability("docker").available:
        pytest.skip("docker is available on this machine")
    retain(Library(library, GENERATED), make_recipe(sources, "boxed", environment="docker"))
    mark = tmp_path / "mark.txt"
    line = refused(capsys, library, mark, "boxed", "--yes", "--arg", f"mark={mark}")
    assert "docker" in line and "not available" in line


def test_stale_tool_is_refused_until_refreshed(
    library: Path, sources: Path, marked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(capsys, library, "expose", "marker", "--as", "mark-it").code == 0
    cli(capsys, library, "approve", "mark-it")
    assert cli(capsys, library, "run", "mark-it", "--arg", f"mark={marked}").code == 0
    marked.unlink()
    revise(Library(library, GENERATED), "marker",
           make_recipe(sources / "v2", "marker", MARK_SCRIPT + "echo v2\n"))
    cli(capsys, library, "approve", "marker")  # the new digest is approved ...
    line = refused(capsys, library, marked, "mark-it", "--arg", f"mark={marked}")
    assert "stale" in line  # ... but the tool still pins the old one
    assert ledger(library)[-1]["entry"] == "tool"
    # the recipe itself runs: only the tool is stale
    assert cli(capsys, library, "run", "marker", "--arg", f"mark={marked}").code == 0
    marked.unlink()
    status = cli(capsys, library, "status", "--json").json
    assert [t["status"] for t in status["tools"]] == ["stale"]
    refreshed = cli(capsys, library, "expose", "marker", "--as", "mark-it", "--refresh", "--json")
    assert refreshed.code == 0, refreshed.err
    assert refreshed.json["refreshed"] is True
    result = cli(capsys, library, "run", "mark-it", "--arg", f"mark={marked}")
    assert result.code == 0, result.err
    assert result.out == "n=1\nv2\n"


def test_drafts_and_skills_do_not_run(
    library: Path, sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    make_skill,  # type: ignore[no-untyped-def]
) -> None:
    retain(Library(library, GENERATED), make_recipe(sources, "rough"), draft=True)
    mark = tmp_path / "mark.txt"
    line = refused(capsys, library, mark, "rough", "--yes", "--arg", f"mark={mark}")
    assert "draft" in line
    retain(Library(library, GENERATED), make_skill(sources, "a-skill"))
    assert cli(capsys, library, "run", "a-skill").code == 2
    assert cli(capsys, library, "run", "no-such-thing").code == 2
    assert cli(capsys, library, "approve", "no-such-thing").code == 2
    assert cli(capsys, library, "run", "rough", "--arg", "mark").code == 2  # not KEY=VALUE


def test_the_committed_content_runs_not_the_work_tree(
    library: Path, marked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What runs is materialised from the approved commit, never read from the work tree."""
    result = cli(capsys, library, "run", "marker", "--yes", "--arg", f"mark={marked}", "--json")
    assert result.code == 0
    assert (library / "recipes" / "marker" / "run.sh").read_bytes() == MARK_SCRIPT.encode()
    approvals = json.loads((library / ".git" / "librarian" / "approvals.json").read_text())
    (entry,) = approvals["approvals"]["recipes/marker"]
    assert entry["digest"] == result.json["digest"]


# -- approve: the library decides with the caller's confirmation -------------------------


class _Terminal(io.StringIO):
    """A stdin that says it is a terminal (its text is what the user types)."""

    def isatty(self) -> bool:
        return True


def approvals(library: Path) -> dict[str, object]:
    path = library / ".git" / "librarian" / "approvals.json"
    if not path.exists():
        return {}
    document = json.loads(path.read_text())
    assert isinstance(document["approvals"], dict)
    return document["approvals"]


def test_approve_asks_the_confirm_callback_with_the_review(
    library: Path, marked: Path
) -> None:
    lib = Library(library, GENERATED)
    seen: list[ApprovalReview] = []

    def decline(review: ApprovalReview) -> bool:
        seen.append(review)
        return False

    with pytest.raises(UsageError, match="not approved"):
        approve(lib, "marker", decline)
    assert [r.path for r in seen] == ["recipes/marker"]
    assert {f.path for f in seen[0].files} == {"recipe.yaml", "run.sh"}
    assert approvals(library) == {}  # declining records nothing

    approval = approve(lib, "marker", lambda review: review.path == "recipes/marker")
    assert approval.receipt.kind == "approval"
    assert approval.receipt.digest == approval.review.digest
    assert list(approvals(library)) == ["recipes/marker"]


def test_approve_without_a_callback_approves_what_it_shows(library: Path, marked: Path) -> None:
    approval = approve(Library(library, GENERATED), "marker")
    assert approval.review.already_approved is False and approval.review.files
    assert list(approvals(library)) == ["recipes/marker"]


def test_approve_on_a_terminal_asks_unless_yes(
    library: Path, marked: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "stdin", _Terminal("n\n"))
    declined = cli(capsys, library, "approve", "marker")
    assert declined.code == 2
    assert "echo ran" in declined.out and "to run?" in declined.out  # shown, then asked
    assert approvals(library) == {}

    monkeypatch.setattr(sys, "stdin", _Terminal("y\n"))
    accepted = cli(capsys, library, "approve", "marker")
    assert accepted.code == 0, accepted.err
    assert "to run?" in accepted.out and list(approvals(library)) == ["recipes/marker"]

    monkeypatch.setattr(sys, "stdin", _Terminal(""))  # would fail if it asked
    shown = cli(capsys, library, "approve", "marker", "--yes")
    assert shown.code == 0, shown.err
    assert "to run?" not in shown.out and "echo ran" in shown.out


def test_approve_off_a_terminal_approves_what_it_shows(
    library: Path, marked: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    result = cli(capsys, library, "approve", "marker")
    assert result.code == 0, result.err
    assert "echo ran" in result.out and "to run?" not in result.out  # the review is printed
    assert list(approvals(library)) == ["recipes/marker"]


# -- docker: no host paths, a named container -------------------------------------------


def test_docker_recipe_with_path_inputs_is_refused(
    library: Path, sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gate, "environment_availability",
                        lambda environment: Availability(True, program="/usr/bin/docker"))
    retain(Library(library, GENERATED), make_recipe(sources, "boxed", environment="docker"))
    mark = tmp_path / "mark.txt"
    line = refused(capsys, library, mark, "boxed", "--yes", "--arg", f"mark={mark}")
    assert "docker recipes cannot take path inputs (mark)" in line
    assert ledger(library)[-1]["status"] == "refused"
    assert approvals(library) == {}  # refused before --yes approved anything
