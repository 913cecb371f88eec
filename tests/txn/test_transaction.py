"""One journaled commit per change: compare-and-swap, the mutation lock, crash recovery."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.helpers import (
    assert_git_consistent,
    assert_one_error_line,
    commit_count,
    git,
    git_text,
    head,
    library_state,
    make_skill,
    requires_git,
    run_main,
    run_process,
    state_listing,
    trailers,
    tree_snapshot,
)

from librarian.agents.claude_manifests import GENERATED
from librarian.core.model import ItemFile
from librarian.errors import ConflictError, UsageError
from librarian.formats.claude_plugin import MARKETPLACE_FILE, PLUGIN_DIR, listed_skills
from librarian.library.layout import Library
from librarian.ops.retention import retain
from librarian.txn import apply
from librarian.txn import transaction as txn
from librarian.txn.lock import library_lock
from librarian.txn.recovery import recover_library
from librarian.txn.transaction import Transaction

NEW_FILES = (ItemFile("SKILL.md", False, b"---\nname: late\ndescription: Late.\n---\nbody\n"),)


def _no_transaction_left(library: Path) -> None:
    lib = Library(library, GENERATED)
    assert not lib.journal_path.exists()
    for directory in (lib.stage_dir, lib.trash_dir):
        assert not directory.exists() or list(directory.iterdir()) == []


# -- compare-and-swap ---------------------------------------------------------------


@requires_git
def test_stale_base_is_refused_and_changes_nothing(library: Path, sources: Path) -> None:
    """The branch moves (by plain git) after the transaction read its base."""
    lib = Library(library, GENERATED)
    with pytest.raises(ConflictError) as info, Transaction(lib) as tx:
        git(library, "commit", "--allow-empty", "-q", "-m", "moved on")
        before = library_state(library)
        tx.put_dir("skills/late", NEW_FILES)
        tx.commit("retain skill late", [("Librarian-Event", "retain")])
    assert info.value.exit_code == 3
    assert "moved" in info.value.message
    assert library_state(library) == before
    _no_transaction_left(library)
    assert_git_consistent(library)


@requires_git
def test_stale_empty_base_is_refused(tmp_path: Path) -> None:
    """An unborn branch born meanwhile: the commit would drop the other writer's root."""
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    lib = Library(repo, GENERATED)
    with pytest.raises(ConflictError), Transaction(lib, first=True) as tx:
        git(repo, "commit", "--allow-empty", "-q", "-m", "born elsewhere")
        before = library_state(repo)
        tx.put_file("extra.yaml", b"a: 1\n")
        tx.commit("x", [("Librarian-Event", "retain")])
    assert library_state(repo) == before
    _no_transaction_left(repo)


def test_a_transaction_on_the_current_base_makes_one_commit(library: Path) -> None:
    lib = Library(library, GENERATED)
    with Transaction(lib) as tx:
        base = tx.base.commit
        assert base is not None
        tx.put_dir("skills/late", NEW_FILES)
        result = tx.commit("retain skill late", [("Librarian-Event", "retain")])
    assert result.base == base.decode() and result.commit == head(library)
    assert (library / "skills" / "late" / "SKILL.md").read_bytes() == NEW_FILES[0].data
    assert commit_count(library) == 2
    _no_transaction_left(library)
    assert_git_consistent(library)


