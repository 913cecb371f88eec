"""librarian.git.index against a real git binary and real repositories.

The oracle for every splice is git itself: the same change staged by ``git add -A -- <paths>``
on the same starting index, in the same work tree (so inode, device and ctime agree), must give
byte-for-byte the same ``git ls-files -s --debug`` output as the splice.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from dulwich.index import commit_tree, read_index
from dulwich.objects import Blob, Commit
from dulwich.refs import Ref
from dulwich.repo import Repo
from hypothesis import given, settings
from hypothesis import strategies as st

from librarian.git import indexscan
from librarian.git.index import (
    IndexEntry,
    IndexFormatError,
    IndexLockedError,
    build_index,
    splice_index,
)
from librarian.git.indexscan import read_index as scan_records
from librarian.git.indexscan import read_index_paths

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git binary")

# A fixed past mtime (with nanoseconds) keeps entries out of git's racy window, where git
# would smudge the cached size to 0 and the comparison with our entries would differ.
PAST_NS = 1_600_000_000_123_456_789
PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n[gc]\n\tauto = 0\n"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**clean, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}


class Work:
    """A work tree created by dulwich, driven by the git binary."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root, self.env = root, env
        root.mkdir()
        with Repo.init(str(root)):
            pass
        self.index = root / ".git" / "index"

    def git(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(
            ["git", *args], cwd=self.root, env=self.env, capture_output=True, text=True
        )
        if check and done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
        return done.stdout

    def write(self, rel: str, data: bytes, *, executable: bool = False, past: bool = True) -> None:
        # dir_fd-relative calls, so paths of 4,095 bytes stay under PATH_MAX.
        root_fd = os.open(self.root, os.O_RDONLY)
        try:
            parts = rel.split("/")
            for depth in range(1, len(parts)):
                try:
                    os.mkdir("/".join(parts[:depth]), dir_fd=root_fd)
                except FileExistsError:
                    pass
            with open(rel, "wb", opener=lambda p, f: os.open(p, f, 0o644, dir_fd=root_fd)) as fh:
                fh.write(data)
            os.chmod(rel, 0o755 if executable else 0o644, dir_fd=root_fd)
            if past:
                os.utime(rel, ns=(PAST_NS, PAST_NS), dir_fd=root_fd)
        finally:
            os.close(root_fd)

    def entry(self, rel: str) -> IndexEntry:
        root_fd = os.open(self.root, os.O_RDONLY)
        try:
            st = os.lstat(rel, dir_fd=root_fd)
            with open(rel, "rb", opener=lambda p, f: os.open(p, f, dir_fd=root_fd)) as fh:
                data = fh.read()
        finally:
            os.close(root_fd)
        sha = hashlib.sha1(b"blob %d\0" % len(data) + data).digest()
        return IndexEntry(rel, sha, 0o100755 if st.st_mode & 0o100 else 0o100644, st)

    def ls(self) -> str:
        return self.git("ls-files", "-s", "--debug")

    def commit_all(self) -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "base")

    def assert_clean(self) -> None:
        assert self.git("diff-files") == ""  # cached stat data matches the files, no refresh
        assert self.git("status", "--porcelain", "--untracked-files=all") == ""
        assert self.git("diff") == ""
        self.git("fsck", "--strict", "--no-dangling")


def spliced_like_git(work: Work, remove: list[str], add: list[str]) -> str:
    """Splice, check it equals git staging the same paths, and return ls-files output."""
    before = work.index.read_bytes()
    splice_index(work.index, remove_prefixes=remove, add=[work.entry(p) for p in add])
    ours, ours_bytes = work.ls(), work.index.read_bytes()
    work.index.write_bytes(before)
    work.git("add", "-A", "--", *remove, *add)
    theirs = work.ls()
    work.index.write_bytes(ours_bytes)
    assert ours == theirs
    assert read_index_paths(work.index) == work.git("ls-files", "-z").split("\0")[:-1]
    assert not (work.index.parent / "index.lock").exists()
    return ours


def debug_blocks(ls_debug: str) -> dict[str, str]:
    """``git ls-files -s --debug`` output keyed by path (for a conflict, the last stage)."""
    blocks: dict[str, str] = {}
    for chunk in _split_entries(ls_debug):
        blocks[chunk.split("\t", 1)[1].split("\n", 1)[0]] = chunk
    return blocks


