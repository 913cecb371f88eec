"""Judging an upstream collection over two processors (``sources.judging.judge_items``): the
verdicts, the skipped items and what the store keeps for staging are those of judging item
by item, whether the first half is examined in a forked child or not, whether the child
fails, and whether it has room to send the files' bytes back."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.helpers import cli, count_forks, two_processors
from support.sources_helpers import MODE_EXEC, MODE_LINK, Upstream, install

from librarian.agents.claude_manifests import GENERATED
from librarian.cache.memo import ShortMemo
from librarian.core import halves
from librarian.core.model import ItemFile, Policy
from librarian.errors import UsageError
from librarian.formats.config import SourceConfig
from librarian.git import objectstore
from librarian.library.layout import Library
from librarian.sources import judging
from librarian.sources.upstream import Collection, read_collection


def _upstream(path: Path) -> Upstream:
    """Every kind of verdict, spread over both halves of the list."""
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


def _read(lib: Library, monkeypatch: pytest.MonkeyPatch, *, split: bool) -> tuple[
        Collection, dict[bytes, Any], dict[bytes, str], dict[str, object]]:
    monkeypatch.setattr(halves, "LEAST", 2 if split else 10**9)
    store = lib.store()
    ShortMemo.of(store, "kinds")  # the memo's state before: read with the collection
    tree = store.commit(store.ref(b"refs/librarian/sources/team")).tree
    collection = read_collection(store, tree, SourceConfig(url="x"), Policy(), {}, {})
    kinds = {key: ShortMemo.of(store, "kinds").get(key) for key in
             (item.tree.decode() for item in collection.items.values())}
    return collection, dict(store.checked), dict(store.checked.digests), kinds


def test_the_mix_is_judged_as_expected(fetched: Library,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    collection, _, _, _ = _read(fetched, monkeypatch, split=False)
    assert "skills/linked" in {s.path for s in collection.skipped}
    assert "skills/broken" in {s.path for s in collection.skipped}
    # two items sharing a folder name are both admitted (named apart when listed)
    assert "skills/plain-0" in collection.items
    assert "more/plain-0" in collection.items
    assert collection.items["skills/bad-name"].warnings
    assert "skills/ignored" in collection.items and "recipes/hello" in collection.items


@two_processors
def test_split_judging_says_what_one_process_says(fetched: Library,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    forks = count_forks(monkeypatch)
    alone = _read(fetched, monkeypatch, split=False)
    assert not forks
    split = _read(fetched, monkeypatch, split=True)
    assert forks  # the child did examine the first half
    assert split == alone


@two_processors
def test_a_failed_child_leaves_its_half_to_this_process(
        fetched: Library, monkeypatch: pytest.MonkeyPatch) -> None:
    alone = _read(fetched, monkeypatch, split=False)
    parent, examine = os.getpid(), judging.examine

    def failing(*args: Any) -> Any:
        if os.getpid() != parent:
            raise RuntimeError("the child fails")
        return examine(*args)

    monkeypatch.setattr(judging, "examine", failing)
    assert _read(fetched, monkeypatch, split=True) == alone


@two_processors
def test_without_room_the_child_sends_verdicts_and_staging_reads_the_store(
        tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    lib_a, lib_b = tmp_path / "a", tmp_path / "b"
    for lib in (lib_a, lib_b):
        assert cli(capsys, lib, "init", str(lib), "--name", lib.name).code == 0
    up = _upstream(tmp_path / "up")
    install(capsys, lib_a, up)
    monkeypatch.setattr(halves, "LEAST", 2)
    monkeypatch.setattr(objectstore, "BLOB_MEMO_BYTES", 0)  # no bytes kept, none sent
    alone = _read(Library(lib_a, GENERATED), monkeypatch, split=False)
    collection, checked, digests, kinds = _read(Library(lib_a, GENERATED), monkeypatch, split=True)
    assert (collection, digests, kinds) == (alone[0], alone[2], alone[3]) and not checked
    monkeypatch.setattr(halves, "LEAST", 2)
    install(capsys, lib_b, up)  # split, every item staged from the store
    for lib in (lib_a, lib_b):
        assert cli(capsys, lib, "status").code == 0
    tree_a, tree_b = (Library(lib, GENERATED).store().lookup(Library(lib, GENERATED).store().commit(
        Library(lib, GENERATED).store().head()).tree, "sources/team") for lib in (lib_a, lib_b))
    assert tree_a == tree_b
    guide = lib_b / "sources" / "team" / "skills" / "tool" / "scripts" / "go.sh"
    assert guide.read_bytes() == b"#!/bin/sh\n" and os.access(guide, os.X_OK)


@two_processors
def test_a_split_install_commits_what_an_unsplit_one_does(
        tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    up = _upstream(tmp_path / "up")
    trees = []
    for least in (10**9, 2):
        monkeypatch.setattr(halves, "LEAST", least)
        lib = tmp_path / f"lib-{least}"
        assert cli(capsys, lib, "init", str(lib), "--name", "x").code == 0
        install(capsys, lib, up)
        store = Library(lib, GENERATED).store()
        trees.append(store.commit(store.head()).tree)
        assert (lib / "sources" / "team" / "skills" / "own-ignores" / "SKILL.md").exists()
        assert not (lib / "sources" / "team" / "skills" / "own-ignores" / "run.log").exists()
    assert trees[0] == trees[1]


_files = st.lists(st.tuples(st.text(min_size=1, max_size=12), st.booleans(),
                            st.binary(max_size=40)), max_size=4)


@given(files=_files, warnings=st.lists(st.text(max_size=20), max_size=3),
       left_out=st.booleans(), with_bytes=st.booleans(),
       problems=st.lists(st.text(max_size=20), min_size=1, max_size=3))
def test_what_the_child_sends_reads_back(files: list[tuple[str, bool, bytes]],
                                         warnings: list[str], left_out: bool,
                                         with_bytes: bool, problems: list[str]) -> None:
    import marshal

    examined = judging.Examined(tuple(ItemFile(*f) for f in files), [b"\x01" * 20],
                                b"ab" * 20, "sha256:" + "0" * 64, tuple(warnings), left_out)
    sent = marshal.dumps([judging._encoded(examined, with_bytes),
                          judging._encoded(tuple(problems), with_bytes)])
    back = judging._decoded(sent, 2)
    assert back[1] == tuple(problems)
    if with_bytes or not files:
        assert back[0] == examined
    elif left_out:
        assert back[0] is None  # judged here: its tree is made from the bytes
    else:
        assert back[0] == judging._Unkept(tuple(f[0] for f in files), examined.digest,
                                          tuple(warnings))
    assert judging._decoded(sent, 3) == [] and judging._decoded(b"\x00garbage", 2) == []
    assert judging._decoded(None, 2) == []


@two_processors
def test_an_error_in_both_halves_is_the_first_in_order(
        fetched: Library, monkeypatch: pytest.MonkeyPatch) -> None:
    examine = judging.examine

    def damaged(store: Any, path: str, tree: Any, policy: Any) -> Any:
        if path in ("skills/bad-name", "skills/plain-3"):  # one in each half
            raise UsageError(f"{path}: damaged")
        return examine(store, path, tree, policy)

    monkeypatch.setattr(judging, "examine", damaged)
    for split in (False, True):
        with pytest.raises(UsageError, match="skills/bad-name: damaged"):
            _read(fetched, monkeypatch, split=split)
