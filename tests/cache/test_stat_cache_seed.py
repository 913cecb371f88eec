"""An update tells the stat cache what it installed (``statcache.WorkTreeCache.seed``), as
``git clone`` leaves an index with every file's stat: the first status after an install
reads no file of the installed items, and a change made to them since still shows."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.helpers import cli, run_main, settle_files
from support.sources_helpers import MODE_EXEC, Upstream, install

from librarian.agents.claude_manifests import GENERATED
from librarian.cache import statcache
from librarian.cache.statcache import WorkTreeCache, staged_dir
from librarian.cache.statfile import ItemsFile, identity_of
from librarian.content.worktree import hash_work_dir, write_files
from librarian.core.model import ItemFile
from librarian.git import objectstore
from librarian.library.layout import Library
from librarian.ops.status import library_status
from librarian.txn import apply

Cap = pytest.CaptureFixture[str]
ITEMS = ("sources/team/skills/kit", "sources/team/skills/other")


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    up = Upstream(tmp_path / "up.git")
    up.skill("skills/kit").skill("skills/other")
    up.put("skills/kit/scripts/run.sh", b"#!/bin/sh\necho run\n", MODE_EXEC)
    up.put("skills/kit/references/deep/notes.md", b"Notes.\n")
    up.commit("first")
    return up


def _remembered(library: Path) -> dict[str, object]:
    """Each item's record in items.bin, its directories in path order."""
    git_dir = library / ".git"
    file = ItemsFile(git_dir / "librarian" / "cache" / "items.bin", identity_of(git_dir))
    out: dict[str, object] = {}
    for index in range(file.count):
        key, entry = file.decode(index)
        out[key] = (entry.ids, entry.signature, sorted(entry.dirs), entry.files)
    return out


def _no_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(root: Path) -> None:
        raise AssertionError(f"status read {root}")

    monkeypatch.setattr(statcache, "hash_work_dir", refuse)


def test_the_install_remembers_what_a_scan_finds_but_the_directories(
        library: Path, upstream: Upstream, capsys: Cap, monkeypatch: pytest.MonkeyPatch) -> None:
    settle_files(monkeypatch)
    install(capsys, library, upstream)
    seeded = _remembered(library)
    assert sorted(seeded) == list(ITEMS)
    assert library_status(Library(library, GENERATED)).clean  # lists the directories, reads no file
    listed = _remembered(library)
    (library / ".git" / "librarian" / "cache" / "items.bin").unlink()
    assert library_status(Library(library, GENERATED)).clean  # a scan of every file, from nothing
    scanned = _remembered(library)
    assert listed == scanned
    for key, (ids, signature, dirs, files) in seeded.items():
        assert dirs == [(b"", -1, -1)]  # no directory has that stamp: the first look lists
        assert (ids, signature, files) == (scanned[key][0], scanned[key][1], scanned[key][3])


@pytest.mark.parametrize("memo", ["room for the files", "no room"])
def test_the_first_status_after_an_install_reads_no_installed_file(
        memo: str, library: Path, upstream: Upstream, capsys: Cap,
        monkeypatch: pytest.MonkeyPatch) -> None:
    settle_files(monkeypatch)
    if memo == "no room":  # a large collection: staging reads the files back and checks them
        monkeypatch.setattr(objectstore, "BLOB_MEMO_BYTES", 0)
    upstream.put("skills/other/.DS_Store", b"left out, as retain leaves it\n").commit("more")
    install(capsys, library, upstream)
    _no_reading(monkeypatch)
    report = library_status(Library(library, GENERATED))
    assert [(i.path, i.status) for i in report.items] == [(p, "clean") for p in ITEMS]


def test_an_item_added_by_a_later_update_is_remembered_too(
        library: Path, upstream: Upstream, capsys: Cap, monkeypatch: pytest.MonkeyPatch) -> None:
    settle_files(monkeypatch)
    install(capsys, library, upstream)
    upstream.skill("skills/third").commit("third")
    assert cli(capsys, library, "update").code == 0
    _no_reading(monkeypatch)
    assert [i.status for i in library_status(Library(library, GENERATED)).items] == ["clean"] * 3