def _split_entries(ls_debug: str) -> list[str]:
    chunks: list[str] = []
    for line in ls_debug.splitlines():
        if line.startswith(" "):
            chunks[-1] += "\n" + line
        else:
            chunks.append(line)
    return chunks


def extension_signatures(index: Path) -> list[bytes]:
    data = index.read_bytes()
    version, count = struct.unpack_from(">LL", data, 4)
    pos, sigs = indexscan._scan_v2(data, count, version)[-1], []
    while pos < len(data) - 20:
        sigs.append(data[pos : pos + 4])
        pos += 8 + struct.unpack_from(">L", data, pos + 4)[0]
    return sigs


@pytest.fixture
def work(tmp_path: Path, env: dict[str, str]) -> Work:
    w = Work(tmp_path / "lib", env)
    for rel in ("README.md", "items/alpha/manifest.yaml", "items/alpha/prompt.md",
                "items/omega/manifest.yaml", "tools.yaml"):  # fmt: skip
        w.write(rel, f"{rel}\n".encode())
    w.write("items/alpha/run.sh", b"#!/bin/sh\n", executable=True)
    w.commit_all()
    return w


NEW_ITEM = ["items/mid/manifest.yaml", "items/mid/prompt.md", "items/mid/scripts/a.sh",
            "items/mid/scripts/b.py", "items/mid/tests/case.yaml"]  # fmt: skip


def test_splice_new_directory_then_dulwich_commit_is_clean(work: Work) -> None:
    for i, rel in enumerate(NEW_ITEM):
        work.write(rel, b"content %d\n" % i, executable=rel.endswith(".sh"))
    spliced_like_git(work, ["items/mid"], NEW_ITEM)
    assert work.index.read_bytes()[:8] == b"DIRC\0\0\0\2"
    # Commit the same tree straight into the object store, as librarian does.
    with Repo(str(work.root)) as repo:
        head = repo.head()
        blobs = []
        for e in read_index_paths(work.index):
            data = (work.root / e).read_bytes()
            blob = Blob.from_string(data)
            repo.object_store.add_object(blob)
            mode = 0o100755 if os.access(work.root / e, os.X_OK) else 0o100644
            blobs.append((e.encode(), blob.id, mode))
        commit = Commit()
        commit.tree = commit_tree(repo.object_store, blobs)
        commit.parents = [head]
        commit.author = commit.committer = b"T <t@example.com>"
        commit.author_time = commit.commit_time = 1_600_000_000
        commit.author_timezone = commit.commit_timezone = 0
        commit.message = b"add mid\n"
        repo.object_store.add_object(commit)
        branch = repo.refs.follow(Ref(b"HEAD"))[0][-1]  # dulwich's init chose the branch name
        repo.refs[branch] = commit.id
    assert work.git("write-tree").strip() == commit.tree.decode()
    work.assert_clean()
    assert work.git("diff", "--cached") == ""


def test_splice_then_git_commit_is_clean(work: Work) -> None:
    for rel in NEW_ITEM:
        work.write(rel, rel.encode())
    spliced_like_git(work, [], NEW_ITEM)
    work.git("commit", "-q", "-m", "add mid")
    work.assert_clean()


def test_fresh_racy_files_stay_clean(work: Work) -> None:
    # Files written this very second are "racily clean" for git: it must re-check content,
    # find it unchanged, and report nothing.
    for rel in NEW_ITEM:
        work.write(rel, rel.encode(), past=False)
    work.git("hash-object", "-w", *NEW_ITEM)  # the blobs librarian would have stored
    splice_index(work.index, remove_prefixes=[], add=[work.entry(p) for p in NEW_ITEM])
    work.git("commit", "-q", "-m", "fresh")
    work.assert_clean()


