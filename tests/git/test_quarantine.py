"""A hostile upstream leaves nothing git refuses in the library: a fetched pack
waits in a quarantine, is judged by git's fsck rules, and is refused whole (exit 2, one
line naming the source and the first offending path) or admitted. The real git binary is
the judge: `git fsck --strict` of the library is clean after every refusal, and the object
store lists exactly the files it listed before."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from dulwich.objects import Blob, Commit, ShaFile, Tree
from dulwich.repo import Repo
from support.helpers import (
    CliResult,
    assert_one_error_line,
    git,
    git_text,
    library_state,
    run_main,
    skill_md,
)
from support.sources_helpers import Upstream, git_daemon

from librarian.agents.claude_manifests import GENERATED
from librarian.core.model import SOURCES_DIR
from librarian.git.quarantine import PREFIX
from librarian.library.layout import Library
from librarian.sources.subscriptions import add_source
from librarian.sources.update import update

ZWNJ, ZWJ = "\u200c", "\u200d"
DIR, FILE = b"40000", b"100644"


def _raw_tree(repo: Repo, entries: list[tuple[bytes, bytes, bytes]]) -> bytes:
    """A tree written as given (git's order by name, a directory sorting as name/)."""
    def key(entry: tuple[bytes, bytes, bytes]) -> bytes:
        return entry[1] + (b"/" if entry[0] == DIR else b"")
    data = b"".join(mode + b" " + name + b"\0" + bytes.fromhex(sha.decode())
                    for mode, name, sha in sorted(entries, key=key))
    tree = ShaFile.from_raw_string(2, data)
    repo.object_store.add_object(tree)
    return tree.id


def _commit_on_main(repo: Repo, tree: bytes, message: bytes) -> str:
    """A commit of ``tree`` on top of main, main moved to it; its id."""
    commit = Commit()
    commit.tree = tree
    commit.parents = [repo.refs[b"refs/heads/main"]]
    commit.author = commit.committer = b"Upstream <up@example.org>"
    commit.author_time = commit.commit_time = int(time.time())
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = message
    repo.object_store.add_object(commit)
    repo.refs[b"refs/heads/main"] = commit.id
    return commit.id.decode()


def plant(up: Upstream, where: str, name: bytes, *, directory: bool = True) -> str:
    """Commit on ``up``'s main a tip whose tree holds ``name`` (a directory holding ``x``,
    or a file) in the folder ``where`` ("" for the top level), beside a valid skill
    ``skills/ok``, built raw so that any name git can be handed is possible."""
    with Repo(str(up.path)) as repo:
        blob = Blob.from_string(b"x\n")
        skill = Blob.from_string(skill_md("ok"))
        for obj in (blob, skill):
            repo.object_store.add_object(obj)
        inner = Tree()
        inner.add(b"x", 0o100644, blob.id)
        repo.object_store.add_object(inner)
        entry = (DIR, name, inner.id) if directory else (FILE, name, blob.id)
        ok = [(FILE, b"SKILL.md", skill.id)] + ([entry] if where == "skills/ok" else [])
        skills = [(DIR, b"ok", _raw_tree(repo, ok))] + ([entry] if where == "skills" else [])
        root = [(DIR, b"skills", _raw_tree(repo, skills))] + ([entry] if where == "" else [])
        return _commit_on_main(repo, _raw_tree(repo, root), b"hostile\n")


def _objects(library: Path) -> list[str]:
    root = library / ".git" / "objects"
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def _refs(library: Path) -> str:
    return git_text(library, "for-each-ref", "--format=%(refname) %(objectname)")


def _everything(library: Path) -> tuple[object, str, list[str]]:
    """What a refused fetch must leave as it was: work tree and state, refs, objects."""
    return library_state(library), _refs(library), _objects(library)


def _refused(result: CliResult, library: Path, before: object) -> str:
    """Exit 2, nothing changed, git still content: the one error line."""
    assert result.code == 2, (result.err, result.out)
    line = assert_one_error_line(result.err)
    assert _everything(library) == before
    _fsck(library)
    return line


def _fsck(library: Path) -> None:
    result = git(library, "fsck", "--strict", "--no-dangling", check=False)
    assert result.returncode == 0, result.stderr.decode()


@pytest.fixture
def team(library: Path, tmp_path: Path) -> Upstream:
    """A source ``team`` whose clean first commit is installed."""
    up = Upstream(tmp_path / "up")
    up.skill("skills/ok").skill("skills/two").commit("first")
    add_source(Library(library, GENERATED), "team", up.url)
    update(Library(library, GENERATED))
    return up


REFUSED = [  # (folder, name, path shown, fsck message id)
    ("skills/ok", b"git~1", "skills/ok/git~1", "hasDotgit"),
    ("skills/ok", b"GIT~1", "skills/ok/GIT~1", "hasDotgit"),
    ("skills/ok", b".git", "skills/ok/.git", "hasDotgit"),
    ("skills", b".GIT", "skills/.GIT", "hasDotgit"),
    ("skills", f".g{ZWNJ}it".encode(), "skills/.g\\u200cit", "hasDotgit"),
    ("skills/ok", f"{ZWJ}.git".encode(), "skills/ok/\\u200d.git", "hasDotgit"),
    ("skills/ok", b".git.", "skills/ok/.git.", "hasDotgit"),
    ("skills/ok", b".git ", "skills/ok/.git ", "hasDotgit"),
    ("skills/ok", b".git::$INDEX_ALLOCATION", "skills/ok/.git::$INDEX_ALLOCATION",
     "hasDotgit"),
    ("skills/ok", b"git~1.", "skills/ok/git~1.", "hasDotgit"),
    ("skills/ok", b"a\\.git", "skills/ok/a\\.git", "hasDotgit"),
    ("", b".git", ".git", "hasDotgit"),  # outside every item: still in the pack
    ("skills/ok", b".", "skills/ok/.", "hasDot"),
    ("skills/ok", b"..", "skills/ok/..", "hasDotdot"),
    ("skills/ok", b"", "skills/ok/", "emptyName"),
    ("skills/ok", b"a/b", "skills/ok/a/b", "fullPathname"),
    ("skills", b".gitmodules", "skills/.gitmodules", "gitmodulesBlob"),
]


@pytest.mark.parametrize(("where", "name", "shown", "check"), REFUSED,
                         ids=[r[2] or "empty" for r in REFUSED])
def test_a_pack_git_refuses_is_refused_whole_and_leaves_nothing(
        where: str, name: bytes, shown: str, check: str, team: Upstream, library: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    plant(team, where, name)
    before = _everything(library)

    result = run_main(capsys, "--library", str(library), "update")

    line = _refused(result, library, before)
    assert (f"source team: upstream holds {shown}, a path git refuses (fsck {check})"
            if check != "gitmodulesBlob" else f"source team: upstream holds {shown}, ") in line
    assert f"(fsck {check}); nothing was fetched" in line


def test_dry_run_and_outdated_refuse_the_same_way(
        team: Upstream, library: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plant(team, "skills/ok", b"git~1")
    before = _everything(library)
    for args in (["update", "--dry-run"], ["outdated"]):
        result = run_main(capsys, "--library", str(library), *args)
        assert "source team: upstream holds skills/ok/git~1" in _refused(
            result, library, before), args


def test_clean_then_hostile_then_clean_updates_on_the_third_fetch(
        team: Upstream, library: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plant(team, "skills/ok", f".g{ZWNJ}it".encode())
    assert run_main(capsys, "--library", str(library), "update").code == 2
    # The next upstream commit has the refused one as its parent: the library must not
    # claim to hold it (it never entered the object store).
    tip = team.skill("skills/three").commit("clean again")
    result = run_main(capsys, "--library", str(library), "update")
    assert result.code == 0, result.err
    assert (library / "sources" / "team" / "skills" / "three" / "SKILL.md").is_file()
    assert git_text(library, "rev-parse", "refs/librarian/sources/team").strip() == tip
    _fsck(library)
    clone = git(library.parent, "-c", "transfer.fsckObjects=true", "clone", "-q",
                "--no-local", str(library), str(library.parent / "clone"), check=False)
    assert clone.returncode == 0, clone.stderr.decode()


@pytest.mark.parametrize("name", [b".gitx", b"git~2", b"gitx~1", b".gitignore-not"])
def test_names_fsck_accepts_install(name: bytes, team: Upstream, library: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    plant(team, "skills/ok", name)
    result = run_main(capsys, "--library", str(library), "update")
    assert result.code == 0, result.err
    listing = git_text(library, "ls-tree", "-r", "--name-only", "HEAD")
    assert f"sources/team/skills/ok/{name.decode()}/x" in listing
    _fsck(library)


def test_first_fetch_of_a_hostile_source_keeps_nothing(
        library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    up = Upstream(tmp_path / "up")
    up.skill("skills/ok").commit("first")
    plant(up, "skills/ok", b"GIT~1")
    add_source(Library(library, GENERATED), "team", up.url)
    before = _everything(library)
    result = run_main(capsys, "--library", str(library), "update")
    assert "source team: upstream holds skills/ok/GIT~1" in _refused(result, library, before)


def test_a_thin_pack_from_a_git_server_is_judged_too(
        team: Upstream, library: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    served = tmp_path / "served"
    served.mkdir()
    git(tmp_path, "clone", "-q", "--bare", str(team.path), str(served / "up.git"))
    (served / "up.git" / "git-daemon-export-ok").touch()
    with git_daemon(served) as base:
        result = run_main(capsys, "--library", str(library), "source", "add", "served",
                          f"{base}/up.git")
        assert result.code == 0, result.err
        assert run_main(capsys, "--library", str(library), "update", "served").code == 0
        hostile = Upstream.__new__(Upstream)
        hostile.path = served / "up.git"
        plant(hostile, "skills/ok", b"git~1")
        before = _everything(library)
        result = run_main(capsys, "--library", str(library), "update", "served")
    assert "source served: upstream holds skills/ok/git~1" in _refused(result, library, before)


@pytest.mark.crash
def test_recovery_sweeps_a_quarantine_a_kill_left(
        team: Upstream, library: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objects = library / ".git" / "objects"
    before = _objects(library)
    left = objects / f"{PREFIX}abc123"
    (left / "pack").mkdir(parents=True)
    (left / "tmp_pack_x").write_bytes(b"PACK")
    # Killed between moving a judged pack and its index: the pack alone is in objects/pack.
    (left / "pack" / "pack-1234.idx").write_bytes(b"idx")
    (objects / "pack" / "pack-1234.pack").write_bytes(b"PACK")
    # Killed while the shallow boundary, or a memo, was being replaced.
    shallow = library / ".git" / ".shallow.k1ll3d.tmp"
    shallow.write_bytes(b"half")
    memo = library / ".git" / "librarian" / "cache" / ".kinds.json.k1ll3d.tmp"
    memo.parent.mkdir(exist_ok=True)
    memo.write_bytes(b"{")
    result = run_main(capsys, "--library", str(library), "recover")
    assert result.code == 0, result.err
    assert _objects(library) == before
    assert not shallow.exists() and not memo.exists()
    _fsck(library)


def test_a_pack_of_objects_already_held_is_not_moved_twice(
        team: Upstream, library: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The second source names the same upstream: its fetch finds every object held.
    add_source(Library(library, GENERATED), "again", team.url)
    before = _objects(library)
    result = run_main(capsys, "--library", str(library), "update", "again")
    assert result.code == 0, result.err
    assert not [p for p in _objects(library) if p not in before and p.startswith("pack/")]
    assert not list((library / ".git" / "objects").glob(f"{PREFIX}*"))
    _fsck(library)


def _replace_loose(up: Upstream, sha: str, kind: bytes, data: bytes) -> None:
    """Overwrite the loose object file of ``sha`` in ``up`` with other content."""
    import zlib

    path = up.path / "objects" / sha[:2] / sha[2:]
    path.chmod(0o644)
    path.write_bytes(zlib.compress(b"%s %d\0" % (kind, len(data)) + data))


def test_a_local_object_that_does_not_hash_to_its_name_is_refused(
        team: Upstream, library: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A repository on this machine is copied object by object (git/localfetch.py): each
    # must hash to the id it is stored under, or a hostile store could plant content under
    # an id git has already judged.
    team.skill("skills/three", body="Three.\n").commit("third")
    with Repo(str(team.path)) as repo:
        tree = repo[repo[b"refs/heads/main"].tree]
        skill = repo[tree[b"skills"][1]][b"three"][1]
        blob = repo[skill][b"SKILL.md"][1].decode()
    _replace_loose(team, blob, b"blob", b"other content\n")
    before = _everything(library)
    result = run_main(capsys, "--library", str(library), "update")
    assert f"object {blob} does not hash to its name" in _refused(result, library, before)


def test_a_local_tree_entry_naming_an_object_of_another_type_is_refused(
        team: Upstream, library: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Repo(str(team.path)) as repo:
        blob = Blob.from_string(b"new in this commit\n")
        inner = Tree()
        inner.add(b"x", 0o100644, blob.id)
        tree = Tree()
        tree.add(b"SKILL.md", 0o100644, inner.id)  # a tree the library does not hold
        for obj in (blob, inner, tree):
            repo.object_store.add_object(obj)
        ok = [(DIR, b"ok", tree.id)]
        _commit_on_main(repo, _raw_tree(repo, [(DIR, b"skills", _raw_tree(repo, ok))]),
                        b"a tree named as a file\n")
    before = _everything(library)
    result = run_main(capsys, "--library", str(library), "update")
    assert "is a tree where its tree names a blob" in _refused(result, library, before)


def test_a_local_first_install_is_one_pack_git_accepts_and_clones(
        library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    up = Upstream(tmp_path / "up")
    for number in range(30):
        up.skill(f"skills/s{number:02d}", body=f"Skill {number}.\n")
    up.put("skills/s00/scripts/run.sh", b"#!/bin/sh\necho\n", 0o100755).commit("first")
    up.skill("skills/s00", body="Changed.\n").commit("second")  # history is not copied
    add_source(Library(library, GENERATED), "team", up.url)
    before = set(_objects(library))
    assert run_main(capsys, "--library", str(library), "update").code == 0
    packs = [p for p in set(_objects(library)) - before if p.endswith(".pack")]
    assert len(packs) == 1
    listed = git_text(library, "verify-pack", "-v", f".git/objects/{packs[0]}")
    tip = git_text(up.path, "rev-parse", "main").strip()
    parent = git_text(up.path, "rev-parse", "main~1").strip()
    assert tip in listed and parent not in listed
    _fsck(library)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(library), str(clone))
    assert git(clone, "fsck", "--strict", check=False).returncode == 0
    run_sh = clone / SOURCES_DIR / "team" / "skills" / "s00" / "scripts" / "run.sh"
    assert run_sh.stat().st_mode & 0o111
