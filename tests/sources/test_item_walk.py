"""``sources.upstream.find_item_trees``: every manifest directory of a tree, depth first with
each directory's entries in name order as text, walked one directory's children at a time."""

from __future__ import annotations

from pathlib import Path

from dulwich.objects import Blob, Tree
from dulwich.repo import Repo
from hypothesis import given, settings
from hypothesis import strategies as st

from librarian.git.repo import GitStore
from librarian.sources.upstream import find_item_trees

MODE_TREE, MODE_FILE = 0o040000, 0o100644


def _tree(repo: Repo, node: dict[bytes, object]) -> bytes:
    tree = Tree()
    for name, child in node.items():
        if isinstance(child, dict):
            tree.add(name, MODE_TREE, _tree(repo, child))
        else:
            blob = Blob.from_string(b"x\n")
            repo.object_store.add_object(blob)
            tree.add(name, MODE_FILE, blob.id)
    repo.object_store.add_object(tree)
    return bytes(tree.id)


def _items(store: GitStore, tree: bytes) -> list[str]:
    return [path for path, _, _ in find_item_trees(store, tree)]


def test_names_that_are_not_utf8_are_ordered_as_text(tmp_path: Path) -> None:
    # As bytes: b"a" < "\ue000" (ee 80 80) < b"\xf0"; as text: "a" < "\udcf0" < "\ue000".
    names = [b"a", "\ue000".encode(), b"\xf0"]
    with Repo.init(str(tmp_path), mkdir=False) as repo:
        root = _tree(repo, {b"skills": {n: {b"SKILL.md": b""} for n in names}})
    with GitStore(tmp_path) as store:
        found = _items(store, root)
    assert found == ["skills/a", "skills/\udcf0", "skills/\ue000"]


_NAME = st.sampled_from([b"a", b"b", b"ab", b"a-b", b"z0", "\u00e9".encode(), b"\xff", b"c"])
_NODE = st.recursive(st.just({b"SKILL.md": b""}) | st.just({b"README": b""}),
                     lambda inner: st.dictionaries(_NAME, inner, min_size=1, max_size=4),
                     max_leaves=12)


@settings(max_examples=60, deadline=None)
@given(_NODE)
def test_every_manifest_directory_once_in_path_order(node: dict[bytes, object]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as where:
        with Repo.init(where, mkdir=False) as repo:
            root = _tree(repo, {b"top": node})
        with GitStore(Path(where)) as store:
            found = _items(store, root)

    def expected(prefix: str, here: dict[bytes, object]) -> list[str]:
        if prefix and b"SKILL.md" in here:
            return [prefix]
        out = []
        for text, child in sorted((n.decode("utf-8", "surrogateescape"), c)
                                  for n, c in here.items() if isinstance(c, dict)):
            out += expected(f"{prefix}/{text}" if prefix else text, child)
        return out

    assert found == expected("", {b"top": node})
