"""`update --merge-conflicts`: the git way out of a conflict. Upstream's new version is
installed (commit and lock); the conflicting files are written into the work tree with
git-style markers; the item is recorded as conflicted in local state; `status` shows
`conflicted`; `check` and the pre-commit hook refuse a file with markers; `resolve NAME`
ends it once they are gone. Markers never reach a commit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.helpers import GIT, assert_one_error_line, cli, git, head, requires_git
from support.sources_helpers import MODE_FILE, Upstream

from librarian.formats.config import load_lock

Cap = pytest.CaptureFixture[str]
STEPS = "".join(f"Step {n}: do part {n}.\n" for n in range(1, 9))
ITEM = "sources/team/skills/pdf"
STATE = Path(".git/librarian/conflicts.json")


@pytest.fixture
def conflicted(library: Path, tmp_path: Path, capsys: Cap) -> tuple[Path, Upstream]:
    """An installed item edited locally on line 3 while upstream rewrote line 3."""
    up = Upstream(tmp_path / "up.git")
    up.skill("skills/pdf", body=STEPS).put("skills/pdf/notes.md", b"notes\n")
    up.skill("skills/docx").commit("first")
    assert cli(capsys, library, "source", "add", "team", up.url).code == 0
    assert cli(capsys, library, "update").code == 0
    skill = library / ITEM / "SKILL.md"
    skill.write_text(skill.read_text().replace("Step 3: do part 3.", "Step 3: mine."))
    text = up.files["skills/pdf/SKILL.md"][0].decode().replace("Step 3: do part 3.",
                                                               "Step 3: theirs.")
    up.files["skills/pdf/SKILL.md"] = (text.encode(), MODE_FILE)
    up.put("skills/pdf/notes.md", b"notes, changed upstream\n")
    up.skill("skills/docx", body="Changed.\n").commit("second")
    return library, up


def _status(capsys: Cap, library: Path) -> dict[str, str]:
    items = cli(capsys, library, "status", "--json").json["items"]
    return {i["name"]: i["status"] for i in items}


def test_markers_in_the_work_tree_upstream_in_the_commit(
    conflicted: tuple[Path, Upstream], capsys: Cap
) -> None:
    library, up = conflicted
    assert cli(capsys, library, "update").code == 3  # as before, without the flag
    result = cli(capsys, library, "update", "--merge-conflicts", "--json")
    assert result.code == 0, result.err
    item = next(i for p in result.json["plans"] for i in p["items"] if i["name"] == "team:pdf")
    assert item["action"] == "merge" and item["merge"]["markers"] is True
    assert [c["path"] for c in item["merge"]["conflicts"]] == ["SKILL.md"]
    assert result.json["backups"]  # the original edit is saved first
    text = (library / ITEM / "SKILL.md").read_text()
    assert "<<<<<<< local\nStep 3: mine.\n=======\nStep 3: theirs.\n>>>>>>> upstream\n" in text
    # the clean part of the merge is there too; the other item updated as usual
    assert (library / ITEM / "notes.md").read_text() == "notes, changed upstream\n"
    assert (library / "sources/team/skills/docx/SKILL.md").read_text().endswith("Changed.\n")
    # the commit and the lock hold upstream's version, never a marker
    if GIT:
        committed = git(library, "show", f"HEAD:{ITEM}/SKILL.md").stdout.decode()
        assert "Step 3: theirs." in committed and "<<<<<<<" not in committed
        everything = git(library, "log", "-p", "--all").stdout
        assert b"<<<<<<< local" not in everything
    lock = load_lock((library / "librarian.lock").read_bytes())["team"]
    assert lock.commit == up.commits[-1]
    assert "team:pdf" in (library / STATE).read_text()
    assert _status(capsys, library)["team:pdf"] == "conflicted"
    human = cli(capsys, library, "status")
    assert "conflicted" in human.out and "librarian resolve team:pdf" in human.out
    # check refuses the markers; another update of the source waits for the resolution
    checked = cli(capsys, library, "check")
    assert checked.code != 0 and "SKILL.md: holds conflict markers" in checked.out + checked.err
    old = head(library)
    waiting = cli(capsys, library, "update")
    assert waiting.code == 3 and "librarian resolve team:pdf" in assert_one_error_line(
        waiting.err)
    assert head(library) == old
    # removing the source ends its conflicts with it
    assert cli(capsys, library, "source", "remove", "team", "--force").code == 0
    assert not (library / STATE).exists()


def test_resolve_ends_it_once_the_markers_are_gone(
    conflicted: tuple[Path, Upstream], capsys: Cap
) -> None:
    library, _ = conflicted
    assert cli(capsys, library, "update", "--merge-conflicts").code == 0
    old = head(library)
    early = cli(capsys, library, "resolve", "team:pdf")
    assert early.code == 3 and "SKILL.md" in assert_one_error_line(early.err)
    skill = library / ITEM / "SKILL.md"
    text = skill.read_text()
    start, end = text.index("<<<<<<< local\n"), text.index(">>>>>>> upstream\n")
    skill.write_text(text[:start] + "Step 3: mine and theirs.\n"
                     + text[end + len(">>>>>>> upstream\n"):])
    done = cli(capsys, library, "resolve", "team:pdf", "--json")
    assert done.code == 0, done.err
    assert done.json["kind"] == "resolved" and done.json["commit"] is None
    assert head(library) == old  # no commit: a local edit stays a local edit
    assert not (library / STATE).exists()
    assert _status(capsys, library)["team:pdf"] == "modified"
    assert cli(capsys, library, "check").code == 0
    assert cli(capsys, library, "resolve", "team:pdf").code == 2  # not conflicted now
    assert cli(capsys, library, "update").code == 0  # updates go on


def test_a_conflict_no_file_can_show_still_refuses(
    library: Path, tmp_path: Path, capsys: Cap
) -> None:
    up = Upstream(tmp_path / "up.git")
    up.skill("skills/pdf").put("skills/pdf/logo.bin", b"\x89PNG\0one\n").commit("first")
    assert cli(capsys, library, "source", "add", "team", up.url).code == 0
    assert cli(capsys, library, "update").code == 0
    (library / ITEM / "logo.bin").write_bytes(b"\x89PNG\0mine\n")
    up.put("skills/pdf/logo.bin", b"\x89PNG\0theirs\n").commit("second")
    old = head(library)
    result = cli(capsys, library, "update", "--merge-conflicts")
    assert result.code == 3 and "binary" in assert_one_error_line(result.err)
    assert head(library) == old and not (library / STATE).exists()


@requires_git
def test_the_pre_commit_hook_refuses_a_file_with_markers(
    conflicted: tuple[Path, Upstream], capsys: Cap
) -> None:
    import sys

    library, _ = conflicted
    assert cli(capsys, library, "update", "--merge-conflicts").code == 0
    assert cli(capsys, library, "hooks", "install").code == 0
    before = head(library)
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    git(library, "add", ITEM)
    refused = git(library, "commit", "-q", "-m", "commit the markers", check=False, env=env)
    assert refused.returncode != 0
    assert b"conflict markers" in refused.stdout + refused.stderr
    assert head(library) == before


def test_a_copy_with_markers_is_never_retained(
    conflicted: tuple[Path, Upstream], tmp_path: Path, capsys: Cap
) -> None:
    import shutil

    library, _ = conflicted
    assert cli(capsys, library, "update", "--merge-conflicts").code == 0
    copy = tmp_path / "copy" / "pdf"
    shutil.copytree(library / ITEM, copy)
    old = head(library)
    refused = cli(capsys, library, "retain", str(copy))
    assert refused.code == 2 and "conflict markers" in assert_one_error_line(refused.err)
    assert head(library) == old


@given(st.lists(st.sampled_from(["a\n", "b\n", "c\n", "x\n", "=======\n", "<<<<<<<\n"]),
                max_size=8), st.lists(st.sampled_from(["a\n", "y\n", "z\n"]), max_size=8),
       st.lists(st.sampled_from(["a\n", "b\n", "w\n"]), max_size=8))
def test_markers_are_found_exactly_where_a_conflict_was_written(
    base: list[str], ours: list[str], theirs: list[str]
) -> None:
    from librarian.core.markers import has_markers
    from librarian.git.merge import FileVersion, merge_files, merge_marked

    sides = [{"f": FileVersion(0o100644, "".join(lines).encode())}
             for lines in (base, ours, theirs)]
    marked = merge_marked(*sides)
    assert marked is not None
    conflicting = merge_files(*sides).files is None
    assert has_markers(marked["f"].data) == conflicting
    for side in sides:  # none of the inputs holds the labelled markers
        assert not has_markers(side["f"].data)
