"""git.fsck agrees with `git fsck --strict`, object by object: each case writes raw
objects into an empty repository with `git hash-object --literally`, and librarian's judge
must refuse exactly when git's fsck fails (git's notes, such as badFilemode, are not
failures)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.helpers import GIT, git

from librarian.git.fsck import BLOB, COMMIT, TAG, TREE, Judge

pytestmark = pytest.mark.skipif(GIT is None, reason="needs the git binary as a judge")
TYPES = {TREE: "tree", COMMIT: "commit", TAG: "tag", BLOB: "blob"}
X = "587be6b4c3f93f93c489c0111bba5596147a26cb"  # the blob "x\n"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
IDENT = b"A U Thor <a@example.org> 1700000000 +0100"


def entry(mode: bytes, name: bytes, sha: str = X) -> bytes:
    return mode + b" " + name + b"\0" + bytes.fromhex(sha)


def commit(*headers: bytes, message: bytes = b"m\n") -> bytes:
    return b"".join(h + b"\n" for h in headers) + b"\n" + message


def ok_commit(**kw: bytes) -> bytes:
    return commit(b"tree " + EMPTY_TREE.encode(), b"author " + kw.get("author", IDENT),
                  b"committer " + kw.get("committer", IDENT), message=kw.get("message", b"m\n"))


def tag(*lines: bytes) -> bytes:
    return b"".join(line + b"\n" for line in lines) + b"\nmsg\n"


def named(content: bytes, name: bytes = b".gitmodules") -> list[tuple[int, Any]]:
    """A blob, and a tree naming it ``name``."""
    return [(BLOB, content), (TREE, lambda blob: entry(b"100644", name, blob))]


GITMODULES = b'[submodule "a"]\n\tpath = a\n\turl = https://example.org/a.git\n'
CASES: dict[str, list[tuple[int, Any]]] = {
    "tree ok": [(TREE, entry(b"100644", b"a") + entry(b"40000", b"b", EMPTY_TREE))],
    "tree 100664 (a note)": [(TREE, entry(b"100664", b"a"))],
    "tree symlink, gitlink": [(TREE, entry(b"120000", b"a") + entry(b"160000", b"b"))],
    "tree zero padded": [(TREE, entry(b"040000", b"a", EMPTY_TREE))],
    "tree duplicate": [(TREE, entry(b"100644", b"a") + entry(b"100644", b"a"))],
    "tree unsorted": [(TREE, entry(b"100644", b"b") + entry(b"100644", b"a"))],
    "tree dir sorts as name/": [(TREE, entry(b"40000", b"a", EMPTY_TREE)
                                 + entry(b"100644", b"a.b"))],
    "tree file and dir one name": [(TREE, entry(b"100644", b"a")
                                    + entry(b"40000", b"a", EMPTY_TREE))],
    "tree null sha": [(TREE, entry(b"100644", b"a", "0" * 40))],
    "tree .gitx": [(TREE, entry(b"100644", b".gitx"))],
    "tree git~1 file": [(TREE, entry(b"100644", b"git~1"))],
    "tree .Git dir": [(TREE, entry(b"40000", b".Git", EMPTY_TREE))],
    "tree hfs .git": [(TREE, entry(b"40000", ".gi\u200ct".encode(), EMPTY_TREE))],
    "tree ntfs stream": [(TREE, entry(b"40000", b".git::$INDEX_ALLOCATION", EMPTY_TREE))],
    "tree .gitmodules ok": named(GITMODULES),
    "tree .gitmodules symlink": [(TREE, entry(b"120000", b".gitmodules"))],
    "tree GITMOD~1 symlink": [(TREE, entry(b"120000", b"GITMOD~1"))],
    "tree .gitmodules url option": named(
        b'[submodule "a"]\n\tpath = a\n\turl = -oProxyCommand=evil\n'),
    "tree .gitmodules url newline": named(
        b'[submodule "a"]\n\tpath = a\n\turl = ./a%0ahost=evil\n'),
    "tree .gitmodules name ..": named(
        b'[submodule "../../x"]\n\tpath = a\n\turl = https://e.org/a\n'),
    "tree .gitmodules path option": named(
        b'[submodule "a"]\n\tpath = -x\n\turl = https://e.org/a\n'),
    "tree .gitmodules update command": named(
        b'[submodule "a"]\n\tpath = a\n\tupdate = !rm -rf /\n'),
    "tree .gitmodules as GITMOD~1": named(
        b'[submodule "a"]\n\tpath = a\n\turl = -oProxyCommand=evil\n', b"GITMOD~1"),
    "tree .gitattributes long line": named(b"a" * 3000 + b" text\n", b".gitattributes"),
    "tree .gitattributes ok": named(b"* -text\n", b".gitattributes"),
    "tree .gitattributes symlink (a note)": [(TREE, entry(b"120000", b".gitattributes"))],
    "commit ok": [(COMMIT, ok_commit())],
    "commit with parent and extra header": [(COMMIT, commit(
        b"tree " + EMPTY_TREE.encode(), b"parent " + b"1" * 40, b"author " + IDENT,
        b"committer " + IDENT, b"encoding UTF-8"))],
    "commit bad tz": [(COMMIT, ok_commit(author=b"A <a@b> 0 +00000"))],
    "commit no tz": [(COMMIT, ok_commit(author=b"A <a@b> 0"))],
    "commit zero padded date": [(COMMIT, ok_commit(author=b"A <a@b> 0123 +0000"))],
    "commit date 0": [(COMMIT, ok_commit(author=b"A <a@b> 0 +0000"))],
    "commit no space before email": [(COMMIT, ok_commit(author=b"A<a@b> 0 +0000"))],
    "commit no name": [(COMMIT, ok_commit(author=b"<a@b> 0 +0000"))],
    "commit bad email": [(COMMIT, ok_commit(author=b"A <a@b 0 +0000"))],
    "commit no email": [(COMMIT, ok_commit(author=b"A 0 +0000"))],
    "commit bad name": [(COMMIT, ok_commit(author=b"A > <a@b> 0 +0000"))],
    "commit no space before date": [(COMMIT, ok_commit(author=b"A <a@b>0 +0000"))],
    "commit date overflow": [(COMMIT, ok_commit(author=b"A <a@b> 99999999999999999999 +0000"))],
    "commit no committer": [(COMMIT, commit(b"tree " + EMPTY_TREE.encode(),
                                            b"author " + IDENT))],
    "commit no author": [(COMMIT, commit(b"tree " + EMPTY_TREE.encode(),
                                         b"committer " + IDENT))],
    "commit two authors": [(COMMIT, commit(b"tree " + EMPTY_TREE.encode(), b"author " + IDENT,
                                           b"author " + IDENT, b"committer " + IDENT))],
    "commit bad tree id": [(COMMIT, commit(b"tree 123", b"author " + IDENT,
                                           b"committer " + IDENT))],
    "commit bad parent id": [(COMMIT, commit(b"tree " + EMPTY_TREE.encode(), b"parent x",
                                             b"author " + IDENT, b"committer " + IDENT))],
    "commit nul in message": [(COMMIT, ok_commit(message=b"m\0x\n"))],
    "commit no body": [(COMMIT, b"tree " + EMPTY_TREE.encode() + b"\nauthor " + IDENT
                        + b"\ncommitter " + IDENT + b"\n")],
    "tag ok": [(TAG, tag(b"object " + X.encode(), b"type blob", b"tag v1", b"tagger " + IDENT))],
    "tag no tagger (a note)": [(TAG, tag(b"object " + X.encode(), b"type blob", b"tag v1"))],
    "tag bad name (a note)": [(TAG, tag(b"object " + X.encode(), b"type blob", b"tag a..b",
                                        b"tagger " + IDENT))],
    "tag bad type": [(TAG, tag(b"object " + X.encode(), b"type nope", b"tag v1",
                               b"tagger " + IDENT))],
    "tag no tag line": [(TAG, tag(b"object " + X.encode(), b"type blob",
                                  b"tagger " + IDENT))],
    "tag bad tagger": [(TAG, tag(b"object " + X.encode(), b"type blob", b"tag v1",
                                 b"tagger A <a@b> 0 +000"))],
    "tag bad object id": [(TAG, tag(b"object xyz", b"type blob", b"tag v1",
                                    b"tagger " + IDENT))],
}


def _write(repo: Path, type_num: int, raw: bytes) -> str:
    out = subprocess.run([GIT or "git", "hash-object", "--literally", "-w", "--stdin", "-t",
                          TYPES[type_num]], cwd=repo, input=raw, capture_output=True,
                         check=True)
    return out.stdout.decode().strip()


@pytest.mark.parametrize("case", list(CASES))
def test_the_judge_refuses_exactly_what_git_fsck_strict_refuses(case: str,
                                                                tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    git(tmp_path, "init", "-q", "--bare", str(repo))
    stored = {X: (BLOB, b"x\n"), EMPTY_TREE: (TREE, b"")}
    for sha, (kind, raw) in stored.items():
        assert _write(repo, kind, raw) == sha
    judge = Judge()
    last_blob = ""
    for kind, made in CASES[case]:
        raw = made(last_blob) if callable(made) else made
        sha = _write(repo, kind, raw)
        stored[sha] = (kind, raw)
        if kind == BLOB:
            last_blob = sha
        else:
            judge.add(kind, sha.encode(), raw)
    judge.finish(lambda sha: stored.get(sha.decode()))
    fsck = git(repo, "fsck", "--strict", "--no-dangling", check=False)
    finding = judge.first()
    refused_by_git = fsck.returncode != 0
    assert (finding is not None) == refused_by_git, (fsck.stderr.decode(), finding)
    if finding is not None:  # git names the rule, or cannot parse the object at all
        said = fsck.stderr.decode()
        assert finding.check in said or "could not be parsed" in said, (said, finding)


# -- names, many at a time, against one `git fsck --strict` ---------------------------

_PIECES = [".", "git", "GIT", "Git", "g", "i", "t", "~1", "~2", "~", "1", "\\", " ", ":",
           "$INDEX_ALLOCATION", "\u200c", "\u200d", "\ufeff", "modules", "MODULES", "attributes",
           "gitmod", "gi7eba", "gitatt", "gi7d29", "a", "é", "/"]
_MODES = [b"100644", b"40000", b"120000"]
ON_THE_OBJECT = frozenset({"gitmodulesBlob", "gitmodulesName", "gitmodulesUrl", "gitmodulesPath",
                           "gitmodulesUpdate", "gitattributesBlob", "gitattributesLarge",
                           "gitattributesLineLength"})


def _loose(repo: Path, kind: str, raw: bytes) -> str:
    """Write a loose object directly (any bytes at all, as git would store them)."""
    import hashlib
    import zlib

    data = kind.encode() + b" " + str(len(raw)).encode() + b"\0" + raw
    sha = hashlib.sha1(data).hexdigest()
    path = repo / "objects" / sha[:2] / sha[2:]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(zlib.compress(data))
    return sha


@settings(max_examples=8, deadline=None)
@example(entries=[(["a"], b"100644")] * 19 + [([".", "git", "modules", "/"], b"40000")])
@given(entries=st.lists(st.tuples(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=5),
                                  st.sampled_from(_MODES)), min_size=20, max_size=40))
def test_names_are_judged_as_git_fsck_judges_them(
        entries: list[tuple[list[str], bytes]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    repo = tmp_path_factory.mktemp("names") / "r.git"
    git(repo.parent, "init", "-q", "--bare", str(repo))
    stored = {X: (BLOB, b"x\n"), EMPTY_TREE: (TREE, b"")}
    _loose(repo, "blob", b"x\n")
    _loose(repo, "tree", b"")
    judge, trees = Judge(), {}
    for pieces, mode in entries:
        name = "".join(pieces).encode()
        raw = entry(mode, name, EMPTY_TREE if mode == b"40000" else X)
        sha = _loose(repo, "tree", raw)
        trees[sha] = name
        stored[sha] = (TREE, raw)
        judge.add(TREE, sha.encode(), raw)
    judge.finish(lambda sha: stored.get(sha.decode()))
    fsck = git(repo, "fsck", "--strict", "--no-dangling", check=False).stderr.decode()
    # git names a bad .gitmodules / .gitattributes on the object it reads, not the tree.
    by_git = re.findall(r"^error in \w+ ([0-9a-f]{40}): (\w+):", fsck, re.M)
    trees_by_git = {sha for sha, check in by_git if check not in ON_THE_OBJECT}
    objects_by_git = {check for _, check in by_git if check in ON_THE_OBJECT}
    findings = judge.findings()
    trees_by_us = {f.sha for f in findings if f.check not in ON_THE_OBJECT}
    objects_by_us = {f.check for f in findings if f.check in ON_THE_OBJECT}
    assert (trees_by_us, objects_by_us) == (trees_by_git, objects_by_git), (
        {trees[s] for s in trees_by_us - trees_by_git},
        {trees[s] for s in trees_by_git - trees_by_us}, fsck[:2000])


# -- whole trees: the bulk pass and the entry-by-entry walk, against git ---------------

class _EntryByEntry(Judge):
    """The judge with its bulk pass for ordinary trees turned off."""

    def _ordinary_tree(self, sha: bytes, raw: bytes) -> bool:
        return False


# Mostly what real trees hold, so that whole trees of them are common; now and then a
# spelling git refuses, a zero-padded mode or a null id.
_TREE_NAMES = st.one_of(st.sampled_from([b"a", b"a-b", b"a.b", b"a b", b"ab", b"b", b"B"]),
                        st.sampled_from([b"a", b"b", b".gitmodules", b"git~1", b"a/b", b""]))
_TREE_MODES = st.one_of(st.sampled_from([b"100644", b"100755", b"40000", b"120000", b"160000"]),
                        st.sampled_from([b"100644", b"40000", b"040000", b"0100644"]))
_RARELY = st.integers(0, 7).map(lambda n: n == 0)
_NULL = "0" * 40
_GITLINKED = "1" * 40  # a commit of another repository: neither git nor the judge asks for it


def _git_key(name: bytes, mode: bytes) -> bytes:
    return name + b"/" if mode.lstrip(b"0") == b"40000" else name


@settings(max_examples=30, deadline=None)
@example(trees=[([(b"a", b"160000", False), (b"b", b"40000", False)], "git order"),
                ([(b"b", b"100644", False), (b"a", b"100644", False)], "as drawn"),
                ([(b"a", b"100644", False), (b"a", b"40000", False)], "git order")])
@given(trees=st.lists(st.tuples(
    st.lists(st.tuples(_TREE_NAMES, _TREE_MODES, _RARELY), min_size=1, max_size=6),
    st.sampled_from(["git order", "as drawn", "reversed"])), min_size=1, max_size=8))
def test_whole_trees_are_judged_in_bulk_as_entry_by_entry_and_as_git_does(
        trees: list[tuple[list[tuple[bytes, bytes, bool]], str]],
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """Trees of several entries (names that sort apart in git's order and Python's, the
    spellings git refuses, every mode, duplicates, null ids), each in git's order or not:
    the judge refuses exactly the trees `git fsck --strict` refuses, with the same
    findings, links and paths as the entry-by-entry walk alone gives."""
    repo = tmp_path_factory.mktemp("trees") / "r.git"
    git(repo.parent, "init", "-q", "--bare", str(repo))
    stored = {X: (BLOB, b"x\n"), EMPTY_TREE: (TREE, b"")}
    _loose(repo, "blob", b"x\n")
    _loose(repo, "tree", b"")
    fed: list[tuple[str, bytes]] = []
    for drawn, order in trees:
        entries = [(name, mode, _NULL if null else EMPTY_TREE if mode.lstrip(b"0") == b"40000"
                    else _GITLINKED if mode == b"160000" else X) for name, mode, null in drawn]
        if order == "git order":
            entries.sort(key=lambda e: _git_key(e[0], e[1]))
        elif order == "reversed":
            entries.sort(key=lambda e: _git_key(e[0], e[1]), reverse=True)
        raw = b"".join(entry(mode, name, sha) for name, mode, sha in entries)
        sha = _loose(repo, "tree", raw)
        stored[sha] = (TREE, raw)
        fed.append((sha, raw))
    top = b"".join(entry(b"40000", b"d%d" % n, sha) for n, (sha, _) in enumerate(fed))
    root = _loose(repo, "tree", top)
    fed.append((root, top))
    root_commit = _loose(repo, "commit", ok_commit().replace(EMPTY_TREE.encode(),
                                                             root.encode()))
    judges = [Judge(), _EntryByEntry()]
    for judge in judges:
        for sha, raw in fed:
            judge.add(TREE, sha.encode(), raw)
        judge.add(COMMIT, root_commit.encode(), ok_commit().replace(EMPTY_TREE.encode(),
                                                                    root.encode()))
        judge.finish(lambda sha: stored.get(sha.decode()))
    bulk, by_entry = judges
    assert bulk.first() == by_entry.first()
    assert bulk.findings() == by_entry.findings()
    assert bulk.links == by_entry.links
    fsck = git(repo, "fsck", "--strict", "--no-dangling", check=False).stderr.decode()
    by_git = {sha for sha, check in re.findall(r"^error in tree ([0-9a-f]{40}): (\w+):",
                                               fsck, re.M) if check not in ON_THE_OBJECT}
    by_us = {f.sha for f in bulk.findings() if f.check not in ON_THE_OBJECT}
    assert by_us == by_git, fsck[:2000]


def test_a_finding_below_trees_judged_in_bulk_is_named_by_its_path() -> None:
    inner_sha, middle_sha, top_sha, commit_sha = (f"{n:040x}" for n in range(1, 5))
    inner = entry(b"100644", b".git", X)
    middle = entry(b"40000", b"pdf", inner_sha) + entry(b"100644", b"z", X)
    top = entry(b"100644", b"README", X) + entry(b"40000", b"skills", middle_sha)
    judge = Judge()
    judge.add(TREE, top_sha.encode(), top)
    judge.add(TREE, middle_sha.encode(), middle)
    judge.add(TREE, inner_sha.encode(), inner)
    judge.add(COMMIT, commit_sha.encode(),
              ok_commit().replace(EMPTY_TREE.encode(), top_sha.encode()))
    judge.finish(lambda sha: None)
    finding = judge.first()
    assert finding is not None and finding.check == "hasDotgit"
    assert finding.path == "skills/pdf/.git"


def test_a_malformed_root_tree_is_named_as_the_root() -> None:
    """A finding on the fetched commit's own tree has no path to show: it is named as the
    root tree, not as an empty path."""
    root_sha, commit_sha = f"{7:040x}", f"{8:040x}"
    judge = Judge()
    judge.add(TREE, root_sha.encode(), b"100644 a\0abc")  # the id cut short
    judge.add(COMMIT, commit_sha.encode(),
              ok_commit().replace(EMPTY_TREE.encode(), root_sha.encode()))
    judge.finish(lambda sha: None)
    finding = judge.first()
    assert finding is not None and finding.check == "badTree" and finding.path == ""
    assert finding.describe().startswith(f"the root tree {root_sha[:12]}, a tree that "
                                         "cannot be parsed")
