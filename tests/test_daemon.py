"""``librarian daemon``: the resident fork server, with real processes and real sockets.

Every command here runs as ``python -m librarian`` (the console entry); with a daemon
serving the library it goes through the socket, with ``LIBRARIAN_NO_DAEMON=1`` it runs
in-process. The two must be indistinguishable: output, exit codes, terminals and pipes.
"""

from __future__ import annotations

import json
import os
import pty
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.helpers import make_skill, run_process
from support.sources_helpers import Upstream, edit_source

from librarian.cli.main import library_first
from librarian.daemon.wire import library_option

IN_PROCESS = {"LIBRARIAN_NO_DAEMON": "1"}
pytestmark = pytest.mark.skipif(not hasattr(socket, "SO_PEERCRED"), reason="Linux only")


def state(library: Path, env: dict[str, str] | None = None) -> dict[str, object]:
    result = run_process("--library", str(library), "daemon", "status", "--json", env=env)
    assert result.returncode == 0, result.stderr
    document: dict[str, object] = json.loads(result.stdout)
    return document


def served(library: Path, env: dict[str, str] | None = None) -> int:
    document = state(library, env)
    count = document["served"]
    assert isinstance(count, int), document["note"]
    return count


def start(library: Path, *extra: str, env: dict[str, str] | None = None) -> int:
    result = run_process("--library", str(library), "daemon", "start", "--json", *extra,
                         env=env)
    assert result.returncode == 0, result.stderr
    pid = json.loads(result.stdout)["pid"]
    assert isinstance(pid, int)
    return pid


def gone(pid: int, timeout: float = 10.0) -> bool:
    """The process ``pid`` exited (not our child: polled; a zombie waiting for its reaper
    has exited)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            return True
        if fields[0] in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def daemon(library: Path) -> Iterator[int]:
    pid = start(library, "--idle", "120")
    yield pid
    run_process("--library", str(library), "daemon", "stop")
    if not gone(pid, 5):
        os.kill(pid, signal.SIGKILL)


def both(library: Path, *args: str, cwd: Path | None = None) -> tuple[
        subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """The command through the daemon (when one serves the library), then in-process."""
    through = run_process(*args, cwd=cwd or library)
    here = run_process(*args, cwd=cwd or library, env=IN_PROCESS)
    return through, here


def test_output_and_exit_codes_are_the_in_process_ones(
        library: Path, daemon: int, tmp_path: Path) -> None:
    make_skill(tmp_path, "alpha")
    assert run_process("retain", str(tmp_path / "alpha"), cwd=library).returncode == 0
    (library / "skills" / "alpha" / "notes.txt").write_text("local edit\n")
    lines = [
        ("status",), ("status", "--json"), ("status", "--check"), ("inspect", "--json"),
        ("log",), ("--version",), ("--help",), ("status", "--bogus"), ("bogus",),
        ("cat", "missing", "--json"), ("prompt",), ("review",), (),
    ]
    before = served(library)
    for args in lines:
        through, here = both(library, *args)
        assert (through.returncode, through.stdout, through.stderr) == (
            here.returncode, here.stdout, here.stderr), args
    usage = run_process("status", "--bogus", cwd=library)
    assert usage.returncode == 2 and "No such option" in usage.stderr
    # --library after the command, from outside the library, relative to the client's cwd
    through, here = both(library, "status", "--library", library.name, cwd=library.parent)
    assert through.returncode == 0 and through.stdout == here.stdout
    assert served(library) == before + len(lines) + 2, "the daemon did not serve them all"


def test_changing_commands_through_the_daemon(library: Path, daemon: int,
                                              tmp_path: Path) -> None:
    make_skill(tmp_path, "beta")
    before = served(library)
    retained = run_process("retain", str(tmp_path / "beta"), "--json", cwd=library)
    assert retained.returncode == 0, retained.stderr
    assert json.loads(retained.stdout)["kind"] == "retained_skill"
    again = run_process("retain", str(tmp_path / "beta"), cwd=library)
    assert again.returncode == 3 and again.stderr.startswith("librarian: error: ")
    upstream = Upstream(tmp_path / "up.git")
    upstream.skill("skills/pdf").commit("first")
    assert run_process("source", "add", "team", upstream.url, cwd=library).returncode == 0
    update = run_process("update", "--json", cwd=library)
    assert update.returncode == 0, update.stderr
    assert json.loads(update.stdout)["plans"][0]["counts"]["add"] == 1
    assert served(library) == before + 4
    status = run_process("status", "--json", cwd=library, env=IN_PROCESS)
    assert json.loads(status.stdout)["clean"] is True
    fsck = subprocess.run(["git", "fsck", "--strict"], cwd=library, capture_output=True)
    assert fsck.returncode == 0, fsck.stderr


def _on_a_terminal(args: list[str], cwd: Path, env: dict[str, str]) -> bytes:
    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "librarian", *args], cwd=cwd,
                               env={**os.environ, "TERM": "xterm", **env},
                               stdin=follower, stdout=follower, stderr=follower)
    os.close(follower)
    output = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not chunk:
            break
        output += chunk
    os.close(leader)
    assert process.wait(30) == 0
    return output


def test_terminal_and_pipe_are_told_apart_as_in_process(library: Path, daemon: int) -> None:
    before = served(library)
    through = _on_a_terminal(["status"], library, {})
    assert served(library) == before + 1
    here = _on_a_terminal(["status"], library, IN_PROCESS)
    assert through == here and b"clean" in through
    # a pipe: --json is one document, nothing else, either way
    piped, direct = both(library, "status", "--json")
    assert piped.stdout == direct.stdout and json.loads(piped.stdout)["kind"] == "status"
    assert served(library) == before + 2


def test_progress_on_a_terminal_through_the_daemon(library: Path, daemon: int,
                                                  tmp_path: Path) -> None:
    """The server's streams were opened on /dev/null (seekable); a child's are built anew
    over the client's terminal, so a progress display (inspect, check) draws and exits 0."""
    make_skill(tmp_path, "alpha")
    assert run_process("retain", str(tmp_path / "alpha"), cwd=library).returncode == 0
    before = served(library)
    inspected = _on_a_terminal(["inspect"], library, {})  # asserts exit 0
    checked = _on_a_terminal(["check"], library, {})
    assert b"alpha" in inspected
    assert b"internal error" not in inspected + checked
    assert served(library) == before + 2


