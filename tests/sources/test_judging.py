"""Judging an upstream collection (``sources.judging.judge_items``): the verdicts and the
skipped items of every kind, what the store keeps for staging, and the first error in
order when an item cannot be judged."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from support.helpers import cli
from support.sources_helpers import MODE_EXEC, MODE_LINK, Upstream, install

from librarian.agents.claude_manifests import GENERATED
from librarian.cache.memo import ShortMemo
from librarian.core.model import Policy
from librarian.errors import UsageError
from librarian.formats.config import SourceConfig
from librarian.git import objectstore
from librarian.library.layout import Library
from librarian.sources import judging
from librarian.sources.upstream import Collection, read_collection


def _upstream(path: Path) -> Upstream:
    """Every kind of verdict."""
    up = Upstream(path)
    for number in range(6):
        up.skill(f"skills/plain-{number}", body=f"Step {number}.\n")
    up.recipe("recipes/hello")
    up.skill("skills/bad-name", name="other-name")  # admitted with a nonconformity
    up.skill("skills/linked").put("skills/linked/guide.md", b"skills/linked/SKILL.md",
                                  MODE_LINK)  # refused: links are never admitted
    up.skill("skills/ignored").put("skills/ignored/.DS_Store", b"\0\0")  # left out
    up.skill("skills/own-ignores").put("skills/own-ignores/.librarianignore", b"*.log\n")
    up.put("skills/own-ignores/run.log", b"noise\n")
    up.skill("more/plain-0")  # shares its folder name with skills/plain-0: both admitted
    up.skill("skills/tool").put("skills/tool/scripts/go.sh", b"#!/bin/sh\n", MODE_EXEC)
    up.put("skills/no-manifest/README.md", b"not an item\n")
    up.put("skills/broken/SKILL.md", b"---\nname: [\n---\n")  # refused: bad frontmatter
    up.commit("many kinds")
    return up


@pytest.fixture
def fetched(tmp_path: Path, library: Path, capsys: Any) -> Library:
    install(capsys, library, _upstream(tmp_path / "up"))
    return Library(library, GENERATED)


def _read(lib: Library) -> tuple[
        Collection, dict[bytes, Any], dict[bytes, str], dict[str, object]]:
    store = lib.store()
    ShortMemo.of(store, "kinds")  # the memo's state before: read with the collection
    tree = store.commit(store.ref(b"refs/librarian/sources/team")).tree
    collection = read_collection(store, tree, SourceConfig(url="x"), Policy(), {}, {})
    kinds = {key: ShortMemo.of(store, "kinds").get(key) for key in
             (item.tree.decode() for item in collection.items.values())}
    return collection, dict(store.checked), dict(store.checked.digests), kinds


def test_the_mix_is_judged_as_expected(fetched: Library,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    collection, _, _, _ = _read(fetched)
    assert "skills/linked" in {s.path for s in collection.skipped}
    assert "skills/broken" in {s.path for s in collection.skipped}
    # two items sharing a folder name are both admitted (named apart when listed)
    assert "skills/plain-0" in collection.items
    assert "more/plain-0" in collection.items
    assert collection.items["skills/bad-name"].warnings
    assert "skills/ignored" in collection.items and "recipes/hello" in collection.items


def test_without_room_staging_reads_the_store(
        tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    lib_a, lib_b = tmp_path / "a", tmp_path / "b"
    for lib in (lib_a, lib_b):
        assert cli(capsys, lib, "init", str(lib), "--name", lib.name).code == 0
    up = _upstream(tmp_path / "up")
    install(capsys, lib_a, up)
    kept = _read(Library(lib_a, GENERATED))
    monkeypatch.setattr(objectstore, "BLOB_MEMO_BYTES", 0)  # no bytes kept
    collection, checked, digests, kinds = _read(Library(lib_a, GENERATED))
    assert (collection, digests, kinds) == (kept[0], kept[2], kept[3]) and not checked
    install(capsys, lib_b, up)  # every item staged from the store
    for lib in (lib_a, lib_b):
        assert cli(capsys, lib, "status").code == 0
    tree_a, tree_b = (Library(lib, GENERATED).store().lookup(Library(lib, GENERATED).store().commit(
        Library(lib, GENERATED).store().head()).tree, "sources/team") for lib in (lib_a, lib_b))
    assert tree_a == tree_b
    guide = lib_b / "sources" / "team" / "skills" / "tool" / "scripts" / "go.sh"
    assert guide.read_bytes() == b"#!/bin/sh\n" and os.access(guide, os.X_OK)
    assert (lib_b / "sources" / "team" / "skills" / "own-ignores" / "SKILL.md").exists()
    assert not (lib_b / "sources" / "team" / "skills" / "own-ignores" / "run.log").exists()


def test_an_error_is_the_first_in_order(fetched: Library,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    examine = judging.examine

    def damaged(store: Any, path: str, tree: Any, policy: Any) -> Any:
        if path in ("skills/bad-name", "skills/plain-3"):
            raise UsageError(f"{path}: damaged")
        return examine(store, path, tree, policy)

    monkeypatch.setattr(judging, "examine", damaged)
    with pytest.raises(UsageError, match="skills/bad-name: damaged"):
        _read(fetched)