def test_remove_directory_and_file_prefixes(work: Work) -> None:
    for rel in ("items/alpha-x/f", "items/alpha.txt", "items/alpha0/f", "items/alphabet/f",
                "tools.yaml.bak"):  # fmt: skip
        work.write(rel, b"neighbour\n")
    work.commit_all()
    shutil.rmtree(work.root / "items" / "alpha")
    (work.root / "tools.yaml").unlink()
    out = spliced_like_git(work, ["items/alpha", "tools.yaml"], [])
    assert "items/alpha/" not in out and "\ttools.yaml\n" not in out
    for kept in ("items/alpha-x/f", "items/alpha.txt", "items/alpha0/f", "tools.yaml.bak"):
        assert kept in read_index_paths(work.index)
    work.git("commit", "-q", "-m", "rm")
    work.assert_clean()


def test_replace_file_same_path(work: Work) -> None:
    work.write("items/alpha/prompt.md", b"new prompt, longer than before\n")
    work.write("items/alpha/run.sh", b"#!/bin/sh\necho\n", executable=False)
    spliced_like_git(work, [], ["items/alpha/prompt.md", "items/alpha/run.sh"])
    work.git("commit", "-q", "-m", "edit")
    work.assert_clean()
    # Replacing a whole directory: old files gone, new ones in, one kept name.
    (work.root / "items/alpha/manifest.yaml").unlink()
    work.write("items/alpha/new.md", b"n\n")
    work.write("items/alpha/prompt.md", b"third\n")
    spliced_like_git(work, ["items/alpha"], ["items/alpha/new.md", "items/alpha/prompt.md",
                                             "items/alpha/run.sh"])  # fmt: skip
    work.git("commit", "-q", "-m", "replace")
    work.assert_clean()


@pytest.mark.parametrize(
    "added",
    [
        ["!first", "0/zero"],  # before everything
        ["a/b", "a/c/d"],  # between "a-b"/"a.b" and "a0", the tricky spot
        ["a.a", "a-c", "a0x", "a1"],  # middle, around the neighbours
        ["zz/last", "~end"],  # after everything
        ["!first", "a/b", "~end"],  # all at once
    ],
)
def test_sort_order_matches_git(work: Work, added: list[str]) -> None:
    for rel in ("a-b", "a.b", "a0", "b/a", "a-b-c/x"):
        work.write(rel, rel.encode())
    work.commit_all()
    for rel in added:
        work.write(rel, rel.encode())
    out = spliced_like_git(work, [], added)
    assert out == work.ls()
    work.git("commit", "-q", "-m", "sorted")
    work.assert_clean()


def test_long_paths(work: Work) -> None:
    # 4,095 bytes: the flags hold 0xFFF and the name ends at its NUL.
    long_path = "/".join(["d" * 200] * 20 + ["f" * 75])  # components within NAME_MAX
    assert len(long_path) == 4095
    work.write(long_path, b"deep\n")
    work.write("long/" + "e" * 200, b"x\n")
    work.git("add", "long")
    work.write("zz/after", b"after\n")
    spliced_like_git(work, [], ["zz/after"])  # skip over git's long entry
    work.write(long_path, b"deeper\n")
    shutil.rmtree(work.root / "items" / "omega")
    spliced_like_git(work, ["items/omega"], [long_path])  # encode our own long entry
    work.git("commit", "-q", "-m", "long")
    work.assert_clean()


def test_index_only_name_over_4k(work: Work) -> None:
    name = "/".join(["e" * 200] * 25)  # 5,024 bytes: git stores 0xFFF, then the full name
    blob = work.git("hash-object", "-w", "README.md").strip()
    work.git("update-index", "--add", "--cacheinfo", f"100644,{blob},{name}")
    work.write("items/new/f", b"f\n")
    spliced_like_git(work, [], ["items/new/f"])
    assert name in read_index_paths(work.index)
    ours = name.replace("e", "o")  # one we encode ourselves, with no file behind it
    readme = work.entry("README.md")
    splice_index(work.index, remove_prefixes=[], add=[dataclasses.replace(readme, path=ours)])
    assert f"{blob} 0\t{ours}\n" in work.git("ls-files", "-s")
    assert ours in read_index_paths(work.index)
    work.git("fsck", "--strict", "--no-dangling")