def test_a_closed_descriptor_or_other_placement_runs_in_process(library: Path,
                                                              daemon: int) -> None:
    """A closed stdout would hand the child the client's directory descriptor; another
    niceness (like CPU affinity, namespaces or cgroup) is not the server's to inherit."""
    before = served(library)
    environment = {**os.environ, "LIBRARIAN_LIBRARY": str(library)}
    closed = subprocess.run(["sh", "-c", f"exec {sys.executable} -m librarian status >&-"],
                            env=environment, capture_output=True, text=True)
    assert closed.returncode == 0 and closed.stderr == ""
    niced = subprocess.run(["nice", "-n", "3", sys.executable, "-m", "librarian", "status"],
                           env=environment, capture_output=True, text=True)
    assert niced.returncode == 0 and "clean" in niced.stdout
    assert served(library) == before


def test_a_dead_servers_socket_means_in_process_with_no_error(library: Path) -> None:
    pid = start(library, "--idle", "120")
    os.kill(pid, signal.SIGKILL)
    assert gone(pid)
    assert (library / ".git" / "librarian" / "daemon.sock").exists()
    began = time.monotonic()
    result = run_process("status", cwd=library)
    assert result.returncode == 0 and result.stderr == "" and "clean" in result.stdout
    assert time.monotonic() - began < 10
    assert state(library)["running"] is False
    stopped = run_process("--library", str(library), "daemon", "stop", "--json")
    assert json.loads(stopped.stdout)["note"] == "removed a stale socket"
    assert not (library / ".git" / "librarian" / "daemon.sock").exists()


def test_a_linked_socket_or_state_directory_is_never_followed(
        library: Path, tmp_path: Path) -> None:
    """A socket path that is a link (to a live daemon of another library) is not used, nor
    a linked .git/librarian; a socket owned by another user is not used either."""
    other = tmp_path / "other"
    assert run_process("init", str(other), "--name", "other").returncode == 0
    pid = start(other, "--idle", "120")
    try:
        live = other / ".git" / "librarian" / "daemon.sock"
        mine = library / ".git" / "librarian" / "daemon.sock"
        mine.symlink_to(live)
        before = served(other)
        refused = run_process("status", cwd=library)  # in-process: the library's own guard
        assert refused.returncode == 2 and "symbolic link" in refused.stderr
        assert served(other) == before, "the link was followed"
        mine.unlink()
        state_dir = library / ".git" / "librarian"
        moved = tmp_path / "moved-state"
        state_dir.rename(moved)
        state_dir.symlink_to(other / ".git" / "librarian")
        result = run_process("status", cwd=library)
        assert served(other) == before, "the linked directory was followed"
        assert result.returncode == 2 and "symbolic link" in result.stderr  # in-process
        state_dir.unlink()
        moved.rename(state_dir)
        if os.getuid() == 0:  # as root: hand the other daemon's socket to someone else
            os.chown(live, 4242, -1, follow_symlinks=False)
            assert run_process("status", cwd=other).returncode == 0
            assert state(other)["running"] is False
            assert gone(pid)  # not its socket any more: the server leaves
    finally:
        run_process("--library", str(other), "daemon", "stop")
        assert gone(pid)


