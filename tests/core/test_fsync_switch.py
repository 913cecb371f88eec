"""``LIBRARIAN_TEST_FSYNC=0`` (the suite's switch, as git's ``GIT_TEST_FSYNC``): no fsync
and no file-system sync, writes still atomic; unset, every durable write fsyncs. The suite
sets it for every test not marked ``crash`` (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from librarian.core import fsutil

PROBE = "from librarian.core.fsutil import fsync_enabled; print(fsync_enabled())"


def _count_syncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real_fsync, real_sync = os.fsync, os.sync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "sync", lambda: (calls.append("sync"), real_sync())[1])
    return calls


def _write_everything(directory: Path) -> None:
    fsutil.atomic_write(directory / "a", b"a")
    fsutil.write_file_durably(directory / "b", b"b")
    fsutil.fsync_file(directory / "b")
    fsutil.fsync_dir(directory)
    with fsutil.one_sync(directory):
        for n in range(fsutil.SMALL_BATCH + 1):  # more than a few: a file-system sync
            fsutil.write_file_durably(directory / f"c{n}", b"c")
    fsutil.sync_filesystem(directory)


def test_the_suite_runs_without_fsync_and_writes_stay_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert os.environ["LIBRARIAN_TEST_FSYNC"] == "0"
    calls = _count_syncs(monkeypatch)
    monkeypatch.setattr(fsutil, "_syncfs", lambda: None)  # a syncfs would be os.sync
    _write_everything(tmp_path)
    assert calls == []
    assert (tmp_path / "a").read_bytes() == b"a" and not list(tmp_path.glob(".a.*"))
    child = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                           check=True)
    assert child.stdout.strip() == "False"  # a librarian the test starts inherits it


@pytest.mark.crash
def test_a_crash_test_fsyncs_for_real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert "LIBRARIAN_TEST_FSYNC" not in os.environ
    calls = _count_syncs(monkeypatch)
    monkeypatch.setattr(fsutil, "_syncfs", lambda: None)
    _write_everything(tmp_path)
    # atomic_write: file, directory; write_file_durably; fsync_file; fsync_dir; the block's
    # sync and the explicit one
    assert calls == ["fsync"] * 5 + ["sync"] * 2
    child = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                           check=True)
    assert child.stdout.strip() == "True"
