"""``retain A B C``: several sources admitted in ONE commit, as a package manager installs
several packages; one refused (invalid, a name taken, two of one name) leaves the library
as it was. The readers of the history pair each item with its own trailers."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import (
    assert_one_error_line,
    cli,
    cli_ok,
    commit_count,
    head,
    make_recipe,
    make_skill,
    trailers,
    tree_snapshot,
)


def test_several_sources_are_one_commit(capsys: pytest.CaptureFixture[str], library: Path,
                                        sources: Path) -> None:
    count = commit_count(library)
    a, b = make_skill(sources, "alpha"), make_skill(sources, "beta", body="# Beta\n")
    c = make_recipe(sources, "gamma")
    result = cli_ok(capsys, library, "retain", str(a), str(b), str(c), "--draft",
                    "--evidence", "three at once", "--json").json
    assert commit_count(library) == count + 1
    assert result["kind"] == "retained_items" and result["name"] is None
    items = result["items"]
    assert [i["path"] for i in items] == ["drafts/alpha", "drafts/beta", "drafts/gamma"]
    assert {i["commit"] for i in items} == {result["commit"]}
    found = trailers(library)
    assert [v for k, v in found if k == "Librarian-Item"] == [i["path"] for i in items]
    assert [v for k, v in found if k == "Librarian-Digest"] == [i["digest"] for i in items]
    # review and inspect read each item's own trailers from the one commit
    review = cli_ok(capsys, library, "review", "--json").json
    assert {d["name"]: d["evidence"] for d in review["drafts"]} == {
        "alpha": "three at once", "beta": "three at once", "gamma": "three at once"}
    revisions = cli_ok(capsys, library, "inspect", "beta", "--json").json["revisions"]
    assert revisions[0]["digest"] == items[1]["digest"]
    text = cli_ok(capsys, library, "retain", str(make_skill(sources / "x", "delta")),
                  str(make_skill(sources / "x", "epsilon"))).out
    assert "delta -> skills/delta" in text and "epsilon -> skills/epsilon" in text


@pytest.mark.parametrize("trouble", ["invalid", "taken", "twice"])
def test_one_refused_leaves_nothing_half_done(capsys: pytest.CaptureFixture[str],
                                              library: Path, sources: Path,
                                              trouble: str) -> None:
    cli_ok(capsys, library, "retain", str(make_skill(sources / "old", "taken")))
    good = make_skill(sources, "good")
    bad = {"invalid": lambda: make_skill(sources, "bad", skill_md_bytes=b"no frontmatter\n"),
           "taken": lambda: make_skill(sources / "new", "taken"),
           "twice": lambda: make_skill(sources / "again", "good")}[trouble]()
    before, tree = head(library), tree_snapshot(library)
    result = cli(capsys, library, "retain", str(good), str(bad))
    assert result.code in (2, 3), result.err
    assert_one_error_line(result.err)
    assert head(library) == before and tree_snapshot(library) == tree


def test_name_asserts_one_item(capsys: pytest.CaptureFixture[str], library: Path,
                               sources: Path) -> None:
    result = cli(capsys, library, "retain", str(make_skill(sources, "a")),
                 str(make_skill(sources, "b")), "--name", "a")
    assert result.code == 2 and "--name" in result.err