def test_changed_code_stops_the_server_and_other_settings_run_in_process(
        library: Path, tmp_path: Path) -> None:
    on_path = tmp_path / "on-path"
    on_path.mkdir()
    env = {"PYTHONPATH": str(on_path)}
    pid = start(library, "--idle", "120", env=env)
    assert state(library)["running"] is False  # other settings: not a daemon for this one
    before = served(library, env)
    # other start-up settings (a PYTHON* variable): declined, in-process, server stays
    other = run_process("status", cwd=library, env={**env, "PYTHONWARNINGS": "default"})
    assert other.returncode == 0 and "clean" in other.stdout
    run_process("status", cwd=library, env=env)
    assert served(library, env) == before + 1
    # a directory of the import path changed (a package installed there): stale
    later = time.time() + 5
    os.utime(on_path, (later, later))
    result = run_process("status", cwd=library, env=env)
    assert result.returncode == 0 and result.stderr == "" and "clean" in result.stdout
    assert gone(pid)
    assert not (library / ".git" / "librarian" / "daemon.sock").exists()


def test_a_server_that_does_not_answer_in_time_leaves_the_command_to_the_client(
        library: Path, daemon: int, tmp_path: Path) -> None:
    """A stopped server: the client waits ACCEPT_TIMEOUT, then runs the command itself; when
    the server wakes up, the child it forks for that request never runs it."""
    make_skill(tmp_path, "gamma")
    os.kill(daemon, signal.SIGSTOP)
    try:
        began = time.monotonic()
        retained = run_process("retain", str(tmp_path / "gamma"), cwd=library)
        waited = time.monotonic() - began
    finally:
        os.kill(daemon, signal.SIGCONT)
    assert retained.returncode == 0, retained.stderr
    assert waited >= 2.0
    time.sleep(0.5)  # the server reads the old request, forks, and finds the client gone
    assert served(library) == 0
    log = subprocess.run(["git", "log", "--format=%s"], cwd=library, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert sum("gamma" in subject for subject in log) == 1, log


def test_idle_timeout_and_stop(library: Path) -> None:
    pid = start(library, "--idle", "1")
    assert gone(pid, 15)
    assert not (library / ".git" / "librarian" / "daemon.sock").exists()
    pid = start(library)
    assert start(library) == pid  # already running: a no-op
    status = state(library)
    assert status["running"] is True and status["idle_timeout"] == 600
    assert set(status) == {"kind", "library", "socket", "running", "pid", "started",
                           "started_at", "idle_timeout", "served", "note"}  # commands.md
    stopped = run_process("--library", str(library), "daemon", "stop")
    assert stopped.returncode == 0 and f"pid {pid}" in stopped.stdout
    assert gone(pid, 5)
    again = run_process("--library", str(library), "daemon", "stop", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["running"] is False


def test_concurrent_clients(library: Path, daemon: int) -> None:
    before = served(library)
    processes = [subprocess.Popen([sys.executable, "-m", "librarian", "status", "--json"],
                                  cwd=library, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for _ in range(8)]
    outputs = [process.communicate(timeout=60) for process in processes]
    assert all(process.returncode == 0 for process in processes)
    assert len({out for out, _ in outputs}) == 1 and all(err == b"" for _, err in outputs)
    assert served(library) == before + 8


def _hanging_source(library: Path, tmp_path: Path) -> socket.socket:
    """A source whose server accepts and never answers: ``update`` waits in its fetch."""
    upstream = Upstream(tmp_path / "up.git")
    upstream.skill("skills/pdf").commit("first")
    assert run_process("source", "add", "team", upstream.url, cwd=library,
                       env=IN_PROCESS).returncode == 0
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(30)
    edit_source(library, "team", url=f"git://127.0.0.1:{listener.getsockname()[1]}/up.git")
    return listener


def _closed(connection: socket.socket) -> bool:
    connection.settimeout(20)
    try:
        while connection.recv(4096):
            pass
    except ConnectionResetError:
        pass
    return True


def _interrupted(listener: socket.socket, library: Path, how: str,
                 env: dict[str, str] | None = None) -> tuple[int, bytes, bytes]:
    """``update`` waiting in its fetch, then ``how`` sent to it: exit code, out, err."""
    client = subprocess.Popen([sys.executable, "-m", "librarian", "update"], cwd=library,
                              env={**os.environ, **(env or {})},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    connection, _ = listener.accept()
    connection.settimeout(30)
    # Its first request bytes: the command is past setting up its connection and waits in
    # its fetch (a signal inside dulwich's constructors printed a warning of their own).
    assert connection.recv(4)
    client.send_signal(getattr(signal, how))
    out, err = client.communicate(timeout=30)
    assert _closed(connection)  # the command is gone with its client
    return client.returncode, out, err


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGKILL"])
def test_a_client_killed_mid_command_takes_its_command_with_it(
        library: Path, daemon: int, tmp_path: Path, how: str) -> None:
    listener = _hanging_source(library, tmp_path)
    through = _interrupted(listener, library, how)
    deadline = time.monotonic() + 10
    while served(library) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert served(library) == 1  # the server reaped the command's process and lives on
    if how == "SIGKILL":  # nothing to pass on: the server ends the command (SIGTERM)
        assert through[0] == -signal.SIGKILL
    elif how == "SIGQUIT":  # docs/decisions.md: a signal that dumps core ends it 128 + N
        assert _interrupted(listener, library, how, IN_PROCESS)[0] == -signal.SIGQUIT
        assert through[0] == 128 + signal.SIGQUIT
    else:
        assert through == _interrupted(listener, library, how, IN_PROCESS)
        assert through[0] == {"SIGINT": 130, "SIGTERM": -signal.SIGTERM,
                              "SIGHUP": -signal.SIGHUP}[how]
    listener.close()


def test_nothing_is_written_outside_the_state_directory(library: Path, tmp_path: Path,
                                                        daemon: int) -> None:
    def listing() -> set[str]:
        return {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")
                if ".git/librarian" not in str(p) and "__pycache__" not in str(p)}

    before = listing()
    assert run_process("status", cwd=library).returncode == 0
    run_process("--library", str(library), "daemon", "stop")
    start(library, "--idle", "120")
    assert listing() == before
    sock = library / ".git" / "librarian" / "daemon.sock"
    assert sock.is_socket() and oct(sock.lstat().st_mode & 0o777) == "0o700"


def test_the_client_imports_almost_nothing() -> None:
    def loaded(code: str) -> list[str]:
        return subprocess.run([sys.executable, "-c", f"import sys; {code}; "
                               "print(' '.join(sorted(sys.modules)))"], capture_output=True,
                              text=True, check=True).stdout.split()

    modules = loaded("import librarian.cli.entry")
    heavy = {"typer", "click", "dulwich", "yaml", "rich", "socket", "librarian.cli.main",
             "librarian.store"}
    assert not heavy & set(modules)
    # Not even typing, or signal's and socket's wrappers (enum, functools, re): the
    # interpreter's start-up modules, the C modules, and librarian's own, nothing else.
    started = set(loaded("pass"))
    added = {m for m in modules if m not in started and not m.startswith("librarian")}
    assert added <= {"_signal", "_socket", "gc", "resource"}, added
    ours = sorted(m for m in modules if m.startswith("librarian"))
    assert ours == ["librarian", "librarian.cli", "librarian.cli.entry", "librarian.daemon",
                    "librarian.daemon.client", "librarian.daemon.wire"]


@given(st.lists(st.sampled_from(["--library", "--library=x", "status", "--", "y", "z",
                                 "--json", "--library=", "-h"]), max_size=8))
def test_the_client_reads_library_as_the_command_line_does(args: list[str]) -> None:
    moved = library_first(args)
    expected = None
    position = 0
    while position < len(moved) and moved[position] != "--":
        if moved[position] == "--library" and position + 1 < len(moved):
            expected, position = moved[position + 1], position + 2
        elif moved[position].startswith("--library="):
            expected, position = moved[position][len("--library="):], position + 1
        else:
            break
    assert library_option(args) == expected
