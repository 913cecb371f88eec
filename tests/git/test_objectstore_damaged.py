"""An object that is packed reads as dulwich (and git) read it, whatever
a loose copy of it holds: dulwich reads the packs first, librarian the loose object first."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from dulwich.object_store import DiskObjectStore
from dulwich.objects import ObjectID
from support.helpers import git, git_text, requires_git

from librarian.git.repo import GitStore


def _packed_blob_with_bad_loose_copy(tmp_path: Path, *, swapped: bool) -> tuple[Path, str]:
    """A repository whose blob ``sha`` is in a pack, and also loose but damaged (a
    truncated file) or swapped (a valid loose object holding another blob's bytes)."""
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "config", "gc.auto", "0")
    (repo / "a").write_text("the committed bytes\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "c")
    git(repo, "repack", "-a", "-d", "-q")
    sha = git_text(repo, "rev-parse", "HEAD:a").strip()
    loose = repo / ".git" / "objects" / sha[:2] / sha[2:]
    loose.parent.mkdir(exist_ok=True)
    other = b"forged bytes\n"
    body = zlib.compress(b"blob %d\0" % len(other) + other)
    loose.write_bytes(body if swapped else body[:5])
    return repo, sha


@requires_git
@pytest.mark.parametrize("swapped", [False, True], ids=["truncated", "swapped"])
def test_a_packed_object_reads_as_dulwich_reads_it_whatever_its_loose_copy(
        tmp_path: Path, swapped: bool) -> None:
    repo, sha = _packed_blob_with_bad_loose_copy(tmp_path, swapped=swapped)
    # git and dulwich read the pack first: the committed bytes
    assert git_text(repo, "cat-file", "blob", sha) == "the committed bytes\n"
    plain = DiskObjectStore(str(repo / ".git" / "objects"))
    assert plain.get_raw(ObjectID(sha.encode())) == (3, b"the committed bytes\n")
    with GitStore(repo) as store:
        got = store.dulwich_repo.object_store.get_raw(ObjectID(sha.encode()))
    assert got == (3, b"the committed bytes\n")