def test_v3_intent_to_add_and_skip_worktree_preserved(work: Work) -> None:
    work.write("b-later.txt", b"later\n")
    work.git("add", "-N", "b-later.txt")
    work.git("update-index", "--skip-worktree", "items/omega/manifest.yaml")
    assert work.index.read_bytes()[:8] == b"DIRC\0\0\0\3"
    untouched = ("b-later.txt", "items/omega/manifest.yaml")
    before = {p: block for p, block in debug_blocks(work.ls()).items() if p in untouched}
    assert all("flags: 2" in b or "flags: 4" in b for b in before.values())  # extended bits
    for rel in NEW_ITEM:
        work.write(rel, rel.encode())
    (work.root / "items/alpha/manifest.yaml").unlink()
    (work.root / "items/alpha/prompt.md").unlink()
    out = spliced_like_git(work, ["items/alpha"], [*NEW_ITEM, "items/alpha/run.sh"])
    assert work.index.read_bytes()[:8] == b"DIRC\0\0\0\3"
    assert {p: block for p, block in debug_blocks(out).items() if p in untouched} == before
    assert work.git("status", "--porcelain").splitlines()[0] == " A b-later.txt"


def test_conflict_stages_and_resolve_undo_preserved(work: Work) -> None:
    work.git("checkout", "-q", "-b", "other")
    work.write("tools.yaml", b"other\n")
    work.write("README.md", b"other readme\n")
    work.git("commit", "-q", "-am", "other")
    work.git("checkout", "-q", "-")
    work.write("tools.yaml", b"main\n")
    work.write("README.md", b"main readme\n")
    work.git("commit", "-q", "-am", "main")
    work.git("merge", "-q", "other", check=False)
    work.write("README.md", b"resolved\n")
    work.git("add", "README.md")  # records resolve-undo (REUC)
    assert b"REUC" in extension_signatures(work.index)
    work.write("items/new/f", b"f\n")
    out = spliced_like_git(work, [], ["items/new/f"])
    assert " 1\ttools.yaml" in out and " 3\ttools.yaml" in out
    assert b"REUC" in extension_signatures(work.index)
    # Adding the conflicted path replaces all of its stages.
    work.write("tools.yaml", b"resolved\n")
    spliced_like_git(work, [], ["tools.yaml"])


def test_tree_and_untracked_caches_dropped(work: Work) -> None:
    work.git("config", "core.untrackedCache", "true")
    work.git("status")
    work.git("update-index", "--untracked-cache")
    work.git("status")
    assert {b"TREE", b"UNTR"} <= set(extension_signatures(work.index))
    work.write("items/new/f", b"f\n")
    spliced_like_git(work, [], ["items/new/f"])
    assert extension_signatures(work.index) == []
    work.git("commit", "-q", "-m", "new")
    work.assert_clean()


def test_v4_falls_back_to_dulwich(work: Work) -> None:
    work.git("update-index", "--index-version", "4")
    for rel in NEW_ITEM:
        work.write(rel, rel.encode())
    (work.root / "items/omega/manifest.yaml").unlink()
    spliced_like_git(work, ["items/omega"], NEW_ITEM)
    assert work.index.read_bytes()[:8] == b"DIRC\0\0\0\4"
    work.git("commit", "-q", "-m", "v4")
    work.assert_clean()


def test_v4_long_strip_refused_untouched(work: Work) -> None:
    # dulwich would mis-encode a v4 strip count of 128 or more; refuse rather than corrupt.
    work.write("a" * 150 + "/x", b"x\n")
    work.git("add", "-A")
    work.git("update-index", "--index-version", "4")
    assert read_index_paths(work.index)[0] == "README.md"
    before = work.index.read_bytes()
    work.write("items/new/f", b"f\n")
    with pytest.raises(IndexFormatError, match="version 4"):
        splice_index(work.index, remove_prefixes=[], add=[work.entry("items/new/f")])
    assert work.index.read_bytes() == before
    assert not (work.index.parent / "index.lock").exists()


def test_index_lock_present(work: Work) -> None:
    lock = work.index.parent / "index.lock"
    lock.write_bytes(b"someone else's")
    before = work.index.read_bytes()
    work.write("items/new/f", b"f\n")
    with pytest.raises(IndexLockedError):
        splice_index(work.index, remove_prefixes=["items"], add=[work.entry("items/new/f")])
    assert work.index.read_bytes() == before
    assert lock.read_bytes() == b"someone else's"  # never ours to remove


