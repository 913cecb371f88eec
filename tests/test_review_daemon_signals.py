"""Review: SIGHUP and SIGQUIT through the daemon end a command as docs/decisions.md says
(SIGHUP as in-process; SIGQUIT, which dumps core, as exit 128 + 3)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from test_daemon import IN_PROCESS, _hanging_source, _interrupted, daemon, served

__all__ = ["daemon"]


@pytest.mark.parametrize("how", ["SIGHUP", "SIGQUIT"])
def test_hup_and_quit_through_the_daemon_as_in_process(
        library: Path, daemon: int, tmp_path: Path, how: str) -> None:
    listener = _hanging_source(library, tmp_path)
    through = _interrupted(listener, library, how)
    deadline = time.monotonic() + 10
    while served(library) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert served(library) == 1
    in_process = _interrupted(listener, library, how, IN_PROCESS)
    if how == "SIGHUP":
        assert through == in_process
        assert through[0] == -signal.SIGHUP
    else:  # docs/decisions.md: a signal that dumps core ends the client with 128 + N
        assert in_process[0] == -signal.SIGQUIT
        assert through[0] == 128 + signal.SIGQUIT
    listener.close()
