"""Changing commands queue for the library lock; git's index.lock is held only around the
branch move and the index write, never while staging; nothing is scanned before the lock."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import assert_one_error_line, cli, git_text, make_skill, run_process

from librarian.txn import staging

Cap = pytest.CaptureFixture[str]

HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0); os.pwrite(fd, str(os.getpid()).encode(), 0)
print("held", flush=True)
sys.stdin.read()  # until the test closes our stdin
"""


def _holder(library: Path) -> subprocess.Popen[str]:
    lock = library / ".git" / "librarian" / "lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_writer_waits_for_the_holder_then_commits(library: Path, tmp_path: Path) -> None:
    holder = _holder(library)
    source = make_skill(tmp_path / "src", "queued")
    waiter = subprocess.Popen([sys.executable, "-m", "librarian", "--library", str(library),
                               "retain", str(source)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            waiter.wait(timeout=3.0)  # it is waiting (past the old 2 s), not failing
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, err
    assert "skills/queued" in git_text(library, "ls-tree", "-r", "--name-only", "HEAD")


def test_no_wait_names_the_holder_and_changes_nothing(library: Path, tmp_path: Path) -> None:
    holder = _holder(library)
    try:
        before = git_text(library, "rev-parse", "HEAD")
        result = run_process("--library", str(library), "retain",
                             str(make_skill(tmp_path / "src", "late")),
                             env={"LIBRARIAN_LOCK_WAIT": "0"})
        assert result.returncode == 3
        line = assert_one_error_line(result.stderr)
        assert f"pid {holder.pid}" in line and "LIBRARIAN_LOCK_WAIT" in line
        assert git_text(library, "rev-parse", "HEAD") == before
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "1e9"])
def test_a_bad_wait_setting_is_bad_input(library: Path, tmp_path: Path, value: str) -> None:
    result = run_process("--library", str(library), "retain",
                         str(make_skill(tmp_path / "src", "x")),
                         env={"LIBRARIAN_LOCK_WAIT": value})
    assert result.returncode == 2
    assert "LIBRARIAN_LOCK_WAIT" in assert_one_error_line(result.stderr)


def test_concurrent_writers_all_commit(library: Path, tmp_path: Path) -> None:
    sources = [make_skill(tmp_path / "src", f"w{n}") for n in range(8)]
    writers = [subprocess.Popen([sys.executable, "-m", "librarian", "--library", str(library),
                                 "retain", str(source)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for source in sources]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
    names = git_text(library, "ls-tree", "--name-only", "HEAD", "skills/").split()
    assert sorted(names) == sorted(f"skills/w{n}" for n in range(8))
    assert git_text(library, "status", "--porcelain") == ""


def test_git_index_lock_is_free_while_staging(library: Path, tmp_path: Path, capsys: Cap,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    real = staging.stage_changes

    def watched(*args: object, **kwargs: object) -> object:
        seen.append((library / ".git" / "index.lock").exists())
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(staging, "stage_changes", watched)
    assert cli(capsys, library, "retain", str(make_skill(tmp_path / "src", "s"))).code == 0
    assert seen == [False]
    assert not (library / ".git" / "index.lock").exists()


def test_reading_commands_do_not_look_into_folders_being_removed(
        library: Path, capsys: Cap) -> None:
    # A link inside stage/ is refused by a changing command (under the lock), while a
    # reading command, which never opens stage/, does not look into it.
    stage = library / ".git" / "librarian" / "stage"
    stage.mkdir(parents=True)
    (stage / "planted").symlink_to(Path("/"))
    assert cli(capsys, library, "status").code == 0
    result = cli(capsys, library, "hide", "nothing-here")
    assert result.code == 2 and "stage/planted" in result.err
    (stage / "planted").unlink()