def test_refusals_leave_index_and_no_lock(work: Work) -> None:
    before = work.index.read_bytes()
    work.write("items/new/f", b"f\n")
    good = work.entry("items/new/f")
    bad_calls = [
        ([], [good, good]),  # same path twice
        ([], [IndexEntry("README.md/x", good.blob_sha, 0o100644, good.stat)]),  # file is a dir
        ([], [IndexEntry("items", good.blob_sha, 0o100644, good.stat)]),  # dir is a file
        ([], [good, IndexEntry("items/new/f/g", good.blob_sha, 0o100644, good.stat)]),
        ([], [IndexEntry("../x", good.blob_sha, 0o100644, good.stat)]),
        (["a//b"], []),
        ([], [IndexEntry("x", b"short", 0o100644, good.stat)]),
        ([], [IndexEntry("x", good.blob_sha, 0o100600, good.stat)]),
    ]
    for remove, add in bad_calls:
        with pytest.raises(ValueError):
            splice_index(work.index, remove_prefixes=remove, add=add)
    # Removing the directory first makes the file-for-directory swap legal.
    shutil.rmtree(work.root / "items/omega")
    work.write("items/omega", b"now a file\n")
    spliced_like_git(work, ["items/omega"], ["items/omega"])
    before = work.index.read_bytes()
    corrupt = before[:-1] + bytes([before[-1] ^ 1])
    work.index.write_bytes(corrupt)
    with pytest.raises(IndexFormatError, match="checksum"):
        splice_index(work.index, remove_prefixes=[], add=[good])
    assert work.index.read_bytes() == corrupt
    assert not (work.index.parent / "index.lock").exists()


def _with_extension(index: Path, signature: bytes, payload: bytes) -> None:
    body = index.read_bytes()[:-20] + signature + struct.pack(">L", len(payload)) + payload
    index.write_bytes(body + hashlib.sha1(body).digest())


def test_unknown_extensions(work: Work) -> None:
    _with_extension(work.index, b"ZZZZ", b"optional, dropped")
    work.write("items/new/f", b"f\n")
    spliced_like_git(work, [], ["items/new/f"])
    assert extension_signatures(work.index) == []
    _with_extension(work.index, b"abcd", b"required, not understood")
    before = work.index.read_bytes()
    with pytest.raises(IndexFormatError, match="abcd"):
        splice_index(work.index, remove_prefixes=["items/new"], add=[])
    assert work.index.read_bytes() == before
    assert not (work.index.parent / "index.lock").exists()


def test_split_index_refused(work: Work) -> None:
    work.git("update-index", "--split-index")
    before = work.index.read_bytes()
    with pytest.raises(IndexFormatError, match="split"):
        splice_index(work.index, remove_prefixes=["items/alpha"], add=[])
    assert work.index.read_bytes() == before
    assert not (work.index.parent / "index.lock").exists()


def test_sparse_index_refused(work: Work) -> None:
    work.git("sparse-checkout", "set", "--cone", "--sparse-index", "items/alpha")
    if b"sdir" not in extension_signatures(work.index):
        pytest.skip("this git did not write a sparse index")
    with pytest.raises(IndexFormatError, match="sparse"):
        splice_index(work.index, remove_prefixes=["items/alpha"], add=[])


def test_missing_index_and_build_index(work: Work) -> None:
    paths = work.git("ls-files", "-z").split("\0")[:-1]
    work.index.unlink()
    splice_index(work.index, remove_prefixes=["nothing"], add=[work.entry(p) for p in paths])
    assert work.index.read_bytes()[:8] == b"DIRC\0\0\0\2"
    ours = work.ls()
    work.index.unlink()
    build_index(work.index, [work.entry(p) for p in reversed(paths)])
    assert work.ls() == ours
    work.index.unlink()
    work.git("add", "-A")
    assert work.ls() == ours
    work.assert_clean()
    build_index(work.index, [])
    assert read_index_paths(work.index) == []


SEGMENTS = st.sampled_from(["a", "a-b", "a.b", "a0", "b", "é", "a b", "Z", "_"])
PATHS = st.lists(SEGMENTS, min_size=1, max_size=3).map("/".join)


