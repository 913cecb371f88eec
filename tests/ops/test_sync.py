"""`librarian sync` against a real git host on loopback (``git daemon`` and ``git
http-backend``): concurrent clones publish every change with no conflict, the host's tip
passes `check` and `git fsck --strict` after every push, and a replay that cannot hold
stops with exit 3 naming both sides and changing nothing."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.helpers import GIT, git, git_text, make_recipe, make_skill
from support.team_helpers import act, bare_with_library, git_daemon_rw, http_backend, librarian

pytestmark = pytest.mark.skipif(GIT is None, reason="the git binary is not installed")

CLONES = 4
#: After every accepted push, the host records `check --commit` and `git fsck --strict`.
POST_RECEIVE = """#!/bin/sh
read -r old new ref
{python} -m librarian check --commit "$new" --git-dir "$(pwd)" >/dev/null 2>&1
checked=$?
env -u GIT_DIR -u GIT_QUARANTINE_PATH -u GIT_OBJECT_DIRECTORY \
    -u GIT_ALTERNATE_OBJECT_DIRECTORIES git --git-dir="$(pwd)" fsck --strict >/dev/null 2>&1
echo "$new $checked $?" >> "$(pwd)/pushes.log"
"""


@pytest.fixture(params=["git-daemon", "http-backend"])
def host(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """(bare repository, its URL) with the pre-receive gate and a post-receive log."""
    import sys

    base = tmp_path / "srv"
    base.mkdir()
    bare = bare_with_library(base)
    assert librarian("hooks", "install", "--server", cwd=bare).returncode == 0
    hook = bare / "hooks" / "post-receive"
    hook.write_text(POST_RECEIVE.format(python=sys.executable))
    hook.chmod(0o755)
    serve = git_daemon_rw if request.param == "git-daemon" else http_backend
    with serve(base) as url:
        yield bare, f"{url}/team.git"


def _clone(url: str, target: Path) -> Path:
    from librarian.agents.claude_manifests import GENERATED
    from librarian.ops.hooks import clone_library

    clone_library(url, target, GENERATED)
    return target


def _tools(bare: Path) -> str:
    return git_text(bare, "show", "main:tools.yaml")


def _pushes(bare: Path) -> list[str]:
    log = bare / "pushes.log"
    return log.read_text().splitlines() if log.exists() else []


def test_concurrent_clones_publish_every_change_without_conflict(
        host: tuple[Path, str], tmp_path: Path) -> None:
    bare, url = host
    clones = [_clone(url, tmp_path / f"c{n}") for n in range(CLONES)]
    sources = tmp_path / "src"
    for n, clone in enumerate(clones):  # each changes only its own items
        for args in (("retain", str(make_skill(sources, f"skill-{n}"))),
                     ("retain", str(make_recipe(sources, f"tool-{n}"))),
                     ("expose", f"tool-{n}"), ("hide", f"skill-{n}")):
            assert act(clone, *args) == 0
    results: dict[int, tuple[int, str]] = {}

    def publish(n: int) -> None:
        done = librarian("sync", "--json", cwd=clones[n], timeout=300)
        results[n] = (done.returncode, done.stderr)

    threads = [threading.Thread(target=publish, args=(n,)) for n in range(CLONES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(code == 0 for code, _ in results.values()), results
    for clone in clones:  # everyone receives everything
        assert act(clone, "sync") == 0
    tip = git_text(bare, "rev-parse", "main").strip()
    for clone in clones:
        assert git_text(clone, "rev-parse", "HEAD").strip() == tip
        assert git_text(clone, "status", "--porcelain") == ""
        assert act(clone, "check") == 0
    listing = git_text(bare, "ls-tree", "-r", "--name-only", "main")
    library_yaml = git_text(bare, "show", "main:library.yaml")
    for n in range(CLONES):
        assert f"skills/skill-{n}/SKILL.md" in listing and f"recipes/tool-{n}/" in listing
        assert f"tool-{n}:" in _tools(bare) and f"- skill-{n}" in library_yaml
    assert "skill-" not in git_text(bare, "show", "main:.claude-plugin/marketplace.json")
    pushes = _pushes(bare)
    assert len(pushes) >= CLONES and all(line.endswith(" 0 0") for line in pushes), pushes
    assert git(bare, "fsck", "--strict").returncode == 0


def test_plain_git_pull_rebase_after_clone_never_conflicts(
        host: tuple[Path, str], tmp_path: Path) -> None:
    bare, url = host
    clones = [_clone(url, tmp_path / f"c{n}") for n in range(CLONES)]
    sources = tmp_path / "src"
    for n, clone in enumerate(clones):
        for args in (("retain", str(make_skill(sources, f"skill-{n}"))),
                     ("retain", str(make_recipe(sources, f"tool-{n}"))),
                     ("expose", f"tool-{n}"), ("hide", f"skill-{n}")):
            assert act(clone, *args) == 0
    conflicts: list[str] = []

    def publish(n: int) -> None:
        for _ in range(40):
            pulled = git(clones[n], "pull", "--rebase", "-q", check=False)
            if pulled.returncode != 0:
                conflicts.append(pulled.stdout.decode() + pulled.stderr.decode())
                git(clones[n], "rebase", "--abort", check=False)
                return
            if git(clones[n], "push", "-q", "origin", "main", check=False).returncode == 0:
                return
        conflicts.append(f"clone {n} gave up")

    threads = [threading.Thread(target=publish, args=(n,)) for n in range(CLONES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert conflicts == []
    listing = git_text(bare, "ls-tree", "-r", "--name-only", "main")
    for n in range(CLONES):
        assert f"skills/skill-{n}/SKILL.md" in listing and f"tool-{n}:" in _tools(bare)
    assert librarian("check", "--commit", "main", cwd=bare).returncode == 0
    assert all(line.endswith(" 0 0") for line in _pushes(bare))


@pytest.fixture
def pair(host: tuple[Path, str], tmp_path: Path) -> tuple[Path, Path, Path]:
    """Two clones of a library holding the recipe t1 and the skill beta (published)."""
    bare, url = host
    first = _clone(url, tmp_path / "a")
    sources = tmp_path / "src"
    for args in (("retain", str(make_recipe(sources, "t1"))),
                 ("retain", str(make_skill(sources, "beta"))), ("sync",)):
        assert act(first, *args) == 0
    return bare, first, _clone(url, tmp_path / "b")


@pytest.mark.parametrize(("there", "here", "words"), [
    (("retire", "t1"), ("expose", "t1"), ("expose tool t1", "retire recipe t1")),
    (("retire", "beta"), ("hide", "beta"), ("hide skill beta", "retire skill beta")),
    (("expose", "t1"), ("retire", "t1"), ("retire recipe t1", "expose tool t1")),
])
def test_a_replay_that_cannot_hold_stops_naming_both_sides(
        pair: tuple[Path, Path, Path], there: tuple[str, ...], here: tuple[str, ...],
        words: tuple[str, str]) -> None:
    bare, first, second = pair
    assert act(first, *there) == act(first, "sync") == act(second, *here) == 0
    before = git_text(second, "rev-parse", "HEAD"), git_text(bare, "rev-parse", "main")
    planned = librarian("sync", "--dry-run", cwd=second)
    done = librarian("sync", cwd=second)
    assert planned.returncode == done.returncode == 3, done.stderr
    assert words[0] in done.stderr and words[1] in done.stderr, done.stderr
    assert "here" in done.stderr and "there" in done.stderr
    assert (git_text(second, "rev-parse", "HEAD"), git_text(bare, "rev-parse", "main")) == before
    assert git_text(second, "status", "--porcelain") == ""


def test_dry_run_shows_the_plan_and_changes_nothing(
        pair: tuple[Path, Path, Path], tmp_path: Path) -> None:
    bare, first, second = pair
    assert act(first, "hide", "beta") == act(first, "sync") == 0
    assert act(second, "retain", str(make_skill(tmp_path / "more", "gamma"))) == 0
    head = git_text(second, "rev-parse", "HEAD")
    planned = librarian("sync", "--dry-run", "--json", cwd=second)
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert plan["dry_run"] and plan["received"] == 1 and plan["pushed"]
    assert [step["subject"] for step in plan["steps"]] == ["retain skill gamma"]
    assert git_text(second, "rev-parse", "HEAD") == head
    assert "gamma" not in git_text(bare, "ls-tree", "-r", "--name-only", "main")


def test_sync_without_an_upstream_is_a_usage_error(library: Path) -> None:
    done = librarian("sync", cwd=library)
    assert done.returncode == 2 and "has no upstream" in done.stderr


def test_a_local_edit_in_the_way_stops_sync_before_anything_is_pushed(
        pair: tuple[Path, Path, Path], tmp_path: Path) -> None:
    bare, first, second = pair
    assert act(first, "revise", "beta", str(make_skill(tmp_path / "v2", "beta",
                                                       description="Better."))) == 0
    assert act(first, "sync") == 0
    assert act(second, "retain", str(make_skill(tmp_path / "more", "gamma"))) == 0
    edited = second / "skills" / "beta" / "SKILL.md"
    edited.write_bytes(edited.read_bytes() + b"\nA local note.\n")
    tip = git_text(bare, "rev-parse", "main")
    done = librarian("sync", cwd=second)
    assert done.returncode == 3 and "skills/beta" in done.stderr, done.stderr
    assert git_text(bare, "rev-parse", "main") == tip
    assert edited.read_bytes().endswith(b"A local note.\n")


def test_a_revise_of_a_retired_item_and_two_trees_under_one_name_stop(
        pair: tuple[Path, Path, Path], tmp_path: Path) -> None:
    bare, first, second = pair
    assert act(first, "retire", "beta") == 0
    assert act(first, "retain", str(make_skill(tmp_path / "one", "gamma"))) == 0
    assert act(first, "sync") == 0
    tip = git_text(bare, "rev-parse", "main")
    revised = make_skill(tmp_path / "v2", "beta", description="Better.")
    assert act(second, "revise", "beta", str(revised)) == 0
    done = librarian("sync", cwd=second)
    assert done.returncode == 3, done.stderr
    assert "revise skill beta" in done.stderr and "retire skill beta" in done.stderr
    git(second, "reset", "-q", "--hard", "HEAD~1")
    other = make_skill(tmp_path / "two", "gamma", description="Another gamma.")
    assert act(second, "retain", str(other)) == 0
    done = librarian("sync", cwd=second)
    assert done.returncode == 3 and "under the same name" in done.stderr, done.stderr
    assert "retain skill gamma" in done.stderr
    assert git_text(bare, "rev-parse", "main") == tip


def test_commits_made_by_hand_are_replayed_then_checked(tmp_path: Path) -> None:
    base = tmp_path / "srv"
    base.mkdir()
    bare = bare_with_library(base)  # a plain path: dulwich's local transport
    first, second = _clone(str(bare), tmp_path / "a"), _clone(str(bare), tmp_path / "b")
    assert act(first, "retain", str(make_skill(tmp_path / "s", "one"))) == 0
    assert act(first, "retain", str(make_recipe(tmp_path / "s", "t1"))) == 0
    assert act(first, "sync") == 0
    (second / "notes.md").write_text("team notes\n")
    git(second, "add", "notes.md")
    git(second, "commit", "-qm", "notes by hand")
    assert act(second, "sync") == 0
    assert git_text(bare, "show", "main:notes.md") == "team notes\n"
    assert git_text(bare, "log", "-1", "--format=%s", "main").strip() == "notes by hand"
    # a hand commit that names a recipe upstream retires meanwhile
    (second / "tools.yaml").write_text(
        "tools:\n  t1:\n    recipe: recipes/t1\n    digest: sha256:" + "0" * 64 + "\n")
    git(second, "commit", "-qam", "expose by hand", "--no-verify")
    assert act(first, "sync") == act(first, "retire", "t1") == act(first, "sync") == 0
    done = librarian("sync", cwd=second)
    assert done.returncode == 3 and "expose by hand" in done.stderr, done.stderr
    assert "retire recipe t1" in done.stderr


def test_a_new_name_taken_upstream_by_another_kind_stops(tmp_path: Path) -> None:
    base = tmp_path / "srv"
    base.mkdir()
    bare = bare_with_library(base)
    first, second = _clone(str(bare), tmp_path / "a"), _clone(str(bare), tmp_path / "b")
    assert act(first, "retain", str(make_recipe(tmp_path / "r", "gamma"))) == 0
    assert act(first, "sync") == 0
    assert act(second, "retain", str(make_skill(tmp_path / "s", "gamma"))) == 0
    done = librarian("sync", cwd=second)
    assert done.returncode == 3, done.stderr
    assert "recipes/gamma under the same name" in done.stderr
    assert "retain recipe gamma" in done.stderr and "retain skill gamma" in done.stderr
