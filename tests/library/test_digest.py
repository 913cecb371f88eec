"""The per-item digest is the item's git tree id in SHA-256 object format (spec §2.12)."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from dulwich.objects import Blob, Tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.helpers import (
    assert_git_consistent,
    git_text,
    make_skill,
    requires_git,
    run_main,
    write,
)

from librarian.agents.claude_manifests import GENERATED
from librarian.content.validate import load_source
from librarian.core.digest import (
    MODE_EXECUTABLE,
    MODE_FILE,
    TreeLeaf,
    blob_id,
    content_digest,
    format_digest,
    tree_id,
    tree_ids,
)
from librarian.core.model import Policy
from librarian.library.layout import Library
from librarian.ops.status import library_status

EMPTY_TREE_SHA256 = "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"
EMPTY_TREE_SHA1 = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

# -- random file sets ---------------------------------------------------------------------

# Names chosen to exercise git's ordering: "a", "a-b", "a.b", "a0" around a directory "a/".
_name = st.text(alphabet="ab.-_0", min_size=1, max_size=4).filter(
    lambda n: n not in (".", "..") and not n.startswith(".git"))
_path = st.lists(_name, min_size=1, max_size=3).map("/".join)
_file = st.tuples(st.booleans(), st.binary(max_size=40))


def _consistent(files: dict[str, tuple[bool, bytes]]) -> bool:
    """No path is both a file and a directory."""
    dirs = {"/".join(p.split("/")[:i]) for p in files for i in range(1, p.count("/") + 1)}
    return not (dirs & set(files))


file_sets = st.dictionaries(_path, _file, min_size=1, max_size=8).filter(_consistent)


def _leaves(files: dict[str, tuple[bool, bytes]], algorithm: str = "sha256") -> list[TreeLeaf]:
    return [TreeLeaf(p, x, blob_id(d, algorithm)) for p, (x, d) in files.items()]  # type: ignore[arg-type]


def _git_sha256_tree(files: dict[str, tuple[bool, bytes]]) -> str:
    """What plain git says: init --object-format=sha256, add, write-tree, rev-parse."""
    with tempfile.TemporaryDirectory() as scratch:
        repo = Path(scratch)
        git_text(repo, "init", "-q", "--object-format=sha256")
        for rel, (executable, data) in files.items():
            write(repo / "item" / rel, data, 0o755 if executable else 0o644)
        git_text(repo, "add", "-A")
        tree = git_text(repo, "write-tree").strip()
        return git_text(repo, "rev-parse", f"{tree}:item").strip()


def _dulwich_tree(files: dict[str, tuple[bool, bytes]]) -> str:
    nested: dict[str, object] = {}
    for rel, spec in files.items():
        node = nested
        parts = rel.split("/")
        for part in parts[:-1]:
            node = node.setdefault(part, {})  # type: ignore[assignment]
        node[parts[-1]] = spec

    def build(node: dict[str, object]) -> Tree:
        tree = Tree()
        for name, child in node.items():
            if isinstance(child, dict):
                tree.add(name.encode(), 0o040000, build(child).id)
            else:
                executable, data = child  # type: ignore[misc]
                tree.add(name.encode(), MODE_EXECUTABLE if executable else MODE_FILE,
                         Blob.from_string(data).id)
        return tree

    return build(nested).id.decode()


# -- properties ------------------------------------------------------------------------------


@requires_git
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(file_sets)
def test_tree_id_equals_git_sha256_tree(files: dict[str, tuple[bool, bytes]]) -> None:
    assert tree_id(_leaves(files)).hex() == _git_sha256_tree(files)


@settings(max_examples=100, deadline=None)
@given(file_sets)
def test_sha1_variant_equals_dulwich_tree_id(files: dict[str, tuple[bool, bytes]]) -> None:
    assert tree_id(_leaves(files, "sha1"), "sha1").hex() == _dulwich_tree(files)


@settings(max_examples=150, deadline=None)
@given(file_sets)
def test_both_ids_at_once_equal_each_computed_alone(files: dict[str, tuple[bool, bytes]]) -> None:
    """``tree_ids`` (one nesting, both trees) gives dulwich's SHA-1 tree id, git's blob ids
    and the SHA-256 digest that ``tree_id`` computes on its own."""
    listed = [(p, x, d) for p, (x, d) in files.items()]
    sha1, blobs, sha256 = tree_ids(listed)
    assert sha1.hex() == _dulwich_tree(files)
    assert blobs == [Blob.from_string(d).sha().digest() for _, _, d in listed]
    assert sha256 == tree_id(_leaves(files))


@settings(max_examples=100, deadline=None)
@given(file_sets.flatmap(lambda f: st.tuples(st.just(f), st.permutations(sorted(f)))))
def test_tree_id_does_not_depend_on_order(
    case: tuple[dict[str, tuple[bool, bytes]], list[str]]
) -> None:
    files, order = case
    shuffled = {path: files[path] for path in order}
    assert tree_id(_leaves(shuffled)) == tree_id(_leaves(files))
    assert content_digest((p, x, d) for p, (x, d) in shuffled.items()) == content_digest(
        (p, x, d) for p, (x, d) in files.items())


def test_known_values() -> None:
    assert tree_id([]).hex() == EMPTY_TREE_SHA256
    assert tree_id([], "sha1").hex() == EMPTY_TREE_SHA1
    assert blob_id(b"").hex() == hashlib.sha256(b"blob 0\x00").hexdigest()
    assert blob_id(b"hello\n", "sha1").hex() == "ce013625030ba8dba906f756967f9e9ca394464a"
    digest = content_digest([("SKILL.md", False, b"x")])
    assert digest.startswith("sha256:") and len(digest) == 71
    assert format_digest(b"\x00" * 32) == "sha256:" + "0" * 64


def test_executable_bit_is_content_and_changes_the_digest() -> None:
    plain = content_digest([("run.sh", False, b"#!/bin/sh\n")])
    executable = content_digest([("run.sh", True, b"#!/bin/sh\n")])
    assert plain != executable


# -- the digest librarian reports, cross-checked with plain git -------------------------------


@requires_git
def test_retained_digest_is_reproducible_with_plain_git(
    library: Path, sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = make_skill(sources, "ordering", extra_files={
        "a.b": "dot\n", "a-b": "dash\n", "a/inner.txt": "in a dir\n", "a0": "zero\n",
        "scripts/run.sh": (b"#!/bin/sh\necho hi\n", 0o755),
        "assets/bin.dat": bytes(range(256)),
        "crlf.txt": b"windows\r\nline endings\r\n",
        "r\u00e9sum\u00e9/\u00fcber.md": "unicode names\n",
        "empty.txt": b"",
    })
    receipt = run_main(capsys, "--library", str(library), "retain", str(src), "--json").json
    assert_git_consistent(library)

    # Reproduce it from the retained copy with nothing but git.
    repo = tmp_path / "sha256-repo"
    repo.mkdir()
    git_text(repo, "init", "-q", "--object-format=sha256")
    shutil.copytree(library / "skills" / "ordering", repo / "ordering")
    git_text(repo, "add", "-A")
    tree = git_text(repo, "write-tree").strip()
    expected = "sha256:" + git_text(repo, "rev-parse", f"{tree}:ordering").strip()
    assert receipt["digest"] == expected

    # The same digest everywhere librarian shows it.
    items = library_status(Library(library, GENERATED)).items
    status = {i.path: i for i in items}["skills/ordering"]
    assert status.digest == status.committed == expected
    inspected = run_main(capsys, "--library", str(library), "inspect", "--json").json
    assert {i["path"]: i["digest"] for i in inspected["items"]}["skills/ordering"] == expected
    # And the library's own (SHA-1) tree for the item is what git computes for it.
    sha1_tree = git_text(library, "rev-parse", "HEAD:skills/ordering").strip()
    assert sha1_tree == _dulwich_tree(_files_of(library / "skills" / "ordering"))


def _files_of(root: Path) -> dict[str, tuple[bool, bytes]]:
    return {
        path.relative_to(root).as_posix(): (bool(path.stat().st_mode & 0o100), path.read_bytes())
        for path in sorted(root.rglob("*")) if path.is_file()
    }


def test_digest_ignores_timestamps_and_other_permission_bits(sources: Path) -> None:
    src = make_skill(sources, "stable", extra_files={"run.sh": (b"#!/bin/sh\n", 0o755),
                                                     "doc.md": "doc\n"})
    first = load_source(src, Policy()).digest
    (src / "doc.md").chmod(0o664)
    (src / "run.sh").chmod(0o700)
    for path in src.rglob("*"):
        os.utime(path, (1_234_567_890, 1_234_567_890))
    assert load_source(src, Policy()).digest == first
    (src / "doc.md").chmod(0o744)  # u+x: now it is content
    assert load_source(src, Policy()).digest != first
