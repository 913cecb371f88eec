"""Packs are consolidated when they pile up, in a step that never risks the repository.

git is the judge: `git fsck --strict`, `git count-objects -v`, every object still there.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from support.helpers import git, git_text, requires_git

from librarian.agents.claude_manifests import GENERATED
from librarian.git import packs
from librarian.git.repo import GitStore


def _objects(repo: Path) -> set[str]:
    out = git_text(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    return set(out.split())


def _repo_with_packs(tmp_path: Path, count: int) -> Path:
    """A repository of ``count`` commits, each in a pack of its own (as fetches add them)."""
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "config", "gc.auto", "0")  # git's own auto-gc would merge them at 50
    for number in range(count):
        (repo / f"f{number}").write_text(f"content {number}\n" * (number + 1))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"commit {number}")
        git(repo, "repack", "-d", "-q")
    return repo


def _packs(repo: Path) -> int:
    counts = dict(line.split(": ") for line in git_text(repo, "count-objects", "-v").splitlines())
    return int(counts["packs"])


@requires_git
def test_more_than_fifty_packs_are_merged_into_one_and_git_agrees(tmp_path: Path) -> None:
    repo = _repo_with_packs(tmp_path, 56)
    before = _objects(repo)
    assert _packs(repo) == 56
    with GitStore(repo) as store:
        assert packs.consolidate_packs(store) == 56 - packs.TARGET_PACKS + 1
        assert packs.consolidate_packs(store) == 0  # under the limit: nothing to do
        assert store.commit(store.head() or b"").message.startswith("commit 55")
    assert _packs(repo) == packs.TARGET_PACKS
    assert _objects(repo) == before
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=repo, check=True,
                   capture_output=True)
    assert git_text(repo, "log", "--oneline").count("\n") == 56


@requires_git
def test_a_kept_pack_and_a_store_under_the_limit_are_left_alone(tmp_path: Path) -> None:
    repo = _repo_with_packs(tmp_path, 6)
    pack_dir = repo / ".git" / "objects" / "pack"
    kept = sorted(pack_dir.glob("*.pack"))[0]
    kept.with_suffix(".keep").write_text("")
    with GitStore(repo) as store:
        assert packs.consolidate_packs(store) == 0
        assert packs.consolidate_packs(store, max_packs=3, target=2) == 5
    assert kept.exists()
    assert _packs(repo) == 2
    subprocess.run(["git", "fsck", "--strict"], cwd=repo, check=True, capture_output=True)


@requires_git
def test_a_command_that_commits_consolidates_a_library_with_too_many_packs(
    library: Path, sources: Path
) -> None:
    from support.helpers import make_skill

    from librarian.library.layout import Library
    from librarian.ops.retention import retain

    for number in range(packs.MAX_PACKS + 1):
        blob = git_text(library, "hash-object", "-w", "--stdin", input=f"{number}\n".encode())
        git(library, "pack-objects", "-q", ".git/objects/pack/pack", input=blob.encode())
    assert _packs(library) > packs.MAX_PACKS
    before = _objects(library)
    retain(Library(library, GENERATED), make_skill(sources, "pdf"))
    assert _packs(library) <= packs.TARGET_PACKS + 1
    assert before <= _objects(library)
    subprocess.run(["git", "fsck", "--strict"], cwd=library, check=True, capture_output=True)
    assert git_text(library, "status", "--porcelain") == ""