def _model_entry(path: str, tag: int) -> IndexEntry:
    ns = {"st_mtime_ns": tag * 10**9 + 5, "st_ctime_ns": tag * 10**9 + 7}
    st_ = os.stat_result((0o100644, tag, 1, 1, 0, 0, tag, tag, tag, tag), ns)
    return IndexEntry(path, hashlib.sha1(f"{path}{tag}".encode()).digest(), 0o100644, st_)


def _without_clashes(paths: list[str]) -> list[str]:
    kept: list[str] = []
    for p in sorted(set(paths)):
        if not any(p.startswith(k + "/") or k.startswith(p + "/") for k in kept):
            kept.append(p)
    return kept


@pytest.mark.parametrize("lookups", [0, 10**9], ids=["binary-search", "names-read"])
@settings(max_examples=150, deadline=None)
@given(old=st.lists(PATHS, max_size=25), remove=st.lists(PATHS, max_size=3),
       add=st.lists(PATHS, max_size=6))  # fmt: skip
def test_splice_agrees_with_a_model_and_dulwich_reader(
    tmp_path_factory: pytest.TempPathFactory, old: list[str], remove: list[str], add: list[str],
    lookups: int,
) -> None:
    """Both ways of finding names in the old index (searched in the file, or read whole
    first, as a plan of many adds does) give the model's index."""
    from librarian.git import index as gitindex

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gitindex, "LOAD_NAMES_PER_ADD", lookups)
        _splice_against_the_model(tmp_path_factory, old, remove, add)


def _splice_against_the_model(
    tmp_path_factory: pytest.TempPathFactory, old: list[str], remove: list[str], add: list[str]
) -> None:
    index = tmp_path_factory.mktemp("model") / "index"
    old_paths = _without_clashes(old)
    build_index(index, [_model_entry(p, 1) for p in old_paths])
    survivors = {
        p: 1 for p in old_paths if not any(p == r or p.startswith(r + "/") for r in remove)
    }
    add_paths = _without_clashes(add)
    expected = {**survivors, **{p: 2 for p in add_paths}}
    clash = len(_without_clashes(list(expected))) != len(expected)
    before = index.read_bytes()
    if clash:
        with pytest.raises(ValueError, match="clash"):
            splice_index(index, remove_prefixes=remove, add=[_model_entry(p, 2) for p in add_paths])
        assert index.read_bytes() == before
        return
    splice_index(index, remove_prefixes=remove, add=[_model_entry(p, 2) for p in add_paths])
    want = sorted((p.encode(), _model_entry(p, tag).blob_sha.hex()) for p, tag in expected.items())
    with index.open("rb") as fh:
        got = [(e.name, e.sha.decode()) for e in read_index(fh)]  # an independent parser
    assert got == want
    assert read_index_paths(index) == [p.decode() for p, _ in want]


