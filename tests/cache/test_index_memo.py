"""The index librarian last wrote from a clean one is remembered by its trailer, so the
check for conflicted entries every changing command makes reads 20 bytes, not the whole
index; any other index (git wrote it, it holds a conflict) is scanned as before."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.helpers import cli, git, make_skill, requires_git, write

from librarian.git.indexmemo import known_clean
from librarian.library.guard import conflicted_paths

Cap = pytest.CaptureFixture[str]


def _memo(library: Path) -> Path:
    return library / ".git" / "librarian" / "cache" / "index-clean"


def _conflict(library: Path) -> None:
    """A conflicted index as a failed `git stash pop` leaves it: no MERGE_HEAD."""
    git(library, "checkout", "-q", "-b", "other")
    write(library / "NOTES.txt", "theirs\n")
    git(library, "add", "NOTES.txt")
    git(library, "commit", "-q", "-m", "theirs")
    git(library, "checkout", "-q", "-")
    write(library / "NOTES.txt", "ours\n")
    git(library, "add", "NOTES.txt")
    git(library, "commit", "-q", "-m", "ours")
    git(library, "merge", "-q", "other", check=False)
    (library / ".git" / "MERGE_HEAD").unlink()


@requires_git
def test_the_index_librarian_wrote_is_known_clean_and_a_conflict_git_makes_is_seen(
        library: Path, tmp_path: Path, capsys: Cap) -> None:
    index = library / ".git" / "index"
    assert cli(capsys, library, "retain", str(make_skill(tmp_path / "src", "one"))).code == 0
    assert _memo(library).read_bytes() == index.read_bytes()[-20:].hex().encode()
    assert known_clean(index) and conflicted_paths(index) == []
    assert cli(capsys, library, "retain", str(make_skill(tmp_path / "src", "two"))).code == 0
    assert known_clean(index)  # a splice of a clean index: clean again
    _conflict(library)
    assert not known_clean(index)
    assert set(conflicted_paths(index)) == {"NOTES.txt"}
    refused = cli(capsys, library, "retain", str(make_skill(tmp_path / "src", "three")))
    assert refused.code == 2 and "conflicts" in refused.err


@requires_git
def test_a_splice_of_a_conflicted_index_is_not_remembered(library: Path, capsys: Cap) -> None:
    from librarian.git.index import splice_index

    index = library / ".git" / "index"
    _conflict(library)
    _memo(library).unlink(missing_ok=True)
    splice_index(index, remove_prefixes=["skills/none"], add=[])
    assert not _memo(library).exists()
    assert set(conflicted_paths(index)) == {"NOTES.txt"}
    git(library, "checkout", "-q", "--theirs", "NOTES.txt")
    git(library, "add", "NOTES.txt")  # resolved by git: scanned, and clean
    assert conflicted_paths(index) == []
    splice_index(index, remove_prefixes=["skills/none"], add=[])
    assert known_clean(index)


@requires_git
def test_an_index_without_a_checksum_is_never_known_clean(library: Path) -> None:
    """git's index.skipHash writes a zero trailer: it names no content, so it is never
    remembered nor matched; librarian's own splice of it writes a checksum."""
    from librarian.git.index import splice_index

    index = library / ".git" / "index"
    index.write_bytes(index.read_bytes()[:-20] + bytes(20))
    git(library, "ls-files", "--stage")  # git reads it as it is
    _memo(library).write_text("0" * 40)
    assert not known_clean(index)
    splice_index(index, remove_prefixes=["skills/none"], add=[])
    assert index.read_bytes()[-20:] != bytes(20) and known_clean(index)


def _lengths_memo(library: Path) -> Path:
    return library / ".git" / "librarian" / "cache" / "index-lengths"


def _scans(index: Path) -> tuple[object, object]:
    """The index scanned entry by entry, and scanned with the lengths remembered."""
    import functools
    import os

    from librarian.git.indexmemo import remembered_lengths
    from librarian.git.indexscan import scan_index_file

    fd = os.open(index, os.O_RDONLY)
    try:
        return (scan_index_file(fd),
                scan_index_file(fd, functools.partial(remembered_lengths, index)))
    finally:
        os.close(fd)


@requires_git
def test_the_next_splice_finds_the_entries_from_the_lengths_librarian_wrote(
        library: Path, tmp_path: Path, capsys: Cap) -> None:
    index = library / ".git" / "index"
    for name in ("one", "two", "three"):
        assert cli(capsys, library, "retain", str(make_skill(tmp_path / "src", name))).code == 0
        scanned, remembered = _scans(index)
        assert remembered.lengths is not None and scanned.lengths is None  # type: ignore[attr-defined]
        assert list(remembered.offsets) == list(scanned.offsets)  # type: ignore[attr-defined]
    assert "skills/three/SKILL.md" in git(library, "ls-files").stdout.decode()
    assert git(library, "status", "--porcelain").stdout == b""
    write(library / "NOTES.txt", "a file git adds\n")
    git(library, "add", "NOTES.txt")  # git rewrote the index: another trailer
    scanned, remembered = _scans(index)
    assert remembered.lengths is None  # type: ignore[attr-defined]
    assert list(remembered.offsets) == list(scanned.offsets)  # type: ignore[attr-defined]
    assert cli(capsys, library, "retain", str(make_skill(tmp_path / "src", "four"))).code == 0
    assert "NOTES.txt" in git(library, "ls-files").stdout.decode()
    assert git(library, "diff", "--cached", "--name-only").stdout == b"NOTES.txt\n"
    assert _scans(index)[1].lengths is not None  # type: ignore[attr-defined]


@requires_git
def test_damaged_lengths_are_not_used(library: Path, tmp_path: Path, capsys: Cap) -> None:
    from librarian.git.indexmemo import remembered_lengths

    index = library / ".git" / "index"
    assert cli(capsys, library, "retain", str(make_skill(tmp_path / "src", "one"))).code == 0
    good = _lengths_memo(library).read_bytes()
    trailer = index.read_bytes()[-20:]
    count = int.from_bytes(index.read_bytes()[8:12], "big")
    assert remembered_lengths(index, trailer, count) is not None
    assert remembered_lengths(index, trailer, count + 1) is None  # another count
    assert remembered_lengths(index, bytes(20), count) is None  # skipHash: names nothing
    for damaged in (good[:-1], good[:-4], good.replace(b"index-lengths 1", b"index-lengths 9"),
                    good[:-4] + bytes(4)):  # a last entry of length 0
        _lengths_memo(library).write_bytes(damaged)
        assert remembered_lengths(index, trailer, count) is None
        assert _scans(index)[1].lengths is None  # type: ignore[attr-defined]
    # Lengths that end short of the entries, or past them: scanned instead, not refused.
    last = int.from_bytes(good[-4:], sys.byteorder)
    for wrong in (last - 8, last + 8, last + 4096):
        _lengths_memo(library).write_bytes(good[:-4] + wrong.to_bytes(4, sys.byteorder))
        scanned, remembered = _scans(index)
        assert remembered.lengths is None  # type: ignore[attr-defined]
        assert list(remembered.offsets) == list(scanned.offsets)  # type: ignore[attr-defined]
    assert cli(capsys, library, "retain", str(make_skill(tmp_path / "src", "two"))).code == 0
    assert git(library, "status", "--porcelain").stdout == b""
    assert _lengths_memo(library).read_bytes() != good  # the new index's, remembered
