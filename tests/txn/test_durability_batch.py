"""Batched durability (git's core.fsyncMethod=batch): write everything, then sync once.

The crash guarantees themselves are held by the SIGKILL tests of test_transaction.py and
test_update_recovery.py; here: the fsyncs of a transaction do not grow with its files.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest
from support.helpers import make_skill, write

from librarian.agents.claude_manifests import GENERATED
from librarian.core import fsutil
from librarian.library.layout import Library
from librarian.ops.retention import retain

pytestmark = pytest.mark.crash


class Counter:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fsyncs = self.syncs = 0
        real_fsync, real_sync = os.fsync, fsutil.sync_filesystem

        def fsync(fd: int) -> None:
            self.fsyncs += 1
            real_fsync(fd)

        def sync(anchor: Path) -> None:
            self.syncs += 1
            real_sync(anchor)

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(fsutil, "sync_filesystem", sync)


def test_inside_one_sync_nothing_is_fsynced_until_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = Counter(monkeypatch)
    with fsutil.one_sync(tmp_path):
        for number in range(fsutil.SMALL_BATCH + 5):
            fsutil.write_file_durably(tmp_path / f"f{number}", b"data")
        fsutil.atomic_write(tmp_path / "replaced", b"new")
        fsutil.fsync_dir(tmp_path)
        with fsutil.one_sync(tmp_path):  # nested: the outer block syncs
            fsutil.fsync_file(tmp_path / "f0")
        assert (counter.fsyncs, counter.syncs) == (0, 0)
    assert (counter.fsyncs, counter.syncs) == (0, 1)  # many paths: one file-system sync
    assert (tmp_path / "replaced").read_bytes() == b"new"
    with fsutil.one_sync(tmp_path):
        fsutil.write_file_durably(tmp_path / "few", b"data")
        fsutil.fsync_dir(tmp_path)
    assert (counter.fsyncs, counter.syncs) == (2, 1)  # a few: one fsync each, at the end
    with pytest.raises(RuntimeError), fsutil.one_sync(tmp_path):
        fsutil.write_file_durably(tmp_path / "late", b"data")
        raise RuntimeError("nothing written here was made visible")
    assert (counter.fsyncs, counter.syncs) == (2, 1)
    fsutil.write_file_durably(tmp_path / "alone", b"data")  # outside: one fsync, as before
    assert counter.fsyncs == 3


def test_a_few_dozen_paths_are_fsynced_each_from_several_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Concurrent fsyncs are committed together; a syncfs would wait for every other
    process's dirty data too."""
    threads: set[int] = set()
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        threads.add(threading.get_ident())
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    counter = Counter(monkeypatch)
    with fsutil.one_sync(tmp_path):
        for number in range(30):
            fsutil.write_file_durably(tmp_path / f"f{number}", b"data")
    assert (counter.fsyncs, counter.syncs) == (30, 0)
    assert len(threads) > 1


def test_a_deferred_path_that_has_gone_makes_it_one_file_system_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = Counter(monkeypatch)
    with fsutil.one_sync(tmp_path):
        fsutil.write_file_durably(tmp_path / "kept", b"data")
        fsutil.write_file_durably(tmp_path / "moved", b"data")
        (tmp_path / "moved").rename(tmp_path / "elsewhere")
    assert counter.syncs == 1


def test_sync_filesystem_works_on_this_machine(tmp_path: Path) -> None:
    fsutil.sync_filesystem(tmp_path)


def _fsyncs_for_a_retain(library: Path, sources: Path, name: str, files: int,
                         monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    skill = make_skill(sources, name)
    for number in range(files):
        write(skill / "references" / f"note-{number:03d}.md", f"note {number}\n")
    with monkeypatch.context() as patch:
        counter = Counter(patch)  # type: ignore[arg-type]
        retain(Library(library, GENERATED), skill)
    return counter.fsyncs, counter.syncs


def test_the_syncs_of_a_transaction_do_not_grow_with_its_files(
    library: Path, sources: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = _fsyncs_for_a_retain(library, sources, "small", 1, monkeypatch)
    large = _fsyncs_for_a_retain(library, sources, "large", 120, monkeypatch)
    assert small[1] <= 2 and small[0] <= 2 * fsutil.SMALL_BATCH + 4  # bounded either way
    # Before the branch moves one sync for everything staged (the swap after it touches a
    # few directories: fsynced one by one, or synced too): no fsync per file.
    assert 1 <= large[1] <= 2
    assert large[0] <= fsutil.SMALL_BATCH + 4  # the index's own write, the small swap
    subprocess.run(["git", "fsck", "--strict"], cwd=library, check=True, capture_output=True)
    status = subprocess.run(["git", "status", "--porcelain"], cwd=library, check=True,
                            capture_output=True, text=True)
    assert status.stdout == ""
