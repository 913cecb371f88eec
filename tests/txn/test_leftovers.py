"""Recovery clears what a killed librarian command left, and only that: anything git may
have made stays, and the command that trips on it names it (exit 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.helpers import assert_one_error_line, git_text, make_skill, run_main, write

pytestmark = pytest.mark.crash


def _journal(library: Path) -> dict[str, object]:
    head = git_text(library, "rev-parse", "HEAD").strip()
    doc = {"tx": "0123456789ab", "branch": "refs/heads/main", "base": head, "new": head,
           "paths": ["tools.yaml"]}
    write(library / ".git" / "librarian" / "journal.json", json.dumps(doc))
    return doc


def test_recover_clears_librarians_own_leftovers(
        library: Path, capsys: pytest.CaptureFixture[str]) -> None:
    git_dir = library / ".git"
    doc = _journal(library)
    own = [
        git_dir / "librarian" / ".journal.json.abcd1234.tmp",
        git_dir / "objects" / "ab" / ("c" * 38 + ".lock"),
        git_dir / "objects" / "pack" / "tmpab12cd34.pack",
        git_dir / "objects" / "pack" / ("pack-" + "d" * 40 + ".idx.lock"),
        git_dir / "refs" / "librarian" / "sources" / "team.lock",
        git_dir / "refs" / "heads" / "main.lock",
        git_dir / "index.lock",
        git_dir / "hooks" / ".pre-commit.x1y2z3w4.tmp",
    ]
    for path in own:
        write(path, "")
    (git_dir / "refs" / "heads" / "main.lock").write_text(f"{doc['new']}\n")
    write(git_dir / "librarian" / "index-splice", str(doc["tx"]))
    result = run_main(capsys, "--library", str(library), "recover")
    assert result.code == 0, result.err
    assert [p for p in own if p.exists()] == []
    assert not (git_dir / "librarian" / "index-splice").exists()
    assert run_main(capsys, "--library", str(library), "status").code == 0


def test_locks_git_may_hold_stay_and_are_named(
        library: Path, sources: Path, capsys: pytest.CaptureFixture[str]) -> None:
    git_dir = library / ".git"
    foreign = git_dir / "refs" / "heads" / "main.lock"
    write(foreign, "f" * 40 + "\n")  # another writer's new value: not librarian's
    write(git_dir / "index.lock", "")  # no marker: maybe a running git command
    assert run_main(capsys, "--library", str(library), "recover").code == 0
    assert foreign.exists() and (git_dir / "index.lock").exists()
    result = run_main(capsys, "--library", str(library), "retain",
                      str(make_skill(sources, "blocked")))
    assert result.code == 3
    assert ".git/index.lock" in assert_one_error_line(result.err)
    (git_dir / "index.lock").unlink()
    result = run_main(capsys, "--library", str(library), "retain",
                      str(make_skill(sources, "blocked")))
    assert result.code == 3
    assert ".git/refs/heads/main.lock" in assert_one_error_line(result.err)


def test_the_index_is_held_from_before_the_branch_moves(
        library: Path, sources: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Killed right after the branch moved: git's index.lock is still librarian's, so a
    plain `git commit` cannot build on the old index (and drop the retained item); recovery
    clears the lock and finishes the index."""
    from support.helpers import assert_git_consistent, git, run_process

    killed = run_process("--library", str(library), "retain", str(make_skill(sources, "held")),
                         env={"LIBRARIAN_CRASH_AT": "after-cas"})
    assert killed.returncode == -9
    plain = git(library, "commit", "--allow-empty", "-q", "-m", "plain", check=False)
    assert plain.returncode != 0 and b"index.lock" in plain.stderr
    assert run_main(capsys, "--library", str(library), "recover").code == 0
    assert not (library / ".git" / "index.lock").exists()
    assert_git_consistent(library)
    git(library, "commit", "--allow-empty", "-q", "-m", "plain")
    listing = git_text(library, "ls-tree", "-r", "--name-only", "HEAD")
    assert "skills/held/SKILL.md" in listing
