"""A reader that goes early (``librarian status | head``) through the daemon."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from test_daemon import IN_PROCESS, daemon, served

__all__ = ["daemon"]


def _closed_early(library: Path, env: dict[str, str]) -> int:
    """``librarian status | head -c 10``: the exit code of librarian."""
    reader = subprocess.Popen([sys.executable, "-m", "librarian", "status"], cwd=library,
                              env={**os.environ, **env}, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
    assert reader.stdout is not None
    reader.stdout.read(10)
    reader.stdout.close()
    return reader.wait(timeout=60)


def test_a_reader_that_goes_early_gets_the_in_process_exit_code(
        library: Path, daemon: int) -> None:
    for number in range(3000):  # ~70 KB of status, more than a pipe holds
        (library / "skills" / f"s{number}").mkdir()
        (library / "skills" / f"s{number}" / "SKILL.md").write_bytes(
            b"---\nname: s%d\ndescription: d\n---\n" % number)
    in_process = _closed_early(library, IN_PROCESS)
    through = _closed_early(library, {})
    assert served(library) >= 1
    assert through == in_process == 0  # a reader that went away is no failure
