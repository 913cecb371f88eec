"""Objects are found in git's order (loose first, packs newest first), with git's answers.

git is the judge: every object `git cat-file` shows is read with the same type and bytes.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from dulwich.objects import ObjectID
from support.helpers import git, git_text, requires_git

from librarian.git.objectstore import LibraryObjectStore, held
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
        assert isinstance(object_store, LibraryObjectStore)
        for sha, (kind, data) in objects.items():
            assert ObjectID(sha.encode()) in object_store
            type_num, raw = object_store.get_raw(ObjectID(sha.encode()))
            assert (type_num, raw) == (_TYPES[kind], data)
        assert ObjectID(b"0" * 40) not in object_store
        with pytest.raises(KeyError):
            object_store.get_raw(ObjectID(b"0" * 40))


@requires_git
def test_a_loose_object_is_read_without_searching_the_packs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dulwich searched every pack and listed the pack directory before it opened a
    loose object: 835 listings in an update of 100 items."""
    repo = _repo_with_packs_and_loose(tmp_path)
    head = git_text(repo, "rev-parse", "HEAD").strip().encode()
    listings: list[object] = []
    real = os.listdir
    with GitStore(repo) as store:
        object_store = store.dulwich_repo.object_store
        monkeypatch.setattr(os, "listdir", lambda path: listings.append(path) or real(path))
        assert object_store.get_raw(ObjectID(head))[0] == 1
        assert ObjectID(head) in object_store
        assert not held(object_store, ObjectID(b"0" * 40))  # nor does held's miss
        assert listings == []
        assert ObjectID(b"0" * 40) not in object_store  # a membership miss looks again
        assert listings != []


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
@pytest.mark.parametrize("lstats", [0, 4, 10**6], ids=["listed", "default", "lstat"])
def test_held_answers_loose_objects_as_git_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lstats: int) -> None:
    """``held`` lists a fan-out directory (after a few lstats); what this store writes is
    seen at once, a link named like an object is not an object, and an object another
    process writes after the listing is still found by ``in`` (only ``held`` may miss
    it)."""
    from dulwich.objects import Blob

    from librarian.git import objectstore

    monkeypatch.setattr(objectstore, "_LSTATS_BEFORE_LISTING", lstats)
    repo = _repo_with_packs_and_loose(tmp_path)
    objects = _every_object(repo)
    loose = [sha for sha in objects if (repo / ".git" / "objects" / sha[:2] / sha[2:]).exists()]
    assert loose
    with GitStore(repo) as store:
        object_store = store.dulwich_repo.object_store
        assert all(held(object_store, ObjectID(s.encode())) for s in objects)
        missing = Blob.from_string(b"not yet\n")
        assert not held(object_store, missing.id)  # its fan-out directory is listed now
        object_store.add_object(missing)
        assert held(object_store, missing.id)  # this store wrote it: listed again
        later = git(repo, "hash-object", "-w", "--stdin", input=b"another process\n")
        late = ObjectID(later.stdout.strip())
        assert late in object_store
        fanout = repo / ".git" / "objects" / "ab"
        fanout.mkdir(exist_ok=True)
        (fanout / ("c" * 38)).symlink_to(repo / ".git" / "objects" / loose[0][:2] / loose[0][2:])
        assert not held(object_store, ObjectID(b"ab" + b"c" * 38))
        assert not object_store.loose_file(ObjectID(b"../" + b"0" * 37))  # no path built


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


def _variants() -> dict[str, bytes]:
    """A loose file's bytes for the object ``blob 3\\0abc``, sound and damaged."""
    import zlib

    sound = zlib.compress(b"blob 3\0abc")
    return {
        "sound": sound,
        "trailing bytes": sound + b"more",
        "checksum cut": sound[:-2],
        "body cut": sound[:8],
        "size lies": zlib.compress(b"blob 9\0abc"),
        "unknown type": zlib.compress(b"blub 3\0abc"),
        "no header end": zlib.compress(b"blob 3abc"),
        "not zlib": b"blob 3\0abc",
        "empty": b"",
        # objects dulwich cannot parse: refused as dulwich refuses them
        "tree cut short": zlib.compress(b"tree 12\0" + b"100644 a\0abc"),
        "commit unparsable": zlib.compress(b"commit 5\0hello"),
        "tag unparsable": zlib.compress(b"tag 5\0hello"),
        "tree sound": zlib.compress(b"tree 28\0" + b"100644 a\0" + bytes(range(20))),
    }


@pytest.mark.parametrize("variant", list(_variants()))
@requires_git
def test_a_loose_file_reads_as_dulwich_reads_it(tmp_path: Path, variant: str) -> None:
    """The raw read of a loose object (no dulwich object built) answers what dulwich's
    reader answers for it, sound or damaged: the same type and bytes, or no object."""
    from dulwich.object_store import DiskObjectStore

    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    sha = git_text(repo, "hash-object", "--stdin", input=b"abc").strip()
    loose = repo / ".git" / "objects" / sha[:2] / sha[2:]
    loose.parent.mkdir(parents=True)
    loose.write_bytes(_variants()[variant])

    def answer(store: object) -> object:
        try:
            return store.get_raw(ObjectID(sha.encode()))  # type: ignore[attr-defined]
        except KeyError:
            return "absent"
        except Exception as exc:  # noqa: BLE001 - the kind of failure is the answer
            return type(exc).__name__

    plain = answer(DiskObjectStore(str(repo / ".git" / "objects")))
    with GitStore(repo) as store:
        ours = answer(store.dulwich_repo.object_store)
    assert ours == plain
    if variant in ("sound", "trailing bytes"):
        assert ours == (3, b"abc")
