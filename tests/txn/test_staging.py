"""Staging over two processors (``txn.staging.stage_changes``): an install whose items
are written half by a forked child leaves the same commit, work tree, index and stat cache
as one written here alone; a child that fails has its half written here, and an error in
its half (a damaged object) is this process's error, with nothing changed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from support.helpers import (
    HashCounter,
    assert_git_consistent,
    cli,
    count_forks,
    git_text,
    head,
    settle_files,
    tree_snapshot,
    two_processors,
)
from support.sources_helpers import MODE_EXEC, Upstream, install

from librarian.agents.claude_manifests import GENERATED
from librarian.cache import statcache
from librarian.cache.statfile import ItemsFile, identity_of
from librarian.core import fsutil, halves
from librarian.git import objectstore
from librarian.git.repo import GitStore
from librarian.library.layout import Library
from librarian.ops.status import library_status
from librarian.txn import staging

Cap = pytest.CaptureFixture[str]


def _upstream(path: Path) -> Upstream:
    up = Upstream(path)
    for number in range(10):
        up.skill(f"skills/s{number}", body=f"Step {number}.\n")
        up.put(f"skills/s{number}/notes/deep/a.md", f"{number}\n".encode())
    up.recipe("recipes/hello")
    up.put("recipes/hello/lib/run.py", b"print('hi')\n", MODE_EXEC)
    up.commit("first")
    return up


def _install(tmp_path: Path, name: str, up: Upstream, capsys: Cap) -> Path:
    library = tmp_path / name
    assert cli(capsys, library, "init", str(library), "--name", "team-lib").code == 0
    install(capsys, library, up)
    return library


@two_processors
def test_a_split_install_is_the_same_install(tmp_path: Path, capsys: Cap,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    settle_files(monkeypatch)  # the seeds' files are settled: none is looked at twice
    up = _upstream(tmp_path / "up")
    alone = _install(tmp_path, "alone", up, capsys)
    forks = count_forks(monkeypatch)
    monkeypatch.setattr(halves, "LEAST", 2)
    split = _install(tmp_path, "split", up, capsys)
    assert len(forks) >= 2  # planning and staging both split
    assert tree_snapshot(alone) == tree_snapshot(split)
    stores = [GitStore(lib) for lib in (alone, split)]
    assert stores[0].commit(stores[0].head()).tree == stores[1].commit(stores[1].head()).tree
    assert git_text(alone, "ls-files", "-s") == git_text(split, "ls-files", "-s")
    assert_git_consistent(split)  # the index holds each file's stat as the child wrote it
    # The stat cache was seeded from the child's stats, in path order (the next status
    # reads its records in step), and nothing is hashed again.
    keys = []
    for lib in (alone, split):
        items = ItemsFile(lib / ".git" / "librarian" / "cache" / statcache.ITEMS_FILE,
                          identity_of(lib / ".git"))
        keys.append([items.key(i) for i in range(items.count)])
    assert keys[0] == keys[1] == sorted(keys[0]) and len(keys[0]) == 11
    monkeypatch.setattr(halves, "LEAST", 10**9)
    hashed = HashCounter(monkeypatch)
    assert library_status(Library(split, GENERATED)).clean and hashed.calls == 0


@two_processors
def test_a_failed_child_has_its_half_staged_here(tmp_path: Path, capsys: Cap,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    up = _upstream(tmp_path / "up")
    alone = _install(tmp_path, "alone", up, capsys)
    parent, write_files = os.getpid(), staging.write_files
    written: list[int] = []
    here: list[str] = []  # the slots this process wrote

    def failing(target: Path, files: Any) -> Any:
        if os.getpid() != parent:
            written.append(1)
            if len(written) > 2:  # a few slots written, then the child fails
                os._exit(3)
        else:
            here.append(target.name)
        return write_files(target, files)

    monkeypatch.setattr(staging, "write_files", failing)
    monkeypatch.setattr(halves, "LEAST", 2)
    split = _install(tmp_path, "split", up, capsys)
    assert {"0", "1", "2"} <= set(here)  # the child's first slots, staged again here
    assert len(here) == len(set(here))
    assert tree_snapshot(alone) == tree_snapshot(split)
    assert_git_consistent(split)
    assert not list((split / ".git" / "librarian").glob("stage/*"))


@two_processors
def test_a_damaged_object_in_the_childs_half_changes_nothing(
        tmp_path: Path, capsys: Cap, monkeypatch: pytest.MonkeyPatch) -> None:
    up = _upstream(tmp_path / "up")
    library = _install(tmp_path, "lib", up, capsys)
    for number in range(10):  # new items: staged whole, half of them by the child
        up.skill(f"skills/n{number}", body=f"Step {number}, again.\n")
    up.commit("second")
    monkeypatch.setattr(objectstore, "BLOB_MEMO_BYTES", 0)  # staging reads the store
    original_read, original_stage = GitStore.read_blob, staging.stage_changes
    in_stage: list[bool] = []

    def corrupted(self: GitStore, sha: bytes) -> bytes:
        data = original_read(self, sha)
        return data + b"!" if in_stage and b"again" in data else data

    def stage(*args: Any) -> Any:
        in_stage.append(True)
        return original_stage(*args)

    monkeypatch.setattr(GitStore, "read_blob", corrupted)
    monkeypatch.setattr(staging, "stage_changes", stage)
    monkeypatch.setattr(halves, "LEAST", 2)
    forks = count_forks(monkeypatch)
    old, snapshot = head(library), tree_snapshot(library)
    result = cli(capsys, library, "update")
    assert forks and result.code == 4, result.err
    # Damaged in both halves: the error is the first in order, as without a child.
    assert "sources/team/skills/n0: the staged content does not match" in result.err
    assert head(library) == old and tree_snapshot(library) == snapshot
    assert not list((library / ".git" / "librarian").glob("stage/*"))
    assert_git_consistent(library)


@pytest.mark.crash
def test_writes_of_another_process_end_the_block_with_a_whole_sync(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[Path] = []
    monkeypatch.setattr(fsutil, "sync_filesystem", synced.append)
    with fsutil.one_sync(tmp_path):
        fsutil.write_file_durably(tmp_path / "a", b"a")  # one path: fsynced by itself
    assert synced == []
    with fsutil.one_sync(tmp_path):
        fsutil.write_file_durably(tmp_path / "b", b"b")
        fsutil.synced_elsewhere()
    assert synced == [tmp_path]
    fsutil.synced_elsewhere()  # outside a block: nothing deferred, nothing to do
