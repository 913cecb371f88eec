"""A full disk is not a bug: one line naming the disk, exit 3, and the library unchanged.

Two ways to run out: a real small tmpfs (needs root to mount; skipped otherwise) filled to
several levels so the failure lands at different write steps, and RLIMIT_FSIZE in a child
process (any user), where a write past the limit fails with EFBIG.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.helpers import (
    assert_git_consistent,
    assert_one_error_line,
    library_state,
    make_skill,
    run_main,
)

from librarian.agents.claude_manifests import GENERATED
from librarian.ops.create import init_library

pytestmark = pytest.mark.crash


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                              str(where)], capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(disk: Path, leave: int) -> Path:
    """A filler file leaving about ``leave`` bytes free on ``disk``."""
    filler = disk / "filler"
    with contextlib.suppress(FileNotFoundError):
        filler.unlink()
    st = os.statvfs(disk)
    free = st.f_bavail * st.f_frsize
    with filler.open("wb") as handle:
        remaining = max(free - leave, 0)
        chunk = b"\0" * (1 << 20)
        while remaining > 0:
            handle.write(chunk[: min(remaining, len(chunk))])
            remaining -= min(remaining, len(chunk))
    return filler


def test_a_full_disk_is_exit_3_naming_the_disk_at_every_level(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with tmpfs(tmp_path / "disk", "6m") as disk:
        library = disk / "lib"
        init_library(library, "full", GENERATED)
        source = make_skill(tmp_path / "src", "big", extra_files={
            "data.bin": os.urandom(400_000)})
        outcomes = []
        for leave in (8_000, 64_000, 300_000, 500_000, 800_000, 900_000, 1_000_000):
            _fill(disk, leave)
            before = library_state(library)
            result = run_main(capsys, "--library", str(library), "retain", str(source))
            outcomes.append(result.code)
            if result.code == 0:
                break
            assert result.code == 3, result.err
            line = assert_one_error_line(result.err)
            assert "is full" in line and str(disk) in line, line
            assert library_state(library) == before
            (disk / "filler").unlink()
            assert_git_consistent(library)
        assert outcomes.count(3) >= 3, outcomes  # at the objects, the stage, the index…
        (disk / "filler").unlink(missing_ok=True)
        again = run_main(capsys, "--library", str(library), "retain", str(source))
        assert again.code == 0 or outcomes[-1] == 0, again.err
        assert_git_consistent(library)


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))


def test_a_file_size_limit_is_exit_3_in_a_real_process(tmp_path: Path) -> None:
    library = tmp_path / "lib"
    init_library(library, "limited", GENERATED)
    source = make_skill(tmp_path / "src", "big", extra_files={"data.bin": os.urandom(300_000)})
    before = library_state(library)
    result = subprocess.run(
        [sys.executable, "-m", "librarian", "--library", str(library), "retain", str(source)],
        capture_output=True, text=True, preexec_fn=_limit_file_size, check=False, timeout=60)
    assert result.returncode == 3, result.stderr
    assert "is full" in assert_one_error_line(result.stderr)
    assert library_state(library) == before
    assert_git_consistent(library)
