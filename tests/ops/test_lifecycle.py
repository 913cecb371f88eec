"""Drafts (review, promote, discard, defer) and revisions of retained items (revise, retire,
restore): one commit per decision, trailers, digests, and refusals that change nothing."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from support.helpers import (
    GIT,
    assert_git_consistent,
    assert_one_error_line,
    cli,
    commit_count,
    committed_policy,
    hand_commit,
    head,
    library_state,
    make_recipe,
    make_skill,
    trailers,
    tree_snapshot,
)

from librarian.agents.claude_manifests import GENERATED
from librarian.core.events import parse_message
from librarian.formats.config import TOOLS_FILE, ToolEntry, dump_tools
from librarian.library.layout import Library
from librarian.ops.history import read_log
from librarian.ops.lifecycle import defer, discard, parse_until, promote
from librarian.ops.retention import retain
from librarian.ops.review import review_drafts
from librarian.ops.revisions import restore, retire, revise
from librarian.txn.changes import DirChange, FileChange

Capsys = pytest.CaptureFixture[str]



def last_trailers(library: Path) -> dict[str, str]:
    with Library(library, GENERATED).store() as store:
        commit = store.head()
        assert commit is not None
        event = parse_message(store.commit(commit).message)
    assert event is not None
    return dict(event.trailers)


def refused(capsys: Capsys, library: Path, code: int, *args: str) -> str:
    """Run a command that must fail with ``code`` and change nothing."""
    before = library_state(library)
    result = cli(capsys, library, *args)
    assert result.code == code, (result.code, result.out, result.err)
    assert library_state(library) == before
    return assert_one_error_line(result.err)


# -- drafts ---------------------------------------------------------------------------


def test_promote_moves_draft_by_kind_with_digest_unchanged(
    library: Path, sources: Path, capsys: Capsys
) -> None:
    lib = Library(library, GENERATED)
    skill = make_skill(sources, "notes", extra_files={"scripts/go.sh": (b"#!/bin/sh\n", 0o755)})
    recipe = make_recipe(sources, "counter")
    drafted = {r.name: r for r in (retain(lib, skill, draft=True), retain(lib, recipe, draft=True))}
    assert drafted["notes"].path == "drafts/notes"
    count = commit_count(library)

    result = cli(capsys, library, "promote", "notes", "--evidence", "used in 3 sessions", "--json")
    assert result.code == 0, result.err
    receipt = result.json
    assert receipt["kind"] == "retained_skill"
    assert receipt["path"] == "skills/notes"
    assert receipt["digest"] == drafted["notes"].digest
    assert receipt["activation"] == "not_requested"
    assert commit_count(library) == count + 1
    assert not (library / "drafts" / "notes").exists()
    assert tree_snapshot(library / "skills" / "notes") == tree_snapshot(skill)
    assert last_trailers(library) == {
        "Librarian-Event": "promote",
        "Librarian-Item": "skills/notes",
        "Librarian-Previous-Item": "drafts/notes",
        "Librarian-Kind": "skill",
        "Librarian-Digest": drafted["notes"].digest,
        "Librarian-Evidence": "used in 3 sessions",
    }

    receipt2 = promote(lib, "counter")
    assert (receipt2.kind, receipt2.path) == ("retained_recipe", "recipes/counter")
    assert receipt2.digest == drafted["counter"].digest
    assert last_trailers(library)["Librarian-Evidence"] == "unknown"
    assert_git_consistent(library)
    if GIT is not None:  # what `git interpret-trailers` reads
        assert ("Librarian-Event", "promote") in trailers(library)


def test_discard_and_defer_record_decisions(library: Path, sources: Path, capsys: Capsys) -> None:
    lib = Library(library, GENERATED)
    retain(lib, make_skill(sources, "maybe"), draft=True, evidence="captured once")
    retain(lib, make_skill(sources, "nope"), draft=True)
    tree_before = tree_snapshot(library)

    result = cli(capsys, library, "defer", "maybe", "--reason", "needs a second use",
                 "--until", "2099-01-02", "--json")
    assert result.code == 0, result.err
    assert result.json["kind"] == "deferred_draft"
    assert result.json["until"] == "2099-01-02"
    assert tree_snapshot(library) == tree_before  # the draft is kept, nothing else changed
    defer_trailers = last_trailers(library)
    assert defer_trailers["Librarian-Event"] == "defer"
    assert defer_trailers["Librarian-Item"] == "drafts/maybe"
    assert defer_trailers["Librarian-Reason"] == "needs a second use"
    assert defer_trailers["Librarian-Until"] == "2099-01-02"
    assert defer_trailers["Librarian-Digest"].startswith("sha256:")

    result = cli(capsys, library, "discard", "nope", "--reason", "one-off", "--json")
    assert result.code == 0, result.err
    assert result.json["kind"] == "discarded_draft"
    assert not (library / "drafts" / "nope").exists()
    assert last_trailers(library)["Librarian-Reason"] == "one-off"
    assert_git_consistent(library)

    # A reason is required, and must not be blank.
    refused(capsys, library, 2, "discard", "maybe")
    refused(capsys, library, 2, "defer", "maybe", "--reason", "  ")
    refused(capsys, library, 2, "defer", "maybe", "--reason", "x", "--until", "someday")


def test_review_lists_drafts_due_deferrals_first(
    library: Path, sources: Path, capsys: Capsys
) -> None:
    lib = Library(library, GENERATED)
    for name in ("alpha", "beta", "gamma", "delta"):
        retain(lib, make_skill(sources, name), draft=True, evidence=f"seen {name}")
    retain(lib, make_skill(sources, "kept"))  # retained: not a draft, not reviewed
    today = dt.date(2030, 6, 1)
    defer(lib, "beta", reason="later", until="2030-07-01", today=today)
    defer(lib, "gamma", reason="overdue", until="2030-05-01", today=today)
    defer(lib, "delta", reason="no date", today=today)

    report = review_drafts(lib, today=today)
    order = [(d.name, d.status) for d in report.drafts]
    assert order == [("delta", "due"), ("gamma", "due"), ("alpha", "new"), ("beta", "deferred")]
    gamma = report.drafts[1]
    assert gamma.decision is not None and gamma.decision.reason == "overdue"
    assert gamma.decision.until == "2030-05-01"
    assert gamma.evidence == "seen gamma"
    assert gamma.kind == "skill" and gamma.digest and gamma.digest.startswith("sha256:")
    assert gamma.age_seconds is not None and gamma.age_seconds >= 0

    result = cli(capsys, library, "review", "--json")
    assert result.code == 0, result.err
    document = result.json
    assert document["kind"] == "review"
    assert {d["name"] for d in document["drafts"]} == {"alpha", "beta", "gamma", "delta"}
    human = cli(capsys, library, "review")
    assert human.code == 0 and "overdue" in human.out

    # A draft discarded and captured again starts over: old decisions do not follow it.
    discard(lib, "gamma", reason="redo")
    retain(lib, make_skill(sources / "again", "gamma"), draft=True)
    again = {d.name: d for d in review_drafts(lib, today=today).drafts}["gamma"]
    assert again.decision is None and again.status == "new"


def test_parse_until() -> None:
    today = dt.date(2030, 1, 1)
    assert parse_until("2030-02-03", today) == dt.date(2030, 2, 3)
    assert parse_until("14d", today) == dt.date(2030, 1, 15)
    assert parse_until("2w", today) == dt.date(2030, 1, 15)


def test_draft_operations_refuse_retained_and_unknown(
    library: Path, sources: Path, capsys: Capsys
) -> None:
    lib = Library(library, GENERATED)
    retain(lib, make_skill(sources, "solid"))
    retain(lib, make_skill(sources / "d", "rough"), draft=True)
    message = refused(capsys, library, 3, "discard", "solid", "--reason", "x")
    assert "not a draft" in message
    result = cli(capsys, library, "discard", "solid", "--reason", "x")
    assert "librarian retire solid" in result.err
    refused(capsys, library, 3, "defer", "solid", "--reason", "x")
    refused(capsys, library, 3, "promote", "solid")
    for command in (["promote", "ghost"], ["discard", "ghost", "--reason", "x"],
                    ["defer", "ghost", "--reason", "x"], ["revise", "ghost", str(sources)],
                    ["retire", "ghost"], ["restore", "ghost"]):
        refused(capsys, library, 2, *command)
    # Retained-only operations refuse drafts.
    refused(capsys, library, 3, "retire", "rough")
    # A draft can be revised: the same content is "nothing to revise".
    refused(capsys, library, 2, "revise", "rough", str(sources / "d" / "rough"))
    # JSON errors are one document too.
    result = cli(capsys, library, "promote", "ghost", "--json")
    assert result.json == {"kind": "error", "error": result.json["error"], "exit_code": 2,
                           "hint": result.json["hint"]}


def test_promote_refuses_a_draft_with_local_edits(library: Path, sources: Path,
                                                  capsys: Capsys) -> None:
    lib = Library(library, GENERATED)
    retain(lib, make_skill(sources, "edited"), draft=True)
    with (library / "drafts" / "edited" / "SKILL.md").open("a") as handle:
        handle.write("local edit\n")
    refused(capsys, library, 3, "promote", "edited")


# -- revisions ------------------------------------------------------------------------


def test_revise_records_both_digests(library: Path, sources: Path, capsys: Capsys) -> None:
    lib = Library(library, GENERATED)
    first = retain(lib, make_skill(sources / "v1", "guide", body="# v1\n"))
    v2 = make_skill(sources / "v2", "guide", body="# v2\n", extra_files={"references/a.md": "a"})
    result = cli(capsys, library, "revise", "guide", str(v2), "--evidence", "better", "--json")
    assert result.code == 0, result.err
    receipt = result.json
    assert receipt["kind"] == "revised_skill"
    assert receipt["previous_digest"] == first.digest
    assert receipt["digest"] != first.digest
    assert tree_snapshot(library / "skills" / "guide") == tree_snapshot(v2)
    found = last_trailers(library)
    assert found["Librarian-Event"] == "revise"
    assert found["Librarian-Previous-Digest"] == first.digest
    assert found["Librarian-Digest"] == receipt["digest"]
    assert found["Librarian-Evidence"] == "better"
    assert_git_consistent(library)

    # Identical content: exit 2, nothing changes.
    assert "identical" in refused(capsys, library, 2, "revise", "guide", str(v2))
    # Another kind, or another name: exit 2.
    recipe = make_recipe(sources / "r", "guide")
    assert "kind" in refused(capsys, library, 2, "revise", "guide", str(recipe))
    other = make_skill(sources / "o", "other-name")
    refused(capsys, library, 2, "revise", "guide", str(other))
    # Invalid content is refused as retain refuses it.
    bad = make_skill(sources / "b", "guide", description="")
    refused(capsys, library, 2, "revise", "guide", str(bad))


def test_revise_in_place_takes_the_work_tree_edit(library: Path, sources: Path) -> None:
    lib = Library(library, GENERATED)
    retain(lib, make_skill(sources, "inplace"))
    target = library / "skills" / "inplace"
    with (target / "SKILL.md").open("a") as handle:
        handle.write("A better step.\n")
    receipt = revise(lib, "inplace", target)
    assert receipt.digest is not None
    assert "A better step." in (target / "SKILL.md").read_text()
    assert_git_consistent(library)


def test_revise_from_elsewhere_refuses_local_edits(
    library: Path, sources: Path, capsys: Capsys
) -> None:
    lib = Library(library, GENERATED)
    retain(lib, make_skill(sources / "a", "busy"))
    (library / "skills" / "busy" / "notes.md").write_text("unsaved\n")
    new = make_skill(sources / "b", "busy", body="# new\n")
    refused(capsys, library, 3, "revise", "busy", str(new))


def test_retire_restore_roundtrip_and_log(library: Path, sources: Path, capsys: Capsys) -> None:
    lib = Library(library, GENERATED)
    draft = retain(lib, make_skill(sources / "a", "cycle", body="# one\n"), draft=True)
    promote(lib, "cycle", evidence="worked")
    revised = revise(lib, "cycle", make_skill(sources / "b", "cycle", body="# two\n"))
    result = cli(capsys, library, "retire", "cycle", "--reason", "superseded", "--json")
    assert result.code == 0, result.err
    assert result.json["kind"] == "retired_skill"
    assert result.json["digest"] == revised.digest
    assert not (library / "skills" / "cycle").exists()
    assert last_trailers(library)["Librarian-Digest"] == revised.digest

    result = cli(capsys, library, "restore", "cycle", "--json")
    assert result.code == 0, result.err
    restored = result.json
    assert restored["digest"] == revised.digest  # the digest matches the one retired
    assert restored["path"] == "skills/cycle"
    assert last_trailers(library)["Librarian-Event"] == "restore"
    assert last_trailers(library)["Librarian-Restored-From"] == restored["restored_from"]
    assert_git_consistent(library)

    # Restoring a name in use is a conflict; --from an earlier revision after retiring.
    refused(capsys, library, 3, "restore", "cycle")
    retire(lib, "cycle")
    promote_commit = next(e.commit for e in read_log(lib, "cycle") if e.event == "promote")
    refused(capsys, library, 2, "restore", "cycle", "--from", "not-a-revision")
    refused(capsys, library, 2, "restore", "cycle", "--from", draft.commit or "")
    older = restore(lib, "cycle", revision=promote_commit)
    assert older.digest == draft.digest

    log = cli(capsys, library, "log", "cycle", "--json")
    events = [e["event"] for e in log.json["events"]]
    assert events == ["restore", "retire", "restore", "retire", "revise", "promote", "retain"]


def test_retire_refused_while_exposed(library: Path, sources: Path, capsys: Capsys) -> None:
    lib = Library(library, GENERATED)
    receipt = retain(lib, make_recipe(sources, "tooly"))
    assert receipt.digest is not None
    tools = dump_tools({"tooly-tool": ToolEntry("recipes/tooly", receipt.digest)})
    hand_commit(lib, "expose recipe tooly",
                [("Librarian-Event", "expose"), ("Librarian-Tool", "tooly-tool")],
                [FileChange(TOOLS_FILE, tools)])
    message = refused(capsys, library, 3, "retire", "tooly")
    assert "tooly-tool" in message
    assert "withdraw" in cli(capsys, library, "retire", "tooly").err
    # A revision is allowed, and says the tool is now stale.
    revised = revise(lib, "tooly", make_recipe(sources / "v2", "tooly", extra_yaml="# v2\n"))
    assert any("stale" in w for w in revised.warnings)


def test_managed_items_are_read_only(library: Path, sources: Path, capsys: Capsys) -> None:
    from librarian.content.validate import load_source

    lib = Library(library, GENERATED)
    content = load_source(make_skill(sources, "shared"), committed_policy(lib))

    hand_commit(lib, "update team", [("Librarian-Event", "update")],
                [DirChange("sources/team/skills/shared", content.files)])
    for command in (["retire", "team:shared"], ["revise", "team:shared",
                                                 str(sources / "shared")],
                    ["discard", "team:shared", "--reason", "x"]):
        result = cli(capsys, library, *command)
        assert result.code == 3, result.err
        assert "upstream" in result.err
    assert head(library) is not None