def _grow(path: Path) -> None:
    path.write_bytes(path.read_bytes() + b"more\n")


CHANGES: dict[str, Callable[[Path], None]] = {
    "an edit": lambda kit: _grow(kit / "SKILL.md"),
    "an edit deep down": lambda kit: _grow(kit / "references" / "deep" / "notes.md"),
    "a file added beside SKILL.md": lambda kit: (kit / "new.md").write_text("New.\n"),
    "a file added deep down": lambda kit: (kit / "references" / "deep" / "x.md").write_text("X\n"),
    "a file removed": lambda kit: (kit / "scripts" / "run.sh").unlink(),
    "the executable bit dropped": lambda kit: (kit / "scripts" / "run.sh").chmod(0o644),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_change_after_the_install_still_shows(
        change: str, library: Path, upstream: Upstream, capsys: Cap,
        monkeypatch: pytest.MonkeyPatch) -> None:
    settle_files(monkeypatch)
    install(capsys, library, upstream)
    CHANGES[change](library / ITEMS[0])
    states = {i.path: i.status for i in library_status(Library(library, GENERATED)).items}
    assert states == {ITEMS[0]: "modified", ITEMS[1]: "clean"}


def _seed(tmp_path: Path, touch: Callable[[Path], None] = lambda _: None) -> bool:
    """Whether an item written whole into a stage slot, as ``apply._stage_tree`` writes
    one, and then touched, is remembered."""
    files = (ItemFile("SKILL.md", False, b"---\nname: kit\n---\n"),
             ItemFile("sub/a.md", False, b"A\n"))
    slot = tmp_path / "lib" / ".git" / "librarian" / "stage" / "0"
    write_files(slot, files)
    touch(slot)
    ids = hash_work_dir(slot)
    assert ids is not None
    stats = [(slot / f.path).lstat() for f in files]
    seed = staged_dir((ids.tree_sha1, ids.digest), zip([f.path for f in files], stats,
                                                       strict=True))
    cache_dir = tmp_path / "lib" / ".git" / "librarian" / "cache"
    cache = WorkTreeCache(cache_dir)
    cache.seed("kit", seed, statcache.racy_after_ns(cache_dir))
    return "kit" in cache._seen


def test_a_seed_is_taken_when_its_files_are_older_than_the_stamp(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settle_files(monkeypatch)
    assert _seed(tmp_path)


def test_no_seed_for_a_file_stamped_in_this_tick_of_the_clock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A file stamped at or after the cache's own stamp is racy, as in a scan.
    settle_files(monkeypatch)
    future = time.time_ns() + 3600 * 10**9
    assert not _seed(tmp_path, lambda slot: os.utime(slot / "sub" / "a.md",
                                                     ns=(future, future)))


def test_the_clock_that_judges_a_seed_is_read_before_the_files_are_visible(
        library: Path, upstream: Upstream, capsys: Cap, monkeypatch: pytest.MonkeyPatch) -> None:
    # A one-second clock (ext3, HFS+): a file written in this second can be edited again in
    # it without its stat moving. Were the clock read after the swap (when seeding), an
    # edit made after the swap in the second of the write would be trusted; read before
    # the swap, everything staged in that second is racy and hashed by the next status.
    added = run_main(capsys, "--library", str(library), "source", "add", "team", upstream.url)
    assert added.code == 0, added.err
    ahead = [0]
    start = time.time_ns() // 10**9 * 10**9  # the second the install begins in

    def one_second_clock(_cache_dir: Path) -> int:
        return start + ahead[0]

    monkeypatch.setattr(statcache, "racy_after_ns", one_second_clock)
    real = apply.swap_in

    def a_minute_later(*args: Any, **kwargs: Any) -> None:  # the swap, long after staging
        ahead[0] = 60 * 10**9
        real(*args, **kwargs)

    monkeypatch.setattr(apply, "swap_in", a_minute_later)
    assert cli(capsys, library, "update").code == 0
    assert _remembered(library) == {}
