"""Staging (``txn.staging.stage_changes``): an error while an install's items are
written (a damaged object) changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.helpers import (
    assert_git_consistent,
    cli,
    head,
    tree_snapshot,
)
from support.sources_helpers import MODE_EXEC, Upstream, install

from librarian.git import objectstore
from librarian.git.repo import GitStore
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


def test_a_damaged_object_while_staging_changes_nothing(
        tmp_path: Path, capsys: Cap, monkeypatch: pytest.MonkeyPatch) -> None:
    up = _upstream(tmp_path / "up")
    library = _install(tmp_path, "lib", up, capsys)
    for number in range(10):  # new items: staged whole
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
    old, snapshot = head(library), tree_snapshot(library)
    result = cli(capsys, library, "update")
    assert result.code == 4, result.err  # the first damaged item, in order
    assert "sources/team/skills/n0: the staged content does not match" in result.err
    assert head(library) == old and tree_snapshot(library) == snapshot
    assert not list((library / ".git" / "librarian").glob("stage/*"))
    assert_git_consistent(library)
