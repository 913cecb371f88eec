"""What librarian makes durable itself, because dulwich does not (without
core.fsyncObjectFiles): packs it writes, the directory of a ref it moves, the reflog line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from librarian.agents.claude_manifests import GENERATED
from librarian.core.model import ItemFile
from librarian.library.layout import Library

pytestmark = pytest.mark.crash


def _fsynced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = os.fsync

    def recording(fd: int) -> None:
        seen.append(str(Path(f"/proc/self/fd/{fd}").readlink()))
        real(fd)

    monkeypatch.setattr(os, "fsync", recording)
    return seen


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_a_pack_written_by_a_large_commit_is_fsynced(
    library: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = tuple(ItemFile(f"f{i}.txt", False, f"{i}\n".encode()) for i in range(400))
    with Library(library, GENERATED).store() as store:
        tree = store.files_tree(files)
        commit = store.make_commit(tree, [], "many objects\n")
        seen = _fsynced(monkeypatch)
        store.flush(commit)
    pack_dir = library / ".git" / "objects" / "pack"
    packs = {str(p) for p in pack_dir.iterdir() if p.suffix in (".pack", ".idx")}
    assert packs and packs <= set(seen)
    assert str(pack_dir) in seen


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_moving_a_ref_syncs_its_directory_and_its_reflog(
    library: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Library(library, GENERATED).store() as store:
        head = store.head()
        assert head is not None
        commit = store.make_commit(store.tree_of(head) or b"", [head], "again\n")
        store.flush(commit)
        seen = _fsynced(monkeypatch)
        store.move_branch(head, commit, b"test: move")
        branch = store.branch().decode()
    git_dir = library / ".git"
    assert str((git_dir / branch).parent) in seen
    log = git_dir / "logs" / branch
    if log.is_file():  # dulwich keeps a reflog where git would
        assert str(log) in seen
