"""An item written straight into the library is admitted where it stands;
a draft can be revised."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import (
    assert_git_consistent,
    cli,
    commit_count,
    make_recipe,
    make_skill,
    trailers,
)

Capsys = pytest.CaptureFixture[str]


@pytest.mark.parametrize(("directory", "kind"), [("skills", "retained_skill"),
                                                   ("drafts", "draft"),
                                                   ("recipes", "retained_recipe")])
def test_retain_adopts_an_untracked_item_in_place(
    library: Path, capsys: Capsys, directory: str, kind: str
) -> None:
    if directory == "recipes":
        make_recipe(library / directory, "handmade")
    else:
        make_skill(library / directory, "handmade")
    assert "untracked" in cli(capsys, library, "status").out
    before = commit_count(library)
    result = cli(capsys, library, "retain", str(library / directory / "handmade"), "--json")
    assert result.code == 0, result.err
    receipt = result.json
    assert receipt["kind"] == kind
    assert receipt["path"] == f"{directory}/handmade"
    assert receipt["in_place"] is True
    assert commit_count(library) == before + 1
    assert ("Librarian-Item", f"{directory}/handmade") in trailers(library)
    assert cli(capsys, library, "status", "--check").code == 0
    assert_git_consistent(library)


def test_retain_in_place_from_inside_the_library(
    library: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_skill(library / "skills", "handmade")
    monkeypatch.chdir(library)
    result = cli(capsys, library, "retain", "skills/handmade")
    assert result.code == 0, result.err
    assert "retained skill handmade -> skills/handmade" in result.out


def test_adoption_is_narrow(library: Path, capsys: Capsys) -> None:
    # Named otherwise than its directory: refused, nothing changed.
    make_skill(library / "skills", "other", dirname="handmade")
    before = commit_count(library)
    assert cli(capsys, library, "retain", str(library / "skills" / "handmade")).code == 2
    # A skill in recipes/ is in the wrong place.
    make_skill(library / "recipes", "misplaced")
    assert cli(capsys, library, "retain", str(library / "recipes" / "misplaced")).code == 2
    # Files retain would leave out (ignored) are not silently dropped from the work tree.
    make_skill(library / "skills", "junk", extra_files={".DS_Store": b"x"})
    result = cli(capsys, library, "retain", str(library / "skills" / "junk"))
    assert result.code == 3, result.err
    assert (library / "skills" / "junk" / ".DS_Store").exists()
    # --draft cannot move an item that stands in skills/.
    make_skill(library / "skills", "plain")
    assert cli(capsys, library, "retain", str(library / "skills" / "plain"), "--draft").code == 2
    assert commit_count(library) == before
    # A copy from elsewhere onto an untracked path is still refused (create-only).
    outside = make_skill(library.parent / "elsewhere", "plain")
    assert cli(capsys, library, "retain", str(outside)).code == 3


def test_revise_a_draft(library: Path, capsys: Capsys, sources: Path) -> None:
    cli(capsys, library, "retain", str(make_skill(sources / "v1", "rough")), "--draft")
    v2 = make_skill(sources / "v2", "rough", body="# Better\n")
    result = cli(capsys, library, "revise", "rough", str(v2), "--json")
    assert result.code == 0, result.err
    assert result.json["path"] == "drafts/rough"
    assert (library / "drafts" / "rough" / "SKILL.md").read_text().endswith("# Better\n")
    # Edited in place, then revised from itself.
    with (library / "drafts" / "rough" / "SKILL.md").open("a") as handle:
        handle.write("more\n")
    result = cli(capsys, library, "revise", "rough", str(library / "drafts" / "rough"))
    assert result.code == 0, result.err
    assert_git_consistent(library)
