"""Objects are read, held and written with git's answers.

git is the judge: every object `git cat-file` shows is read with the same type and bytes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from dulwich.objects import ObjectID
from support.helpers import git, git_text, requires_git

from librarian.git.objectstore import held
from librarian.git.repo import GitStore

_TYPES = {"commit": 1, "tree": 2, "blob": 3, "tag": 4}


def _repo_with_packs_and_loose(tmp_path: Path, packs: int = 6) -> Path:
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "config", "gc.auto", "0")
    for number in range(packs + 2):
        (repo / f"f{number}").write_text(f"content {number}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"c{number}")
        if number < packs:
            git(repo, "repack", "-d", "-q")  # the last two commits stay loose
    return repo


def _late_commit_repacked(repo: Path) -> bytes:
    """Another process commits and repacks everything: every pack replaced, loose ones too."""
    (repo / "late").write_text("late\n")
    git(repo, "add", "late")
    git(repo, "commit", "-q", "-m", "late")
    git(repo, "repack", "-a", "-d", "-q")
    return git_text(repo, "rev-parse", "HEAD").strip().encode()


def _every_object(repo: Path) -> dict[str, tuple[str, bytes]]:
    ids = git_text(repo, "cat-file", "--batch-all-objects",
                   "--batch-check=%(objectname) %(objecttype)").split("\n")
    found = {}
    for line in filter(None, ids):
        sha, kind = line.split()
        data = subprocess.run(["git", "cat-file", kind, sha], cwd=repo, check=True,
                              capture_output=True).stdout
        found[sha] = (kind, data)
    return found


@requires_git
def test_every_object_reads_as_git_shows_it(tmp_path: Path) -> None:
    repo = _repo_with_packs_and_loose(tmp_path)
    objects = _every_object(repo)
    assert len(list((repo / ".git" / "objects" / "pack").glob("*.pack"))) == 6
    with GitStore(repo) as store:
        object_store = store.dulwich_repo.object_store
        for sha, (kind, data) in objects.items():
            assert ObjectID(sha.encode()) in object_store
            type_num, raw = object_store.get_raw(ObjectID(sha.encode()))
            assert (type_num, raw) == (_TYPES[kind], data)
        assert ObjectID(b"0" * 40) not in object_store
        with pytest.raises(KeyError):
            object_store.get_raw(ObjectID(b"0" * 40))


@requires_git
def test_a_pack_another_process_lands_is_still_read(tmp_path: Path) -> None:
    repo = _repo_with_packs_and_loose(tmp_path)
    with GitStore(repo) as store:
        object_store = store.dulwich_repo.object_store
        assert store.head() is not None
        late = _late_commit_repacked(repo)
        assert object_store.get_raw(ObjectID(late))[0] == 1
        assert store.commit(late).message.startswith("late")


@requires_git
def test_reads_survive_the_last_used_pack_being_repacked_away(tmp_path: Path) -> None:
    repo = _repo_with_packs_and_loose(tmp_path)
    objects = _every_object(repo)
    packed = [sha for sha in objects
              if git_text(repo, "cat-file", "-t", sha).strip() == "blob"][:3]
    with GitStore(repo) as store:
        object_store = store.dulwich_repo.object_store
        object_store.get_raw(ObjectID(packed[0].encode()))  # some pack answered last
        git(repo, "repack", "-a", "-d", "-q")  # every pack it knew is gone
        for sha, (kind, data) in objects.items():
            assert object_store.get_raw(ObjectID(sha.encode())) == (_TYPES[kind], data)


@requires_git
def test_a_pack_landed_meanwhile_answers_membership(tmp_path: Path) -> None:
    """A closure check asks ``in``: an object another process packed since must not be
    called missing."""
    repo = _repo_with_packs_and_loose(tmp_path)
    with GitStore(repo) as store:
        object_store = store.dulwich_repo.object_store
        assert store.head() is not None
        late = _late_commit_repacked(repo)
        assert ObjectID(late) in object_store


@requires_git
def test_held_answers_loose_objects_as_git_does(tmp_path: Path) -> None:
    """``held``: what this store writes is seen at once, an object another process writes
    too, and a link named like an object is not an object."""
    from dulwich.objects import Blob

    repo = _repo_with_packs_and_loose(tmp_path)
    objects = _every_object(repo)
    loose = [sha for sha in objects if (repo / ".git" / "objects" / sha[:2] / sha[2:]).exists()]
    assert loose
    with GitStore(repo) as store:
        object_store = store.dulwich_repo.object_store
        assert all(held(object_store, ObjectID(s.encode())) for s in objects)
        missing = Blob.from_string(b"not yet\n")
        assert not held(object_store, missing.id)
        object_store.add_object(missing)
        assert held(object_store, missing.id)
        later = git(repo, "hash-object", "-w", "--stdin", input=b"another process\n")
        late = ObjectID(later.stdout.strip())
        assert late in object_store and held(object_store, late)
        fanout = repo / ".git" / "objects" / "ab"
        fanout.mkdir(exist_ok=True)
        (fanout / ("c" * 38)).symlink_to(repo / ".git" / "objects" / loose[0][:2] / loose[0][2:])
        assert not held(object_store, ObjectID(b"ab" + b"c" * 38))


@pytest.mark.parametrize(("config", "header"), [
    (None, b"\x78\x01"),  # git's default for loose objects: best speed
    ("looseCompression = 9", b"\x78\xda"),
    ("compression = 9", b"\x78\xda"),
])
@requires_git
def test_loose_objects_are_compressed_as_git_would(tmp_path: Path, config: str | None,
                                                   header: bytes) -> None:
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    if config is not None:
        with (repo / ".git" / "config").open("a") as file:
            file.write(f"[core]\n\t{config}\n")
    with GitStore(repo) as store:
        sha = store.blob(b"some content, " * 100)
        store.flush(sha)
    loose = repo / ".git" / "objects" / sha[:2].decode() / sha[2:].decode()
    assert loose.read_bytes()[:2] == header
    assert git(repo, "cat-file", "-p", sha.decode()).stdout == b"some content, " * 100
