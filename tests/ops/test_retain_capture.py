"""``retain notes.md --draft``: a Markdown note without frontmatter is captured as a draft
skill, its frontmatter built from the file name and first heading; ``promote`` demands a
conforming skill; without ``--draft`` the note is refused with a pointer to it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.helpers import assert_one_error_line, cli, cli_ok, hand_commit, head, skill_md

from librarian.agents.claude_manifests import GENERATED
from librarian.core.model import ItemFile
from librarian.formats.capture import captured_skill_md, slug
from librarian.formats.skillmd import parse_skill_md
from librarian.library.layout import Library
from librarian.txn.changes import DirChange

NOTE = "\n# Deploying the app: the steps\n\nRun `make deploy`, then check the logs.\n"


def test_a_note_without_frontmatter_becomes_a_draft(
    capsys: pytest.CaptureFixture[str], library: Path, tmp_path: Path
) -> None:
    note = tmp_path / "Deploy Notes.md"
    note.write_text(NOTE)
    receipt = cli_ok(capsys, library, "retain", str(note), "--draft", "--json").json
    assert receipt["kind"] == "draft" and receipt["name"] == "deploy-notes"
    skill = (library / "drafts" / "deploy-notes" / "SKILL.md").read_text()
    assert skill == ("---\nname: deploy-notes\ndescription: \"Deploying the app: the steps\"\n"
                     "---\n" + NOTE)
    promoted = cli_ok(capsys, library, "promote", "deploy-notes", "--json").json
    assert promoted["path"] == "skills/deploy-notes" and promoted["warnings"] == []


def test_name_and_first_line_and_the_refusal_without_draft(
    capsys: pytest.CaptureFixture[str], library: Path, tmp_path: Path
) -> None:
    note = tmp_path / "x.md"
    note.write_text("remember: tabs, not spaces\nmore\n")
    refused = cli(capsys, library, "retain", str(note))
    assert refused.code == 2
    assert "--draft" in assert_one_error_line(refused.err)
    cli_ok(capsys, library, "retain", str(note), "--draft", "--name", "tabs")
    manifest = parse_skill_md((library / "drafts" / "tabs" / "SKILL.md").read_bytes(), "x")
    assert (manifest.name, manifest.description) == ("tabs", "remember: tabs, not spaces")


def test_promote_demands_conformance(capsys: pytest.CaptureFixture[str],
                                     library: Path) -> None:
    files = (ItemFile("SKILL.md", False, skill_md("other-name")),)
    hand_commit(Library(library, GENERATED), "plain git", [], [DirChange("drafts/loose", files)])
    before = head(library)
    result = cli(capsys, library, "promote", "loose", "--json")
    assert result.code == 2
    assert any("name-directory" in p for p in result.json["problems"])
    assert head(library) == before and (library / "drafts" / "loose").is_dir()


@settings(max_examples=60)
@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=200),
       st.text(alphabet="abcXYZ -_.09é", min_size=1, max_size=20))
def test_any_note_captures_to_a_valid_skill(body: str, stem: str) -> None:
    name = slug(stem) or "note"
    data = captured_skill_md(body.encode("utf-8"), name)
    manifest = parse_skill_md(data, "SKILL.md")
    assert manifest.name == name and manifest.description.strip()
