"""Files are written with exactly git's modes (0644, 0755), whatever the umask: the
executable bit is content, and the stat returned is the file's as written."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from librarian.core.fsutil import write_file_durably


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o177, 0o000, 0o002])
@pytest.mark.parametrize("executable", [False, True])
def test_modes_are_exact_under_any_umask(tmp_path: Path, umask: int, executable: bool) -> None:
    path = tmp_path / "f"
    old = os.umask(umask)
    try:
        written = write_file_durably(str(path), b"data\n", executable=executable)
    finally:
        os.umask(old)
    want = 0o755 if executable else 0o644
    assert stat.S_IMODE(path.lstat().st_mode) == want
    assert stat.S_IMODE(written.st_mode) == want
    assert (written.st_ino, written.st_size) == (path.lstat().st_ino, 5)
