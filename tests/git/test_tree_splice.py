"""``GitStore.with_paths`` (an update's collection spliced rather than built again) and
``GitStore.raw_entries`` (two upstream trees compared as sets of entries)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from librarian.agents.claude_manifests import GENERATED
from librarian.core.digest import MODE_FILE, MODE_TREE
from librarian.errors import UsageError
from librarian.git.repo import GitStore, TreeEntry
from librarian.git.trees import make_tree
from librarian.ops.create import init_library

_PART = st.sampled_from(["a", "b", "a-b", "a.b", "z", "\u00e9", "\udcff"])
_PATH = st.lists(_PART, min_size=1, max_size=3).map("/".join)
_CONTENT = st.sampled_from([b"one\n", b"two\n", b"three\n"])


def _disjoint(paths: list[str]) -> list[str]:
    """The paths, none inside another (the first of two that overlap is kept)."""
    kept: list[str] = []
    for path in paths:
        if not any(path == k or path.startswith(k + "/") or k.startswith(path + "/")
                   for k in kept):
            kept.append(path)
    return kept


@pytest.mark.slow
@settings(max_examples=150, deadline=None, database=None)
@given(before=st.dictionaries(_PATH, _CONTENT, max_size=8),
       changes=st.dictionaries(_PATH, st.none() | _CONTENT, max_size=6))
def test_splicing_gives_the_tree_built_whole(before: dict[str, bytes],
                                             changes: dict[str, bytes | None]) -> None:
    before = {p: before[p] for p in _disjoint(sorted(before))}
    after = dict(before)
    spliced_changes: dict[str, TreeEntry | None] = {}
    with tempfile.TemporaryDirectory() as where:
        init_library(Path(where) / "lib", "test-lib", GENERATED)
        with GitStore(Path(where) / "lib") as store:
            def entry(data: bytes) -> TreeEntry:
                return TreeEntry(MODE_FILE, store.blob(data))

            for path in _disjoint(sorted(changes)):
                # a change may not cut through a file or directory that stays
                if any(p != path and (p.startswith(path + "/") or path.startswith(p + "/"))
                       for p in after):
                    continue
                data = changes[path]
                spliced_changes[path] = entry(data) if data is not None else None
                if data is None:
                    after.pop(path, None)
                else:
                    after[path] = data
            root = make_tree(store, ((p, entry(d)) for p, d in before.items()))
            whole = make_tree(store, ((p, entry(d)) for p, d in after.items()))
            spliced = store.with_paths(root, spliced_changes)
            if whole is None:  # every entry gone: the empty tree, as git has it
                assert store.tree_items(spliced) == {}
            else:
                assert spliced == whole
            one_by_one = root
            for path, change in spliced_changes.items():
                one_by_one = store.with_path(one_by_one, path, change)
            if spliced_changes:
                assert one_by_one == spliced


def test_overlapping_changes_are_refused(library: Path) -> None:
    with GitStore(library) as store:
        blob = TreeEntry(MODE_FILE, store.blob(b"x\n"))
        root = make_tree(store, [("a/b", blob)])
        with pytest.raises(UsageError, match="overlapping"):
            store.with_paths(root, {"a": None, "a/b": blob})


def test_raw_entries_lists_every_entry_as_git_stores_it(library: Path) -> None:
    with GitStore(library) as store:
        blob = TreeEntry(MODE_FILE, store.blob(b"x\n"))
        root = make_tree(store, [("skills/pdf/SKILL.md", blob), ("README", blob),
                                 ("\udcff/x", blob)])
        assert root is not None
        listed = store.raw_entries(root)
        skills = store.lookup(root, "skills")
        odd = store.lookup(root, "\udcff")
        assert skills is not None and odd is not None
        assert listed == [(b"README", MODE_FILE, blob.sha), (b"skills", MODE_TREE, skills.sha),
                          (b"\xff", MODE_TREE, odd.sha)]
        store.flush(root)
        assert store.raw_entries(root) == listed  # read back from the object store
        with pytest.raises(UsageError, match="not a tree"):
            store.raw_entries(blob.sha)


# -- the raw splice of a large tree (git/rawtree.py) --------------------------------

_NAME = st.sampled_from([b"a", b"a-b", b"a.b", b"a0", b"a b", b"b", b"\xc3\xa9", b"\xff"])
_MODE = st.sampled_from([0o040000, 0o100644, 0o100755, 0o120000, 0o160000, 0o644])
_SHA = st.sampled_from([b"1" * 40, b"2" * 40, b"ab" * 20])


@settings(max_examples=300, deadline=None, database=None)
@given(before=st.dictionaries(_NAME, st.tuples(_MODE, _SHA), max_size=8),
       changes=st.dictionaries(_NAME, st.none() | st.tuples(_MODE, _SHA), max_size=5))
def test_a_raw_splice_is_the_tree_dulwich_builds(
        before: dict[bytes, tuple[int, bytes]],
        changes: dict[bytes, tuple[int, bytes] | None]) -> None:
    """Entries set, removed, turned from file to directory and back, among names that
    sort apart as files and as directories: the bytes dulwich serializes."""
    from dulwich.objects import ObjectID, Tree

    from librarian.git.rawtree import splice_entries

    tree = Tree()
    for name, (mode, sha) in before.items():
        tree.add(name, mode, ObjectID(sha))
    raw = tree.as_raw_string()
    for name, change in changes.items():
        if change is None:
            if name in tree:
                del tree[name]
        else:
            tree.add(name, change[0], ObjectID(change[1]))
    assert splice_entries(raw, changes) == tree.as_raw_string()
    if raw:  # a zero-padded mode (no canonical tree): left to the caller
        assert splice_entries(b"0" + raw, changes) is None


@pytest.mark.slow
def test_with_paths_splices_large_trees_as_it_builds_small_ones(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The property above through ``with_paths``, every tree spliced however small."""
    from librarian.git import rawtree

    monkeypatch.setattr(rawtree, "SPLICED_BYTES", 0)
    test_splicing_gives_the_tree_built_whole()


