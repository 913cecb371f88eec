"""``status`` agrees with git about the work tree and with
``update`` about managed items, and says when an interrupted change is pending."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from support.helpers import cli, git, git_text, make_skill, requires_git, run_process
from support.sources_helpers import Upstream

Capsys = pytest.CaptureFixture[str]


@requires_git
def test_edited_readme_and_untracked_top_files_are_not_clean(library: Path,
                                                             capsys: Capsys) -> None:
    assert cli(capsys, library, "status", "--check").code == 0
    with (library / "README.md").open("a") as handle:
        handle.write("more\n")
    (library / "notes.txt").write_text("scratch\n")
    (library / "scratch").mkdir()
    (library / "scratch" / "a").write_text("a\n")
    (library / "empty").mkdir()  # git does not see an empty directory
    (library / ".gitignore").write_text("ignored.log\n")
    (library / "ignored.log").write_text("x\n")
    porcelain = git_text(library, "status", "--porcelain")
    assert "README.md" in porcelain and "notes.txt" in porcelain
    result = cli(capsys, library, "status", "--check", "--json")
    assert result.code == 3
    files = {f["path"]: f["status"] for f in result.json["files"]}
    assert files["README.md"] == "modified"
    assert files["notes.txt"] == "untracked" and files["scratch/"] == "untracked"
    assert files[".gitignore"] == "untracked"
    assert "ignored.log" not in files and "empty/" not in files
    human = cli(capsys, library, "status").out
    assert "modified   README.md" in human and "untracked  notes.txt" in human


@requires_git
def test_a_managed_item_committed_with_git_is_modified_against_the_lock(
    library: Path, tmp_path: Path, capsys: Capsys
) -> None:
    up = Upstream(tmp_path / "up.git")
    up.skill("skills/pdf").commit()
    assert cli(capsys, library, "source", "add", "team", up.url).code == 0
    assert cli(capsys, library, "update").code == 0
    skill = library / "sources" / "team" / "skills" / "pdf" / "SKILL.md"
    with skill.open("a") as handle:
        handle.write("A local addition.\n")
    git(library, "commit", "-qam", "edit the managed skill with plain git", "--no-verify")
    result = cli(capsys, library, "status", "--check", "--json")
    assert result.code == 3
    item = next(i for i in result.json["items"] if i["path"] == "sources/team/skills/pdf")
    assert item["status"] == "modified" and item["locked"] != item["committed"]
    human = cli(capsys, library, "status").out
    assert "modified   sources/team/skills/pdf" in human and "librarian.lock" in human
    # update agrees: the edit is a local edit.
    plan = cli(capsys, library, "outdated", "--json").json
    assert plan["plans"][0]["items"][0]["local_edit"] is True


@pytest.mark.crash
def test_status_says_an_interrupted_change_is_pending(library: Path, sources: Path,
                                                      capsys: Capsys) -> None:
    source = make_skill(sources, "crashy")
    killed = run_process("--library", str(library), "retain", str(source),
                         env={"LIBRARIAN_CRASH_AT": "after-cas"})
    assert killed.returncode == -signal.SIGKILL
    result = cli(capsys, library, "status", "--check")
    assert result.code == 3
    assert "interrupted" in result.out and "librarian recover" in result.out
    assert cli(capsys, library, "status", "--json").json["interrupted"] is True
    assert cli(capsys, library, "recover").code == 0
    assert cli(capsys, library, "status", "--check").code == 0