@requires_git
def test_branch_moved_during_a_command_exits_3_and_changes_nothing(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another writer (plain git here) moves the branch after retain read it."""
    real_crash_point = txn.crash_point

    def move_branch_meanwhile(name: str) -> None:
        if name == "after-objects":
            git(library, "commit", "--allow-empty", "-q", "-m", "someone else")
        real_crash_point(name)

    monkeypatch.setattr(txn, "crash_point", move_branch_meanwhile)
    src = make_skill(sources, "racing")
    before_tree = tree_snapshot(library)
    result = run_main(capsys, "--library", str(library), "retain", str(src), "--json")
    assert result.code == 3, result.err
    assert result.json["exit_code"] == 3
    assert "moved" in assert_one_error_line(result.err)
    assert git_text(library, "log", "-1", "--format=%s").strip() == "someone else"
    assert tree_snapshot(library) == before_tree
    _no_transaction_left(library)
    assert_git_consistent(library)


# -- exactly one commit per change, readable trailers --------------------------------


@requires_git
def test_every_changing_command_makes_one_commit_with_trailers(
    tmp_path: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    library = tmp_path / "lib"
    assert run_main(capsys, "init", str(library)).code == 0
    assert commit_count(library) == 1
    assert_git_consistent(library)
    for number, name in enumerate(["one", "two", "three"], start=2):
        assert run_main(capsys, "--library", str(library), "retain",
                        str(make_skill(sources, name))).code == 0
        assert commit_count(library) == number
        message = git_text(library, "log", "-1", "--format=%B")
        subject, blank = message.splitlines()[:2]
        assert subject == f"retain skill {name}" and blank == ""
        found = trailers(library)
        assert found and all(key.startswith("Librarian-") for key, _ in found)
        assert ("Librarian-Event", "retain") in found
        assert_git_consistent(library)
    # a read-only command makes none
    for command in (["status"], ["inspect"], ["log"], ["diff"], ["check"], ["cat", "one"]):
        assert run_main(capsys, "--library", str(library), *command).code == 0
    assert commit_count(library) == 4
    assert_git_consistent(library)


# -- the mutation lock -----------------------------------------------------------------


def test_second_writer_waits_then_exits_3(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    src = make_skill(sources, "blocked")
    monkeypatch.setenv("LIBRARIAN_LOCK_WAIT", "0.2")
    with library_lock(library / ".git" / "librarian" / "lock"):
        before = library_state(library)
        result = run_main(capsys, "--library", str(library), "retain", str(src), "--json")
        assert library_state(library) == before
    assert result.code == 3, result.err
    assert result.json["exit_code"] == 3
    assert f"pid {os.getpid()}" in assert_one_error_line(result.err)
    # Released: the same command now succeeds.
    assert run_main(capsys, "--library", str(library), "retain", str(src)).code == 0


def test_invalid_content_is_refused_without_waiting_for_the_lock(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """retain judges its source before it takes the lock: bad input is exit 2 at once,
    even while another writer holds the library."""
    bad = sources / "no-frontmatter"
    bad.mkdir()
    (bad / "SKILL.md").write_text("just text\n")
    with library_lock(library / ".git" / "librarian" / "lock"):
        started = time.monotonic()
        result = run_main(capsys, "--library", str(library), "retain", str(bad))
        assert time.monotonic() - started < 1.5
    assert result.code == 2, result.err


@requires_git
def test_a_policy_committed_while_retain_judged_applies(
    library: Path, sources: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The source is judged again under the lock when library.yaml moved meanwhile."""
    from librarian.ops import retention

    real = retention.head_policy

    def commit_a_tighter_policy_meanwhile(lib: Library) -> object:
        policy = real(lib)
        path = library / "library.yaml"
        path.write_text(path.read_text().replace("max_item_files: 2000", "max_item_files: 1"))
        git(library, "commit", "-qam", "tighter")
        return policy

    monkeypatch.setattr(retention, "head_policy", commit_a_tighter_policy_meanwhile)
    src = make_skill(sources, "two-files", extra_files={"notes.md": "n"})
    with pytest.raises(UsageError, match="the limit is 1"):
        retain(Library(library, GENERATED), src)


def test_second_writer_proceeds_when_the_lock_is_released_in_time(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock_path = library / ".git" / "librarian" / "lock"
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with library_lock(lock_path):
            held.set()
            release.wait(5)

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(5)
        timer = threading.Timer(0.4, release.set)
        timer.start()
        started = time.monotonic()
        result = run_main(capsys, "--library", str(library), "retain",
                          str(make_skill(sources, "patient")))
        waited = time.monotonic() - started
    finally:
        release.set()
        thread.join()
    assert result.code == 0, result.err
    assert 0.3 <= waited < 1.9, waited


def test_a_waiter_that_gives_up_keeps_the_holders_pid(library: Path) -> None:
    lock_path = library / ".git" / "librarian" / "lock"
    with library_lock(lock_path):
        assert lock_path.read_text() == str(os.getpid())
        with pytest.raises(ConflictError), library_lock(lock_path, wait=0.1):
            pass
        assert lock_path.read_text() == str(os.getpid())
        with pytest.raises(ConflictError) as info, library_lock(lock_path, wait=0.1):
            pass
        assert f"pid {os.getpid()}" in info.value.message


@pytest.mark.crash
def test_lock_file_left_by_a_dead_process_does_not_block(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock_path = library / ".git" / "librarian" / "lock"
    assert lock_path == Library(library, GENERATED).lock_path
    # A process that takes the lock, writes its pid and dies without cleaning up.
    code = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "os.write(fd, str(os.getpid()).encode())\n"
        "os.kill(os.getpid(), 9)\n"
    )
    process = subprocess.run([sys.executable, "-c", code, str(lock_path)], check=False)
    assert process.returncode == -signal.SIGKILL
    assert lock_path.read_bytes().strip().isdigit()
    started = time.monotonic()
    result = run_main(capsys, "--library", str(library), "retain",
                      str(make_skill(sources, "after-death")))
    assert result.code == 0, result.err
    assert time.monotonic() - started < 1.5


# -- crash recovery ----------------------------------------------------------------------

ROLLED_BACK = ("after-objects", "after-journal")  # the branch had not moved yet
ROLLED_FORWARD = ("after-cas", "after-swap")  # the branch had moved: the change stands


def _crash(library: Path, source: Path, point: str) -> subprocess.CompletedProcess[str]:
    result = run_process("--library", str(library), "retain", str(source), "--json",
                         env={"LIBRARIAN_CRASH_AT": point})
    assert result.returncode == -signal.SIGKILL, (result.returncode, result.stderr)
    return result


def _expected_after(before: dict[str, object], source: Path, item: str) -> dict[str, object]:
    expected = dict(before)
    expected[item + "/"] = "dir"
    expected.update({f"{item}/{path}": value for path, value in tree_snapshot(source).items()})
    return expected


@pytest.mark.crash
@pytest.mark.parametrize("follow_up", ["recover", "next-command"])
@pytest.mark.parametrize("point", [*ROLLED_BACK, *ROLLED_FORWARD])
def test_crash_leaves_the_library_exactly_before_or_after(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str], point: str,
    follow_up: str,
) -> None:
    src = make_skill(sources, "crashy", extra_files={"run.sh": (b"#!/bin/sh\n", 0o755),
                                                     "docs/a.md": "a\n"})
    before_head = head(library)
    before_tree = tree_snapshot(library)
    _crash(library, src, point)

    if follow_up == "recover":
        result = run_main(capsys, "--library", str(library), "recover", "--json")
        assert result.code == 0, result.err
        assert result.json["kind"] == "recover"
        extra_tree: dict[str, object] = {}
    else:
        other = make_skill(sources, "bystander")
        result = run_main(capsys, "--library", str(library), "retain", str(other), "--json")
        assert result.code == 0, result.err
        extra_tree = {"skills/bystander/": "dir",
                      **{f"skills/bystander/{p}": v for p, v in tree_snapshot(other).items()}}

    if point in ROLLED_BACK:
        expected_tree = {**before_tree, **extra_tree}
        crashed_commit = before_head
    else:
        expected_tree = {**_expected_after(before_tree, src, "skills/crashy"), **extra_tree}
        from dulwich.repo import Repo

        repo = Repo(str(library))
        try:
            tip = repo[repo.refs[b"HEAD"]]
            crashed_commit = (tip.parents[0] if follow_up != "recover" else tip.id).decode()
            crashed = repo[crashed_commit.encode()]
            assert crashed.message.startswith(b"retain skill crashy\n")
            assert [p.decode() for p in crashed.parents] == [before_head]
        finally:
            repo.close()

    if follow_up == "recover":
        assert head(library) == crashed_commit
    else:
        from dulwich.repo import Repo

        repo = Repo(str(library))
        try:
            assert [p.decode() for p in repo[repo.refs[b"HEAD"]].parents] == [crashed_commit]
        finally:
            repo.close()
    # The Claude Code manifests follow the visible skills (spec §8), checked on their own.
    assert _skill_files(tree_snapshot(library)) == _skill_files(expected_tree)
    listed = set(listed_skills((library / MARKETPLACE_FILE).read_bytes()) or ())
    assert listed == {k.rstrip("/") for k in expected_tree
                      if k.startswith("skills/") and k.count("/") == 2 and k.endswith("/")}
    _no_transaction_left(library)
    assert_git_consistent(library)


def _skill_files(snapshot: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in snapshot.items() if not k.startswith(PLUGIN_DIR)}


@pytest.mark.crash
def test_crash_then_read_only_commands_work_and_recover_is_idempotent(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _crash(library, make_skill(sources, "half"), "after-cas")
    assert Library(library, GENERATED).journal_path.exists()
    assert run_main(capsys, "--library", str(library), "recover").code == 0
    state = library_state(library)
    assert run_main(capsys, "--library", str(library), "recover").code == 0
    assert library_state(library) == state
    assert run_main(capsys, "--library", str(library), "status", "--check").code == 0
    assert "skills/half/" in state.tree
    assert state_listing(library)  # the lock file and cache directories remain


@pytest.mark.crash
def test_recover_reports_what_it_did(
    library: Path, sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _crash(library, make_skill(sources, "reported"), "after-cas")
    result = run_main(capsys, "--library", str(library), "recover", "--json")
    assert result.code == 0
    assert result.json["outcome"] != "nothing to recover"
    assert "finished" in result.json["outcome"]


# -- failures around the branch move ---------------------------------------------------


def test_a_locked_index_is_refused_before_anything_changes(library: Path, sources: Path) -> None:
    before = library_state(library)
    (library / ".git" / "index.lock").write_bytes(b"")
    with pytest.raises(ConflictError, match="index is locked"):
        retain(Library(library, GENERATED), make_skill(sources, "late"))
    assert library_state(library) == before
    _no_transaction_left(library)


def test_a_failure_after_the_branch_moved_is_undone(
    library: Path, sources: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index splice is the last step; when it fails the branch, the work tree and the
    state directory go back to exactly where they were."""
    lib = Library(library, GENERATED)
    retain(lib, make_skill(sources, "kept"))
    before = library_state(library)

    def failing_splice(*args: object, **kwargs: object) -> None:
        raise ConflictError("simulated: the index could not be written")

    monkeypatch.setattr(apply, "_update_index", failing_splice)
    with pytest.raises(ConflictError, match="simulated"):
        retain(lib, make_skill(sources, "late"))
    with pytest.raises(ConflictError, match="simulated"):  # a replacement, not an addition
        with Transaction(lib) as tx:
            tx.put_dir("skills/kept", NEW_FILES)
            tx.commit("revise skill kept", [("Librarian-Event", "revise")])
    assert library_state(library) == before
    _no_transaction_left(library)


def test_recover_sweeps_a_stage_left_without_a_journal(library: Path) -> None:
    lib = Library(library, GENERATED)
    leftover = lib.stage_dir / "deadbeef" / "0"
    leftover.mkdir(parents=True)
    (leftover / "SKILL.md").write_bytes(b"half\n")
    assert "staging area" in (recover_library(lib) or "")
    _no_transaction_left(library)


def test_write_files_creates_every_nested_directory(tmp_path: Path) -> None:
    from librarian.content.worktree import read_work_files, write_files

    files = (ItemFile("a/b/c/deep.txt", False, b"deep\n"), ItemFile("a/top.sh", True, b"#!\n"),
             ItemFile("z.md", False, b"z\n"))
    write_files(tmp_path / "item", files)
    assert read_work_files(tmp_path / "item") == files


@pytest.mark.crash
def test_an_interrupt_after_the_branch_moved_keeps_the_journal_for_recovery(
    library: Path, sources: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C between the ref being replaced and move_branch returning: the change is
    made, so the journal must survive and recovery must finish it."""
    from librarian.git.repo import GitStore
    from librarian.txn.recovery import recover_library

    original = GitStore.move_branch

    def move_then_interrupt(self: GitStore, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        raise KeyboardInterrupt

    monkeypatch.setattr(GitStore, "move_branch", move_then_interrupt)
    lib = Library(library, GENERATED)
    old_head = head(library)
    with pytest.raises(KeyboardInterrupt):
        retain(lib, make_skill(sources, "late"))
    assert head(library) != old_head and lib.journal_path.exists()
    monkeypatch.undo()
    assert "finished" in (recover_library(lib) or "")
    assert (library / "skills" / "late" / "SKILL.md").is_file()
    _no_transaction_left(library)
    assert_git_consistent(library)


@pytest.mark.parametrize("field, value", [
    ("tx", "../../../../victim"),
    ("paths", ["../victim2"]),
    ("paths", [".git/config"]),
    ("branch", "refs/heads/../../x"),
    ("new", "not-a-commit"),
])
def test_a_forged_journal_is_refused_and_nothing_outside_is_touched(
    library: Path, tmp_path: Path, sources: Path, field: str, value: object
) -> None:
    """The journal is local state anything with write access to .git can forge: its
    fields are checked before recovery acts on them (exit 2, nothing moved or removed)."""
    lib = Library(library, GENERATED)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious\n")
    journal = {"tx": "0123456789ab", "branch": "refs/heads/main", "base": None,
               "new": "0" * 40, "paths": ["skills/x"], field: value}
    lib.journal_path.write_text(json.dumps(journal))
    before = tree_snapshot(library)
    with pytest.raises(UsageError) as info:
        retain(lib, make_skill(sources, "after"))
    assert info.value.exit_code == 2 and "journal.json" in info.value.message
    assert (victim / "keep.txt").read_text() == "precious\n"
    assert tree_snapshot(library) == before


@requires_git
def test_a_journal_on_a_branch_with_any_name_git_allows_is_recovered(
    library: Path, sources: Path
) -> None:
    """The journal check follows git's ref-name rules, not a whitelist: a change killed
    after the branch moved on ``feat+ü`` is finished by the next command."""
    git(library, "branch", "-m", "feat+ü")
    source = make_skill(sources, "late")
    _crash(library, source, "after-cas")
    assert Library(library, GENERATED).journal_path.exists()
    result = run_process("--library", str(library), "recover")
    assert result.returncode == 0, result.stderr
    assert "finished" in result.stdout
    assert (library / "skills" / "late" / "SKILL.md").is_file()
    _no_transaction_left(library)
    assert_git_consistent(library)