def test_a_large_tree_is_looked_into_as_dulwich_reads_it(tmp_path: Path) -> None:
    """A tree of 16 KiB or more is searched in its raw entries (no ``Tree`` built): every
    name, as a file or a directory, present or not, answers as dulwich's ``Tree`` does,
    and its items listed are dulwich's."""
    from dulwich.objects import Tree

    from librarian.git.rawtree import SPLICED_BYTES

    init_library(tmp_path / "lib", "test-lib", GENERATED)
    names = [f"{stem}{n}" for n in range(300) for stem in ("a", "a-", "a.")]
    with GitStore(tmp_path / "lib") as store:
        blob = store.blob(b"x\n")
        inner = make_tree(store, [("f", TreeEntry(MODE_FILE, blob))])
        assert inner is not None
        entries = [(name, TreeEntry(MODE_TREE if i % 2 else MODE_FILE, inner if i % 2 else blob))
                   for i, name in enumerate(names)]
        root = make_tree(store, entries)
        assert root is not None
        store.flush(root)
    with GitStore(tmp_path / "lib") as store:
        kind, raw = store.dulwich_repo.object_store.get_raw(root)
        assert len(raw) >= SPLICED_BYTES
        tree = Tree.from_raw_string(kind, raw)
        assert isinstance(tree, Tree)
        for name in [*names, "a", "a-", "b", "a0/f", "a1/f", "a1/g", "a2/f"]:
            first, _, rest = name.partition("/")
            expected = tree[first.encode()] if first.encode() in tree else None
            found = store.lookup(root, name)
            if rest:
                assert found == (TreeEntry(MODE_FILE, blob) if expected is not None
                                 and expected[0] == MODE_TREE and rest == "f" else None)
            else:
                assert found == (None if expected is None
                                 else TreeEntry(expected[0], bytes(expected[1])))
        assert store.tree_items(root) == {
            e.path.decode(): TreeEntry(e.mode, bytes(e.sha)) for e in tree.iteritems()}
