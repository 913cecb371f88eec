"""Progress of long work on a terminal (spec §3.3, §6.6): on stderr when it is a terminal,
never when piped and never with --json. A real process on a real pseudo-terminal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import cli, run_process
from support.sources_helpers import Upstream

from librarian.core import progress

Cap = pytest.CaptureFixture[str]


def _on_a_terminal(*args: str, cwd: Path, out: list[str] | None = None) -> tuple[int, str]:
    """Run ``librarian ARGS`` with stderr on a pty (stdout piped, into ``out``); what the
    terminal got."""
    master, slave = os.openpty()
    env = {k: v for k, v in os.environ.items() if k != "TERM"}
    env.update(TERM="xterm", COLUMNS="100")
    proc = subprocess.Popen([sys.executable, "-m", "librarian", *args], cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.stdout is not None
    printed = proc.stdout.read().decode()
    proc.stdout.close()
    if out is not None:
        out.append(printed)
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


@pytest.fixture
def subscribed(library: Path, tmp_path: Path, capsys: Cap) -> Path:
    up = Upstream(tmp_path / "up.git")
    for number in range(12):
        up.skill(f"skills/s{number:02d}")
    up.commit("first")
    assert cli(capsys, library, "source", "add", "team", up.url).code == 0
    return library


def test_update_shows_its_phases_on_a_terminal(subscribed: Path) -> None:
    code, screen = _on_a_terminal("update", cwd=subscribed)
    assert code == 0, screen
    for phase in ("fetch team", "plan team", "stage", "install"):
        assert phase in screen, screen


def test_nothing_when_piped_or_with_json(subscribed: Path) -> None:
    piped = run_process("update", cwd=subscribed)
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == ""
    code, screen = _on_a_terminal("inspect", "--json", cwd=subscribed)
    assert code == 0
    assert screen == ""


def test_inspect_and_source_remove_show_progress_on_a_terminal(subscribed: Path) -> None:
    assert run_process("update", cwd=subscribed).returncode == 0
    printed: list[str] = []
    code, screen = _on_a_terminal("inspect", cwd=subscribed, out=printed)
    assert code == 0 and "inspect" in screen, screen
    assert printed == [run_process("inspect", cwd=subscribed).stdout]  # output untouched
    code, screen = _on_a_terminal("source", "remove", "team", cwd=subscribed)
    assert code == 0 and "check team" in screen, screen


def test_without_a_reporter_the_library_reports_nothing_and_counts_pass_through() -> None:
    assert not progress.active()
    assert list(progress.counted("plan", iter(range(3)))) == [0, 1, 2]
    progress.phase("stage", 3)
    progress.advance()
    seen: list[tuple[str, object]] = []

    class Recorder:
        def phase(self, name: str, total: int | None) -> None:
            seen.append((name, total))

        def advance(self, count: int) -> None:
            seen.append(("advance", count))

        def note(self, text: str) -> None:
            seen.append(("note", text))

        def close(self) -> None:
            seen.append(("close", None))

    with progress.reporting(Recorder()):
        assert progress.active()
        assert list(progress.counted("plan", ["a", "b"])) == ["a", "b"]
    assert seen == [("plan", 2), ("advance", 1), ("advance", 1), ("close", None)]


def test_the_terminal_display_runs_no_thread_so_long_work_can_still_fork() -> None:
    import threading

    from librarian.cli.progress import TerminalReporter
    from librarian.core import halves

    reporter = TerminalReporter()
    try:
        reporter.phase("plan team", 3)
        reporter.advance(1)
        reporter.note("Copying objects: 1\r")
        assert threading.active_count() == 1
        assert halves.can_split() or halves.processors() < 2
    finally:
        reporter.close()