def test_benchmark_script_runs() -> None:
    # Exercised for correctness only; the figure is read off a full-size run by hand.
    done = subprocess.run(
        [sys.executable, str(PROJECT / "bench" / "index_splice.py"), "500"],
        capture_output=True, text=True, check=True, cwd=PROJECT,
    )  # fmt: skip
    assert "splice (add a new 5-file dir)" in done.stdout


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_read_index_agrees_with_git_ls_files_on_a_conflicted_index(
    tmp_path: Path, version: str
) -> None:
    """Modes, blob ids and merge stages as git lists them, a conflicted path per stage."""
    import subprocess

    def run(*args: str, check: bool = True) -> str:
        return subprocess.run(["git", "-C", str(tmp_path), *args], check=check,
                              capture_output=True, text=True, env={
                                  "PATH": os.environ["PATH"], "HOME": str(tmp_path),
                                  "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                                  "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
                              }).stdout

    run("init", "-q", "-b", "main")
    (tmp_path / "same.txt").write_text("same\n")
    (tmp_path / "both.txt").write_text("base\n")
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")
    (tmp_path / "run.sh").chmod(0o755)
    run("add", "-A")
    run("commit", "-qm", "base")
    run("checkout", "-qb", "other")
    (tmp_path / "both.txt").write_text("theirs\n")
    run("commit", "-qam", "theirs")
    run("checkout", "-q", "main")
    (tmp_path / "both.txt").write_text("ours\n")
    run("commit", "-qam", "ours")
    run("merge", "-q", "other", check=False)  # conflicts in both.txt
    run("update-index", "--index-version", version)
    expected = []
    for line in run("ls-files", "-s").splitlines():
        info, path = line.split("\t")
        mode, sha, stage = info.split()
        expected.append((path, int(mode, 8), sha.encode(), int(stage)))
    got = [(r.path, r.mode, r.sha, r.stage) for r in scan_records(tmp_path / ".git" / "index")]
    assert got == expected
    assert {r.stage for r in scan_records(tmp_path / ".git" / "index")} == {0, 1, 2, 3}


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read the index a few entries at a time (the smallest window that holds one entry
    with a 4,095-byte name): every entry boundary then meets a window boundary somewhere."""
    from librarian.git import index as gitindex

    for module in (indexscan, gitindex):
        monkeypatch.setattr(module, "WINDOW", 64 + 4095 + 8 + 13)


@pytest.mark.usefixtures("small_windows")
@pytest.mark.parametrize("lookups", [0, 10**9], ids=["binary-search", "names-read"])
def test_splice_across_windows_matches_git(
        work: Work, monkeypatch: pytest.MonkeyPatch, lookups: int) -> None:
    from librarian.git import index as gitindex

    monkeypatch.setattr(gitindex, "LOAD_NAMES_PER_ADD", lookups)
    for number in range(400):  # ~40 KB of entries: a dozen windows
        work.write(f"items/n{number:03d}/{'x' * (number % 37)}.md", b"%d\n" % number)
    work.write("/".join(["d" * 200] * 20 + ["f" * 75]), b"long\n")  # 0xFFF in the flags
    work.commit_all()
    name = "/".join(["e" * 200] * 25)  # longer than a window's share of a name
    blob = work.git("hash-object", "-w", "README.md").strip()
    work.git("update-index", "--add", "--cacheinfo", f"100644,{blob},{name}")
    for number in (0, 17, 199, 399):
        shutil.rmtree(work.root / "items" / f"n{number:03d}")
    work.write("items/n200/new.md", b"new\n")
    work.write("zz/last", b"last\n")
    spliced_like_git(work, ["items/n000", "items/n017", "items/n199", "items/n399"],
                     ["items/n200/new.md", "zz/last"])


def test_an_index_changed_while_it_is_rewritten_is_refused(
        work: Work, monkeypatch: pytest.MonkeyPatch) -> None:
    from librarian.git import index as gitindex

    scanned = gitindex._splice_raw

    def scan_then_change(*args: object) -> object:
        chunks = scanned(*args)  # type: ignore[arg-type]
        data = bytearray(work.index.read_bytes())
        data[-30] ^= 1  # same size, other bytes, in place
        with work.index.open("r+b") as fh:
            fh.write(data)
        return chunks

    monkeypatch.setattr(gitindex, "_splice_raw", scan_then_change)
    work.write("items/new/f", b"f\n")
    with pytest.raises(IndexFormatError, match="changed while it was rewritten"):
        splice_index(work.index, remove_prefixes=[], add=[work.entry("items/new/f")])
    assert not (work.index.parent / "index.lock").exists()


def _model_bad_path(name: bytes) -> bool:
    """git's rule for an index path, component by component (the model of _encode_path)."""
    return b"\0" in name or any(p in (b"", b".", b"..") or p.lower() == b".git"
                                for p in name.split(b"/"))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["", ".", "..", ".git", ".GiT", ".gitx", "a", "..a", "g.it",
                                 "\0", "é", ".git.", " .git", "\n", ".git\n", "..\n"]),
                min_size=1, max_size=4))
def test_index_paths_are_refused_by_git_s_component_rule(parts: list[str]) -> None:
    from librarian.git.index import _encode_path

    path = "/".join(parts)
    if _model_bad_path(os.fsencode(path)):
        with pytest.raises(ValueError, match="not a valid index path"):
            _encode_path(path)
    else:
        assert _encode_path(path) == os.fsencode(path)
